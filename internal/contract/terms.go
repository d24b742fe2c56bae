package contract

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// DefaultDuration is how long a contract runs when its writer does not say: the offer's
// minimum duration, else 30 days.
const DefaultDuration = 720 * time.Hour

// ErrOutsideOffer is the error of terms that differ from the offer they accept: a resource not
// offered, an amount outside the offer's bounds, a duration outside its minimum and maximum,
// another price or currency.
var ErrOutsideOffer = errors.New("the terms are not the offer's")

// DurationFor is the duration of a contract on the offer spec when none is asked: its
// minimum duration, else DefaultDuration.
func DurationFor(spec *marketv1alpha1.OfferSpec) time.Duration {
	if spec.MinDuration != nil && spec.MinDuration.Duration > 0 {
		return spec.MinDuration.Duration
	}
	return DefaultDuration
}

// OfferName is the name of the Offer a published copy (what offers.ReadAsConsumer returns)
// stands for: its consts.OfferOriginLabel, else its own name.
func OfferName(offer *marketv1alpha1.Offer) string {
	if name := offer.Labels[consts.OfferOriginLabel]; name != "" {
		return name
	}
	return offer.Name
}

// TermsFor makes the terms by which consumerID accepts offer (the copy published to it, as
// offers.ReadAsConsumer returns it) of providerID: the resources asked at the offer's prices
// (a resource the offer gives no price is free: price 0), in the offer's currency, from start to
// end (both to the second). The offer's UID and generation are left out: the consumer sees a
// copy, whose UID is not the offer's. Terms outside the offer (CheckOffer) or invalid
// (CheckTerms) are an error naming the offer and the field.
func TermsFor(offer *marketv1alpha1.Offer, consumerID, providerID corev1beta1.ClusterID, resources corev1.ResourceList,
	start, end time.Time) (*marketv1alpha1.ContractTerms, error) {
	terms := &marketv1alpha1.ContractTerms{
		ConsumerClusterID: consumerID,
		ProviderClusterID: providerID,
		OfferName:         OfferName(offer),
		Resources:         resources.DeepCopy(),
		Prices:            map[corev1.ResourceName]marketv1alpha1.Price{},
		Currency:          marketv1alpha1.CurrencyCode(offer.Spec.Currency),
		Start:             metav1.NewTime(start.UTC().Truncate(time.Second)),
		End:               metav1.NewTime(end.UTC().Truncate(time.Second)),
	}
	for name := range resources {
		price, ok := offer.Spec.Prices[name]
		if !ok {
			price = marketv1alpha1.Price{Amount: "0"}
		}
		terms.Prices[name] = *price.DeepCopy()
	}
	if err := CheckOffer(terms, &offer.Spec); err != nil {
		return nil, fmt.Errorf("accepting offer %s: %w", terms.OfferName, err)
	}
	if err := CheckTerms(terms); err != nil {
		return nil, fmt.Errorf("accepting offer %s: %w", terms.OfferName, err)
	}
	return terms, nil
}

// CheckOffer checks that terms are the offer spec's: each resource offered, its amount within
// the offer's minimum and maximum (and what it offers), its price the offer's (0 for one the
// offer prices not), the offer's currency, a duration within the offer's minimum and maximum.
// It does not check what other contracts on the offer already take. The error wraps
// ErrOutsideOffer and names the field and the fix.
func CheckOffer(terms *marketv1alpha1.ContractTerms, spec *marketv1alpha1.OfferSpec) error {
	var errs []error
	outside := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrOutsideOffer}, args...)...))
	}
	if string(terms.Currency) != spec.Currency && len(spec.Prices) > 0 {
		outside("spec.terms.currency %q is not the offer's %q", terms.Currency, spec.Currency)
	}
	for _, name := range resourceNames(terms) {
		checkResource(terms, spec, name, outside)
	}
	d := terms.End.Sub(terms.Start.Time)
	if spec.MinDuration != nil && d < spec.MinDuration.Duration {
		outside("the duration %s is below the offer's minDuration %s: ask for at least that long", d, spec.MinDuration.Duration)
	}
	if spec.MaxDuration != nil && d > spec.MaxDuration.Duration {
		outside("the duration %s is above the offer's maxDuration %s: ask for at most that long, and renew", d, spec.MaxDuration.Duration)
	}
	return errors.Join(errs...)
}

// checkResource checks one resource of terms against the offer spec.
func checkResource(terms *marketv1alpha1.ContractTerms, spec *marketv1alpha1.OfferSpec, name corev1.ResourceName,
	outside func(format string, args ...any)) {
	offered, ok := spec.Resources[name]
	if !ok {
		outside("spec.terms.resources[%s]: the offer does not offer %s: ask only for what it offers", name, name)
		return
	}
	q, asked := terms.Resources[name]
	limit := offered
	if hi, ok := spec.Maximum[name]; ok && hi.Cmp(limit) < 0 {
		limit = hi
	}
	switch {
	case !asked:
	case q.Cmp(limit) > 0:
		outside("spec.terms.resources[%s]: %s is above the %s the offer allows: ask for less", name, q.String(), limit.String())
	case below(spec.Minimum, name, q):
		lo := spec.Minimum[name]
		outside("spec.terms.resources[%s]: %s is below the offer's minimum %s: ask for more", name, q.String(), lo.String())
	}
	want, priced := spec.Prices[name]
	if !priced {
		want = marketv1alpha1.Price{Amount: "0"}
	}
	got := terms.Prices[name]
	if !samePrice(got, want) {
		outside("spec.terms.prices[%s]: %s per %s is not the offer's %s per %s", name, got.Amount, offersUnit(got).String(),
			want.Amount, offersUnit(want).String())
	}
}

// below tells whether minimum names name with a quantity above q.
func below(minimum corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) bool {
	lo, ok := minimum[name]
	return ok && q.Cmp(lo) < 0
}
