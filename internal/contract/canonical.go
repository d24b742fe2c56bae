// Package contract holds what makes a Contract (market.peerkit.io/v1alpha1) binding: the
// canonical bytes of its terms, the two parties' Ed25519 signatures of them, and the checks that
// refuse invalid terms. The keys are the clusters' own (package internal/signing: the
// authentication-keys Secret, and the consumer's public key in its Tenant's spec.publicKey).
//
// # Canonical encoding (version 1)
//
// Both parties sign the same bytes whatever the spelling of the terms in their copy: the line
// "liqo-contract-v1\n" followed by a JSON object (RFC 8259, no insignificant whitespace, no HTML
// escaping) with exactly these members, in this order:
//
//	consumerClusterID, providerClusterID, offerName, offerUID: the terms' strings as written;
//	offerGeneration: the terms' integer;
//	currency: the currency code as written;
//	start, end: the times in UTC, RFC 3339, to the second ("2026-01-02T15:04:05Z");
//	resources: an array, sorted by name, of {"name", "amount", "price", "per"} for every resource named
//	  in the terms' resources or prices; amount is the quantity's exact value as a plain decimal
//	  ("1000m", "1" and "1e0" are all "1"; "1Gi" is "1073741824"; "500m" is "0.5"), price the
//	  price's amount as a plain decimal ("0.50" is "0.5", "007" is "7"), per the quantity it is
//	  for as a plain decimal like amount ("1" when not given); "" for one missing or, for a
//	  price, not a decimal (CheckTerms refuses such terms, Sign does not sign them).
//
// Decimals have no exponent, no sign unless negative, no leading zeros before the point but
// one, no trailing zeros after it, and no point without digits after it.
package contract

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/offers"
)

// Version is the first line of the canonical encoding: it names the encoding, so that a
// signature of one version never verifies as another's, nor as anything else the clusters' keys
// sign (the authentication handshake's nonces).
const Version = "liqo-contract-v1\n"

// canonicalTerms is the JSON object of the canonical encoding; its field order is the encoding's.
type canonicalTerms struct {
	ConsumerClusterID string              `json:"consumerClusterID"`
	ProviderClusterID string              `json:"providerClusterID"`
	OfferName         string              `json:"offerName"`
	OfferUID          string              `json:"offerUID"`
	OfferGeneration   int64               `json:"offerGeneration"`
	Currency          string              `json:"currency"`
	Start             string              `json:"start"`
	End               string              `json:"end"`
	Resources         []canonicalResource `json:"resources"`
}

// canonicalResource is one resource of the canonical encoding.
type canonicalResource struct {
	Name   string `json:"name"`
	Amount string `json:"amount"`
	Price  string `json:"price"`
	Per    string `json:"per"`
}

// Canonical returns the canonical encoding of terms (see the package documentation): the bytes
// both parties sign. Terms that mean the same encode the same; any change of meaning changes
// the bytes.
func Canonical(terms *marketv1alpha1.ContractTerms) []byte {
	c := canonicalTerms{
		ConsumerClusterID: string(terms.ConsumerClusterID),
		ProviderClusterID: string(terms.ProviderClusterID),
		OfferName:         terms.OfferName,
		OfferUID:          terms.OfferUID,
		OfferGeneration:   terms.OfferGeneration,
		Currency:          string(terms.Currency),
		Start:             canonicalTime(terms.Start),
		End:               canonicalTime(terms.End),
		Resources:         []canonicalResource{},
	}
	for _, name := range resourceNames(terms) {
		r := canonicalResource{Name: string(name)}
		if q, ok := terms.Resources[name]; ok {
			r.Amount = canonicalDecimal(q.AsDec().String())
		}
		if p, ok := terms.Prices[name]; ok && offers.IsDecimal(p.Amount) {
			r.Price, r.Per = canonicalDecimal(p.Amount), "1"
			if p.Per != nil {
				r.Per = canonicalDecimal(p.Per.AsDec().String())
			}
		}
		c.Resources = append(c.Resources, r)
	}
	var buf bytes.Buffer
	buf.WriteString(Version)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Encoding a struct of strings, integers and slices of them cannot fail.
	_ = enc.Encode(c)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// resourceNames are the names in the terms' resources or prices, sorted.
func resourceNames(terms *marketv1alpha1.ContractTerms) []corev1.ResourceName {
	var names []corev1.ResourceName
	for name := range terms.Resources {
		names = append(names, name)
	}
	for name := range terms.Prices {
		if _, ok := terms.Resources[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// canonicalTime is t in UTC, RFC 3339, to the second: what survives the API server.
func canonicalTime(t metav1.Time) string {
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// canonicalDecimal writes a plain decimal number ("-0012.500") without leading zeros before
// the point but one, nor trailing zeros after it, nor a point without digits ("-12.5").
func canonicalDecimal(s string) string {
	sign := ""
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		sign, s = "-", rest
	}
	whole, frac, _ := strings.Cut(s, ".")
	whole = strings.TrimLeft(whole, "0")
	frac = strings.TrimRight(frac, "0")
	if whole == "" {
		whole = "0"
	}
	if whole == "0" && frac == "" {
		sign = ""
	}
	if frac == "" {
		return sign + whole
	}
	return sign + whole + "." + frac
}
