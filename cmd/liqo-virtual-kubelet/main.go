// Command liqo-virtual-kubelet runs one virtual node out of the controller manager: the same
// vnode.Runner and reflectors (vnode/reflectors.New, whose options are flags of both) as the in-process runner, for the
// VirtualNode named by --virtual-node, with the identity Secret the VirtualNode points at. The
// controller manager's Deployment runner starts it (--virtual-kubelet=deployment); it serves
// the node's kubelet endpoint on --listen and advertises --node-ip. Health and readiness
// probes (ready once the node runs) and Prometheus metrics as the controller manager's.
//
// Stopping it never deletes the Node (a restarted virtual kubelet takes it over): removing the
// node is the controller manager's job, after the Deployment is gone.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/cli"
	"github.com/peerkit/terraform-provider-liqo/internal/clusterid"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/memlimit"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/reflectors"
)

func main() {
	cli.Exit("liqo-virtual-kubelet", run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr))
}

// options are the command's flags.
type options struct {
	cli.ManagerFlags
	virtualNode   types.NamespacedName
	consumerID    corev1beta1.ClusterID
	liqoNamespace string
	listen        string
	nodeIP        string
	probeInterval time.Duration
	resync        time.Duration
	reflection    reflectors.Options
}

func parse(args []string, out io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("liqo-virtual-kubelet", flag.ContinueOnError)
	fs.SetOutput(out)
	o.Bind(fs, "the consumer cluster")
	var vn, consumer string
	fs.StringVar(&vn, "virtual-node", "", "the VirtualNode to run, namespace/name (required)")
	fs.StringVar(&consumer, "consumer-cluster-id", "", "this cluster's ID (default: read from the "+consts.ClusterIDConfigMap+
		" ConfigMap in --liqo-namespace)")
	fs.StringVar(&o.liqoNamespace, "liqo-namespace", consts.LiqoNamespace, "the namespace Liqo is installed in, where the cluster ID is "+
		"read when --consumer-cluster-id is not given")
	fs.StringVar(&o.listen, "listen", "0.0.0.0:10250", "address of the node's kubelet endpoint (logs, exec), host:port; port 0 picks a free one")
	fs.StringVar(&o.nodeIP, "node-ip", "", "the IP the Node advertises for its kubelet endpoint (default: $POD_IP, else --listen's host)")
	fs.DurationVar(&o.probeInterval, "probe-interval", 5*time.Second, "how often the provider's API server is checked")
	fs.DurationVar(&o.resync, "resync", time.Minute, "how often the VirtualNode and its identity Secret are read again")
	o.reflection.Bind(fs)
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	if err := o.reflection.Validate(); err != nil {
		return nil, err
	}
	ns, name, ok := strings.Cut(vn, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--virtual-node %q is not namespace/name", vn)
	}
	o.virtualNode = types.NamespacedName{Namespace: ns, Name: name}
	o.consumerID = corev1beta1.ClusterID(consumer)
	if o.nodeIP == "" {
		o.nodeIP = os.Getenv("POD_IP")
	}
	return o, nil
}

// run parses args and runs the virtual node until ctx ends.
func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parse(args, out)
	if err != nil {
		return err
	}
	log := zap.New(zap.UseFlagOptions(&o.Zap), zap.WriteTo(out)).WithValues("virtualNode", o.virtualNode.String())
	ctrl.SetLogger(log)
	memlimit.Apply(log)
	cfg, err := cli.RESTConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	scheme, err := api.NewScheme()
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating clientset: %w", err)
	}
	if o.consumerID == "" {
		reader, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return fmt.Errorf("creating client: %w", err)
		}
		if o.consumerID, err = clusterid.Read(ctx, reader, o.liqoNamespace); err != nil {
			return fmt.Errorf("no --consumer-cluster-id, and this cluster's ID (set --liqo-namespace where Liqo is installed): %w", err)
		}
	}
	mopts := o.ManagerOptions("liqo-vk-"+o.virtualNode.Name, o.virtualNode.Namespace)
	mopts.Scheme, mopts.Logger = scheme, log
	// Only its VirtualNode is cached: Secrets are read directly (no cluster-wide watch).
	mopts.Cache = cache.Options{ByObject: map[client.Object]cache.ByObject{
		&offv1beta1.VirtualNode{}: {
			Namespaces: map[string]cache.Config{o.virtualNode.Namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", o.virtualNode.Name),
		},
	}}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	runner := vnode.NewRunner(kube, vnode.Options{
		ProbeInterval:      o.probeInterval,
		ConsumerID:         o.consumerID,
		LocalConfig:        cfg,
		Reflectors:         reflectors.New(o.reflection),
		KubeletAddress:     o.listen,
		KubeletAdvertiseIP: o.nodeIP,
	}, log.WithName("vnode"))
	f := &follower{client: mgr.GetClient(), reader: mgr.GetAPIReader(), runner: runner, key: o.virtualNode, resync: o.resync}
	if err := f.setup(mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", func(*http.Request) error {
		for _, n := range runner.Running() {
			if n == o.virtualNode.Name {
				return nil
			}
		}
		return fmt.Errorf("virtual node %s is not running", o.virtualNode)
	}); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	log.Info("starting", "consumerID", o.consumerID, "listen", o.listen, "nodeIP", o.nodeIP)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// follower runs the one VirtualNode as its spec and identity Secret say.
type follower struct {
	client client.Client
	reader client.Reader
	runner *vnode.Runner
	key    types.NamespacedName
	resync time.Duration
}

// Reconcile starts or updates the virtual node. A VirtualNode being deleted, or gone, keeps
// running: the controller manager drains the node with it, then stops the Deployment.
func (f *follower) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	vn := &offv1beta1.VirtualNode{}
	if err := f.client.Get(ctx, f.key, vn); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if vn.DeletionTimestamp != nil || vn.Spec.CreateNode != nil && !*vn.Spec.CreateNode {
		return reconcile.Result{}, nil
	}
	if vn.Spec.KubeconfigSecretRef == nil {
		return reconcile.Result{}, fmt.Errorf("virtual node %s has no kubeconfigSecretRef", f.key)
	}
	secret := &corev1.Secret{}
	if err := f.reader.Get(ctx, client.ObjectKey{Namespace: vn.Namespace, Name: vn.Spec.KubeconfigSecretRef.Name}, secret); err != nil {
		return reconcile.Result{}, fmt.Errorf("reading the kubeconfig Secret %s/%s of virtual node %s: %w", vn.Namespace, vn.Spec.KubeconfigSecretRef.Name, f.key, err)
	}
	remote, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[consts.KubeconfigSecretKey])
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("kubeconfig Secret %s/%s of virtual node %s, key %s: %w", vn.Namespace, secret.Name, f.key, consts.KubeconfigSecretKey, err)
	}
	// The reconcile context is the controller's: the node runs until the command stops.
	if err := f.runner.Ensure(ctx, vn, remote); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: f.resync}, nil
}

func (f *follower) setup(mgr ctrl.Manager) error {
	only := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == f.key.Namespace && o.GetName() == f.key.Name
	})
	err := ctrl.NewControllerManagedBy(mgr).Named("virtualkubelet").
		For(&offv1beta1.VirtualNode{}, builder.WithPredicates(only)).
		Complete(f)
	if err != nil {
		return fmt.Errorf("building the virtual node follower: %w", err)
	}
	return nil
}
