// Package offers holds the rules of seed 004's advertisement (market.peerkit.io Offers): what a
// valid offer is, which consumers an offer is made to, and what a consumer's published copy
// of an offer holds. The controller manager, the chart's default offer and the Terraform
// provider all check offers with it, so an offer refused at plan time is the one the
// controllers would refuse.
package offers

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"

	"golang.org/x/text/currency"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
)

// MaxPriceLength is the longest price amount (a Price's MaxLength in the CRD).
const MaxPriceLength = 32

// decimalPattern is a non-negative decimal written out in full, such as 0.025 (the CRD's
// pattern of a price and of a Decimal).
var decimalPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// Sentinel errors, so that callers can tell a kind of bad offer from another.
var (
	// ErrInvalidPrice is a price that is not a non-negative decimal.
	ErrInvalidPrice = errors.New("invalid price")
	// ErrUnknownCurrency is a currency that is not an ISO 4217 code.
	ErrUnknownCurrency = errors.New("unknown currency")
	// ErrInvalidResourceName is a resource name that is not a qualified name.
	ErrInvalidResourceName = errors.New("invalid resource name")
	// ErrInvalidBounds is a minimum above a maximum, or a bound of a resource not offered.
	ErrInvalidBounds = errors.New("invalid bounds")
)

// IsDecimal tells whether s is a non-negative decimal written out in full, such as 0.025: digits
// with an optional decimal point followed by digits, no sign, exponent, unit nor currency. Offers'
// prices and contracts' prices and amounts of money are such decimals.
func IsDecimal(s string) bool {
	return decimalPattern.MatchString(s)
}

// ValidatePrice checks a price per unit and hour: a non-negative decimal such as 0.025, of at
// most MaxPriceLength characters.
func ValidatePrice(price string) error {
	if len(price) > MaxPriceLength || !IsDecimal(price) {
		return fmt.Errorf("%w: %q is not a non-negative decimal such as 0.025", ErrInvalidPrice, price)
	}
	return nil
}

// ValidateCurrency checks a currency code: an ISO 4217 code in upper case, such as EUR.
func ValidateCurrency(code string) error {
	if len(code) != 3 || code != toUpper(code) {
		return fmt.Errorf("%w: %q is not an ISO 4217 code such as EUR or USD", ErrUnknownCurrency, code)
	}
	if _, err := currency.ParseISO(code); err != nil {
		return fmt.Errorf("%w: %q is not an ISO 4217 code such as EUR or USD", ErrUnknownCurrency, code)
	}
	return nil
}

// toUpper upper-cases ASCII letters.
func toUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// ValidateResourceName checks a resource name: cpu, memory, nvidia.com/gpu (a qualified name,
// as Kubernetes requires of resource names).
func ValidateResourceName(name string) error {
	if errs := validation.IsQualifiedName(name); len(errs) > 0 {
		return fmt.Errorf("%w: %q: %s", ErrInvalidResourceName, name, errs[0])
	}
	return nil
}

// Validate checks an offer's spec beyond what its CRD checks: resource names, prices, the
// currency, minimums not above maximums nor maximums above what is offered, and the durations.
// The error names the field.
func Validate(spec *marketv1alpha1.OfferSpec) error {
	if len(spec.Resources) == 0 {
		return errors.New("spec.resources: an offer offers at least one resource")
	}
	for _, name := range sortedNames(spec.Resources) {
		if err := ValidateResourceName(string(name)); err != nil {
			return fmt.Errorf("spec.resources: %w", err)
		}
		if q := spec.Resources[name]; q.Sign() < 0 {
			return fmt.Errorf("spec.resources[%s]: %s is negative", name, q.String())
		}
	}
	if err := validatePrices(spec); err != nil {
		return err
	}
	if err := validateBounds(spec); err != nil {
		return err
	}
	if spec.MinDuration != nil && spec.MaxDuration != nil && spec.MinDuration.Duration > spec.MaxDuration.Duration {
		return fmt.Errorf("%w: spec.minDuration %s is above spec.maxDuration %s", ErrInvalidBounds, spec.MinDuration.Duration, spec.MaxDuration.Duration)
	}
	return nil
}

// validatePrices checks the prices and their currency.
func validatePrices(spec *marketv1alpha1.OfferSpec) error {
	if len(spec.Prices) > 0 && spec.Currency == "" {
		return fmt.Errorf("%w: spec.currency: prices need a currency", ErrUnknownCurrency)
	}
	if spec.Currency != "" {
		if err := ValidateCurrency(spec.Currency); err != nil {
			return fmt.Errorf("spec.currency: %w", err)
		}
	}
	for name, p := range spec.Prices {
		if _, ok := spec.Resources[name]; !ok {
			return fmt.Errorf("spec.prices[%s]: the resource is not offered in spec.resources", name)
		}
		if err := ValidatePrice(p.Amount); err != nil {
			return fmt.Errorf("spec.prices[%s].amount: %w", name, err)
		}
		if p.Per != nil && p.Per.Sign() <= 0 {
			return fmt.Errorf("%w: spec.prices[%s].per: %s is not positive", ErrInvalidPrice, name, p.Per.String())
		}
	}
	return nil
}

// validateBounds checks minimum <= maximum <= resources, resource by resource.
func validateBounds(spec *marketv1alpha1.OfferSpec) error {
	for field, l := range map[string]corev1.ResourceList{"minimum": spec.Minimum, "maximum": spec.Maximum} {
		for name, q := range l {
			offered, ok := spec.Resources[name]
			switch {
			case !ok:
				return fmt.Errorf("%w: spec.%s[%s]: the resource is not offered in spec.resources", ErrInvalidBounds, field, name)
			case q.Sign() < 0:
				return fmt.Errorf("%w: spec.%s[%s]: %s is negative", ErrInvalidBounds, field, name, q.String())
			case q.Cmp(offered) > 0:
				return fmt.Errorf("%w: spec.%s[%s]: %s is above the %s offered", ErrInvalidBounds, field, name, q.String(), offered.String())
			}
		}
	}
	for name, lo := range spec.Minimum {
		if hi, ok := spec.Maximum[name]; ok && lo.Cmp(hi) > 0 {
			return fmt.Errorf("%w: spec.minimum[%s] %s is above spec.maximum[%s] %s", ErrInvalidBounds, name, lo.String(), name, hi.String())
		}
	}
	return nil
}

// sortedNames returns the names of l in order, for stable messages.
func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// MadeTo tells whether an offer is made to the consumer whose cluster ID is consumerID: every
// consumer when it lists none, else those it lists.
func MadeTo(spec *marketv1alpha1.OfferSpec, consumerID string) bool {
	return consumerID != "" && (len(spec.Consumers) == 0 || slices.Contains(spec.Consumers, consumerID))
}

// PublishedSpec is the spec of the copy of an offer published to one consumer: the offer's
// terms, and the consumer alone (when the offer lists consumers), so that no consumer learns
// which others the provider makes the offer to.
func PublishedSpec(spec *marketv1alpha1.OfferSpec, consumerID string) marketv1alpha1.OfferSpec {
	out := *spec.DeepCopy()
	if len(out.Consumers) > 0 {
		out.Consumers = []string{consumerID}
	}
	return out
}

// Unit is the amount of a resource a price is for: Per, or 1.
func Unit(p marketv1alpha1.Price) resource.Quantity {
	if p.Per != nil {
		return p.Per.DeepCopy()
	}
	return resource.MustParse("1")
}
