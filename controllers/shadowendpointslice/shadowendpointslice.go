// Package shadowendpointslice is the provider's side of Service endpoints reflection with
// upstream Liqo's virtual kubelet: every ShadowEndpointSlice a consumer writes into one of its
// remote namespaces becomes an EndpointSlice of the same name that the ShadowEndpointSlice owns
// (controller owner reference), made with the controller manager's own rights (a consumer may
// write ShadowEndpointSlices there, never EndpointSlices).
//
//   - The EndpointSlice's labels and annotations are the ShadowEndpointSlice's (the Service's
//     kubernetes.io/service-name among them), with upstream's liqo.io/managed-by=shadowendpointslice
//     added; its addressType, endpoints and ports are spec.template's. Later changes follow; a
//     change of addressType, which an EndpointSlice cannot take, replaces the EndpointSlice.
//   - A ShadowEndpointSlice labelled endpointslice.kubernetes.io/managed-by with the value of
//     Kubernetes' own EndpointSlice controller gets upstream's reflection value instead on the
//     EndpointSlice, so that the two controllers do not fight over it.
//   - Upstream's direct-connections annotation (liqo.io/direct-connections-data) is not copied,
//     as upstream does not.
//   - As upstream does, while the consumer's ForeignCluster reports its network (module enabled,
//     NetworkConnectionStatus not Established) or its API server (APIServerStatus neither
//     Established, Ready nor None) down, the endpoints the consumer says are ready (or does not
//     say) are written not ready; those it says are not ready stay so. Unlike upstream, a
//     consumer without a ForeignCluster here has its endpoints as it wrote them (upstream
//     makes no EndpointSlice then).
//   - As upstream does, the endpoints' IPv4 addresses in the consumer's pod or external CIDRs
//     are written as this cluster reaches them: remapped by the consumer's Configurations here
//     (label liqo.io/remote-cluster-id; spec.remote to status.remote, package remap). Unlike
//     upstream, a consumer without a Configuration here has its addresses as it wrote them.
//   - A deleted ShadowEndpointSlice takes its EndpointSlice with it: garbage collection through
//     the owner reference, and an explicit delete here for clusters without it.
//   - Refused, with a Warning Event naming the object and the reason and no EndpointSlice (the
//     one it had is deleted): a ShadowEndpointSlice outside a remote namespace
//     (NotInRemoteNamespace), or whose origin (consts.ReflectionOrigin: upstream's
//     offloading.liqo.io/origin, or ours, offloading.liqo.io/reflected=true and
//     liqo.io/origin-cluster-id; the two agreeing) is not the consumer of its namespace
//     (OriginMismatch).
//   - An EndpointSlice of the same name that the ShadowEndpointSlice does not own is never
//     written (a Warning Event, NameTaken; looked at again every 30 s), unless an earlier
//     ShadowEndpointSlice of the same name owns it: that one is deleted to make room; or unless
//     our virtual kubelet of the same consumer reflected it directly before it wrote
//     ShadowEndpointSlices (endpointslice.kubernetes.io/managed-by=
//     consts.LegacyEndpointSliceManagedBy, the consumer's origin labels, no owner): the
//     ShadowEndpointSlice takes it over (becomes its controller, its content in the same update).
//
// Not taken from upstream's controller: direct provider-to-provider connections (its
// liqo.io/direct-connections-data annotation and the option to drop those endpoints).
package shadowendpointslice

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peerstatus"
	"github.com/peerkit/terraform-provider-liqo/internal/remap"
)

const (
	// kind is the owner kind of the EndpointSlices this controller makes.
	kind = "ShadowEndpointSlice"
	// managedByLabel and managedByValue mark, as upstream Liqo does, an EndpointSlice made of
	// a ShadowEndpointSlice.
	managedByLabel = consts.LiqoManagedByLabel
	managedByValue = "shadowendpointslice"
	// kubeControllerValue is endpointslice.kubernetes.io/managed-by of Kubernetes' own
	// EndpointSlice controller; reflectionValue is upstream Liqo's reflected slices' value.
	kubeControllerValue = "endpointslice-controller.k8s.io"
	reflectionValue     = consts.UpstreamEndpointSliceManagedBy
	// directConnectionsAnnotation is upstream's annotation for provider-to-provider
	// connections, which is not copied to the EndpointSlice.
	directConnectionsAnnotation = consts.DirectConnectionsAnnotation
	// nameTakenRetry is how often a ShadowEndpointSlice whose name another EndpointSlice takes
	// looks again.
	nameTakenRetry = 30 * time.Second
)

