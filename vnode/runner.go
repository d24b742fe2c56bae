package vnode

import (
	"context"
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

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
)

// Options tune the runner.
type Options struct {
	// ProbeInterval is how often the provider's API server is checked. Default 5s.
	ProbeInterval time.Duration
	// LeaseDurationSeconds is the node Lease's duration. Default 40.
	LeaseDurationSeconds int32
}

// Runner hosts virtual nodes in-process.
type Runner struct {
	local kubernetes.Interface
	opts  Options
	log   logr.Logger

	mu    sync.Mutex
	nodes map[string]*running
}

// running is one hosted virtual node.
type running struct {
	spec   offv1beta1.VirtualNodeSpec
	cancel context.CancelFunc
	done   chan struct{}
}

// NewRunner returns a runner writing Nodes and Leases through local.
func NewRunner(local kubernetes.Interface, opts Options, log logr.Logger) *Runner {
	if opts.ProbeInterval == 0 {
		opts.ProbeInterval = 5 * time.Second
	}
	if opts.LeaseDurationSeconds == 0 {
		opts.LeaseDurationSeconds = 40
	}
	return &Runner{local: local, opts: opts, log: log, nodes: map[string]*running{}}
}

// Ensure runs the virtual node of vn towards the provider reached with remote, restarting it
// when its spec changed. ctx bounds its life.
func (r *Runner) Ensure(ctx context.Context, vn *offv1beta1.VirtualNode, remote *rest.Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.nodes[vn.Name]; ok {
		if equality.Semantic.DeepEqual(cur.spec, vn.Spec) {
			select {
			case <-cur.done: // ended on its own: start again
			default:
				return nil
			}
		}
		cur.cancel()
		<-cur.done
		delete(r.nodes, vn.Name)
	}
	remoteKube, err := kubernetes.NewForConfig(withTimeout(remote, r.opts.ProbeInterval))
	if err != nil {
		return fmt.Errorf("client of cluster %s: %w", vn.Spec.ClusterID, err)
	}
	p := &provider{remote: remoteKube, node: NodeFor(vn), interval: r.opts.ProbeInterval, log: r.log.WithValues("node", vn.Name)}
	ctrl, err := vknode.NewNodeController(p, p.node.DeepCopy(), r.local.CoreV1().Nodes(),
		vknode.WithNodeEnableLeaseV1(r.local.CoordinationV1().Leases(corev1.NamespaceNodeLease), r.opts.LeaseDurationSeconds),
		vknode.WithNodeStatusUpdateErrorHandler(func(ctx context.Context, err error) error {
			// The Node was deleted behind our back: create it again.
			_, cerr := r.local.CoreV1().Nodes().Create(ctx, p.node.DeepCopy(), createOptions)
			return errors.Join(err, cerr)
		}),
	)
	if err != nil {
		return fmt.Errorf("node controller of %s: %w", vn.Name, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	run := &running{spec: *vn.Spec.DeepCopy(), cancel: cancel, done: make(chan struct{})}
	r.nodes[vn.Name] = run
	go p.probe(rctx)
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
	r.mu.Unlock()
	if ok {
		cur.cancel()
		<-cur.done
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

func withTimeout(cfg *rest.Config, d time.Duration) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Timeout = d
	return c
}
