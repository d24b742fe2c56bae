// Package events mirrors the Events of offloaded pods from the provider back to the consumer:
// an Event about a Pod in a remote namespace becomes an Event about the local Pod of the same
// name (scheduled to the virtual node) in the local namespace, with the same reason, message,
// type, count, series, times and source, so that `kubectl describe pod` and `kubectl get
// events` on the consumer tell what happens to the pod on the provider.
//
// The local Event's name is derived from the remote Event's UID (LocalName), so a restarted
// reflector finds the mirrors it made and updates them instead of making new ones. Mirrors are
// labelled consts.ReflectedLabel=true and consts.RemoteClusterIDLabel=<provider>; the
// reflector never changes a local Event without those labels. Mirrors are not deleted: Events
// expire on the consumer as on the provider.
package events

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/reflection"
)

// DefaultWorkers is how many Events a Reflector mirrors in parallel unless told otherwise.
const DefaultWorkers = 2

// Informer names in a reflection.Namespace.
const (
	remoteEvents = "events"
	localEvents  = "events"
	localPods    = "pods"
	// podIndex indexes remote Events by the name of their Pod.
	podIndex = "pod"
)

// Reflector mirrors the Events of remote pods onto the local pods of one virtual node. It
// implements vnode.Reflector.
type Reflector struct {
	// Workers mirror Events in parallel. Default DefaultWorkers.
	Workers int
	// QPS and Burst limit the reflector's requests to each cluster. Default
	// reflection.DefaultQPS and reflection.DefaultBurst.
	QPS   float32
	Burst int
}

var _ vnode.Reflector = (*Reflector)(nil)

// New returns an Event Reflector.
func New() *Reflector { return &Reflector{} }

// Name names the reflector in logs.
func (r *Reflector) Name() string { return "events" }

// run is one Run of a Reflector.
type run struct {
	env *vnode.Env
	log logr.Logger
}

// Run mirrors Events until ctx ends.
func (r *Reflector) Run(ctx context.Context, env *vnode.Env) error {
	env, err := reflection.Tuned(r.Name(), env, r.QPS, r.Burst)
	if err != nil {
		return err
	}
	rn := &run{env: env, log: env.Log.WithValues("reflector", r.Name())}
	workers := r.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	loop := &reflection.Loop{Name: r.Name(), Workers: workers, Setup: rn.setup, Resync: rn.resync, Reconcile: rn.reconcile}
	return loop.Run(ctx, env)
}

// LocalName is the name of the local mirror of a remote Event about pod: the pod's name and a
// digest of the remote Event's UID, stable across restarts.
func LocalName(pod string, remoteUID types.UID) string {
	sum := sha256.Sum256([]byte(remoteUID))
	if len(pod) > 200 {
		pod = strings.TrimRight(pod[:200], ".-")
	}
	return pod + ".liqo-" + hex.EncodeToString(sum[:8])
}

// setup watches the remote namespace's Pod Events, the local pods on the virtual node (whose
// arrival releases Events that came first) and the local mirrors.
func (rn *run) setup(ns *reflection.Namespace, enqueue func(reflection.Key)) error {
	remote := coreinformers.NewFilteredEventInformer(rn.env.Remote, ns.Remote, 0,
		cache.Indexers{podIndex: func(obj any) ([]string, error) {
			if ev, ok := obj.(*corev1.Event); ok {
				return []string{ev.InvolvedObject.Name}, nil
			}
			return nil, nil
		}},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("involvedObject.kind", "Pod").String()
		})
	pods := coreinformers.NewFilteredPodInformer(rn.env.Local, ns.Local, 0, cache.Indexers{},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", rn.env.NodeName).String()
		})
	mirrors := coreinformers.NewFilteredEventInformer(rn.env.Local, ns.Local, 0, cache.Indexers{},
		func(o *metav1.ListOptions) {
			o.LabelSelector = labels.SelectorFromSet(labels.Set{consts.ReflectedLabel: "true",
				consts.RemoteClusterIDLabel: string(rn.env.ProviderID)}).String()
		})
	ns.RemoteInf[remoteEvents], ns.LocalInf[localPods], ns.LocalInf[localEvents] = remote, pods, mirrors

	if _, err := remote.AddEventHandler(reflection.Handler(enqueue, func(obj any) []reflection.Key {
		if m := reflection.Meta(obj); m != nil {
			return []reflection.Key{{Namespace: ns.Local, Name: m.GetName()}}
		}
		return nil
	})); err != nil {
		return fmt.Errorf("watching remote events: %w", err)
	}
	podEvents := func(obj any) {
		if m := reflection.Meta(obj); m != nil {
			for _, name := range reflection.IndexedNames(remote, podIndex, m.GetName()) {
				enqueue(reflection.Key{Namespace: ns.Local, Name: name})
			}
		}
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: podEvents,
		UpdateFunc: func(old, obj any) { // a pod of the same name again
			if o, n := reflection.Meta(old), reflection.Meta(obj); o != nil && n != nil && o.GetUID() != n.GetUID() {
				podEvents(obj)
			}
		},
	}); err != nil {
		return fmt.Errorf("watching local pods: %w", err)
	}
	return nil
}

