package contract_test

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
)

// sampleOffer is a published copy of an offer: CPU, memory per GiB, free pods, bounds.
func sampleOffer() *marketv1alpha1.Offer {
	return &marketv1alpha1.Offer{
		ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: "liqo-tenant-cl-consumer", UID: "copy-uid",
			Labels: map[string]string{consts.OfferOriginLabel: "small"}},
		Spec: marketv1alpha1.OfferSpec{
			Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"),
				corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Currency: "EUR",
			Prices: map[corev1.ResourceName]marketv1alpha1.Price{corev1.ResourceCPU: {Amount: "0.04"},
				corev1.ResourceMemory: {Amount: "0.005", Per: ptr.To(resource.MustParse("1Gi"))}},
			Maximum:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Minimum:     corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			MinDuration: &metav1.Duration{Duration: time.Hour},
			MaxDuration: &metav1.Duration{Duration: 48 * time.Hour},
		},
	}
}

// TestTermsFor: the terms accepting an offer carry its prices (free resources at 0), its
// currency and name, the period to the second, and cost per hour exactly what the prices say.
func TestTermsFor(t *testing.T) {
	o := sampleOffer()
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("2Gi"),
		corev1.ResourcePods: resource.MustParse("10")}
	begin := start.Add(300 * time.Millisecond)
	terms, err := contract.TermsFor(o, "cl-consumer", "cl-provider", res, begin, begin.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if terms.OfferName != "small" || terms.Currency != "EUR" || terms.OfferUID != "" || !terms.Start.Equal(&metav1.Time{Time: start}) {
		t.Errorf("terms: %+v", terms)
	}
	if p := terms.Prices[corev1.ResourcePods]; p.Amount != "0" {
		t.Errorf("free pods priced %+v, want 0", p)
	}
	if err := contract.CheckTerms(terms); err != nil {
		t.Error(err)
	}
	cost, err := contract.HourlyCost(terms)
	if err != nil {
		t.Fatal(err)
	}
	// 1.5 × 0.04 + 2 × 0.005 = 0.07 per hour.
	if got := contract.FormatDecimal(cost, 6); got != "0.07" {
		t.Errorf("hourly cost %s, want 0.07", got)
	}
	if contract.DurationFor(&o.Spec) != time.Hour || contract.DurationFor(&marketv1alpha1.OfferSpec{}) != contract.DefaultDuration {
		t.Error("DurationFor: not the offer's minimum or the default")
	}
}

// TestTermsForOutsideOffer: asking for what the offer does not give is refused, naming the
// field and the fix.
func TestTermsForOutsideOffer(t *testing.T) {
	cases := []struct {
		name string
		res  corev1.ResourceList
		d    time.Duration
		want string
	}{
		{"above maximum", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}, time.Hour, "resources[cpu]: 5 is above the 4 the offer allows"},
		{"below minimum", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}, time.Hour, "below the offer's minimum 1Gi"},
		{"not offered", corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}, time.Hour, "does not offer nvidia.com/gpu"},
		{"too short", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, time.Minute, "below the offer's minDuration 1h0m0s"},
		{"too long", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, 72 * time.Hour, "above the offer's maxDuration 48h0m0s"},
	}
	for _, tc := range cases {
		_, err := contract.TermsFor(sampleOffer(), "cl-consumer", "cl-provider", tc.res, start, start.Add(tc.d))
		if !errors.Is(err, contract.ErrOutsideOffer) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "offer small") {
			t.Errorf("%s: got %v, want ErrOutsideOffer saying %q", tc.name, err, tc.want)
		}
	}
	terms := sampleTerms()
	o := sampleOffer()
	o.Spec.Resources["nvidia.com/gpu"] = resource.MustParse("1")
	terms.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	terms.Prices = map[corev1.ResourceName]marketv1alpha1.Price{corev1.ResourceCPU: {Amount: "0.05"}}
	terms.End = metav1.NewTime(terms.Start.Add(time.Hour))
	if err := contract.CheckOffer(terms, &o.Spec); err == nil || !strings.Contains(err.Error(), "prices[cpu]: 0.05 per 1 is not the offer's 0.04 per 1") {
		t.Errorf("another price: got %v", err)
	}
	terms.Prices[corev1.ResourceCPU] = marketv1alpha1.Price{Amount: "40", Per: ptr.To(resource.MustParse("1000"))}
	if err := contract.CheckOffer(terms, &o.Spec); err != nil {
		t.Errorf("the same price per another unit: %v", err)
	}
}

// TestCost: resource-seconds cost exactly seconds/3600 × amount/unit × price, summed.
func TestCost(t *testing.T) {
	terms := sampleTerms() // cpu 0.04, memory 0.005 per Gi, gpu 1.2
	gib := new(big.Rat).SetInt64(1 << 30)
	cost, err := contract.Cost(terms, map[corev1.ResourceName]*big.Rat{
		corev1.ResourceCPU:    big.NewRat(90, 1),                          // 90 cpu-seconds: 0.001
		corev1.ResourceMemory: new(big.Rat).Mul(gib, big.NewRat(7200, 1)), // 2 GiB-hours: 0.01
		"nvidia.com/gpu":      big.NewRat(1, 1),                           // 1 gpu-second: 1.2/3600
	})
	if err != nil {
		t.Fatal(err)
	}
	want := new(big.Rat).Add(big.NewRat(11, 1000), big.NewRat(12, 36000))
	if cost.Cmp(want) != 0 {
		t.Errorf("cost %s, want %s", cost.RatString(), want.RatString())
	}
	if got := contract.FormatDecimal(cost, 6); got != "0.011333" {
		t.Errorf("formatted %s", got)
	}
	if _, err := contract.Cost(terms, map[corev1.ResourceName]*big.Rat{"pods": big.NewRat(1, 1)}); err == nil ||
		!strings.Contains(err.Error(), "prices[pods]") {
		t.Errorf("unpriced resource: %v", err)
	}
	terms.Prices[corev1.ResourceCPU] = marketv1alpha1.Price{Amount: "-1"}
	if _, err := contract.HourlyCost(terms); err == nil || !strings.Contains(err.Error(), "prices[cpu].amount") {
		t.Errorf("negative price: %v", err)
	}
}
