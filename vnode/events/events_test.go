package events_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode/events"
	"github.com/peerkit/terraform-provider-liqo/vnode/namespaces"
	rt "github.com/peerkit/terraform-provider-liqo/vnode/reflection/reflectiontest"
)

const (
	localNS  = "app"
	remoteNS = "app-cl-consumer"
	timeout  = 20 * time.Second
)

// TestPodEventsMirrored: Events about remote pods appear once on the local pods of the virtual
// node (read as the consumer's liqo-remote-workload user on the provider), follow updates, are
// not duplicated by a restart, and Events of pods that are not offloaded through the node stay
// on the provider until such a pod appears.
func TestPodEventsMirrored(t *testing.T) {
	b := rt.New(t, testenv.ClusterOptions{}, testenv.ClusterOptions{})
	b.Namespaces(t, localNS, remoteNS)
	mapper := namespaces.Static(map[string]string{localNS: remoteNS})
	stop := rt.Start(t, events.New(), b.Env(t, mapper))
	ctx := t.Context()

	web := localPod(t, b, "web", rt.NodeName)
	localPod(t, b, "elsewhere", "worker-1") // same name remotely, but not on the virtual node

	remote := b.Admin.CoreV1().Events(remoteNS)
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	pulled, err := remote.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: remoteNS, Name: "web", UID: "remote-uid",
			FieldPath: "spec.containers{web}"},
		Reason: "Pulled", Message: "Successfully pulled image", Type: corev1.EventTypeNormal, Count: 1,
		Source: corev1.EventSource{Component: "kubelet", Host: "provider-node-1"}, FirstTimestamp: now, LastTimestamp: now,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range []string{"elsewhere", "ghost"} {
		if _, err := remote.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: pod + ".1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: remoteNS, Name: pod},
			Reason:         "Started", Message: "started", Type: corev1.EventTypeNormal, Count: 1,
			Source: corev1.EventSource{Component: "kubelet"}, FirstTimestamp: now, LastTimestamp: now}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	mirror := waitMirrors(t, b, "web", 1, func(e []corev1.Event) bool { return true })[0]
	if mirror.Name != events.LocalName("web", pulled.UID) || mirror.Reason != "Pulled" || mirror.Message != pulled.Message ||
		mirror.Type != corev1.EventTypeNormal || mirror.Count != 1 || mirror.Source != pulled.Source ||
		!mirror.FirstTimestamp.Equal(&now) || !mirror.LastTimestamp.Equal(&now) {
		t.Errorf("mirror %+v does not match the remote event %+v", mirror, pulled)
	}
	if io := mirror.InvolvedObject; io.Kind != "Pod" || io.Namespace != localNS || io.Name != "web" || io.UID != web.UID ||
		io.FieldPath != "spec.containers{web}" {
		t.Errorf("mirror is about %+v, want the local pod %s", io, web.UID)
	}
	if mirror.Labels[consts.ReflectedLabel] != "true" || mirror.Labels[consts.RemoteClusterIDLabel] != string(rt.ProviderID) {
		t.Errorf("mirror labels %v", mirror.Labels)
	}

	// The remote event repeats: the mirror follows, still one.
	pulled.Count, pulled.Message = 3, "Successfully pulled image again"
	pulled.LastTimestamp = metav1.NewTime(now.Add(time.Minute))
	if pulled, err = remote.Update(ctx, pulled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mirror = waitMirrors(t, b, "web", 1, func(e []corev1.Event) bool { return e[0].Count == 3 && e[0].Message == pulled.Message })[0]

	// A pod appears locally after its remote event: the event follows it.
	localPod(t, b, "ghost", rt.NodeName)
	waitMirrors(t, b, "ghost", 1, func([]corev1.Event) bool { return true })

	// A restart neither duplicates nor rewrites what was mirrored; a new events.k8s.io event
	// (with a series) arrives.
	stop()
	rt.Start(t, events.New(), b.Env(t, mapper))
	if _, err := b.Admin.EventsV1().Events(remoteNS).Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.2"},
		EventTime: metav1.NewMicroTime(time.Now()), Series: &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Now())},
		ReportingController: "kubelet", ReportingInstance: "provider-node-1", Action: "Probe", Reason: "Unhealthy",
		Regarding: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: remoteNS, Name: "web"},
		Note:      "Readiness probe failed", Type: corev1.EventTypeWarning}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitMirrors(t, b, "web", 2, func([]corev1.Event) bool { return true })
	for _, e := range got {
		switch e.Reason {
		case "Pulled":
			if e.ResourceVersion != mirror.ResourceVersion {
				t.Errorf("the restart rewrote an up-to-date mirror (resourceVersion %s, was %s)", e.ResourceVersion, mirror.ResourceVersion)
			}
		case "Unhealthy":
			if e.Series == nil || e.Series.Count != 2 || e.Type != corev1.EventTypeWarning || e.ReportingController != "kubelet" || e.Action != "Probe" {
				t.Errorf("series event mirrored as %+v", e)
			}
		default:
			t.Errorf("unexpected mirror %+v", e)
		}
	}
	rt.Never(t, "an event of a pod on another node mirrored", time.Second, func(ctx context.Context) bool {
		return len(mirrorsOf(ctx, t, b, "elsewhere")) > 0
	})
}

func localPod(t *testing.T, b *rt.Bed, name, node string) *corev1.Pod {
	t.Helper()
	p, err := b.Local.CoreV1().Pods(localNS).Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mirrorsOf lists the local events about a pod.
func mirrorsOf(ctx context.Context, t *testing.T, b *rt.Bed, pod string) []corev1.Event {
	l, err := b.Local.CoreV1().Events(localNS).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod).String()})
	if err != nil {
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			t.Errorf("listing events: %v", err)
		}
		return nil
	}
	return l.Items
}

// waitMirrors waits until a pod has exactly n local events satisfying ok, and returns them.
func waitMirrors(t *testing.T, b *rt.Bed, pod string, n int, ok func([]corev1.Event) bool) []corev1.Event {
	t.Helper()
	var got []corev1.Event
	rt.Eventually(t, "the events of pod "+pod+" mirrored", timeout, func(ctx context.Context) (bool, error) {
		got = mirrorsOf(ctx, t, b, pod)
		return len(got) == n && ok(got), nil
	})
	// Exactly n, and it stays so.
	rt.Never(t, "more mirrors of pod "+pod, 500*time.Millisecond, func(ctx context.Context) bool {
		return len(mirrorsOf(ctx, t, b, pod)) > n
	})
	return got
}
