package clientcert

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// tolerateNoHandshake is the Tenant authzPolicy under which the consumer proved no key.
const tolerateNoHandshake = authv1beta1.AuthzPolicy("TolerateNoHandshake")

// TenantOf finds the Tenant of a consumer in a namespace (one not being deleted), or nil.
func TenantOf(ctx context.Context, c client.Reader, namespace, consumer string) (*authv1beta1.Tenant, error) {
	tenants := &authv1beta1.TenantList{}
	if err := c.List(ctx, tenants, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing tenants in %s: %w", namespace, err)
	}
	for i := range tenants.Items {
		if string(tenants.Items[i].Spec.ClusterID) == consumer && tenants.Items[i].DeletionTimestamp == nil {
			return &tenants.Items[i], nil
		}
	}
	return nil, nil
}

// TenantKey is the public key the tenant's consumer holds (spec.publicKey), which its requests
// must be for; nil under authzPolicy TolerateNoHandshake, where no key is checked.
func TenantKey(t *authv1beta1.Tenant) (ed25519.PublicKey, error) {
	if t.Spec.AuthzPolicy == tolerateNoHandshake {
		return nil, nil
	}
	pub, err := signing.ParseTenantKey(t.Spec.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("spec.publicKey of Tenant %s/%s: %w", t.Namespace, t.Name, err)
	}
	return pub, nil
}

// CheckControlPlaneRequest checks a PEM certificate request for the control-plane identity of
// the tenant's consumer: for the tenant's key, with the consumer's cluster ID as common name and
// no organization but consts.ConsumerGroup. The error says what the request must be.
func CheckControlPlaneRequest(csr []byte, t *authv1beta1.Tenant) error {
	pub, err := TenantKey(t)
	if err != nil {
		return fmt.Errorf("cannot be checked: %w", err)
	}
	if _, err := signing.CheckCSR(csr, string(t.Spec.ClusterID), []string{consts.ConsumerGroup}, pub); err != nil {
		return fmt.Errorf("refused: %w; it must be signed with the consumer's key (Tenant %s/%s spec.publicKey), with common name %q "+
			"and organization %q", err, t.Namespace, t.Name, t.Spec.ClusterID, consts.ConsumerGroup)
	}
	return nil
}

// CheckSliceRequest checks a PEM certificate request for the identity of the tenant's consumer's
// ResourceSlice slice, as upstream Liqo's provider does (signing.CheckResourceSliceCSR, against
// the tenant's key). The error says what the request must be.
func CheckSliceRequest(csr []byte, slice string, t *authv1beta1.Tenant) error {
	pub, err := TenantKey(t)
	if err != nil {
		return fmt.Errorf("cannot be checked: %w", err)
	}
	consumer := string(t.Spec.ClusterID)
	if _, err := signing.CheckResourceSliceCSR(csr, slice, consumer, pub); err != nil {
		return fmt.Errorf("refused: %w; it must be signed with the consumer's key (Tenant %s/%s spec.publicKey), with common name %q "+
			"and organization %q", err, t.Namespace, t.Name, signing.ResourceSliceCommonName(slice, consumer), consumer)
	}
	return nil
}

// ControlPlaneHolder is the consumer's control-plane identity as the holder of a certificate
// for request (current: the one in force, nil when none). Its CSR objects are labelled with the
// consumer's cluster ID only (those of its ResourceSlices, labelled with their slice too, are
// not its), so every request for the identity shares one renewal rate.
func ControlPlaneHolder(consumer string, request, current []byte, describe string) Holder {
	sel := labels.SelectorFromSet(labels.Set{consts.RemoteClusterIDLabel: consumer})
	if notSlice, err := labels.NewRequirement(consts.ResourceSliceNameLabel, selection.DoesNotExist, nil); err == nil {
		sel = sel.Add(*notSlice)
	}
	return Holder{Prefix: "liqo-tenant-" + consumer, Labels: map[string]string{consts.RemoteClusterIDLabel: consumer},
		Selector: sel, Request: request, Current: current, Describe: describe, Reason: "LiqoTenantVerified"}
}

// ResourceSliceHolder is the identity of the consumer's ResourceSlice slice as the holder of a
// certificate for request (current: the one in force, nil when none). Its CSR objects are
// labelled with the consumer's cluster ID and the slice's name.
func ResourceSliceHolder(consumer, slice string, request, current []byte, describe string) Holder {
	set := map[string]string{consts.RemoteClusterIDLabel: consumer, consts.ResourceSliceNameLabel: slice}
	return Holder{Prefix: "liqo-resourceslice-" + consumer, Labels: maps.Clone(set), Selector: labels.SelectorFromSet(set),
		Request: request, Current: current, Describe: describe, Reason: "LiqoResourceSliceVerified"}
}