// Reconciler turns ShadowEndpointSlices into EndpointSlices.
type Reconciler struct {
	// Client reads and writes the provider cluster with the controller manager's rights.
	Client client.Client
	// Recorder records why a ShadowEndpointSlice is refused; optional.
	Recorder events.EventRecorder
	// MaxConcurrentReconciles is the number of workers; default 8.
	MaxConcurrentReconciles int
}

// Reconcile makes the EndpointSlice of one ShadowEndpointSlice match it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	shadow := &offv1beta1.ShadowEndpointSlice{}
	if err := r.Client.Get(ctx, req.NamespacedName, shadow); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("reading ShadowEndpointSlice %s: %w", req, err)
		}
		return reconcile.Result{}, r.deleteOwned(ctx, req.NamespacedName, "")
	}
	if shadow.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // garbage collection takes the EndpointSlice; deleteOwned once it is gone
	}
	consumer, reason, message, err := r.refusal(ctx, shadow)
	if err != nil {
		return reconcile.Result{}, err
	}
	if reason != "" {
		r.warn(shadow, reason, "%s", message)
		log.FromContext(ctx).Info("ShadowEndpointSlice refused", "shadowEndpointSlice", req, "reason", reason)
		return reconcile.Result{}, r.deleteOwned(ctx, req.NamespacedName, shadow.UID)
	}
	eps := &discoveryv1.EndpointSlice{}
	err = r.Client.Get(ctx, req.NamespacedName, eps)
	switch {
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, r.create(ctx, shadow, consumer)
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("reading EndpointSlice %s: %w", req, err)
	}
	if !metav1.IsControlledBy(eps, shadow) {
		if ownedByShadow(eps) {
			// Left by an earlier ShadowEndpointSlice of the same name: make room for this one's.
			return reconcile.Result{}, r.delete(ctx, eps)
		}
		if legacyReflection(eps, consumer) {
			return reconcile.Result{}, r.adopt(ctx, shadow, eps, consumer)
		}
		r.warn(shadow, "NameTaken", "an EndpointSlice named %s that this ShadowEndpointSlice does not own already exists in %s: "+
			"it is left as it is; delete or rename it", eps.Name, eps.Namespace)
		return reconcile.Result{RequeueAfter: nameTakenRetry}, nil // its deletion is not watched
	}
	if eps.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // made again once gone
	}
	want, err := r.desired(ctx, shadow, consumer)
	if err != nil {
		return reconcile.Result{}, err
	}
	if eps.AddressType != want.AddressType {
		// addressType is immutable: replace the EndpointSlice (its deletion brings this back).
		return reconcile.Result{}, r.delete(ctx, eps)
	}
	return reconcile.Result{}, r.update(ctx, eps, want)
}

// refusal returns the consumer of shadow's namespace and says why shadow may not have an
// EndpointSlice here (a reason and a message), or returns an empty reason.
func (r *Reconciler) refusal(ctx context.Context, shadow *offv1beta1.ShadowEndpointSlice) (consumer, reason, message string, err error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: shadow.Namespace}, ns); err != nil {
		return "", "", "", fmt.Errorf("reading namespace %s of ShadowEndpointSlice %s: %w", shadow.Namespace, shadow.Name, err)
	}
	consumer = ns.Labels[consts.RemoteClusterIDLabel]
	if ns.Labels[consts.RemoteNamespaceLabel] != "true" || consumer == "" {
		return consumer, "NotInRemoteNamespace", fmt.Sprintf("ShadowEndpointSlice %s/%s is not in a consumer's remote namespace (labels %s=true and %s): "+
			"no EndpointSlice is made of it", shadow.Namespace, shadow.Name, consts.RemoteNamespaceLabel, consts.RemoteClusterIDLabel), nil
	}
	if origin := consts.ReflectionOrigin(shadow.Labels); origin != consumer {
		return consumer, "OriginMismatch", fmt.Sprintf("ShadowEndpointSlice %s/%s says it comes from cluster %q (labels %s, or %s=true and %s; "+
			"empty when none or when they disagree), but namespace %s belongs to consumer %q: no EndpointSlice is made of it",
			shadow.Namespace, shadow.Name, origin, consts.UpstreamOriginLabel, consts.ReflectedLabel, consts.OriginClusterIDLabel, ns.Name, consumer), nil
	}
	return consumer, "", "", nil
}

