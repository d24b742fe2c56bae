package contract

import (
	"fmt"
	"math/big"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/offers"
)

// secondsPerHour converts resource-seconds to resource-hours, the unit prices are for.
var secondsPerHour = big.NewRat(3600, 1)

// Rat is the exact value of a quantity.
func Rat(q resource.Quantity) *big.Rat {
	r, _ := new(big.Rat).SetString(q.AsDec().String()) // a Dec's string is always a decimal
	return r
}

// ParseDecimal reads a plain decimal (a Price's amount, a Decimal such as status.accruedCost)
// exactly; field names it in the error.
func ParseDecimal(field, s string) (*big.Rat, error) {
	if !offers.IsDecimal(s) {
		return nil, fmt.Errorf("%s: %q is not a non-negative decimal such as 0.025", field, s)
	}
	r, _ := new(big.Rat).SetString(s)
	return r, nil
}

// FormatDecimal writes r as a plain decimal (the form of a Decimal): exactly when it has at
// most digits digits after the point, else rounded to digits of them; no trailing zeros.
func FormatDecimal(r *big.Rat, digits int) string {
	return canonicalDecimal(r.FloatString(digits))
}

// pricePerUnit is a price for one unit of its resource and one hour: amount / per.
func pricePerUnit(field string, p marketv1alpha1.Price) (*big.Rat, error) {
	amount, err := ParseDecimal(field+".amount", p.Amount)
	if err != nil {
		return nil, err
	}
	unit := Rat(offers.Unit(p))
	if unit.Sign() <= 0 {
		return nil, fmt.Errorf("%s.per: %s is not positive", field, p.Per.String())
	}
	return amount.Quo(amount, unit), nil
}

// Cost is the cost, in the terms' currency, of resourceSeconds (resource → amount × seconds
// used, as metering counts them) at the terms' prices (per offers.Unit of the resource and
// hour): Σ seconds / 3600 × amount / unit × price, exact. A resource without a price in the
// terms is an error, as is a price that is not a decimal; the error names the field. The one
// cost function of the contract flow: the Terraform provider's ceiling (HourlyCost) and the
// provider's metering (status.accruedCost) both use it.
func Cost(terms *marketv1alpha1.ContractTerms, resourceSeconds map[corev1.ResourceName]*big.Rat) (*big.Rat, error) {
	total := new(big.Rat)
	for name, seconds := range resourceSeconds {
		p, ok := terms.Prices[name]
		if !ok {
			return nil, fmt.Errorf("spec.terms.prices[%s]: no price for a resource used", name)
		}
		perUnit, err := pricePerUnit(fmt.Sprintf("spec.terms.prices[%s]", name), p)
		if err != nil {
			return nil, err
		}
		hours := new(big.Rat).Quo(seconds, secondsPerHour)
		total.Add(total, hours.Mul(hours, perUnit))
	}
	return total, nil
}

// HourlyCost is the cost of the terms' resources for one hour at their prices: Cost of
// resources × 3600 seconds.
func HourlyCost(terms *marketv1alpha1.ContractTerms) (*big.Rat, error) {
	seconds := make(map[corev1.ResourceName]*big.Rat, len(terms.Resources))
	for name, q := range terms.Resources {
		seconds[name] = Rat(q).Mul(Rat(q), secondsPerHour)
	}
	return Cost(terms, seconds)
}

// samePrice tells whether two prices are the same per unit (0.005 per 1Gi is 0.005/1073741824
// per 1); a price that is not a decimal is the same as none.
func samePrice(a, b marketv1alpha1.Price) bool {
	x, errA := pricePerUnit("a", a)
	y, errB := pricePerUnit("b", b)
	return errA == nil && errB == nil && x.Cmp(y) == 0
}

// offersUnit is offers.Unit, for messages.
func offersUnit(p marketv1alpha1.Price) *resource.Quantity {
	u := offers.Unit(p)
	return &u
}
