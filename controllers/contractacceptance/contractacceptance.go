// Package contractacceptance answers, on a provider, the Contracts its consumers propose (seed
// 004's contract). A consumer's Contract reaches the provider's tenant namespace of that consumer
// (the replication controller copies it there with the consumer's identity, which may write
// Contracts there but not their status). This controller checks it (a Contract labelled
// liqo.io/replication=true is this cluster's own proposal to a provider, contractsigning's, and is
// not answered):
//
//   - the consumer is the Tenant of the namespace, and the terms name it and this cluster as
//     provider (the terms alone are never trusted);
//   - contract.CheckTerms, and an end still ahead;
//   - the consumer's signature verifies with the Tenant's public key;
//   - the Offer named by the terms, in the Liqo namespace, exists, is made to the consumer, is the
//     one read (its UID, or its published copy's, when the terms give one), and the terms are
//     its: the same currency and prices, amounts within its minimum and maximum, a duration
//     within its minimum and maximum, only resources it offers, and, with the Signed contracts
//     running on it, no more than it offers.
//
// A contract that passes is countersigned with this cluster's key, and the provider keeps its own
// copy in the Liqo namespace (consts.ProviderContractName, labels consts.ContractConsumerLabel and
// consts.ContractNameLabel), out of the consumer's reach: the grant follows that copy. Both copies'
// status says Signed, with status.providerSignature; the consumer reads it back through
// replication. A contract that fails is Refused, status.reason naming the field and the fix, with
// a Warning Event, and no copy is made.
//
// A contract that runs is kept to its end: a change of its terms that fails the checks leaves
// the provider's copy unchanged (the tenant copy says Refused, and its RunningTermsKept condition
// says the signed terms keep running), a change that passes them (a renewal) is countersigned and
// replaces it, and a withdrawn or changed Offer does not end it. At terms.end both copies become
// Expired. The provider's copy is deleted when the tenant copy is gone and the contract ended,
// or the consumer has no Tenant left (unpeered); the consumer deleting its copy alone does not end
// a running contract.
package contractacceptance

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

const (
	// ReasonRefused is the reason of the Warning Event on a tenant copy refused.
	ReasonRefused = "ContractRefused"
	// ReasonSigned is the reason of the Normal Event on a tenant copy countersigned.
	ReasonSigned = "ContractSigned"
	// ConditionAccepted is the condition saying whether the provider accepted the terms: True
	// (reason Signed or Expired) or False (reason Refused, the message the why).
	ConditionAccepted = "Accepted"
	// ConditionRunningTermsKept is the condition, True on a tenant copy whose new terms were
	// refused, saying that the terms signed before keep running unchanged to their end.
	ConditionRunningTermsKept = "RunningTermsKept"
)

// Reconciler answers the Contracts of the tenant namespaces and keeps the provider's copies.
type Reconciler struct {
	// Client reads Tenants, Offers and Contracts, writes Contracts and their status.
	Client client.Client
	// LiqoNamespace holds this cluster's key, its Offers and its copies of the Contracts
	// (consts.LiqoNamespace by default).
	LiqoNamespace string
	// ClusterID is this cluster's ID: the provider the terms must name.
	ClusterID corev1beta1.ClusterID
	// Recorder (optional) records refusals and signatures on the tenant copies.
	Recorder events.EventRecorder
	// Now (optional, time.Now by default) is the clock.
	Now func() time.Time
}

// Reconcile answers a tenant copy, or keeps a provider's copy (a request in the Liqo namespace).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Namespace == r.liqoNamespace() {
		return r.reconcileOwn(ctx, req)
	}
	tc := &marketv1alpha1.Contract{}
	if err := r.Client.Get(ctx, req.NamespacedName, tc); err != nil || tc.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if tc.Labels[consts.ReplicationLabel] == "true" {
		return reconcile.Result{}, nil // this cluster's own proposal to a provider (contractsigning's)
	}
	tenant, why, err := r.tenantOf(ctx, tc.Namespace)
	if err != nil || (tenant == nil && why == "") {
		return reconcile.Result{}, err
	}
	var own *marketv1alpha1.Contract
	if tenant != nil {
		if own, err = r.ownCopy(ctx, string(tenant.Spec.ClusterID), tc.Name); err != nil {
			return reconcile.Result{}, err
		}
	}
	key, err := signing.ReadClusterKey(ctx, r.Client, r.liqoNamespace())
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("answering Contract %s: %w", req, err)
	}
	if own != nil && sameTerms(own, tc) && contract.Verify(&own.Spec.Terms, own.Status.ProviderSignature, key.Public) == nil {
		// Already countersigned: it runs to its end, whatever became of the offer.
		if err := r.mirror(ctx, tc, own); err != nil {
			return reconcile.Result{}, err
		}
		return r.untilEnd(own), nil
	}
	if why == "" {
		why, err = r.check(ctx, tc, tenant)
		if err != nil {
			return reconcile.Result{}, err
		}
	}
	if why != "" {
		log.FromContext(ctx).Info("contract refused", "contract", req, "reason", why)
		return reconcile.Result{}, r.refuse(ctx, tc, own, why)
	}
	sig, err := contract.Sign(&tc.Spec.Terms, key)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("countersigning Contract %s: %w", req, err)
	}
	if own, err = r.keep(ctx, tc, own, string(tenant.Spec.ClusterID), sig); err != nil {
		return reconcile.Result{}, err
	}
	log.FromContext(ctx).Info("contract countersigned", "contract", req, "copy", own.Name, "end", own.Spec.Terms.End)
	if err := r.mirror(ctx, tc, own); err != nil {
		return reconcile.Result{}, err
	}
	return r.untilEnd(own), nil
}