// desired is the EndpointSlice shadow asks for, without owner reference, with its endpoints not
// ready while the consumer's peering is down.
func (r *Reconciler) desired(ctx context.Context, shadow *offv1beta1.ShadowEndpointSlice, consumer string) (*discoveryv1.EndpointSlice, error) {
	up, err := r.peerUp(ctx, consumer)
	if err != nil {
		return nil, err
	}
	remaps, err := r.remaps(ctx, consumer)
	if err != nil {
		return nil, err
	}
	labels := maps.Clone(shadow.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[managedByLabel] = managedByValue
	if labels[discoveryv1.LabelManagedBy] == kubeControllerValue {
		labels[discoveryv1.LabelManagedBy] = reflectionValue
	}
	annotations := maps.Clone(shadow.Annotations)
	delete(annotations, directConnectionsAnnotation)
	if len(annotations) == 0 {
		annotations = nil
	}
	tpl := shadow.Spec.Template.DeepCopy()
	for i := range tpl.Endpoints {
		if ready := tpl.Endpoints[i].Conditions.Ready; !up && (ready == nil || *ready) {
			tpl.Endpoints[i].Conditions.Ready = ptr.To(false)
		}
		for j, addr := range tpl.Endpoints[i].Addresses {
			tpl.Endpoints[i].Addresses[j] = remap.Local(addr, remaps)
		}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: shadow.Name, Namespace: shadow.Namespace, Labels: labels, Annotations: annotations},
		AddressType: tpl.AddressType,
		Endpoints:   tpl.Endpoints,
		Ports:       tpl.Ports,
	}, nil
}

