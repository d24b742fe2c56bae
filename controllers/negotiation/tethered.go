package negotiation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/tethering"
)

// grantTethered is the message of a tethered slice's grant.
const grantTethered = "tethered: everything this cluster shares, its real nodes' allocatable in full (--share and --share-percent do not apply) but what other slices hold"

// decideTethered decides a slice of class consts.TetheredSliceClass of an authenticated tenant
// (holds: the slice holds a grant), setting status.resources: when this cluster is tethered to
// the slice's consumer, it is granted everything available, whatever it asks: the real nodes'
// allocatable in full (the tethered cluster's nodes are its foreign cluster's to use: the
// Policy, --share and --share-percent, does not apply) minus what the other slices hold, and
// follows it; otherwise it is denied (ReasonNotTethered). The consumer is the one the provider knows, not what the slice
// says: the Tenant's spec.clusterID and the tenant namespace's consts.RemoteClusterIDLabel
// must both name the cluster this one is tethered to, so that no other consumer gets
// everything by writing the class. A Cordoned tenant keeps the grant in force.
func (r *Reconciler) decideTethered(ctx context.Context, slice *authv1beta1.ResourceSlice, tenant *authv1beta1.Tenant, holds bool,
	status *authv1beta1.ResourceSliceStatus) (authv1beta1.ResourceSliceCondition, error) {
	var reader client.Reader = r.Client
	if r.APIReader != nil {
		reader = r.APIReader
	}
	to, err := tethering.TetheredTo(ctx, reader, r.LiqoNamespace)
	if err != nil {
		return authv1beta1.ResourceSliceCondition{}, fmt.Errorf("deciding tethered slice %s/%s: %w", slice.Namespace, slice.Name, err)
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: slice.Namespace}, ns); err != nil {
		return authv1beta1.ResourceSliceCondition{}, fmt.Errorf("reading the tenant namespace %s of slice %s: %w", slice.Namespace, slice.Name, err)
	}
	consumer := string(tenant.Spec.ClusterID)
	if to == "" || consumer != to || ns.Labels[consts.RemoteClusterIDLabel] != to {
		status.Resources = nil
		why := "this cluster is not tethered"
		if to != "" {
			why = "this cluster is tethered to " + to
		}
		return cond(authv1beta1.ResourceSliceConditionTypeResources, false, ReasonNotTethered,
			fmt.Sprintf("a slice of class %q is granted only to the foreign cluster this cluster is tethered to; %s, not to %s (Tenant %s/%s): "+
				"ask with the default class, or tether this cluster to %s (liqo_peering mode = \"tethered\")",
				consts.TetheredSliceClass, why, consumer, tenant.Namespace, tenant.Name, consumer)), nil
	}
	if tenant.Spec.TenantCondition == authv1beta1.TenantConditionCordoned && holds {
		return kept(slice, "the tenant is Cordoned: nothing more is granted"), nil
	}
	available, err := r.available(ctx, slice, Policy{}) // the real nodes in full, whatever r.Policy says
	if err != nil {
		return authv1beta1.ResourceSliceCondition{}, err
	}
	grant := corev1.ResourceList{}
	for name, q := range available {
		if q.Sign() > 0 {
			grant[name] = q
		}
	}
	if len(grant) == 0 {
		status.Resources = nil
		return cond(authv1beta1.ResourceSliceConditionTypeResources, false, ReasonInsufficient,
			"tethered: this cluster shares nothing that other slices do not hold"), nil
	}
	status.Resources = grant
	return cond(authv1beta1.ResourceSliceConditionTypeResources, true, ReasonGranted, grantTethered), nil
}
