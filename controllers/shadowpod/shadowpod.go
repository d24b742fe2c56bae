// Package shadowpod is the provider's side of pod offloading: every ShadowPod a consumer's
// virtual kubelet creates in one of its remote namespaces becomes a Pod of the same name that
// the ShadowPod owns (controller owner reference). The Pod is created with the controller
// manager's own rights: a consumer may create ShadowPods there, never Pods.
//
//   - The Pod's labels and annotations are the ShadowPod's, kept equal (the ShadowPod's are
//     authoritative); its spec is the ShadowPod's pod spec, of which the mutable fields
//     (container images, activeDeadlineSeconds) follow later changes.
//   - A Pod deleted while its ShadowPod is not terminal (status.phase Succeeded or Failed) is
//     created again, so a workload survives losing the consumer for a while.
//   - The ShadowPod's status.phase follows the Pod's: terminal phases at once, the first
//     Running report of a new pod after up to 2 s (in a burst, the writes that bring the next
//     pods up go first), none while the pod has not started.
//   - A deleted ShadowPod takes its Pod with it: garbage collection through the owner
//     reference, and an explicit delete here for clusters without it.
//   - A pod may refer only to Secrets its own consumer reflected (labels
//     offloading.liqo.io/reflected=true and liqo.io/origin-cluster-id, or upstream Liqo's
//     offloading.liqo.io/origin, naming the ShadowPod's consumer: consts.ReflectionOrigin): a
//     consumer may write Secrets in its remote namespaces but never read them, and a pod
//     mounting another Secret would read it for it (through logs or exec). Such a pod is not
//     created (a Warning Event, SecretNotReflected, names the Secret); a pod whose Secret does
//     not exist yet waits for it, as a kubelet would.
//   - As a second line after the consumer's own checks and the provider's admission webhook, a
//     ShadowPod asking for the host's network, PID or IPC namespaces, or, in a remote namespace,
//     for anything its consumer's Pod Security level refuses (package podsecurity: the
//     consumer's Tenant, else the provider's default), is not run: phase Failed and a Warning
//     Event (HostNamespaces, PodSecurity) naming the fields, and no pod is created. The API
//     server's Pod Security admission, on the remote namespace's labels, is the third.
//     spec.nodeName is cleared so that the provider's scheduler places the Pod. What the grant
//     allows is the grant webhook's.
package shadowpod

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity"
)

// errRetryLater: the pod cannot be created yet, a Secret it refers to is not there; the
// ShadowPod is looked at again after retryInterval.
var errRetryLater = errors.New("the pod cannot be created yet")

// errForeignSecret: the pod refers to a Secret that is not its consumer's; the ShadowPod is
// looked at again after foreignRetryInterval (the Secret may be replaced by the consumer's copy).
var errForeignSecret = errors.New("the pod refers to a Secret that is not its consumer's")

const (
	// retryInterval is how long a ShadowPod waits for the Secrets its pod refers to.
	retryInterval = 2 * time.Second
	// foreignRetryInterval is how long a ShadowPod refused for a foreign Secret waits.
	foreignRetryInterval = 30 * time.Second
	// statusDelay is how long a new pod may run before its ShadowPod first reports it.
	statusDelay = 2 * time.Second
)

// Reconciler turns ShadowPods into Pods.
type Reconciler struct {
	// Client reads and writes the provider cluster with the controller manager's rights.
	Client client.Client
	// Recorder records why a ShadowPod is not run; optional.
	Recorder events.EventRecorder
	// PodSecurity decides the Pod Security level of each consumer's remote namespaces.
	PodSecurity podsecurity.Policy
	// MaxConcurrentReconciles is the number of workers; default 32 (they mostly wait for the API server).
	MaxConcurrentReconciles int
}

