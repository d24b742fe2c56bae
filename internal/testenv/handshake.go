package testenv

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// AskNonce asks a provider for a nonce, as liqo_peering and upstream liqoctl do: an empty,
// labelled nonce Secret in the consumer's tenant namespace, which the provider's nonce
// controller fills in. One already there is fine.
func AskNonce(ctx context.Context, c client.Client, tenantNamespace, consumerID string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: consts.NonceSecret,
		Labels: map[string]string{consts.NonceLabel: "true", consts.RemoteClusterIDLabel: consumerID}}}
	if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("asking for a nonce in %s: %w", tenantNamespace, err)
	}
	return nil
}
