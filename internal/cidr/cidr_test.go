package cidr_test

import (
	"slices"
	"testing"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/cidr"
)

func TestRoundTrip(t *testing.T) {
	in := []string{"10.0.0.0/16", "10.70.0.0/16"}
	got := cidr.FromStrings(in)
	if want := []netv1beta1.CIDR{"10.0.0.0/16", "10.70.0.0/16"}; !slices.Equal(got, want) {
		t.Fatalf("FromStrings(%v) = %v, want %v", in, got, want)
	}
	if back := cidr.Strings(got); !slices.Equal(back, in) {
		t.Errorf("Strings(FromStrings(%v)) = %v", in, back)
	}
}

func TestEmpty(t *testing.T) {
	if got := cidr.FromStrings(nil); got != nil {
		t.Errorf("FromStrings(nil) = %#v, want nil (the API's omitempty list stays absent)", got)
	}
	if got := cidr.Strings(nil); got == nil || len(got) != 0 {
		t.Errorf("Strings(nil) = %#v, want an empty slice", got)
	}
}
