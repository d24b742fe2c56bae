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

// reachableMessage is the Ready condition's message while all is well.
const reachableMessage = "the provider cluster's API server answers"

// unreachableAfter is how many probes in a row must fail before the node turns NotReady: one
// slow answer of a busy API server (a probe times out after the probe interval) does not flip
// the node, as one missed heartbeat does not flip a real node.
const unreachableAfter = 3

// provider is virtual-kubelet's NodeProvider for one virtual node: the process is alive as long
// as it runs (Ping), and the node's Ready condition follows whether the provider cluster's API
// server answers (probe) and whether the provider has a Ready node for the slice (setNoReadyNode,
// from what the provider writes on its copy of the slice, which replication brings back). Both
// make the node NotReady the same way, with a reason of its own: the node lifecycle controller
// then taints it not-ready (no new pod scheduled there; after their toleration, 300 s by
// default, its pods are evicted), as for a real node.
type provider struct {
	remote   kubernetes.Interface
	node     *corev1.Node
	interval time.Duration
	log      logr.Logger
	// answers tells when the provider's API server last answered the node's other requests;
	// nil for none.
	answers *answers

	mu          sync.Mutex
	notify      func(*corev1.Node)
	reachable   *bool  // nil until the first probe
	failures    int    // probes failed in a row
	unreachable string // why, when not reachable
	noReadyNode string // the provider's word that it has no Ready node; "" when it has one
	shown       string // the reason (and message) last pushed to the Node
}

// Ping reports the virtual node's process as alive.
func (p *provider) Ping(context.Context) error { return nil }

// NotifyNodeStatus registers the callback that pushes status changes to the Node.
func (p *provider) NotifyNodeStatus(_ context.Context, cb func(*corev1.Node)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = cb
}

// setNoReadyNode records what the provider says of its nodes ("": one is Ready) and pushes a
// change to the Node.
func (p *provider) setNoReadyNode(msg string) {
	p.mu.Lock()
	p.noReadyNode = msg
	p.mu.Unlock()
	p.push()
}

// push reports the node's readiness when it changed since it was last reported; not before the
// first probe, nor before the node controller registered its callback (the next probe does).
func (p *provider) push() {
	p.mu.Lock()
	if p.reachable == nil || p.notify == nil {
		p.mu.Unlock()
		return
	}
	ready, reason, msg := true, ReasonProviderReachable, reachableMessage
	switch {
	case !*p.reachable:
		ready, reason, msg = false, ReasonProviderUnreachable, "the provider cluster's API server does not answer: "+p.unreachable
	case p.noReadyNode != "":
		ready, reason, msg = false, ReasonProviderNoReadyNode, "the provider cluster answers, but none of its nodes is Ready: "+p.noReadyNode
	}
	key := reason
	if reason == ReasonProviderNoReadyNode {
		key += ": " + msg
	}
	if key == p.shown {
		p.mu.Unlock()
		return
	}
	p.shown = key
	cb := p.notify
	p.mu.Unlock()
	p.log.Info("virtual node readiness changed", "ready", ready, "reason", reason, "message", msg)
	n := p.node.DeepCopy()
	n.Status.Conditions = conditions(ready, reason, msg)
	cb(n)
}

// probe checks the provider's API server every interval and reports changes of reachability:
// reachable after one answer, unreachable after unreachableAfter failures in a row. A failed
// probe counts as an answer when the server answered the node's other requests since one
// interval before it (answers).
func (p *provider) probe(ctx context.Context) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		start := time.Now()
		err := p.remote.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
		if ctx.Err() != nil {
			return
		}
		if err != nil && p.answers.since(start.Add(-p.interval)) {
			p.log.V(1).Info("the probe failed, but the provider's API server answered other requests: busy, not unreachable", "error", err.Error())
			err = nil
		}
		p.record(err)
		p.push()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// record takes one probe's outcome into the reachability the node shows.
func (p *provider) record(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.failures = 0
		ok := true
		p.reachable = &ok
		return
	}
	p.failures++
	if p.shown != ReasonProviderUnreachable {
		p.unreachable = err.Error()
	}
	if p.failures >= unreachableAfter {
		ok := false
		p.reachable = &ok
	}
}
