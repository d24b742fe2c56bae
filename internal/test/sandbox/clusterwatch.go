package sandbox

// The per-cluster wiring of the sandbox's network: a watch of each cluster's GatewayServers,
// GatewayClients, Services and Pods that plays the cloud load balancer (LoadBalancer ingress),
// kube-proxy (node ports, nodeports.go) and the pods' network (podnet.go), and tells the
// gateway runner (gateways.go) which gateways run.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// clusterWatch follows one cluster's gateway objects and LoadBalancer Services.
type clusterWatch struct {
	r          *gatewayRunner
	name       string
	kubeconfig string
	reader     client.Reader
	writer     client.Client
	trigger    chan struct{}
	clashes    map[gatewayKey]bool // servers reported as unable to run (port in use); loop only
	pods       *podAddresses       // the cluster's pod addresses (podnet.go)
	nodePorts  *[]string           // the node-port rules written in the gateway host, nil before the first (nodeports.go)
}

// poke asks for a sync of the cluster.
func (w *clusterWatch) poke() {
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

// watch starts following cluster c: an informer cache on GatewayServers, GatewayClients,
// Services and Pods, each change triggering a sync (pods keep their addresses in pods).
func (r *gatewayRunner) watch(ctx context.Context, c *testenv.Cluster, pods *podAddresses) error {
	scheme, err := api.NewScheme()
	if err != nil {
		return fmt.Errorf("building scheme: %w", err)
	}
	ca, err := cache.New(c.Config, cache.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating the cache of cluster %s: %w", c.Name, err)
	}
	writer, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating a client of cluster %s: %w", c.Name, err)
	}
	w := &clusterWatch{r: r, name: c.Name, kubeconfig: c.KubeconfigPath, reader: ca, writer: writer, trigger: make(chan struct{}, 1),
		clashes: map[gatewayKey]bool{}, pods: pods}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.poke() },
		UpdateFunc: func(any, any) { w.poke() },
		DeleteFunc: func(any) { w.poke() },
	}
	for _, obj := range []client.Object{&netv1beta1.GatewayServer{}, &netv1beta1.GatewayClient{}, &corev1.Service{}, &corev1.Pod{}} {
		inf, err := ca.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watching %T in cluster %s: %w", obj, c.Name, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return fmt.Errorf("handling events of %T in cluster %s: %w", obj, c.Name, err)
		}
	}
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		if err := ca.Start(ctx); err != nil {
			fmt.Fprintf(r.out, "cache of cluster %s: %v\n", c.Name, err)
		}
	}()
	go func() {
		defer r.wg.Done()
		if !ca.WaitForCacheSync(ctx) {
			return
		}
		w.loop(ctx)
	}()
	return nil
}

// loop syncs the cluster on every change until ctx ends.
func (w *clusterWatch) loop(ctx context.Context) {
	w.poke()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.trigger:
			if err := w.sync(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(w.r.out, "cluster %s: %v\n", w.name, err)
				// Retry later: the cache brings no event for what failed on the API side.
				time.AfterFunc(2*time.Second, w.poke)
			}
		}
	}
}

// sync gives LoadBalancer gateway Services their ingress, NodePort ones their node ports on the
// gateway host, the running pods their addresses, and runs one gateway per GatewayServer and
// GatewayClient.
func (w *clusterWatch) sync(ctx context.Context) error {
	errLB := errors.Join(w.syncLoadBalancers(ctx), w.syncNodePorts(ctx), w.pods.sync(ctx, w.reader))
	want, err := w.wanted(ctx)
	if err != nil {
		return errors.Join(errLB, err)
	}
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	var errs []error
	for k, p := range w.r.procs {
		if k.cluster == w.name && !want[k] && !p.stopping {
			w.r.stopLocked(p)
		}
	}
	for k := range want {
		if _, ok := w.r.procs[k]; ok {
			continue // running, stopping or waiting to restart
		}
		if err := w.r.startLocked(ctx, w, k); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, errLB)...)
}

