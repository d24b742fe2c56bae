package vnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	vknode "github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode/namespaces"
)

// Options tune the runner.
type Options struct {
	// ProbeInterval is how often the provider's API server is checked. Default 5s.
	ProbeInterval time.Duration
	// LeaseDurationSeconds is the node Lease's duration. Default 40.
	LeaseDurationSeconds int32
	// ConsumerID is the local cluster's ID.
	ConsumerID corev1beta1.ClusterID
	// LocalConfig reaches the consumer cluster; required when Reflectors are set.
	LocalConfig *rest.Config
	// Reflectors run for every virtual node, next to its node controller.
	Reflectors []Reflector
	// ReflectorBackoff is the wait before a failed reflector runs again. Default 2s.
	ReflectorBackoff time.Duration
	// KubeletAddress is where each virtual node's kubelet endpoint listens, host:port; port 0
	// gives each node a free port of its own (kept while the node runs). Empty: no endpoint.
	// The Node advertises it (InternalIP, kubelet port) and reflectors get it in Env.Kubelet.
	KubeletAddress string
	// KubeletAdvertiseIP is the InternalIP the Nodes advertise; default: KubeletAddress's host.
	KubeletAdvertiseIP string
}

// Runner hosts virtual nodes in-process.
type Runner struct {
	local kubernetes.Interface
	opts  Options
	log   logr.Logger

	mu    sync.Mutex
	nodes map[string]*running
	ports map[string]int32 // the kubelet port of each node, kept across restarts
}

// running is one hosted virtual node.
type running struct {
	spec       offv1beta1.VirtualNodeSpec
	remote     string // fingerprint of the provider's rest config (a renewed identity restarts the node)
	cancel     context.CancelFunc
	done       chan struct{}
	reflectors *sync.WaitGroup
	kubelet    *KubeletEndpoint
	provider   *provider
}

// NewRunner returns a runner writing Nodes and Leases through local.
func NewRunner(local kubernetes.Interface, opts Options, log logr.Logger) *Runner {
	if opts.ProbeInterval == 0 {
		opts.ProbeInterval = 5 * time.Second
	}
	if opts.LeaseDurationSeconds == 0 {
		opts.LeaseDurationSeconds = 40
	}
	if opts.ReflectorBackoff == 0 {
		opts.ReflectorBackoff = 2 * time.Second
	}
	return &Runner{local: local, opts: opts, log: log, nodes: map[string]*running{}, ports: map[string]int32{}}
}

