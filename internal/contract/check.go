package contract

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/offers"
)

// InvalidTermsError is the error of terms CheckTerms refuses: each problem names the field
// (spec.terms.…), what is wrong, and the fix.
type InvalidTermsError struct {
	// Problems are the problems found, in field order.
	Problems []string
}

// Error joins the problems.
func (e *InvalidTermsError) Error() string {
	return "invalid contract terms: " + strings.Join(e.Problems, "; ")
}

// CheckTerms refuses terms no party should sign: missing or malformed cluster IDs or offer
// name, the same cluster on both sides, a currency that is not an ISO 4217 code, a period that
// ends before it starts, no resources, an amount not above zero, a price missing, negative or not
// a plain decimal number, a price for a resource not contracted. The error is an
// *InvalidTermsError listing every problem.
func CheckTerms(terms *marketv1alpha1.ContractTerms) error {
	var p []string
	p = append(p, checkParties(terms)...)
	p = append(p, checkCurrency(string(terms.Currency))...)
	p = append(p, checkPeriod(terms)...)
	p = append(p, checkResources(terms)...)
	if len(p) > 0 {
		return &InvalidTermsError{Problems: p}
	}
	return nil
}

// checkParties checks the cluster IDs and the offer.
func checkParties(terms *marketv1alpha1.ContractTerms) []string {
	var p []string
	for _, id := range []struct{ field, value, party string }{
		{"consumerClusterID", string(terms.ConsumerClusterID), "consumer"},
		{"providerClusterID", string(terms.ProviderClusterID), "provider"},
	} {
		if id.value == "" {
			p = append(p, fmt.Sprintf("spec.terms.%s is empty: set the %s's cluster ID", id.field, id.party))
		} else if errs := validation.IsDNS1123Label(id.value); len(errs) > 0 {
			p = append(p, fmt.Sprintf("spec.terms.%s %q is not a cluster ID: %s", id.field, id.value, strings.Join(errs, ", ")))
		}
	}
	if terms.ConsumerClusterID != "" && terms.ConsumerClusterID == terms.ProviderClusterID {
		p = append(p, fmt.Sprintf("spec.terms.consumerClusterID and providerClusterID are both %q: a cluster does not contract "+
			"with itself; set the consumer's and the provider's cluster IDs", terms.ConsumerClusterID))
	}
	if terms.OfferName == "" {
		p = append(p, "spec.terms.offerName is empty: name the provider's offer the contract accepts")
	} else if errs := validation.IsDNS1123Subdomain(terms.OfferName); len(errs) > 0 {
		p = append(p, fmt.Sprintf("spec.terms.offerName %q is not an object name: %s", terms.OfferName, strings.Join(errs, ", ")))
	}
	if terms.OfferGeneration < 0 {
		p = append(p, fmt.Sprintf("spec.terms.offerGeneration is %d: set the offer's metadata.generation (0 or more)", terms.OfferGeneration))
	}
	return p
}

// checkCurrency checks that code is an ISO 4217 currency code, upper-case.
func checkCurrency(code string) []string {
	if code == "" {
		return []string{"spec.terms.currency is empty: set the prices' ISO 4217 currency code, such as EUR or USD"}
	}
	if offers.ValidateCurrency(code) != nil {
		return []string{fmt.Sprintf("spec.terms.currency %q is not an ISO 4217 currency code: write three upper-case letters "+
			"of a known currency, such as EUR or USD", code)}
	}
	return nil
}

// checkPeriod checks that the contract starts and ends, in that order, to the second (what is
// signed).
func checkPeriod(terms *marketv1alpha1.ContractTerms) []string {
	var p []string
	if terms.Start.IsZero() {
		p = append(p, "spec.terms.start is not set: set when the contract starts (RFC 3339)")
	}
	if terms.End.IsZero() {
		p = append(p, "spec.terms.end is not set: set when the contract ends (RFC 3339), after its start")
	}
	if len(p) > 0 {
		return p
	}
	start, end := terms.Start.Truncate(time.Second), terms.End.Truncate(time.Second)
	if !end.After(start) {
		p = append(p, fmt.Sprintf("spec.terms.end %s is not after spec.terms.start %s: set an end at least a second after the start",
			canonicalTime(terms.End), canonicalTime(terms.Start)))
	}
	return p
}

// checkResources checks the amounts and their prices.
func checkResources(terms *marketv1alpha1.ContractTerms) []string {
	if len(terms.Resources) == 0 {
		return []string{"spec.terms.resources is empty: name at least one resource and its amount, such as cpu: 2"}
	}
	var p []string
	for _, name := range resourceNames(terms) {
		if errs := validation.IsQualifiedName(string(name)); len(errs) > 0 {
			p = append(p, fmt.Sprintf("resource name %q is not a resource name: %s", name, strings.Join(errs, ", ")))
		}
		q, contracted := terms.Resources[name]
		price, priced := terms.Prices[name]
		switch {
		case !contracted:
			p = append(p, fmt.Sprintf("spec.terms.prices[%s] prices a resource not in spec.terms.resources: "+
				"add its amount to spec.terms.resources or remove the price", name))
		case q.Sign() <= 0:
			p = append(p, fmt.Sprintf("spec.terms.resources[%s] is %s: contract an amount above zero, or leave the resource out", name, q.String()))
		}
		if !priced {
			if contracted {
				p = append(p, fmt.Sprintf("spec.terms.prices[%s] is missing: set its price per unit and hour (0 for free)", name))
			}
			continue
		}
		p = append(p, checkPrice(string(name), price.Amount)...)
		if price.Per != nil && price.Per.Sign() <= 0 {
			p = append(p, fmt.Sprintf("spec.terms.prices[%s].per is %s: price a quantity above zero, or leave per out for 1", name, price.Per.String()))
		}
	}
	return p
}

// checkPrice checks that a price is a plain non-negative decimal number (offers.IsDecimal) of
// at most offers.MaxPriceLength characters, as offers.ValidatePrice does, with a message naming
// the terms' field and the fix.
func checkPrice(name, price string) []string {
	field := "spec.terms.prices[" + name + "].amount"
	switch {
	case len(price) > offers.MaxPriceLength:
		return []string{fmt.Sprintf("%s has %d characters: write a price of at most %d", field, len(price), offers.MaxPriceLength)}
	case offers.IsDecimal(price):
		return nil
	case strings.HasPrefix(price, "-") && offers.IsDecimal(price[1:]):
		return []string{fmt.Sprintf("%s is negative (%s): write a price of 0 or more", field, price)}
	default:
		return []string{fmt.Sprintf("%s %q is not a decimal number: write digits with an optional decimal point, such as 0.05 "+
			"(no sign, exponent, unit nor currency)", field, price)}
	}
}
