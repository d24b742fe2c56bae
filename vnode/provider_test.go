package vnode

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestProbeHysteresis: the node turns NotReady only after unreachableAfter failed probes in a
// row, and Ready again at the first answer.
func TestProbeHysteresis(t *testing.T) {
	var shown []corev1.ConditionStatus
	p := &provider{node: &corev1.Node{}, log: logr.Discard()}
	p.NotifyNodeStatus(t.Context(), func(n *corev1.Node) { shown = append(shown, n.Status.Conditions[0].Status) })
	timeout := errors.New("context deadline exceeded")
	steps := []struct {
		err  error
		want []corev1.ConditionStatus
	}{
		{nil, []corev1.ConditionStatus{corev1.ConditionTrue}},
		{timeout, []corev1.ConditionStatus{corev1.ConditionTrue}},
		{timeout, []corev1.ConditionStatus{corev1.ConditionTrue}},
		{nil, []corev1.ConditionStatus{corev1.ConditionTrue}},
		{timeout, []corev1.ConditionStatus{corev1.ConditionTrue}},
		{timeout, []corev1.ConditionStatus{corev1.ConditionTrue}},
		{timeout, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse}},
		{timeout, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse}},
		{nil, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionTrue}},
	}
	for i, s := range steps {
		p.record(s.err)
		p.push()
		if len(shown) != len(s.want) || shown[len(shown)-1] != s.want[len(s.want)-1] {
			t.Fatalf("after probe %d (error %v): the node showed %v, want %v", i+1, s.err, shown, s.want)
		}
	}
	if p.unreachable != timeout.Error() {
		t.Errorf("the NotReady message's cause is %q, want %q", p.unreachable, timeout.Error())
	}
}

// TestBusyServerIsNotUnreachable: a provider API server that lets the probe time out while it
// answers the node's other requests (a 404 is an answer too) keeps the node Ready; once it
// answers nothing, the node turns NotReady after unreachableAfter probes.
func TestBusyServerIsNotUnreachable(t *testing.T) {
	var probes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			probes.Add(1)
			select { // later than the probe's timeout
			case <-time.After(time.Second):
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer srv.Close()
	const interval = 100 * time.Millisecond
	cfg := &rest.Config{Host: srv.URL}
	remote := kubernetes.NewForConfigOrDie(withTimeout(cfg, interval))
	var mu sync.Mutex
	var shown []corev1.ConditionStatus
	p := &provider{remote: remote, node: &corev1.Node{}, interval: interval, log: logr.Discard(), answers: &answers{}}
	p.reachable = ptr.To(true) // as after a first answer
	p.NotifyNodeStatus(t.Context(), func(n *corev1.Node) {
		mu.Lock()
		defer mu.Unlock()
		shown = append(shown, n.Status.Conditions[0].Status)
	})
	busy := kubernetes.NewForConfigOrDie(p.answers.wrap(cfg))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go p.probe(ctx)
	shownNow := func() []corev1.ConditionStatus {
		mu.Lock()
		defer mu.Unlock()
		return append([]corev1.ConditionStatus(nil), shown...)
	}

	// Busy: the node's other requests answered every 20 ms, the probes all late.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		_, _ = busy.CoreV1().Namespaces().Get(ctx, "work", metav1.GetOptions{})
	}
	if n := probes.Load(); n < unreachableAfter+1 {
		t.Fatalf("only %d probes in a second of a busy server, want more than %d", n, unreachableAfter)
	}
	if got := shownNow(); slices.Contains(got, corev1.ConditionFalse) {
		t.Fatalf("the node turned NotReady while the server answered its other requests (%d probes, all late): %v", probes.Load(), got)
	}

	// Away: nothing answered any more.
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(shownNow(), corev1.ConditionFalse) {
		if time.Now().After(deadline) {
			t.Fatalf("the node did not turn NotReady with nothing answered: %v", shownNow())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
