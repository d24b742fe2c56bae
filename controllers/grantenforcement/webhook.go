// Package grantenforcement is the provider's validating admission webhook that enforces what
// resource negotiation granted: the ShadowPods of a consumer, in all its remote namespaces,
// cannot ask for more than the resources of its accepted ResourceSlices.
//
// A ShadowPod in a remote namespace (labelled offloading.liqo.io/remote-namespace=true and
// liqo.io/remote-cluster-id=<consumer>) is admitted, on creation and on an update that makes
// it larger, only if the consumer's usage with it stays within the grant. The grant is the sum
// of status.resources of the consumer's accepted slices (condition Resources Accepted) in its
// tenant namespaces (liqo.io/tenant-namespace=true, liqo.io/remote-cluster-id=<consumer>);
// the usage is the sum, over the consumer's ShadowPods that are not Succeeded or Failed, of
// what each counts against every resource the grant names (see Usage: effective requests,
// limits for limits.* keys, one for pods). A consumer with no accepted slice is granted
// nothing.
//
// Concurrent admissions: admissions for one consumer are serialized, and each admitted
// ShadowPod is kept as a reservation until the manager's cache shows it (same UID and at
// least the admitted generation) or ReservationTTL passes. Without reservations, two
// ShadowPods admitted a few milliseconds apart would both be checked against a cache that
// shows neither, and together overrun the grant. A reservation counts as the larger of itself
// and the cached object, so it never undercounts; one for an object the API server did not
// store in the end (refused by a later admission step) holds its share for ReservationTTL at
// most. The serialization and reservations live in one process: run the webhook in a single
// replica (the chart's default), or replicas may each admit up to the grant at the same time.
//
// Cordon: a new ShadowPod (creation) of a cordoned slice is refused, with the slice, the
// annotation and how to lift it (cordonRefusal); updates are not, so the pods already running
// keep running. A slice is cordoned by liqo.io/cordon on this cluster's copy (`liqoctl cordon
// resourceslice`), liqo.io/cordon-tenant, or liqo.io/cordon-consumer (the consumer cordoned its
// own slice). A cordoned slice's grant still counts: its running pods use it. A consumer cannot
// lift the provider's cordon by deleting its copy: CordonHold keeps the copy, cordoned, and it
// counts here as long as it is held.
//
// Pod Security: a ShadowPod in a remote namespace whose pod its consumer's Pod Security level
// refuses (package podsecurity: the level of the consumer's Tenant, else the provider's
// default, baseline unless set otherwise; Pod Security admission's own checks and messages),
// or that shares a host namespace, is refused on creation and on any update of its pod spec,
// naming the fields, the level and how the provider grants more, as invalid (422): the
// consumer's virtual kubelet fails its pod with that message rather than retry. This comes
// before the grant, so a refused pod reserves nothing.
//
// A consumer (a user named after a cluster ID that has a tenant namespace here) is also
// refused ShadowPods in any namespace that is not one of its remote namespaces. RBAC already
// forbids it; this is a second check.
//
// Registration (Webhooks): the grant webhook matches remote namespaces only, with
// failurePolicy Fail (a webhook that is down stops new workloads of consumers rather than let
// them past their grant); the second check matches every other namespace but the system ones,
// with failurePolicy Ignore, so that it can never block anything when it is down. Neither
// matches pods: the cluster's own workloads are never affected.
package grantenforcement

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity"
)

// Path is where the webhook is served.
const Path = "/validate-shadowpod-grant"

// Configuration is the name of the ValidatingWebhookConfiguration holding the webhooks.
const Configuration = "liqo-grant-enforcement"

// ReservationTTL is how long an admitted ShadowPod counts while the cache does not show it.
const ReservationTTL = 30 * time.Second

// SystemNamespaces are never matched by the second check.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// Webhooks is the registration of the webhooks (their client configurations are left to the
// server): ShadowPod creation and update; see the package documentation for the selectors
// and failure policies.
func Webhooks() []admissionregistrationv1.ValidatingWebhook {
	base := admissionregistrationv1.ValidatingWebhook{
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{offv1beta1.GroupVersion.Group}, APIVersions: []string{offv1beta1.GroupVersion.Version},
				Resources: []string{"shadowpods"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		}},
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		ObjectSelector:          &metav1.LabelSelector{},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](10),
		AdmissionReviewVersions: []string{"v1"},
	}
	grant := *base.DeepCopy()
	grant.Name = "grant.shadowpods.offloading.liqo.io"
	grant.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	grant.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{consts.RemoteNamespaceLabel: "true"}}
	origin := *base.DeepCopy()
	origin.Name = "origin.shadowpods.offloading.liqo.io"
	origin.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	origin.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: consts.RemoteNamespaceLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"}},
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: SystemNamespaces},
	}}
	return []admissionregistrationv1.ValidatingWebhook{grant, origin}
}

