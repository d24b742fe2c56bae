package signing

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// ReadClusterKey reads a cluster's own signing key: the Secret consts.SigningKeySecret in its
// Liqo namespace liqoNS, as our controller manager and upstream Liqo's both keep it.
func ReadClusterKey(ctx context.Context, c client.Reader, liqoNS string) (*KeyPair, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: liqoNS, Name: consts.SigningKeySecret}
	if err := c.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("reading the cluster's signing key (Secret %s): %w", key, err)
	}
	k, err := ParsePrivate(secret.Data[consts.PrivateKeySecretKey])
	if err != nil {
		return nil, fmt.Errorf("the cluster's signing key (Secret %s, key %s): %w", key, consts.PrivateKeySecretKey, err)
	}
	return k, nil
}
