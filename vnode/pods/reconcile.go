package pods

// The work queue's side: reconciling one local pod with its ShadowPod and remote pod, and the
// writes it makes on both clusters.

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// next processes one key; false once the queue is shut down.
func (rf *reflection) next(ctx context.Context) bool {
	key, quit := rf.queue.Get()
	if quit {
		return false
	}
	defer rf.queue.Done(key)
	if err := rf.reconcile(ctx, key); err != nil {
		if ctx.Err() == nil {
			rf.log.V(1).Info("reconciling pod failed; retrying", "pod", key, "error", err.Error())
		}
		rf.queue.AddRateLimited(key)
		return true
	}
	rf.queue.Forget(key)
	return true
}

// errNotMine: a ShadowPod of that name exists but is not this node's (another virtual node's,
// being cleaned up by its own reflector).
var errNotMine = errors.New("a ShadowPod of that name belonging to another virtual node exists")

// reconcile brings one local pod, its ShadowPod and its status in line.
func (rf *reflection) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil //nolint:nilerr // a malformed key cannot be retried into shape
	}
	pod, err := rf.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		pod = nil
	} else if err != nil {
		return fmt.Errorf("reading local pod %s: %w", key, err)
	}
	if _, mapped := rf.env.Namespaces.Remote(ns); !mapped {
		return rf.reconcileUnmapped(ctx, ns, pod)
	}
	n, sp, rpod, ok := rf.remoteObjects(ns, name)
	if !ok {
		return nil // reconciled again once the remote watches are synced
	}
	switch {
	case pod == nil:
		if err := rf.dropTokens(ctx, ns, name, n.remote); err != nil {
			return err
		}
		if sp != nil && sp.DeletionTimestamp == nil {
			return rf.deleteShadow(ctx, sp)
		}
		return nil
	case pod.DeletionTimestamp != nil:
		return rf.reconcileDeleting(ctx, pod, sp, rpod)
	}
	if why := refused(&pod.Spec); why != "" {
		return rf.fail(ctx, pod, ReasonRefused, why)
	}
	if sp == nil {
		return rf.reconcileWithoutShadow(ctx, pod, n.remote)
	}
	if sp.Labels[consts.OriginNodeLabel] != rf.env.NodeName {
		return errNotMine
	}
	return rf.reconcileShadowed(ctx, pod, sp, rpod, n.remote)
}

// reconcileWithoutShadow handles a local pod to run whose ShadowPod does not exist: made, unless
// the pod finished, or failed when it had started (its remote copy is gone for good).
func (rf *reflection) reconcileWithoutShadow(ctx context.Context, pod *corev1.Pod, remoteNS string) error {
	switch {
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
		return nil // finished: nothing to run
	case pod.Status.StartTime != nil:
		return rf.fail(ctx, pod, ReasonRemoteDeleted, fmt.Sprintf(
			"the pod's ShadowPod %s/%s was deleted on provider %s after the pod had started: the remote pod is gone for good",
			remoteNS, pod.Name, rf.env.ProviderID))
	}
	return rf.createShadow(ctx, pod, remoteNS)
}

// reconcileShadowed handles a local pod with its ShadowPod sp (and the remote pod rpod, nil until
// it exists): the ShadowPod and the service-account tokens follow the pod, and the pod's status
// follows the remote pod's, or says why there is none.
func (rf *reflection) reconcileShadowed(ctx context.Context, pod *corev1.Pod, sp *offv1beta1.ShadowPod, rpod *corev1.Pod, remoteNS string) error {
	if err := rf.updateShadow(ctx, sp, shadowFor(pod, remoteNS, rf.labels, rf.env.OffloadingPatch)); err != nil {
		return err
	}
	if err := rf.syncTokens(ctx, pod, remoteNS, sp); err != nil {
		return err
	}
	if rpod != nil {
		return rf.reflectStatus(ctx, pod, rpod)
	}
	if sp.Status.Phase == corev1.PodFailed && pod.Status.StartTime == nil && pod.Status.Phase != corev1.PodFailed {
		why, err := rf.refusedBy(ctx, sp)
		if err != nil {
			return err
		}
		return rf.fail(ctx, pod, ReasonRefused, why)
	}
	if pod.Status.StartTime == nil && (sp.Status.Phase == "" || sp.Status.Phase == corev1.PodPending) && pod.Status.Phase == corev1.PodPending {
		return rf.reportNotCreated(ctx, pod, sp)
	}
	if pod.Status.StartTime != nil && rf.providerUp.Load() {
		if st := notReady(&pod.Status, ReasonRemoteRecreating, "the provider re-creates the remote pod"); st != nil {
			return rf.updateStatus(ctx, pod, st)
		}
	}
	return nil
}

