package contractacceptance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/clientcert"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
	"github.com/peerkit/terraform-provider-liqo/internal/offers"
)

// check returns why the tenant copy tc of tenant's consumer is refused, "" when it is accepted.
func (r *Reconciler) check(ctx context.Context, tc *marketv1alpha1.Contract, tenant *authv1beta1.Tenant) (string, error) {
	if why := r.checkParties(tc, tenant); why != "" {
		return why, nil
	}
	offer, why, err := r.offerOf(ctx, tc, string(tenant.Spec.ClusterID))
	if err != nil || why != "" {
		return why, err
	}
	if err := contract.CheckOffer(&tc.Spec.Terms, &offer.Spec); err != nil {
		return fmt.Sprintf("Offer %s: %s", offer.Name, strings.ReplaceAll(err.Error(), "\n", "; ")), nil
	}
	return r.checkCapacity(ctx, tc, string(tenant.Spec.ClusterID), offer)
}

// checkParties checks the terms, who they name, their end, and the consumer's signature.
func (r *Reconciler) checkParties(tc *marketv1alpha1.Contract, tenant *authv1beta1.Tenant) string {
	terms := &tc.Spec.Terms
	if err := contract.CheckTerms(terms); err != nil {
		return err.Error()
	}
	if terms.ConsumerClusterID != tenant.Spec.ClusterID {
		return fmt.Sprintf("spec.terms.consumerClusterID %q is not the consumer of namespace %s (Tenant %s: %q): a consumer "+
			"contracts in its own name only; set it to %q", terms.ConsumerClusterID, tc.Namespace, tenant.Name,
			tenant.Spec.ClusterID, tenant.Spec.ClusterID)
	}
	if terms.ProviderClusterID != r.ClusterID {
		return fmt.Sprintf("spec.terms.providerClusterID %q is not this provider (%q): set it to %q",
			terms.ProviderClusterID, r.ClusterID, r.ClusterID)
	}
	if !terms.End.After(r.now()) {
		return fmt.Sprintf("spec.terms.end %s has passed: set an end in the future", terms.End.UTC().Format("2006-01-02T15:04:05Z"))
	}
	pub, err := clientcert.TenantKey(tenant)
	if err != nil || pub == nil {
		return fmt.Sprintf("the consumer's signature cannot be checked: Tenant %s/%s holds no public key of the consumer (%v); "+
			"peer with a key exchange (authzPolicy KeysExchange)", tenant.Namespace, tenant.Name, err)
	}
	switch err := contract.Verify(terms, tc.Spec.ConsumerSignature, pub); {
	case errors.Is(err, contract.ErrUnsigned):
		return "spec.consumerSignature is missing: the consumer's controller manager signs the terms with its cluster key " +
			"(Secret authentication-keys); wait for it, or check its contract-signing Events"
	case err != nil:
		return fmt.Sprintf("spec.consumerSignature does not verify with the public key of Tenant %s/%s (%v): the terms changed "+
			"after they were signed, or another key signed them; let the consumer's controller manager sign them again",
			tenant.Namespace, tenant.Name, err)
	}
	return ""
}

// offerOf returns the Offer the terms of tc accept, or why it is not one consumer may accept.
func (r *Reconciler) offerOf(ctx context.Context, tc *marketv1alpha1.Contract, consumer string) (*marketv1alpha1.Offer, string, error) {
	terms := &tc.Spec.Terms
	offer := &marketv1alpha1.Offer{}
	key := client.ObjectKey{Namespace: r.liqoNamespace(), Name: terms.OfferName}
	if err := r.Client.Get(ctx, key, offer); client.IgnoreNotFound(err) != nil {
		return nil, "", fmt.Errorf("reading Offer %s of Contract %s/%s: %w", key, tc.Namespace, tc.Name, err)
	}
	if offer.Name == "" || offer.DeletionTimestamp != nil || !offers.MadeTo(&offer.Spec, consumer) {
		return nil, fmt.Sprintf("spec.terms.offerName: the provider makes no Offer %q to consumer %s: accept one of the "+
			"offers published in your tenant namespace (data source liqo_offers)", terms.OfferName, consumer), nil
	}
	if err := offers.Validate(&offer.Spec); err != nil {
		return nil, fmt.Sprintf("spec.terms.offerName: Offer %s is invalid (%v): the provider's administrator fixes it", offer.Name, err), nil
	}
	if terms.OfferUID == "" || terms.OfferUID == string(offer.UID) {
		return offer, "", nil
	}
	published := &marketv1alpha1.Offer{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: tc.Namespace, Name: terms.OfferName}, published)
	if client.IgnoreNotFound(err) != nil {
		return nil, "", fmt.Errorf("reading the published copy of Offer %s in %s: %w", terms.OfferName, tc.Namespace, err)
	}
	if err == nil && published.Labels[consts.OfferOriginLabel] == offer.Name && string(published.UID) == terms.OfferUID {
		return offer, "", nil
	}
	return nil, fmt.Sprintf("spec.terms.offerUID %q is not the UID of Offer %s (nor of its copy published to you): the "+
		"offer was withdrawn and made again; read it again and accept its terms", terms.OfferUID, offer.Name), nil
}

// checkCapacity checks that the contract, with the Signed contracts running on the same Offer
// (the provider's copies, but this contract's own), takes no more than the offer offers.
func (r *Reconciler) checkCapacity(ctx context.Context, tc *marketv1alpha1.Contract, consumer string, offer *marketv1alpha1.Offer) (string, error) {
	own := &marketv1alpha1.ContractList{}
	if err := r.Client.List(ctx, own, client.InNamespace(r.liqoNamespace()), client.HasLabels{consts.ContractConsumerLabel}); err != nil {
		return "", fmt.Errorf("listing the provider's Contracts on Offer %s: %w", offer.Name, err)
	}
	self, now := consts.ProviderContractName(consumer, tc.Name), r.now()
	taken := corev1.ResourceList{}
	for i := range own.Items {
		c := &own.Items[i]
		if c.Name == self || c.Spec.Terms.OfferName != offer.Name || c.Status.Phase != marketv1alpha1.ContractSigned || !c.Spec.Terms.End.After(now) {
			continue
		}
		for name, q := range c.Spec.Terms.Resources {
			sum := taken[name]
			sum.Add(q)
			taken[name] = sum
		}
	}
	var p []string
	for name, q := range tc.Spec.Terms.Resources {
		used, offered := taken[name], offer.Spec.Resources[name]
		total := used.DeepCopy()
		total.Add(q)
		if total.Cmp(offered) > 0 {
			left := offered.DeepCopy()
			left.Sub(used)
			if left.Sign() < 0 {
				left = resource.Quantity{}
			}
			p = append(p, fmt.Sprintf("spec.terms.resources[%s] %s with the %s of the contracts running on Offer %s is above the "+
				"%s it offers: contract at most %s, or wait for a running contract to end", name, q.String(), used.String(),
				offer.Name, offered.String(), left.String()))
		}
	}
	slices.Sort(p)
	return strings.Join(p, "; "), nil
}