// remaps returns how this cluster sees the consumer's networks, from the consumer's
// Configurations here (none when it has none).
func (r *Reconciler) remaps(ctx context.Context, consumer string) ([]remap.Remap, error) {
	confs := &netv1beta1.ConfigurationList{}
	if err := r.Client.List(ctx, confs, client.MatchingLabels{consts.RemoteClusterIDLabel: consumer}); err != nil {
		return nil, fmt.Errorf("listing the Configurations of consumer %s: %w", consumer, err)
	}
	var out []remap.Remap
	for i := range confs.Items {
		rs, err := remap.FromConfiguration(&confs.Items[i])
		if err != nil {
			return nil, fmt.Errorf("remapping the endpoints of consumer %s: %w", consumer, err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// peerUp tells whether the consumer's ForeignCluster reports its network and API server up or
// not in use; true when it has none.
func (r *Reconciler) peerUp(ctx context.Context, consumer string) (bool, error) {
	fcs := &corev1beta1.ForeignClusterList{}
	if err := r.Client.List(ctx, fcs); err != nil {
		return false, fmt.Errorf("listing ForeignClusters for consumer %s: %w", consumer, err)
	}
	for _, fc := range fcs.Items {
		if string(fc.Spec.ClusterID) != consumer {
			continue
		}
		network := fc.Status.Modules.Networking
		netUp := !network.Enabled ||
			peerstatus.Summary(peerstatus.ConditionsOf(network, corev1beta1.NetworkConnectionStatusCondition)) == corev1beta1.ConditionStatusEstablished
		api := peerstatus.Summary(peerstatus.ConditionsOf(corev1beta1.Module{Conditions: fc.Status.Conditions}, corev1beta1.APIServerStatusCondition))
		return netUp && peerstatus.Severity(api) <= peerstatus.Severity(corev1beta1.ConditionStatusNone), nil
	}
	return true, nil
}

// create makes shadow's EndpointSlice.
func (r *Reconciler) create(ctx context.Context, shadow *offv1beta1.ShadowEndpointSlice, consumer string) error {
	eps, err := r.desired(ctx, shadow, consumer)
	if err != nil {
		return err
	}
	if err := controllerutil.SetControllerReference(shadow, eps, r.Client.Scheme()); err != nil {
		return fmt.Errorf("owner reference of EndpointSlice %s/%s: %w", shadow.Namespace, shadow.Name, err)
	}
	if err := r.Client.Create(ctx, eps); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // the watch brings it
		}
		if apierrors.IsInvalid(err) {
			r.warn(shadow, "EndpointSliceRefused", "the provider's API server refused EndpointSlice %s/%s: %v", eps.Namespace, eps.Name, err)
			return nil // nothing changes until the ShadowEndpointSlice does
		}
		return fmt.Errorf("creating EndpointSlice %s/%s from its ShadowEndpointSlice: %w", eps.Namespace, eps.Name, err)
	}
	log.FromContext(ctx).V(1).Info("created EndpointSlice", "endpointSlice", client.ObjectKeyFromObject(eps))
	return nil
}

// update brings want's labels, annotations, endpoints and ports to eps.
func (r *Reconciler) update(ctx context.Context, eps, want *discoveryv1.EndpointSlice) error {
	next := eps.DeepCopy()
	next.Labels, next.Annotations = want.Labels, want.Annotations
	next.Endpoints, next.Ports = want.Endpoints, want.Ports
	if equality.Semantic.DeepEqual(next.Labels, eps.Labels) && equality.Semantic.DeepEqual(next.Annotations, eps.Annotations) &&
		equality.Semantic.DeepEqual(next.Endpoints, eps.Endpoints) && equality.Semantic.DeepEqual(next.Ports, eps.Ports) {
		return nil
	}
	if err := r.Client.Update(ctx, next); err != nil {
		return fmt.Errorf("updating EndpointSlice %s/%s from its ShadowEndpointSlice: %w", eps.Namespace, eps.Name, err)
	}
	return nil
}

// legacyReflection tells whether eps is an EndpointSlice that our virtual kubelet of consumer
// reflected directly, before it wrote ShadowEndpointSlices: labelled with our former
// managed-by value and consumer's origin, and owned by nothing.
func legacyReflection(eps *discoveryv1.EndpointSlice, consumer string) bool {
	return eps.Labels[discoveryv1.LabelManagedBy] == consts.LegacyEndpointSliceManagedBy &&
		consts.ReflectionOrigin(eps.Labels) == consumer && metav1.GetControllerOf(eps) == nil
}

// adopt takes over eps, an EndpointSlice of shadow's name that an earlier version of the
// consumer's virtual kubelet reflected directly: shadow becomes its controller and its content
// shadow's, in one update, so that the Service's endpoints never go (one of another address
// type, which an EndpointSlice cannot change, is replaced instead).
func (r *Reconciler) adopt(ctx context.Context, shadow *offv1beta1.ShadowEndpointSlice, eps *discoveryv1.EndpointSlice, consumer string) error {
	want, err := r.desired(ctx, shadow, consumer)
	if err != nil {
		return err
	}
	if eps.AddressType != want.AddressType {
		return r.delete(ctx, eps)
	}
	next := eps.DeepCopy()
	if err := controllerutil.SetControllerReference(shadow, next, r.Client.Scheme()); err != nil {
		return fmt.Errorf("owner reference of EndpointSlice %s/%s: %w", eps.Namespace, eps.Name, err)
	}
	next.Labels, next.Annotations = want.Labels, want.Annotations
	next.Endpoints, next.Ports = want.Endpoints, want.Ports
	if err := r.Client.Update(ctx, next); err != nil {
		return fmt.Errorf("taking over EndpointSlice %s/%s, reflected by an earlier virtual kubelet, for its ShadowEndpointSlice: %w",
			eps.Namespace, eps.Name, err)
	}
	log.FromContext(ctx).Info("took over an EndpointSlice that an earlier virtual kubelet reflected directly",
		"endpointSlice", client.ObjectKeyFromObject(eps))
	return nil
}

// deleteOwned deletes the EndpointSlice named key if a ShadowEndpointSlice controls it: a
// deleted one's (any), or, with owner set, one whose owner is that ShadowEndpointSlice.
func (r *Reconciler) deleteOwned(ctx context.Context, key types.NamespacedName, owner types.UID) error {
	eps := &discoveryv1.EndpointSlice{}
	if err := r.Client.Get(ctx, key, eps); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading EndpointSlice %s: %w", key, err)
	}
	ref := metav1.GetControllerOf(eps)
	if !ownedByShadow(eps) || eps.DeletionTimestamp != nil || (owner != "" && ref.UID != owner) {
		return nil
	}
	return r.delete(ctx, eps)
}

// delete deletes eps, the version read.
func (r *Reconciler) delete(ctx context.Context, eps *discoveryv1.EndpointSlice) error {
	err := r.Client.Delete(ctx, eps, client.Preconditions{UID: &eps.UID})
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting EndpointSlice %s/%s of a ShadowEndpointSlice: %w", eps.Namespace, eps.Name, err)
	}
	log.FromContext(ctx).V(1).Info("deleted EndpointSlice", "endpointSlice", client.ObjectKeyFromObject(eps))
	return nil
}