// wanted returns the gateways that should run in the cluster: one per GatewayClient and one per
// GatewayServer, but for a server whose UDP port an older server of the cluster holds (reported
// by portClash).
func (w *clusterWatch) wanted(ctx context.Context) (map[gatewayKey]bool, error) {
	want := map[gatewayKey]bool{}
	servers := &netv1beta1.GatewayServerList{}
	if err := w.reader.List(ctx, servers); err != nil {
		return nil, fmt.Errorf("listing GatewayServers: %w", err)
	}
	// A cluster's servers share its gateway host: one server per UDP port, the oldest first.
	slices.SortFunc(servers.Items, func(a, b netv1beta1.GatewayServer) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	ports := map[int32]string{}
	for i := range servers.Items {
		g := &servers.Items[i]
		if !g.DeletionTimestamp.IsZero() {
			continue
		}
		k := gatewayKey{w.name, "server", g.Namespace, g.Name}
		port := workload.ListenPort(g)
		if other, taken := ports[port]; taken {
			w.portClash(ctx, g, port, other)
			continue
		}
		ports[port] = g.Namespace + "/" + g.Name
		want[k] = true
		delete(w.clashes, k)
	}
	clients := &netv1beta1.GatewayClientList{}
	if err := w.reader.List(ctx, clients); err != nil {
		return nil, fmt.Errorf("listing GatewayClients: %w", err)
	}
	for _, g := range clients.Items {
		if g.DeletionTimestamp.IsZero() {
			want[gatewayKey{w.name, "client", g.Namespace, g.Name}] = true
		}
	}
	return want, nil
}

// portClash reports, once, that GatewayServer g cannot run because the server other in the same
// cluster listens on its port already: in the supervisor's log and as a Warning Event on g.
func (w *clusterWatch) portClash(ctx context.Context, g *netv1beta1.GatewayServer, port int32, other string) {
	k := gatewayKey{w.name, "server", g.Namespace, g.Name}
	if w.clashes[k] {
		return
	}
	msg := fmt.Sprintf("the sandbox runs all gateway servers of cluster %s in one network namespace, and GatewayServer %s uses UDP port %d already: "+
		"give this peering's gateway another port", w.name, other, port)
	fmt.Fprintf(w.r.out, "gateway %s not started: %s\n", k, msg)
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: g.Name + ".", Namespace: g.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: netv1beta1.GroupVersion.String(), Kind: "GatewayServer",
			Namespace: g.Namespace, Name: g.Name, UID: g.UID},
		Reason: consts.PortInUseReason, Message: msg, Type: corev1.EventTypeWarning, Count: 1,
		FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "liqo-sandbox"},
	}
	if err := w.writer.Create(ctx, ev); err != nil {
		fmt.Fprintf(w.r.out, "recording the port clash on GatewayServer %s/%s: %v\n", g.Namespace, g.Name, err)
	}
	w.clashes[k] = true
}

// syncLoadBalancers sets the ingress of every LoadBalancer Service a GatewayServer controls to
// the cluster's gateway host address, as a cloud's load balancer controller would.
func (w *clusterWatch) syncLoadBalancers(ctx context.Context) error {
	ip := HostAddress(w.name)
	svcs := &corev1.ServiceList{}
	if err := w.reader.List(ctx, svcs); err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	var errs []error
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || !ofGatewayServer(svc) {
			continue
		}
		if in := svc.Status.LoadBalancer.Ingress; len(in) == 1 && in[0].IP == ip {
			continue
		}
		svc = svc.DeepCopy()
		vip := corev1.LoadBalancerIPModeVIP
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip, IPMode: &vip}}
		if err := w.writer.Status().Update(ctx, svc); err != nil {
			errs = append(errs, fmt.Errorf("setting the load balancer ingress of Service %s/%s: %w", svc.Namespace, svc.Name, err))
			continue
		}
		fmt.Fprintf(w.r.out, "load balancer: Service %s/%s on %s reachable at %s\n", svc.Namespace, svc.Name, w.name, ip)
	}
	return errors.Join(errs...)
}