// Reconcile makes the Pod of one ShadowPod match it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	sp := &offv1beta1.ShadowPod{}
	if err := r.Client.Get(ctx, req.NamespacedName, sp); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("reading ShadowPod %s: %w", req, err)
		}
		return reconcile.Result{}, r.deleteOrphan(ctx, req)
	}
	if sp.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // garbage collection takes the Pod; deleteOrphan once it is gone
	}
	pod := &corev1.Pod{}
	err := r.Client.Get(ctx, req.NamespacedName, pod)
	switch {
	case apierrors.IsNotFound(err):
		switch err := r.create(ctx, sp); {
		case errors.Is(err, errRetryLater):
			return reconcile.Result{RequeueAfter: retryInterval}, nil
		case errors.Is(err, errForeignSecret):
			return reconcile.Result{RequeueAfter: foreignRetryInterval}, nil
		default:
			return reconcile.Result{}, err
		}
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("reading pod %s: %w", req, err)
	}
	if !metav1.IsControlledBy(pod, sp) {
		if owner := metav1.GetControllerOf(pod); owner != nil && owner.Kind == "ShadowPod" && owner.APIVersion == offv1beta1.GroupVersion.String() {
			// Left by an earlier ShadowPod of the same name: make room for this one's.
			log.FromContext(ctx).Info("deleting the pod of an earlier ShadowPod of the same name", "pod", req)
			return reconcile.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}))
		}
		r.warn(sp, "NameTaken", "a pod named %s that this ShadowPod does not own already exists in %s: delete or rename it", pod.Name, pod.Namespace)
		return reconcile.Result{}, nil
	}
	if pod.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // created again once gone
	}
	if err := r.syncPod(ctx, sp, pod); err != nil {
		return reconcile.Result{}, err
	}
	// The first report of a running pod waits a moment: in a burst of offloaded pods, the
	// ShadowPod writes that make the next pods (their creation, their status back on the
	// consumer) go first; the phase is recorded soon after, and terminal phases at once.
	if sp.Status.Phase == "" && pod.Status.Phase == corev1.PodRunning && time.Since(pod.CreationTimestamp.Time) < statusDelay {
		return reconcile.Result{RequeueAfter: statusDelay}, nil
	}
	return reconcile.Result{}, r.setPhase(ctx, sp, pod.Status.Phase)
}

// create makes the ShadowPod's Pod, unless the ShadowPod is finished or refused.
func (r *Reconciler) create(ctx context.Context, sp *offv1beta1.ShadowPod) error {
	if sp.Status.Phase == corev1.PodSucceeded || sp.Status.Phase == corev1.PodFailed {
		return nil // its pod ran to the end: nothing to run again
	}
	refusal, err := r.refusal(ctx, sp)
	if err != nil {
		return err
	}
	if refusal != nil {
		r.warn(sp, refusal.Reason, "%s", refusal.Message)
		log.FromContext(ctx).Info("ShadowPod refused", "shadowPod", client.ObjectKeyFromObject(sp), "reason", refusal.Reason)
		return r.setPhase(ctx, sp, corev1.PodFailed)
	}
	foreign, missing, err := r.foreignSecret(ctx, sp)
	switch {
	case err != nil:
		return err
	case foreign != "":
		r.warn(sp, "SecretNotReflected", "the pod refers to Secret %s, which is not a copy reflected from cluster %q: "+
			"an offloaded pod may only use its own cluster's Secrets; the pod is not created until that changes", foreign, consts.ReflectionOrigin(sp.Labels))
		return errForeignSecret
	case missing != "":
		return errRetryLater // its reflection is on its way (a kubelet, too, waits for a pod's Secrets)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: sp.Name, Namespace: sp.Namespace,
		Labels: copyMap(sp.Labels), Annotations: copyMap(sp.Annotations)}, Spec: *sp.Spec.Pod.DeepCopy()}
	pod.Spec.NodeName = ""
	if err := controllerutil.SetControllerReference(sp, pod, r.Client.Scheme()); err != nil {
		return fmt.Errorf("owner reference of pod %s/%s: %w", sp.Namespace, sp.Name, err)
	}
	if err := r.Client.Create(ctx, pod); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // the watch brings it
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			r.warn(sp, "PodRefused", "the provider refused the pod: %v", err)
		}
		return fmt.Errorf("creating pod %s/%s from its ShadowPod: %w", sp.Namespace, sp.Name, err)
	}
	log.FromContext(ctx).V(1).Info("created pod", "pod", client.ObjectKeyFromObject(pod))
	return nil // the pod's events bring its phase
}