// ownedByShadow tells whether a ShadowEndpointSlice controls eps.
func ownedByShadow(eps *discoveryv1.EndpointSlice) bool {
	ref := metav1.GetControllerOf(eps)
	return ref != nil && ref.Kind == kind && ref.APIVersion == offv1beta1.GroupVersion.String()
}

// shadowsOfPeer maps a ForeignCluster to the ShadowEndpointSlices of its cluster, whose
// endpoints' readiness follows it.
func (r *Reconciler) shadowsOfPeer(ctx context.Context, obj client.Object) []reconcile.Request {
	fc, ok := obj.(*corev1beta1.ForeignCluster)
	if !ok {
		return nil
	}
	return r.shadowsOf(ctx, string(fc.Spec.ClusterID))
}

// shadowsOfConfiguration maps a Configuration to the ShadowEndpointSlices of its cluster, whose
// endpoints' addresses follow it.
func (r *Reconciler) shadowsOfConfiguration(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.shadowsOf(ctx, obj.GetLabels()[consts.RemoteClusterIDLabel])
}

// shadowsOf lists the ShadowEndpointSlices of a consumer (by either origin label).
func (r *Reconciler) shadowsOf(ctx context.Context, consumer string) []reconcile.Request {
	if consumer == "" {
		return nil
	}
	var out []reconcile.Request
	for _, key := range []string{consts.UpstreamOriginLabel, consts.OriginClusterIDLabel} {
		list := &offv1beta1.ShadowEndpointSliceList{}
		if err := r.Client.List(ctx, list, client.MatchingLabels{key: consumer}); err != nil {
			log.FromContext(ctx).Error(err, "listing the ShadowEndpointSlices of a consumer", "consumer", consumer)
			continue
		}
		for _, s := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
		}
	}
	return out
}

func (r *Reconciler) warn(shadow *offv1beta1.ShadowEndpointSlice, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(shadow, nil, corev1.EventTypeWarning, reason, "Reflect", format, args...)
	}
}

// SetupWithManager registers the reconciler: ShadowEndpointSlices and the EndpointSlices they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	n := r.MaxConcurrentReconciles
	if n == 0 {
		n = 8
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("shadowendpointslice").
		For(&offv1beta1.ShadowEndpointSlice{}).
		Owns(&discoveryv1.EndpointSlice{}).
		Watches(&corev1beta1.ForeignCluster{}, handler.EnqueueRequestsFromMapFunc(r.shadowsOfPeer)).
		Watches(&netv1beta1.Configuration{}, handler.EnqueueRequestsFromMapFunc(r.shadowsOfConfiguration)).
		WithOptions(controller.Options{MaxConcurrentReconciles: n}).
		Complete(r); err != nil {
		return fmt.Errorf("setting up the ShadowEndpointSlice controller: %w", err)
	}
	return nil
}
