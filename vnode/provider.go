package vnode

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

var (
	createOptions = metav1.CreateOptions{}
	deleteOptions = metav1.DeleteOptions{}
)

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// provider is virtual-kubelet's NodeProvider for one virtual node: the process is alive as long
// as it runs (Ping), and the node's Ready condition follows whether the provider cluster's API
// server answers.
type provider struct {
	remote   kubernetes.Interface
	node     *corev1.Node
	interval time.Duration
	log      logr.Logger

	mu     sync.Mutex
	notify func(*corev1.Node)
	ready  *bool
}

// Ping reports the virtual node's process as alive.
func (p *provider) Ping(context.Context) error { return nil }

// NotifyNodeStatus registers the callback that pushes status changes to the Node.
func (p *provider) NotifyNodeStatus(_ context.Context, cb func(*corev1.Node)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = cb
}

// probe checks the provider's API server every interval and reports changes of reachability.
func (p *provider) probe(ctx context.Context) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		err := p.remote.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
		if ctx.Err() != nil {
			return
		}
		ok := err == nil
		p.mu.Lock()
		changed := p.ready == nil || *p.ready != ok
		p.ready = &ok
		cb := p.notify
		p.mu.Unlock()
		if changed && cb != nil {
			why := ""
			if err != nil {
				why = "the provider cluster's API server does not answer: " + err.Error()
			}
			p.log.Info("provider reachability changed", "ready", ok)
			n := p.node.DeepCopy()
			n.Status.Conditions = conditions(ok, why)
			cb(n)
		} else if changed {
			p.mu.Lock()
			p.ready = nil // not registered yet: report at the next probe
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