// reconcileUnmapped handles a pod (nil when gone) of a namespace not offloaded: a pod being
// deleted is removed, a started pod of a namespace released while the reflector ran is failed,
// and any other waits, Pending.
func (rf *reflection) reconcileUnmapped(ctx context.Context, ns string, pod *corev1.Pod) error {
	switch {
	case pod == nil:
		return nil
	case pod.DeletionTimestamp != nil:
		return rf.finalize(ctx, pod) // nothing of it can run on the provider
	case rf.wasReleased(ns) && pod.Status.StartTime != nil && pod.Status.Phase != corev1.PodSucceeded:
		return rf.fail(ctx, pod, ReasonNamespaceReleased, fmt.Sprintf(
			"namespace %s is no longer offloaded to provider %s: the pod runs there no more", ns, rf.env.ProviderID))
	}
	return nil // not offloaded yet: stays Pending here
}

// reconcileDeleting handles a local pod being deleted: its ShadowPod is deleted, its status
// follows the remote pod while that runs, and it is removed once nothing of it is left remotely.
func (rf *reflection) reconcileDeleting(ctx context.Context, pod *corev1.Pod, sp *offv1beta1.ShadowPod, rpod *corev1.Pod) error {
	if sp != nil && sp.DeletionTimestamp == nil {
		if err := rf.deleteShadow(ctx, sp); err != nil {
			return err
		}
	}
	if rpod != nil {
		return rf.reflectStatus(ctx, pod, rpod) // gone once the provider's kubelet is done
	}
	if sp != nil {
		return nil // its deletion is watched
	}
	return rf.finalize(ctx, pod)
}

// createShadow creates the ShadowPod of a local pod (forgeShadow's), and first its origin
// tokens Secret when it has one. No service account is created on the provider
// (serviceaccounts.go).
func (rf *reflection) createShadow(ctx context.Context, pod *corev1.Pod, remoteNs string) error {
	sp := rf.forgeShadow(pod, remoteNs)
	if err := rf.syncTokens(ctx, pod, remoteNs, nil); err != nil {
		return err
	}
	err := rf.shadows.Post().Namespace(remoteNs).Resource("shadowpods").Body(sp).Do(ctx).Error()
	switch {
	case err == nil:
		rf.log.V(1).Info("offloaded pod", "pod", pod.Namespace+"/"+pod.Name, "remoteNamespace", remoteNs)
		return nil
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("ShadowPod %s/%s: %w (waiting for the watch to show it)", remoteNs, pod.Name, err)
	case apierrors.IsInvalid(err):
		return rf.fail(ctx, pod, ReasonRefused, fmt.Sprintf("provider %s refused the pod: %v", rf.env.ProviderID, err))
	case apierrors.IsForbidden(err):
		rf.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonRefused, "provider %s refused the pod (retrying): %v", rf.env.ProviderID, err)
	}
	return fmt.Errorf("creating ShadowPod %s/%s on provider %s: %w", remoteNs, pod.Name, rf.env.ProviderID, err)
}

// refusalEventWait is how long after a ShadowPod's creation the reason of its refusal is
// awaited (the provider records its Event a moment after the phase).
const refusalEventWait = 10 * time.Second