// Handler admits ShadowPods.
type Handler struct {
	// Client reads namespaces, slices and ShadowPods (the manager's cached client).
	Client client.Reader
	// Decoder decodes ShadowPods.
	Decoder admission.Decoder
	// TTL is how long a reservation lives; default ReservationTTL.
	TTL time.Duration
	// PodSecurity decides the Pod Security level of each consumer's remote namespaces.
	PodSecurity podsecurity.Policy

	mu       sync.Mutex
	locks    map[string]*sync.Mutex
	reserved map[string]map[types.NamespacedName]reservation
}

// reservation is an admitted ShadowPod the cache may not show yet.
type reservation struct {
	obj     *offv1beta1.ShadowPod
	expires time.Time
}

// Handle admits or refuses one ShadowPod creation or update.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	sp := &offv1beta1.ShadowPod{}
	if err := h.Decoder.Decode(req, sp); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding ShadowPod %s/%s: %w", req.Namespace, req.Name, err))
	}
	// The object's name: for generateName, req.Name may be empty while the validating stage
	// sees the generated name.
	key := types.NamespacedName{Namespace: req.Namespace, Name: sp.Name}
	if key.Name == "" {
		key.Name = req.Name
	}
	ns := &corev1.Namespace{}
	if err := h.Client.Get(ctx, client.ObjectKey{Name: req.Namespace}, ns); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("reading namespace %s of ShadowPod %s: %w", req.Namespace, key, err))
	}
	remote := ns.Labels[consts.RemoteNamespaceLabel] == "true"
	owner := ns.Labels[consts.RemoteClusterIDLabel]
	requester := req.UserInfo.Username
	if !remote || requester != owner {
		consumer, err := h.isConsumer(ctx, requester)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		if consumer {
			return admission.Denied(fmt.Sprintf("cluster %s may create ShadowPods only in its own remote namespaces (labelled %s=true and %s=%s); namespace %s is not one of them: offload the namespace through a NamespaceMap instead",
				requester, consts.RemoteNamespaceLabel, consts.RemoteClusterIDLabel, requester, req.Namespace))
		}
	}
	if !remote {
		return admission.Allowed("not a remote namespace")
	}
	if owner == "" {
		return admission.Denied(fmt.Sprintf("namespace %s is a remote namespace without the %s label, so no consumer's grant applies: label it with the consumer's cluster ID",
			req.Namespace, consts.RemoteClusterIDLabel))
	}
	if sp.DeletionTimestamp != nil || terminal(sp) {
		return admission.Allowed("the ShadowPod is finishing")
	}
	var old *offv1beta1.ShadowPod
	if req.Operation == admissionv1.Update {
		old = &offv1beta1.ShadowPod{}
		if err := h.Decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the old ShadowPod %s: %w", key, err))
		}
		if equality.Semantic.DeepEqual(old.Spec, sp.Spec) {
			// Labels, annotations, finalizers: never refused, even beyond a grant that shrank
			// or vanished, so that controllers and teardown are never stuck.
			return admission.Allowed("the pod spec is unchanged")
		}
	}
	if resp, refused := h.podSecurity(ctx, owner, key, sp); refused {
		return resp
	}
	return h.admitGrant(ctx, owner, key, sp, old)
}

// podSecurity refuses a ShadowPod (creation, or update of its pod spec) whose pod its
// consumer's Pod Security level refuses (or that shares a host namespace), as invalid: the
// consumer's virtual kubelet then fails its pod with the reason rather than retry.
func (h *Handler) podSecurity(ctx context.Context, owner string, key types.NamespacedName, sp *offv1beta1.ShadowPod) (admission.Response, bool) {
	d, err := h.PodSecurity.ForConsumer(ctx, h.Client, owner)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err), true
	}
	refusal := podsecurity.Refuse(&d, &sp.ObjectMeta, &sp.Spec.Pod)
	if refusal == nil {
		return admission.Response{}, false
	}
	log.FromContext(ctx).Info("ShadowPod refused by Pod Security", "shadowPod", key, "consumer", owner, "level", d.Level, "reason", refusal.Reason)
	resp := admission.Denied(fmt.Sprintf("ShadowPod %s of cluster %s is refused: %s", key, owner, refusal.Message))
	resp.Result.Code, resp.Result.Reason = http.StatusUnprocessableEntity, metav1.StatusReasonInvalid
	return resp, true
}

