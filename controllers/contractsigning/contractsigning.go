// Package contractsigning signs, on a consumer, the Contracts it proposes to its providers (seed
// 004's contract): a Contract in a tenant namespace labelled liqo.io/replication=true (the
// consumer's own, which the replication controller copies to the provider named by its
// liqo.io/remote-cluster-id label) gets spec.consumerSignature = contract.Sign(spec.terms, the
// cluster's key) whenever its signature is missing or does not verify for the terms (a renewal:
// the terms changed), and annotation consts.ContractSignedTermsAnnotation records the digest of
// the terms signed, so that the replication controller sends the provider signed terms only. The
// key is the cluster's own (Secret authentication-keys in the Liqo namespace), and never leaves
// the cluster.
//
// Terms this consumer should not sign are left unsigned, with a Warning Event (reason
// ReasonNotSigned) saying why and the fix: a Contract outside the tenant namespace of the
// provider its label names, terms contract.CheckTerms refuses, terms naming another consumer than
// this cluster, or another provider than the Contract's label. Their
// refusal is not written in the Contract's status: the status is the provider's answer, which the
// replication controller copies back over the consumer's copy, so a phase written here would be
// overwritten; the provider refuses an unsigned contract in its own words.
package contractsigning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// ReasonNotSigned is the reason of the Warning Event on a Contract left unsigned.
const ReasonNotSigned = "ContractNotSigned"

// ReasonSigned is the reason of the Normal Event on a Contract signed (or signed again, for new
// terms).
const ReasonSigned = "ContractSigned"

// Reconciler signs the consumer's Contracts with the cluster's key.
type Reconciler struct {
	// Client reads and writes the Contracts and reads the cluster's key.
	Client client.Client
	// LiqoNamespace holds the cluster's key (consts.LiqoNamespace by default).
	LiqoNamespace string
	// ClusterID is this cluster's ID: the consumer the terms it signs must name.
	ClusterID corev1beta1.ClusterID
	// Recorder (optional) records why a Contract is not signed, and its signing.
	Recorder events.EventRecorder
}

// Reconcile signs one Contract when its signature is missing or does not verify for its terms.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c := &marketv1alpha1.Contract{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !ours(c) || c.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	key, err := signing.ReadClusterKey(ctx, r.Client, consts.LiqoNamespaceOr(r.LiqoNamespace))
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("signing Contract %s: %w", req, err)
	}
	if contract.Verify(&c.Spec.Terms, c.Spec.ConsumerSignature, key.Public) == nil && contract.SignedByConsumer(c) {
		return reconcile.Result{}, nil
	}
	why, err := r.refusal(ctx, c)
	if err != nil {
		return reconcile.Result{}, err
	}
	if why != "" {
		log.FromContext(ctx).Info("contract not signed", "contract", req, "reason", why)
		r.event(c, corev1.EventTypeWarning, ReasonNotSigned, "not signed: %s", why)
		return reconcile.Result{}, nil
	}
	sig, err := contract.Sign(&c.Spec.Terms, key)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("signing Contract %s: %w", req, err)
	}
	before := c.DeepCopy()
	c.Spec.ConsumerSignature = sig
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[consts.ContractSignedTermsAnnotation] = contract.TermsDigest(&c.Spec.Terms)
	// A patch made on the terms read: a change of them meanwhile fails it, and the new terms
	// are signed at the retry.
	if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, fmt.Errorf("writing spec.consumerSignature of Contract %s: %w", req, err)
	}
	log.FromContext(ctx).Info("contract signed", "contract", req, "offer", c.Spec.Terms.OfferName, "end", c.Spec.Terms.End)
	r.event(c, corev1.EventTypeNormal, ReasonSigned, "signed the terms on offer %s of provider %s, until %s",
		c.Spec.Terms.OfferName, c.Spec.Terms.ProviderClusterID, c.Spec.Terms.End.UTC().Format("2006-01-02T15:04:05Z"))
	return reconcile.Result{}, nil
}

// refusal says why this cluster does not sign the Contract's terms, "" when it does.
func (r *Reconciler) refusal(ctx context.Context, c *marketv1alpha1.Contract) (string, error) {
	terms := &c.Spec.Terms
	provider := c.Labels[consts.RemoteClusterIDLabel]
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: c.Namespace}, ns); err != nil {
		return "", fmt.Errorf("reading the namespace of Contract %s/%s: %w", c.Namespace, c.Name, err)
	}
	// Only in the tenant namespace of the provider it goes to: not one another peer writes in.
	if ns.Labels[consts.TenantNamespaceLabel] != "true" || ns.Labels[consts.RemoteClusterIDLabel] != provider {
		return fmt.Sprintf("namespace %s is not the tenant namespace of provider %s (labels %s=true, %s=%s): write the "+
			"Contract in the namespace of the provider's ResourceSlices", c.Namespace, provider, consts.TenantNamespaceLabel,
			consts.RemoteClusterIDLabel, provider), nil
	}
	if err := contract.CheckTerms(terms); err != nil {
		return err.Error(), nil
	}
	if r.ClusterID != "" && terms.ConsumerClusterID != r.ClusterID {
		return fmt.Sprintf("spec.terms.consumerClusterID is %q, not this cluster (%q): a consumer signs only terms naming "+
			"itself; set spec.terms.consumerClusterID to %q", terms.ConsumerClusterID, r.ClusterID, r.ClusterID), nil
	}
	if string(terms.ProviderClusterID) != provider {
		return fmt.Sprintf("spec.terms.providerClusterID is %q, but the Contract goes to provider %q (label %s): "+
			"set both to the provider's cluster ID", terms.ProviderClusterID, provider, consts.RemoteClusterIDLabel), nil
	}
	return "", nil
}

// event records an Event on c, when there is a recorder.
func (r *Reconciler) event(c *marketv1alpha1.Contract, eventType, reason, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(c, nil, eventType, reason, "Sign", note, args...)
	}
}

// ours tells whether a Contract is one this consumer proposes: replicated to a provider.
func ours(o client.Object) bool {
	return o.GetLabels()[consts.ReplicationLabel] == "true" && o.GetLabels()[consts.RemoteClusterIDLabel] != ""
}

// SetupWithManager watches the consumer's Contracts (a change of terms is a change of spec, and
// bumps the generation) and the cluster's key (a new key signs every Contract again).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	keySecret := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == consts.LiqoNamespaceOr(r.LiqoNamespace) && o.GetName() == consts.SigningKeySecret
	})
	allContracts := enqueue.Listed[*marketv1alpha1.Contract](mgr.GetClient(),
		func() client.ObjectList { return &marketv1alpha1.ContractList{} },
		func(client.Object) []client.ListOption {
			return []client.ListOption{client.MatchingLabels{consts.ReplicationLabel: "true"}}
		}, nil)
	err := ctrl.NewControllerManagedBy(mgr).Named("contract-signing").
		For(&marketv1alpha1.Contract{}, builder.WithPredicates(predicate.NewPredicateFuncs(ours), predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, allContracts, builder.WithPredicates(keySecret)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the contract-signing controller: %w", err)
	}
	return nil
}
