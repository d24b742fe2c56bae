// Package offerpublication publishes, on a provider, the Offers it declares in its Liqo
// namespace (seed 004's advertisement) to the consumers they are made to: a copy of each Offer,
// with the same name, in the tenant namespace of every consumer it is for (a namespace labelled
// liqo.io/tenant-namespace=true and liqo.io/remote-cluster-id=<consumer>), labelled
// consts.OfferOriginLabel with the Offer's name. There the consumer reads it with its own
// identity (peerrbac.ControlPlaneRules lets it read Offers in its tenant namespace, nothing
// more).
//
// The copies follow their Offer: a change of terms updates them, a consumer no longer listed
// loses its copy, a deleted Offer loses all of them (also when it was deleted while the manager
// was down: a copy whose Offer is gone is found at start-up). An Offer that offers.Validate
// refuses is not published (its copies are withdrawn) and gets a Warning Event saying why. An
// Offer of the same name that a tenant namespace already holds, not a copy, is left alone.
package offerpublication

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/offers"
)

// ReasonInvalidOffer is the reason of the Warning Event on an Offer that is not published
// because offers.Validate refuses it.
const ReasonInvalidOffer = "InvalidOffer"

// Reconciler publishes the Offers of the Liqo namespace to their consumers' tenant namespaces.
type Reconciler struct {
	// Client reads Offers and tenant namespaces and writes the copies.
	Client client.Client
	// LiqoNamespace is where the provider declares its Offers (consts.LiqoNamespace by default).
	LiqoNamespace string
	// Recorder (optional) records why an Offer is not published.
	Recorder events.EventRecorder
}

// Reconcile brings the copies of one Offer (named by req, in the Liqo namespace) to what it
// says: one per consumer it is made to, none when it is gone or invalid.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	want, err := r.wanted(ctx, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	copies := &marketv1alpha1.OfferList{}
	if err := r.Client.List(ctx, copies, client.MatchingLabels{consts.OfferOriginLabel: req.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the published copies of Offer %s: %w", req, err)
	}
	for i := range copies.Items {
		c := &copies.Items[i]
		if _, ok := want[c.Namespace]; ok || c.Namespace == r.liqoNamespace() {
			continue
		}
		if err := r.Client.Delete(ctx, c, client.Preconditions{UID: &c.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return reconcile.Result{}, fmt.Errorf("withdrawing the copy %s/%s of Offer %s: %w", c.Namespace, c.Name, req, err)
		}
		log.FromContext(ctx).Info("offer withdrawn", "offer", req, "namespace", c.Namespace)
	}
	for ns, p := range want {
		if err := r.publish(ctx, ns, p); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// wanted returns, by tenant namespace, the copies the Offer at key should have (none when it
// is gone, being deleted, itself a copy or invalid).
func (r *Reconciler) wanted(ctx context.Context, key client.ObjectKey) (map[string]*marketv1alpha1.Offer, error) {
	o := &marketv1alpha1.Offer{}
	if err := r.Client.Get(ctx, key, o); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !o.DeletionTimestamp.IsZero() || o.Labels[consts.OfferOriginLabel] != "" || o.Namespace != r.liqoNamespace() {
		return nil, nil
	}
	if err := offers.Validate(&o.Spec); err != nil {
		log.FromContext(ctx).Info("offer not published", "offer", key, "reason", err.Error())
		if r.Recorder != nil {
			r.Recorder.Eventf(o, nil, corev1.EventTypeWarning, ReasonInvalidOffer, "Publish", "not published: %v", err)
		}
		return nil, nil
	}
	nss := &corev1.NamespaceList{}
	if err := r.Client.List(ctx, nss, client.MatchingLabels{consts.TenantNamespaceLabel: "true"}); err != nil {
		return nil, fmt.Errorf("listing the tenant namespaces to publish Offer %s to: %w", key, err)
	}
	want := map[string]*marketv1alpha1.Offer{}
	for i := range nss.Items {
		ns := &nss.Items[i]
		consumer := ns.Labels[consts.RemoteClusterIDLabel]
		if !ns.DeletionTimestamp.IsZero() || ns.Name == r.liqoNamespace() || !offers.MadeTo(&o.Spec, consumer) {
			continue
		}
		want[ns.Name] = &marketv1alpha1.Offer{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: o.Name,
				Labels: map[string]string{consts.OfferOriginLabel: o.Name, consts.RemoteClusterIDLabel: consumer}},
			Spec: offers.PublishedSpec(&o.Spec, consumer),
		}
	}
	return want, nil
}

// publish creates or updates one copy; an Offer of the same name that is not a copy is left
// alone.
func (r *Reconciler) publish(ctx context.Context, ns string, want *marketv1alpha1.Offer) error {
	cur := &marketv1alpha1.Offer{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), cur)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("publishing Offer %s to tenant namespace %s: %w", want.Name, ns, err)
		}
		log.FromContext(ctx).Info("offer published", "offer", want.Name, "namespace", ns)
		return nil
	case err != nil:
		return fmt.Errorf("reading the copy of Offer %s in tenant namespace %s: %w", want.Name, ns, err)
	case cur.Labels[consts.OfferOriginLabel] != want.Name:
		log.FromContext(ctx).Info("offer not published: the tenant namespace holds an Offer of the same name that is not a copy",
			"offer", want.Name, "namespace", ns)
		return nil
	case equality.Semantic.DeepEqual(cur.Spec, want.Spec) && cur.Labels[consts.RemoteClusterIDLabel] == want.Labels[consts.RemoteClusterIDLabel]:
		return nil
	}
	before := cur.DeepCopy()
	cur.Spec = want.Spec
	cur.Labels[consts.RemoteClusterIDLabel] = want.Labels[consts.RemoteClusterIDLabel]
	if err := r.Client.Patch(ctx, cur, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating the copy of Offer %s in tenant namespace %s: %w", want.Name, ns, err)
	}
	log.FromContext(ctx).Info("offer updated", "offer", want.Name, "namespace", ns)
	return nil
}