// syncPod brings the ShadowPod's labels, annotations and mutable spec fields to its Pod.
func (r *Reconciler) syncPod(ctx context.Context, sp *offv1beta1.ShadowPod, pod *corev1.Pod) error {
	want := pod.DeepCopy()
	want.Labels, want.Annotations = copyMap(sp.Labels), copyMap(sp.Annotations)
	setImages(want.Spec.Containers, sp.Spec.Pod.Containers)
	setImages(want.Spec.InitContainers, sp.Spec.Pod.InitContainers)
	if sp.Spec.Pod.ActiveDeadlineSeconds != nil {
		want.Spec.ActiveDeadlineSeconds = sp.Spec.Pod.ActiveDeadlineSeconds
	}
	if equality.Semantic.DeepEqual(want.ObjectMeta, pod.ObjectMeta) && equality.Semantic.DeepEqual(want.Spec, pod.Spec) {
		return nil
	}
	if err := r.Client.Update(ctx, want); err != nil {
		return fmt.Errorf("updating pod %s/%s from its ShadowPod: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// setImages copies the images of from's containers onto the containers of the same name.
func setImages(to, from []corev1.Container) {
	images := make(map[string]string, len(from))
	for _, c := range from {
		images[c.Name] = c.Image
	}
	for i := range to {
		if img, ok := images[to[i].Name]; ok && img != "" {
			to[i].Image = img
		}
	}
}

// setPhase records the pod's phase in the ShadowPod's status. A pod that has not started yet
// leaves a ShadowPod without a phase as it is: writing Pending there would cost the API server
// one more ShadowPod write per offloaded pod, in the burst where every write counts, and tell
// nothing the missing phase does not.
func (r *Reconciler) setPhase(ctx context.Context, sp *offv1beta1.ShadowPod, phase corev1.PodPhase) error {
	if phase == "" {
		phase = corev1.PodPending
	}
	if sp.Status.Phase == phase || (phase == corev1.PodPending && sp.Status.Phase == "") {
		return nil
	}
	upd := sp.DeepCopy()
	upd.Status.Phase = phase
	if err := r.Client.Status().Patch(ctx, upd, client.MergeFrom(sp)); err != nil {
		return fmt.Errorf("setting status.phase %s of ShadowPod %s/%s: %w", phase, sp.Namespace, sp.Name, err)
	}
	return nil
}

// deleteOrphan deletes the pod a deleted ShadowPod leaves behind, for clusters without
// garbage collection (or before it runs).
func (r *Reconciler) deleteOrphan(ctx context.Context, req reconcile.Request) error {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "ShadowPod" || owner.APIVersion != offv1beta1.GroupVersion.String() || pod.DeletionTimestamp != nil {
		return nil
	}
	if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s of a deleted ShadowPod: %w", req, err)
	}
	return nil
}

// refusal says why a ShadowPod's pod may not run here, or returns nil: the host namespaces
// anywhere, and the consumer's Pod Security level in its remote namespaces.
func (r *Reconciler) refusal(ctx context.Context, sp *offv1beta1.ShadowPod) (*podsecurity.Refusal, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: sp.Namespace}, ns); err != nil {
		return nil, fmt.Errorf("reading namespace %s of ShadowPod %s: %w", sp.Namespace, sp.Name, err)
	}
	if ns.Labels[consts.RemoteNamespaceLabel] != "true" {
		return podsecurity.Refuse(nil, &sp.ObjectMeta, &sp.Spec.Pod), nil // the namespace's own Pod Security applies
	}
	d, err := r.PodSecurity.ForConsumer(ctx, r.Client, ns.Labels[consts.RemoteClusterIDLabel])
	if err != nil {
		return nil, err
	}
	return podsecurity.Refuse(&d, &sp.ObjectMeta, &sp.Spec.Pod), nil
}

func (r *Reconciler) warn(sp *offv1beta1.ShadowPod, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(sp, nil, corev1.EventTypeWarning, reason, "Offload", format, args...)
	}
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SetupWithManager registers the reconciler: ShadowPods and the Pods they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	n := r.MaxConcurrentReconciles
	if n == 0 {
		n = 32
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("shadowpod").
		For(&offv1beta1.ShadowPod{}).
		Owns(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: n}).
		Complete(r); err != nil {
		return fmt.Errorf("setting up the ShadowPod controller: %w", err)
	}
	return nil
}
