package contractacceptance

import (
	"context"
	"errors"
	"fmt"
	"math/big"
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
	if problems := againstOffer(&tc.Spec.Terms, &offer.Spec); len(problems) > 0 {
		return fmt.Sprintf("the terms are not Offer %s's: %s", offer.Name, strings.Join(problems, "; ")), nil
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

// againstOffer lists how terms differ from the offer spec: the currency, each resource offered,
// its price, its amount within the offer's minimum and maximum, the duration within the offer's.
func againstOffer(terms *marketv1alpha1.ContractTerms, spec *marketv1alpha1.OfferSpec) []string {
	var p []string
	if string(terms.Currency) != spec.Currency && len(spec.Prices) > 0 {
		p = append(p, fmt.Sprintf("spec.terms.currency %q is not the offer's %q: write the offer's currency", terms.Currency, spec.Currency))
	}
	names := make([]corev1.ResourceName, 0, len(terms.Resources))
	for name := range terms.Resources {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p = append(p, againstOfferResource(terms, spec, name)...)
	}
	d := terms.End.Sub(terms.Start.Time)
	if spec.MinDuration != nil && d < spec.MinDuration.Duration {
		p = append(p, fmt.Sprintf("the duration %s (spec.terms.end - start) is below the offer's minDuration %s: contract for "+
			"at least that long", d, spec.MinDuration.Duration))
	}
	if spec.MaxDuration != nil && d > spec.MaxDuration.Duration {
		p = append(p, fmt.Sprintf("the duration %s (spec.terms.end - start) is above the offer's maxDuration %s: contract for "+
			"at most that long, and renew", d, spec.MaxDuration.Duration))
	}
	return p
}

// againstOfferResource lists how one resource of terms differs from the offer spec.
func againstOfferResource(terms *marketv1alpha1.ContractTerms, spec *marketv1alpha1.OfferSpec, name corev1.ResourceName) []string {
	offered, ok := spec.Resources[name]
	if !ok {
		return []string{fmt.Sprintf("spec.terms.resources[%s]: the offer does not offer %s: contract only what it offers", name, name)}
	}
	var p []string
	q := terms.Resources[name]
	most := offered
	if hi, ok := spec.Maximum[name]; ok && hi.Cmp(most) < 0 {
		most = hi
	}
	if q.Cmp(most) > 0 {
		p = append(p, fmt.Sprintf("spec.terms.resources[%s] %s is above the offer's maximum %s: contract at most %s",
			name, q.String(), most.String(), most.String()))
	}
	if lo, ok := spec.Minimum[name]; ok && q.Cmp(lo) < 0 {
		p = append(p, fmt.Sprintf("spec.terms.resources[%s] %s is below the offer's minimum %s: contract at least %s",
			name, q.String(), lo.String(), lo.String()))
	}
	want, priced := spec.Prices[name]
	if !priced {
		want = marketv1alpha1.Price{Amount: "0"}
	}
	got := terms.Prices[name]
	if !samePrice(got, want) {
		wantUnit, gotUnit := offers.Unit(want), offers.Unit(got)
		p = append(p, fmt.Sprintf("spec.terms.prices[%s] %s per %s is not the offer's %s per %s: write the offer's price",
			name, got.Amount, gotUnit.String(), want.Amount, wantUnit.String()))
	}
	return p
}

// samePrice tells whether two prices are the same amount for the same quantity (decimals
// compared exactly: "0.50" is "0.5").
func samePrice(a, b marketv1alpha1.Price) bool {
	x, okA := new(big.Rat).SetString(a.Amount)
	y, okB := new(big.Rat).SetString(b.Amount)
	ua, ub := offers.Unit(a), offers.Unit(b)
	return okA && okB && offers.IsDecimal(a.Amount) && offers.IsDecimal(b.Amount) && x.Cmp(y) == 0 && ua.Cmp(ub) == 0
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