// admitGrant admits a ShadowPod (old: its previous version on an update, else nil) whose pod
// stays within its consumer's grant and, when new, comes from a slice that is not cordoned.
func (h *Handler) admitGrant(ctx context.Context, owner string, key types.NamespacedName, sp, old *offv1beta1.ShadowPod) admission.Response {
	lock := h.lock(owner)
	lock.Lock()
	defer lock.Unlock()
	slices, err := h.slices(ctx, owner)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	grant := corev1.ResourceList{}
	for i := range slices {
		Add(grant, slices[i].Status.Resources)
	}
	if len(grant) == 0 {
		return admission.Denied(fmt.Sprintf("cluster %s has no accepted ResourceSlice on this cluster, so nothing is granted to its ShadowPod %s: ask for resources with a ResourceSlice in its tenant namespace and wait for it to be accepted",
			owner, key))
	}
	if old == nil {
		if why := cordonRefusal(slices, owner, key, sp); why != "" {
			log.FromContext(ctx).Info("ShadowPod of a cordoned slice refused", "shadowPod", key, "consumer", owner)
			return admission.Denied(why)
		}
	}
	want, err := Usage(&sp.Spec.Pod, grant)
	if err != nil {
		return admission.Denied(fmt.Sprintf("ShadowPod %s of cluster %s: %v", key, owner, err))
	}
	if old != nil {
		if before, _ := Usage(&old.Spec.Pod, grant); !terminal(old) && lessOrEqual(want, before) {
			return admission.Allowed("the update does not ask for more")
		}
	}
	used, err := h.used(ctx, owner, key, grant)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if excess := Excess(grant, used, want); len(excess) > 0 {
		log.FromContext(ctx).Info("ShadowPod beyond the grant refused", "shadowPod", key, "consumer", owner, "excess", excess)
		return admission.Denied(fmt.Sprintf("ShadowPod %s would take cluster %s beyond the resources granted to it on this cluster: %s. "+
			"Ask for more with a bigger (or a further) ResourceSlice in its tenant namespace, or delete some of its ShadowPods",
			key, owner, strings.Join(excess, "; ")))
	}
	h.reserve(owner, key, sp)
	return admission.Allowed("within the grant")
}

func terminal(sp *offv1beta1.ShadowPod) bool {
	return sp.Status.Phase == corev1.PodSucceeded || sp.Status.Phase == corev1.PodFailed
}

func lessOrEqual(a, b corev1.ResourceList) bool {
	for k, q := range a {
		if q.Cmp(quantity(b, k)) > 0 {
			return false
		}
	}
	return true
}

// isConsumer says whether user is a peered consumer: a cluster ID with a tenant namespace.
func (h *Handler) isConsumer(ctx context.Context, user string) (bool, error) {
	if len(validation.IsValidLabelValue(user)) > 0 || user == "" {
		return false, nil
	}
	nss := &corev1.NamespaceList{}
	if err := h.Client.List(ctx, nss, client.MatchingLabels{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: user}); err != nil {
		return false, fmt.Errorf("listing the tenant namespaces of %s: %w", user, err)
	}
	return len(nss.Items) > 0, nil
}

