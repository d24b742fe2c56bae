package offers_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/offers"
)

// validSpec is an offer of 8 CPUs, 32Gi and a GPU, priced in euros.
func validSpec() *marketv1alpha1.OfferSpec {
	gi := resource.MustParse("1Gi")
	return &marketv1alpha1.OfferSpec{
		Resources:   corev1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("32Gi"), "nvidia.com/gpu": resource.MustParse("1")},
		Currency:    "EUR",
		Prices:      map[corev1.ResourceName]marketv1alpha1.Price{"cpu": {Amount: "0.025"}, "memory": {Amount: "0.004", Per: &gi}},
		Minimum:     corev1.ResourceList{"cpu": resource.MustParse("1")},
		Maximum:     corev1.ResourceList{"cpu": resource.MustParse("4")},
		MinDuration: &metav1.Duration{Duration: time.Hour}, MaxDuration: &metav1.Duration{Duration: 720 * time.Hour},
	}
}

// Each kind of bad offer is refused with its named error and the field in the message.
func TestValidate(t *testing.T) {
	if err := offers.Validate(validSpec()); err != nil {
		t.Fatalf("valid offer refused: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(s *marketv1alpha1.OfferSpec)
		is     error
		field  string
	}{
		{"negative price", func(s *marketv1alpha1.OfferSpec) { s.Prices["cpu"] = marketv1alpha1.Price{Amount: "-1"} }, offers.ErrInvalidPrice, "spec.prices[cpu].amount"},
		{"non-numeric price", func(s *marketv1alpha1.OfferSpec) { s.Prices["cpu"] = marketv1alpha1.Price{Amount: "cheap"} }, offers.ErrInvalidPrice, "spec.prices[cpu]"},
		{"unknown currency", func(s *marketv1alpha1.OfferSpec) { s.Currency = "XYZ" }, offers.ErrUnknownCurrency, "spec.currency"},
		{"lower-case currency", func(s *marketv1alpha1.OfferSpec) { s.Currency = "eur" }, offers.ErrUnknownCurrency, "spec.currency"},
		{"prices without currency", func(s *marketv1alpha1.OfferSpec) { s.Currency = "" }, offers.ErrUnknownCurrency, "spec.currency"},
		{"bad resource name", func(s *marketv1alpha1.OfferSpec) { s.Resources["no way/x/y"] = resource.MustParse("1") }, offers.ErrInvalidResourceName, "spec.resources"},
		{"minimum above maximum", func(s *marketv1alpha1.OfferSpec) { s.Minimum["cpu"] = resource.MustParse("5") }, offers.ErrInvalidBounds, "spec.minimum[cpu]"},
		{"maximum above offer", func(s *marketv1alpha1.OfferSpec) { s.Maximum["cpu"] = resource.MustParse("16") }, offers.ErrInvalidBounds, "spec.maximum[cpu]"},
		{"bound not offered", func(s *marketv1alpha1.OfferSpec) { s.Minimum["pods"] = resource.MustParse("1") }, offers.ErrInvalidBounds, "spec.minimum[pods]"},
		{"durations", func(s *marketv1alpha1.OfferSpec) { s.MinDuration.Duration = 1000 * time.Hour }, offers.ErrInvalidBounds, "spec.minDuration"},
	} {
		s := validSpec()
		tc.mutate(s)
		err := offers.Validate(s)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want %v naming %s", tc.name, err, tc.is, tc.field)
		}
	}
}

// An offer listing no consumer is made to all; one listing some, to those only, and each
// one's copy names it alone.
func TestMadeToAndPublishedSpec(t *testing.T) {
	s := validSpec()
	if !offers.MadeTo(s, "cl-a") || offers.MadeTo(s, "") {
		t.Error("an offer for all is not made to cl-a, or is made to no one")
	}
	s.Consumers = []string{"cl-a", "cl-b"}
	if !offers.MadeTo(s, "cl-b") || offers.MadeTo(s, "cl-c") {
		t.Error("a per-consumer offer is not made to the listed cl-b, or is made to cl-c")
	}
	if got := offers.PublishedSpec(s, "cl-b").Consumers; len(got) != 1 || got[0] != "cl-b" {
		t.Errorf("cl-b's copy lists consumers %v, want only cl-b", got)
	}
	if len(s.Consumers) != 2 {
		t.Error("PublishedSpec changed the original")
	}
}