func (r *Reconciler) liqoNamespace() string { return consts.LiqoNamespaceOr(r.LiqoNamespace) }

// origin maps an Offer to the request of the Offer it is or copies, in the Liqo namespace.
func (r *Reconciler) origin(_ context.Context, o client.Object) []reconcile.Request {
	if name := o.GetLabels()[consts.OfferOriginLabel]; name != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: r.liqoNamespace(), Name: name}}}
	}
	if o.GetNamespace() == r.liqoNamespace() {
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	}
	return nil
}

// isTenantNamespace lets through the tenant namespaces' events.
var isTenantNamespace = predicate.NewPredicateFuncs(func(o client.Object) bool {
	return o.GetLabels()[consts.TenantNamespaceLabel] == "true"
})

// SetupWithManager watches Offers (originals and copies, both reconcile the original) and
// tenant namespaces (a new consumer, or a namespace relabelled, re-decides every Offer).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	allOffers := enqueue.Listed[*marketv1alpha1.Offer](mgr.GetClient(),
		func() client.ObjectList { return &marketv1alpha1.OfferList{} },
		func(client.Object) []client.ListOption {
			return []client.ListOption{client.InNamespace(r.liqoNamespace())}
		},
		func(_ client.Object, o *marketv1alpha1.Offer) bool { return o.Labels[consts.OfferOriginLabel] == "" })
	err := ctrl.NewControllerManagedBy(mgr).Named("offer-publication").
		Watches(&marketv1alpha1.Offer{}, handler.EnqueueRequestsFromMapFunc(r.origin)).
		Watches(&corev1.Namespace{}, allOffers, builder.WithPredicates(isTenantNamespace)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the offer-publication controller: %w", err)
	}
	return nil
}