// slices returns the consumer's accepted slices, whose resources make up its grant.
func (h *Handler) slices(ctx context.Context, consumer string) ([]authv1beta1.ResourceSlice, error) {
	nss := &corev1.NamespaceList{}
	if err := h.Client.List(ctx, nss, client.MatchingLabels{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}); err != nil {
		return nil, fmt.Errorf("listing the tenant namespaces of cluster %s: %w", consumer, err)
	}
	var out []authv1beta1.ResourceSlice
	for _, ns := range nss.Items {
		slices := &authv1beta1.ResourceSliceList{}
		if err := h.Client.List(ctx, slices, client.InNamespace(ns.Name)); err != nil {
			return nil, fmt.Errorf("listing the ResourceSlices of cluster %s in %s: %w", consumer, ns.Name, err)
		}
		for _, s := range slices.Items {
			// A slice being deleted counts no more, unless the provider's cordon holds it
			// (CordonHold): deleted by its consumer, it stays cordoned, its pods running.
			going := s.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(&s, consts.ProviderCordonFinalizer)
			if !accepted(&s) || going || s.Labels[consts.ReplicationLabel] == "true" || // our own request to that cluster
				(s.Spec.ConsumerClusterID != nil && string(*s.Spec.ConsumerClusterID) != consumer) {
				continue
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func accepted(s *authv1beta1.ResourceSlice) bool {
	for _, c := range s.Status.Conditions {
		if c.Type == authv1beta1.ResourceSliceConditionTypeResources {
			return c.Status == authv1beta1.ResourceSliceConditionAccepted
		}
	}
	return false
}

// used sums what the consumer's ShadowPods other than self count against grant: those the
// cache shows and those reserved.
func (h *Handler) used(ctx context.Context, consumer string, self types.NamespacedName, grant corev1.ResourceList) (corev1.ResourceList, error) {
	nss := &corev1.NamespaceList{}
	if err := h.Client.List(ctx, nss, client.MatchingLabels{consts.RemoteNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}); err != nil {
		return nil, fmt.Errorf("listing the remote namespaces of cluster %s: %w", consumer, err)
	}
	cached := map[types.NamespacedName]*offv1beta1.ShadowPod{}
	for _, ns := range nss.Items {
		list := &offv1beta1.ShadowPodList{}
		if err := h.Client.List(ctx, list, client.InNamespace(ns.Name)); err != nil {
			return nil, fmt.Errorf("listing the ShadowPods of cluster %s in %s: %w", consumer, ns.Name, err)
		}
		for i := range list.Items {
			sp := &list.Items[i]
			if k := client.ObjectKeyFromObject(sp); k != self && !terminal(sp) {
				cached[k] = sp
			}
		}
	}
	out := corev1.ResourceList{}
	usage := func(sp *offv1beta1.ShadowPod) corev1.ResourceList {
		u, _ := Usage(&sp.Spec.Pod, grant) // an unlimited limit counts what is set: it was admitted before the grant named it
		return u
	}
	for k, r := range h.reservations(consumer) {
		if k == self {
			continue
		}
		sp, ok := cached[k]
		switch {
		case ok && sp.UID == r.obj.UID && sp.Generation >= r.obj.Generation:
			h.release(consumer, k, r) // the cache shows it: counted below
		case ok && sp.UID == r.obj.UID:
			delete(cached, k) // an older generation: count the larger of the two
			Add(out, maxList(usage(sp), usage(r.obj)))
		default:
			Add(out, usage(r.obj))
		}
	}
	for _, sp := range cached {
		Add(out, usage(sp))
	}
	return out, nil
}

func maxList(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	for k, q := range b {
		if q.Cmp(quantity(out, k)) > 0 {
			out[k] = q.DeepCopy()
		}
	}
	return out
}

// lock returns the mutex that serializes the admissions of a consumer.
func (h *Handler) lock(consumer string) *sync.Mutex {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.locks == nil {
		h.locks = map[string]*sync.Mutex{}
	}
	if h.locks[consumer] == nil {
		h.locks[consumer] = &sync.Mutex{}
	}
	return h.locks[consumer]
}

// reserve records an admitted ShadowPod.
func (h *Handler) reserve(consumer string, key types.NamespacedName, sp *offv1beta1.ShadowPod) {
	ttl := h.TTL
	if ttl == 0 {
		ttl = ReservationTTL
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reserved == nil {
		h.reserved = map[string]map[types.NamespacedName]reservation{}
	}
	if h.reserved[consumer] == nil {
		h.reserved[consumer] = map[types.NamespacedName]reservation{}
	}
	h.reserved[consumer][key] = reservation{obj: sp.DeepCopy(), expires: time.Now().Add(ttl)}
}

// reservations returns the live reservations of a consumer, dropping the expired ones.
func (h *Handler) reservations(consumer string) map[types.NamespacedName]reservation {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[types.NamespacedName]reservation{}
	now := time.Now()
	for k, r := range h.reserved[consumer] {
		if now.After(r.expires) {
			delete(h.reserved[consumer], k)
			continue
		}
		out[k] = r
	}
	return out
}

// release drops a reservation the cache caught up with, unless it was replaced meanwhile.
func (h *Handler) release(consumer string, key types.NamespacedName, r reservation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur, ok := h.reserved[consumer][key]; ok && cur.obj == r.obj {
		delete(h.reserved[consumer], key)
	}
}

// Reserved returns how many reservations a consumer holds (for tests and metrics).
func (h *Handler) Reserved(consumer string) int {
	return len(h.reservations(consumer))
}