// tenantOf returns the Tenant of a tenant namespace, the consumer whose Contracts are there; nil
// and "" when ns is no tenant namespace (its Contracts are not answered), nil and the reason to
// refuse when it has no Tenant or more than one.
func (r *Reconciler) tenantOf(ctx context.Context, ns string) (*authv1beta1.Tenant, string, error) {
	namespace := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ns}, namespace); err != nil {
		return nil, "", client.IgnoreNotFound(fmt.Errorf("reading namespace %s: %w", ns, err))
	}
	if namespace.Labels[consts.TenantNamespaceLabel] != "true" || namespace.DeletionTimestamp != nil {
		return nil, "", nil
	}
	tenants := &authv1beta1.TenantList{}
	if err := r.Client.List(ctx, tenants, client.InNamespace(ns)); err != nil {
		return nil, "", fmt.Errorf("listing the Tenants of namespace %s: %w", ns, err)
	}
	var found []*authv1beta1.Tenant
	for i := range tenants.Items {
		if t := &tenants.Items[i]; t.DeletionTimestamp == nil && t.Spec.ClusterID != "" {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Sprintf("namespace %s has no Tenant: the provider accepts contracts only from a consumer that "+
			"authenticated with it (liqo_peering); peer first", ns), nil
	case 1:
		return found[0], "", nil
	default:
		return nil, fmt.Sprintf("namespace %s has %d Tenants: the consumer of the namespace is ambiguous; the provider's "+
			"administrator keeps one Tenant per tenant namespace", ns, len(found)), nil
	}
}

// ownCopy returns the provider's copy of the Contract name of consumer, or nil.
func (r *Reconciler) ownCopy(ctx context.Context, consumer, name string) (*marketv1alpha1.Contract, error) {
	own := &marketv1alpha1.Contract{}
	key := client.ObjectKey{Namespace: r.liqoNamespace(), Name: consts.ProviderContractName(consumer, name)}
	if err := r.Client.Get(ctx, key, own); err != nil {
		return nil, client.IgnoreNotFound(fmt.Errorf("reading the provider's copy %s of Contract %s of %s: %w", key, name, consumer, err))
	}
	return own, nil
}

// untilEnd requeues at the end of own's terms, when it runs: then it expires.
func (r *Reconciler) untilEnd(own *marketv1alpha1.Contract) reconcile.Result {
	if left := own.Spec.Terms.End.Sub(r.now()); left > 0 {
		return reconcile.Result{RequeueAfter: left + time.Second}
	}
	return reconcile.Result{}
}

func (r *Reconciler) liqoNamespace() string { return consts.LiqoNamespaceOr(r.LiqoNamespace) }

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// event records an Event on c, when there is a recorder.
func (r *Reconciler) event(c *marketv1alpha1.Contract, eventType, reason, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(c, nil, eventType, reason, "Countersign", note, args...)
	}
}

// SetupWithManager watches Contracts (a tenant copy brings back the provider's copies of its
// name, a provider's copy its tenant copies), Offers (a new or changed offer re-decides the
// contracts on it) and Tenants (a consumer's Tenant re-decides its contracts, and its going
// releases the provider's copies).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	c := mgr.GetClient()
	contracts := func() client.ObjectList { return &marketv1alpha1.ContractList{} }
	onOffer := enqueue.Listed[*marketv1alpha1.Contract](c, contracts, nil, func(o client.Object, item *marketv1alpha1.Contract) bool {
		return o.GetNamespace() == r.liqoNamespace() && item.Namespace != r.liqoNamespace() && item.Spec.Terms.OfferName == o.GetName()
	})
	onTenant := enqueue.Listed[*marketv1alpha1.Contract](c, contracts, nil, func(o client.Object, item *marketv1alpha1.Contract) bool {
		t, ok := o.(*authv1beta1.Tenant)
		return ok && (item.Namespace == t.Namespace || item.Labels[consts.ContractConsumerLabel] == string(t.Spec.ClusterID))
	})
	err := ctrl.NewControllerManagedBy(mgr).Named("contract-acceptance").
		Watches(&marketv1alpha1.Contract{}, handler.EnqueueRequestsFromMapFunc(r.related)).
		Watches(&marketv1alpha1.Offer{}, onOffer).
		Watches(&authv1beta1.Tenant{}, onTenant).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the contract-acceptance controller: %w", err)
	}
	return nil
}

// related maps a Contract to itself and its other copies: a tenant copy to the provider's copies
// of its name, a provider's copy to the Contracts of its name in its consumer's tenant namespaces.
func (r *Reconciler) related(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	if o.GetNamespace() != r.liqoNamespace() {
		own := &marketv1alpha1.ContractList{}
		if err := r.Client.List(ctx, own, client.InNamespace(r.liqoNamespace()), client.MatchingLabels{consts.ContractNameLabel: o.GetName()}); err != nil {
			return reqs
		}
		for i := range own.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&own.Items[i])})
		}
		return reqs
	}
	nss, err := r.tenantNamespaces(ctx, o.GetLabels()[consts.ContractConsumerLabel])
	if err != nil {
		return reqs
	}
	for _, ns := range nss {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: o.GetLabels()[consts.ContractNameLabel]}})
	}
	return reqs
}

// tenantNamespaces lists the tenant namespaces of consumer.
func (r *Reconciler) tenantNamespaces(ctx context.Context, consumer string) ([]string, error) {
	if consumer == "" {
		return nil, nil
	}
	list := &corev1.NamespaceList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}); err != nil {
		return nil, fmt.Errorf("listing the tenant namespaces of consumer %s: %w", consumer, err)
	}
	var out []string
	for _, ns := range list.Items {
		out = append(out, ns.Name)
	}
	return out, nil
}
