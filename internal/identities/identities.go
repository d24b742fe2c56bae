// Package identities finds the kubeconfig Secrets a consumer's components reach a provider
// with: the control-plane identity's, and a ResourceSlice's own (what a virtual node runs
// with). The controllers (the slice virtual-node controller) and the provider
// (liqo_virtual_node, liqo_peering) read them here.
package identities

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// VirtualNodeSecret is the kubeconfig Secret, in the slice's namespace, a virtual node of the
// consumer's ResourceSlice slice runs with, as upstream Liqo's virtual nodes do: the Secret of
// the slice's own Identity (SliceIdentitySecret: the certificate the provider signed for the
// slice, CN <slice>-<hash>, O <consumer ID>, the group upstream's provider binds its
// virtual-kubelet roles to) once it exists; until then, or when it never comes (a slice of
// another class, not signed yet, or a provider of ours older than the slice certificates),
// the control-plane Secret of the slice's provider (ControlPlaneSecret). It is "" when there
// is neither yet.
func VirtualNodeSecret(ctx context.Context, c client.Reader, slice *authv1beta1.ResourceSlice) (string, error) {
	if secret, err := SliceIdentitySecret(ctx, c, slice.Namespace, slice.Name); err != nil || secret != "" {
		return secret, err
	}
	if slice.Spec.ProviderClusterID == nil {
		return "", nil
	}
	return ControlPlaneSecret(ctx, c, slice.Namespace, *slice.Spec.ProviderClusterID)
}

// SliceIdentitySecret is the kubeconfig Secret of the Identity of the consumer's ResourceSlice
// slice in namespace (forge.ResourceSliceIdentityName, which the consumer makes once the
// provider signed the slice's certificate request, and whose status then names the Secret):
// "" while there is none, or it is going.
func SliceIdentitySecret(ctx context.Context, c client.Reader, namespace, slice string) (string, error) {
	id := &authv1beta1.Identity{}
	key := client.ObjectKey{Namespace: namespace, Name: forge.ResourceSliceIdentityName(slice)}
	if err := c.Get(ctx, key, id); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading Identity %s of ResourceSlice %s/%s: %w", key, namespace, slice, err)
	}
	if id.DeletionTimestamp != nil || id.Status.KubeconfigSecretRef == nil {
		return "", nil
	}
	return id.Status.KubeconfigSecretRef.Name, nil
}

// ControlPlaneSecret is the name of the Secret holding the consumer's control-plane kubeconfig
// of the provider providerID, in the tenant namespace namespace of the consumer c (the Identity
// controller writes it): what a virtual node of that provider runs with. It is "" when there is
// none yet.
func ControlPlaneSecret(ctx context.Context, c client.Reader, namespace string, providerID corev1beta1.ClusterID) (string, error) {
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, client.InNamespace(namespace), client.MatchingLabels{
		consts.IdentityTypeLabel: string(authv1beta1.ControlPlaneIdentityType), consts.RemoteClusterIDLabel: string(providerID)}); err != nil {
		return "", fmt.Errorf("listing the identities of %s in %s: %w", providerID, namespace, err)
	}
	if len(secrets.Items) == 0 {
		return "", nil
	}
	return secrets.Items[0].Name, nil
}