// resync enqueues every remote Event.
func (rn *run) resync(ns *reflection.Namespace, enqueue func(reflection.Key)) {
	for _, name := range reflection.Names(ns.RemoteInf[remoteEvents]) {
		enqueue(reflection.Key{Namespace: ns.Local, Name: name})
	}
}

// reconcile mirrors the remote Event named k.Name, if its pod is a local pod on the node.
func (rn *run) reconcile(ctx context.Context, ns *reflection.Namespace, k reflection.Key) error {
	ev, ok := reflection.Cached[*corev1.Event](ns.RemoteInf[remoteEvents], ns.Remote, k.Name)
	if !ok || ev.InvolvedObject.Kind != "Pod" || (ev.InvolvedObject.Namespace != "" && ev.InvolvedObject.Namespace != ns.Remote) {
		return nil // gone (Events expire) or not about a pod of this namespace
	}
	pod, ok := reflection.Cached[*corev1.Pod](ns.LocalInf[localPods], ns.Local, ev.InvolvedObject.Name)
	if !ok {
		return nil // not offloaded through this node (yet: its arrival enqueues this Event again)
	}
	want := rn.mirror(ev, pod, ns.Local)
	cl := rn.env.Local.CoreV1().Events(ns.Local)
	cur, ok := reflection.Cached[*corev1.Event](ns.LocalInf[localEvents], ns.Local, want.Name)
	if !ok {
		_, err := cl.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("mirroring event %s/%s of pod %s as %s/%s: %w", ns.Remote, ev.Name, pod.Name, ns.Local, want.Name, err)
		}
		if cur, err = cl.Get(ctx, want.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("reading event %s/%s: %w", ns.Local, want.Name, err)
		}
		if !rn.ours(cur) {
			rn.log.Info("not mirroring an event: a local event of that name is no mirror from this provider",
				"namespace", ns.Local, "event", want.Name)
			return nil
		}
	}
	next := cur.DeepCopy()
	if !copyContent(next, want) {
		return nil
	}
	if _, err := cl.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating event %s/%s mirrored from %s/%s: %w", ns.Local, want.Name, ns.Remote, ev.Name, err)
	}
	return nil
}

// ours says whether a local Event is a mirror from this provider.
func (rn *run) ours(ev *corev1.Event) bool {
	return ev.Labels[consts.ReflectedLabel] == "true" && ev.Labels[consts.RemoteClusterIDLabel] == string(rn.env.ProviderID)
}

// mirror is the local Event for a remote one about pod.
func (rn *run) mirror(ev *corev1.Event, pod *corev1.Pod, namespace string) *corev1.Event {
	ev = ev.DeepCopy()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: LocalName(pod.Name, ev.UID), Namespace: namespace,
			Labels: map[string]string{consts.ReflectedLabel: "true", consts.RemoteClusterIDLabel: string(rn.env.ProviderID)}},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: namespace, Name: pod.Name,
			UID: pod.UID, FieldPath: ev.InvolvedObject.FieldPath},
		Reason: ev.Reason, Message: ev.Message, Type: ev.Type, Source: ev.Source,
		FirstTimestamp: ev.FirstTimestamp, LastTimestamp: ev.LastTimestamp, Count: ev.Count,
		EventTime: ev.EventTime, Series: ev.Series, Action: ev.Action,
		ReportingController: ev.ReportingController, ReportingInstance: ev.ReportingInstance,
	}
}

// copyContent copies want's content onto next and says whether anything changed.
func copyContent(next, want *corev1.Event) bool {
	same := equality.Semantic.DeepEqual(next.InvolvedObject, want.InvolvedObject) &&
		next.Reason == want.Reason && next.Message == want.Message && next.Type == want.Type &&
		next.Source == want.Source && next.Count == want.Count && next.Action == want.Action &&
		equality.Semantic.DeepEqual(next.FirstTimestamp, want.FirstTimestamp) &&
		equality.Semantic.DeepEqual(next.LastTimestamp, want.LastTimestamp) &&
		equality.Semantic.DeepEqual(next.EventTime, want.EventTime) &&
		equality.Semantic.DeepEqual(next.Series, want.Series) &&
		next.ReportingController == want.ReportingController && next.ReportingInstance == want.ReportingInstance
	if same {
		return false
	}
	next.InvolvedObject, next.Reason, next.Message, next.Type, next.Source = want.InvolvedObject, want.Reason, want.Message, want.Type, want.Source
	next.Count, next.Action, next.FirstTimestamp, next.LastTimestamp = want.Count, want.Action, want.FirstTimestamp, want.LastTimestamp
	next.EventTime, next.Series = want.EventTime, want.Series
	next.ReportingController, next.ReportingInstance = want.ReportingController, want.ReportingInstance
	return true
}