// refusedBy says why the provider failed a ShadowPod before its pod ever ran (its shadowpod
// controller refused it: a host namespace, or what its Pod Security level refuses): the
// provider's latest Warning Event about it, which the consumer may read. Until
// refusalEventWait after the ShadowPod's creation, no such Event yet is an error (retried).
func (rf *reflection) refusedBy(ctx context.Context, sp *offv1beta1.ShadowPod) (string, error) {
	why := fmt.Sprintf("provider %s did not run the pod: its ShadowPod %s/%s is Failed", rf.env.ProviderID, sp.Namespace, sp.Name)
	last, _, err := rf.latestWarning(ctx, sp)
	waiting := time.Since(sp.CreationTimestamp.Time) < refusalEventWait
	switch {
	case err != nil && waiting:
		return "", fmt.Errorf("%w (they say why it failed)", err)
	case err != nil:
		return why + " (the provider's Events on it say why)", nil
	case last != nil:
		return fmt.Sprintf("%s (%s): %s", why, last.Reason, last.Message), nil
	case waiting:
		return "", fmt.Errorf("ShadowPod %s/%s on provider %s is Failed: waiting for the Event that says why", sp.Namespace, sp.Name, rf.env.ProviderID)
	}
	return why, nil
}

// eventTime is when an Event last happened, whichever API wrote it.
func eventTime(ev *corev1.Event) time.Time {
	switch {
	case ev.Series != nil:
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}

// updateShadow brings the mutable parts of want onto the ShadowPod have (cached), with a patch of
// those parts alone; nothing when nothing differs.
func (rf *reflection) updateShadow(ctx context.Context, have, want *offv1beta1.ShadowPod) error {
	patch, err := shadowPatch(have, want)
	if err != nil || patch == nil {
		return err
	}
	err = rf.shadows.Patch(types.JSONPatchType).Namespace(have.Namespace).Resource("shadowpods").Name(have.Name).Body(patch).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("updating ShadowPod %s/%s on provider %s: %w", have.Namespace, have.Name, rf.env.ProviderID, err)
	}
	return nil
}

func (rf *reflection) deleteShadow(ctx context.Context, sp *offv1beta1.ShadowPod) error {
	err := rf.shadows.Delete().Namespace(sp.Namespace).Resource("shadowpods").Name(sp.Name).
		Body(&metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sp.UID}}).Do(context.WithoutCancel(ctx)).Error()
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting ShadowPod %s/%s on provider %s: %w", sp.Namespace, sp.Name, rf.env.ProviderID, err)
	}
	return nil
}

// finalize removes a local pod being deleted once nothing of it runs, as a kubelet does.
func (rf *reflection) finalize(ctx context.Context, pod *corev1.Pod) error {
	err := rf.local.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("removing local pod %s/%s whose remote pod is gone: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// reflectStatus writes the remote pod's status onto the local pod, unless the provider does
// not answer (then the remote watches show the last state known, not the current one).
func (rf *reflection) reflectStatus(ctx context.Context, pod, rpod *corev1.Pod) error {
	if !rf.providerUp.Load() {
		return nil
	}
	st := localStatus(pod, rpod)
	rf.addrs.localize(st)
	return rf.updateStatus(ctx, pod, st)
}

// wasReleased tells whether the namespace's offloading ended while the reflector ran.
func (rf *reflection) wasReleased(ns string) bool {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return rf.released[ns]
}

// fail turns a local pod Failed with an Event saying why.
func (rf *reflection) fail(ctx context.Context, pod *corev1.Pod, reason, message string) error {
	if pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	rf.recorder.Event(pod, corev1.EventTypeWarning, reason, message)
	return rf.updateStatus(ctx, pod, failed(&pod.Status, reason, message))
}

func (rf *reflection) updateStatus(ctx context.Context, pod *corev1.Pod, st *corev1.PodStatus) error {
	if equality.Semantic.DeepEqual(&pod.Status, st) {
		return nil
	}
	upd := pod.DeepCopy()
	upd.Status = *st
	if _, err := rf.local.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating the status of local pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
