// Package negotiation decides, on the provider, the ResourceSlices its consumers ask for: a slice
// of an Active tenant is accepted when what it asks fits in what the provider shares minus what
// it already granted; otherwise, or for a Cordoned or Drained tenant, it is denied with the
// reason in its status conditions. A slice that holds a grant keeps it when what it asks for
// next cannot be granted (too much, or its tenant Cordoned): its Resources condition stays
// Accepted with reason consts.ResourceSliceGrantKept and the grant in force stays in its status,
// so that its virtual node and the pods on it are not disturbed (a denial would withdraw the
// grant, and the consumer's virtual node with it). Slices of the default class (or naming
// none) are decided here, and those of the tethered class (consts.TetheredSliceClass): granted
// the real nodes in full, but what other slices hold, whatever the Policy, when this cluster
// is tethered to their consumer, denied otherwise
// (ReasonNotTethered); a slice of another class is left to the controller of its class
// (Decides). A slice naming a contract (seed 004: annotation consts.ContractAnnotation) is
// decided by the provider's own copy of that contract instead of the Policy (decideContract):
// exactly the contract's resources while it runs, ReasonContractNotSigned unless both parties'
// signatures verify, and past its end the grant kept but the slice cordoned
// (consts.ContractExpiredAnnotation) until the contract is renewed.
package negotiation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Policy says how much the provider shares with all its consumers together.
type Policy struct {
	// Fixed, when set, is the amount shared.
	Fixed corev1.ResourceList
	// Percent of the allocatable resources of the provider's real nodes (virtual nodes excluded)
	// is shared when Fixed is not set. 0 means 100.
	Percent int64
}

// Shared returns what the provider shares now.
func (p Policy) Shared(ctx context.Context, c client.Client) (corev1.ResourceList, error) {
	if len(p.Fixed) > 0 {
		return p.Fixed.DeepCopy(), nil
	}
	pct := p.Percent
	if pct <= 0 || pct > 100 {
		pct = 100
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	total := corev1.ResourceList{}
	for _, n := range nodes.Items {
		if n.Labels[consts.TypeLabel] == consts.VirtualNodeType || n.Spec.Unschedulable {
			continue
		}
		for name, q := range n.Status.Allocatable {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	for name, q := range total {
		total[name] = percentOf(q, pct)
	}
	return total, nil
}

// percentOf returns pct percent of q, rounded down to a thousandth of a unit, in q's format.
func percentOf(q resource.Quantity, pct int64) resource.Quantity {
	return *resource.NewMilliQuantity(q.MilliValue()*pct/100, q.Format)
}