// Ensure runs the virtual node of vn towards the provider reached with remote, restarting it
// when its spec or remote (e.g. a renewed identity) changed; what the provider says of its
// nodes (vn's consts.ProviderNodesNotReadyAnnotation) reaches the Node's Ready condition
// without a restart. ctx bounds its life.
func (r *Runner) Ensure(ctx context.Context, vn *offv1beta1.VirtualNode, remote *rest.Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.nodes[vn.Name]; ok {
		if equality.Semantic.DeepEqual(cur.spec, vn.Spec) && cur.remote == fingerprint(remote) {
			select {
			case <-cur.done: // ended on its own: start again
			default:
				cur.provider.setNoReadyNode(vn.Annotations[consts.ProviderNodesNotReadyAnnotation])
				return nil
			}
		}
		cur.cancel()
		<-cur.done
		cur.reflectors.Wait()
		_ = cur.kubelet.release()
		delete(r.nodes, vn.Name)
		if err := relabelNode(ctx, r.local.CoreV1().Nodes(), vn.Name, &cur.spec, &vn.Spec); err != nil {
			return err
		}
	}
	remoteKube, err := kubernetes.NewForConfig(withTimeout(remote, r.opts.ProbeInterval))
	if err != nil {
		return fmt.Errorf("client of cluster %s: %w", vn.Spec.ClusterID, err)
	}
	node := NodeFor(vn)
	var kubelet *KubeletEndpoint
	if r.opts.KubeletAddress != "" {
		if kubelet, err = reserveEndpoint(r.opts.KubeletAddress, r.opts.KubeletAdvertiseIP, r.ports[vn.Name]); err != nil {
			return fmt.Errorf("virtual node %s: %w", vn.Name, err)
		}
		r.ports[vn.Name] = kubelet.Port
		advertise(node, kubelet)
	}
	p := &provider{remote: remoteKube, node: node, interval: r.opts.ProbeInterval, log: r.log.WithValues("node", vn.Name),
		noReadyNode: vn.Annotations[consts.ProviderNodesNotReadyAnnotation], answers: &answers{}}
	ctrl, err := vknode.NewNodeController(p, p.node.DeepCopy(), r.local.CoreV1().Nodes(),
		vknode.WithNodeEnableLeaseV1(r.local.CoordinationV1().Leases(corev1.NamespaceNodeLease), r.opts.LeaseDurationSeconds),
		vknode.WithNodeStatusUpdateErrorHandler(func(ctx context.Context, err error) error {
			// The Node was deleted behind our back: create it again.
			_, cerr := r.local.CoreV1().Nodes().Create(ctx, p.node.DeepCopy(), createOptions)
			return errors.Join(err, cerr)
		}),
	)
	if err != nil {
		_ = kubelet.release()
		return fmt.Errorf("node controller of %s: %w", vn.Name, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	run := &running{spec: *vn.Spec.DeepCopy(), remote: fingerprint(remote), cancel: cancel, done: make(chan struct{}), reflectors: &sync.WaitGroup{},
		kubelet: kubelet, provider: p}
	r.nodes[vn.Name] = run
	go p.probe(rctx)
	if len(r.opts.Reflectors) > 0 {
		if err := r.startReflectors(rctx, vn, p.answers.wrap(remote), run); err != nil {
			cancel()
			_ = kubelet.release()
			delete(r.nodes, vn.Name)
			return err
		}
	}
	go func() {
		defer close(run.done)
		if err := ctrl.Run(rctx); err != nil && rctx.Err() == nil {
			r.log.Error(err, "virtual node stopped", "node", vn.Name)
		}
	}()
	return nil
}

// Stop ends the virtual node of that name, if it runs, and deletes its Node.
func (r *Runner) Stop(ctx context.Context, name string) error {
	r.mu.Lock()
	cur, ok := r.nodes[name]
	delete(r.nodes, name)
	delete(r.ports, name)
	r.mu.Unlock()
	if ok {
		cur.cancel()
		<-cur.done
		cur.reflectors.Wait()
		_ = cur.kubelet.release()
	}
	err := r.local.CoreV1().Nodes().Delete(ctx, name, deleteOptions)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	return nil
}

// Running returns the names of the hosted virtual nodes.
func (r *Runner) Running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.nodes))
	for n := range r.nodes {
		out = append(out, n)
	}
	return out
}

// fingerprint identifies where and as whom cfg connects.
func fingerprint(cfg *rest.Config) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(cfg.Host), cfg.CAData, cfg.CertData, cfg.KeyData, []byte(cfg.BearerToken), []byte(cfg.CAFile), []byte(cfg.CertFile)} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func withTimeout(cfg *rest.Config, d time.Duration) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Timeout = d
	return c
}

// startReflectors starts the namespace mapper and every reflector of one virtual node; they
// stop with ctx.
func (r *Runner) startReflectors(ctx context.Context, vn *offv1beta1.VirtualNode, remote *rest.Config, run *running) error {
	if r.opts.LocalConfig == nil {
		return fmt.Errorf("virtual node %s: the runner has reflectors but no LocalConfig", vn.Name)
	}
	mapper, err := namespaces.Start(ctx, r.opts.LocalConfig, vn.Namespace, vn.Spec.ClusterID)
	if err != nil {
		return fmt.Errorf("virtual node %s: %w", vn.Name, err)
	}
	remoteKube, err := kubernetes.NewForConfig(remote)
	if err != nil {
		return fmt.Errorf("client of cluster %s: %w", vn.Spec.ClusterID, err)
	}
	env := &Env{NodeName: vn.Name, ConsumerID: r.opts.ConsumerID, ProviderID: vn.Spec.ClusterID,
		TenantNamespace: vn.Namespace, Local: r.local, LocalConfig: r.opts.LocalConfig,
		Remote: remoteKube, RemoteConfig: rest.CopyConfig(remote), Namespaces: mapper,
		Kubelet: run.kubelet, OffloadingPatch: vn.Spec.OffloadingPatch.DeepCopy(), Log: r.log.WithValues("node", vn.Name)}
	for _, refl := range r.opts.Reflectors {
		run.reflectors.Add(1)
		go func() {
			defer run.reflectors.Done()
			log := env.Log.WithValues("reflector", refl.Name())
			for ctx.Err() == nil {
				if err := refl.Run(ctx, env); err != nil && ctx.Err() == nil {
					log.Error(err, "reflector stopped; starting it again", "after", r.opts.ReflectorBackoff)
				}
				select {
				case <-ctx.Done():
				case <-time.After(r.opts.ReflectorBackoff):
				}
			}
		}()
	}
	return nil
}
