package offers

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/identities"
)

// readTimeout bounds one request of the consumer to its provider.
const readTimeout = 30 * time.Second

// Published is what a consumer reads of the offers its provider made to it.
type Published struct {
	// Namespace is the consumer's tenant namespace on the provider, where the offers are.
	Namespace string
	// Offers are the offers there, sorted by name.
	Offers []marketv1alpha1.Offer
}

// ReadAsConsumer lists, on the provider providerID, the Offers published to the consumer that
// consumer reaches, with the consumer's own control-plane identity: the kubeconfig Secret
// labelled with the provider's ID in the consumer's tenant namespace tenantNamespace
// (identities.ControlPlaneSecret), and its liqo.io/remote-tenant-namespace annotation, the
// namespace to read. No right beyond the consumer's is used: what the provider did not publish
// to it stays unseen (and a refusal of the provider is returned as it is).
func ReadAsConsumer(ctx context.Context, consumer client.Reader, scheme *runtime.Scheme, tenantNamespace, providerID string) (*Published, error) {
	name, err := identities.ControlPlaneSecret(ctx, consumer, tenantNamespace, corev1beta1.ClusterID(providerID))
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fmt.Errorf("no control-plane identity of provider %s in namespace %s of the consumer (a Secret labelled %s=%s "+
			"and %s=ControlPlane): the consumer reads offers once it has authenticated with the provider (liqo_peering, or "+
			"liqo_identity)", providerID, tenantNamespace, consts.RemoteClusterIDLabel, providerID, consts.IdentityTypeLabel)
	}
	secret := &corev1.Secret{}
	if err := consumer.Get(ctx, client.ObjectKey{Namespace: tenantNamespace, Name: name}, secret); err != nil {
		return nil, fmt.Errorf("reading identity Secret %s/%s: %w", tenantNamespace, name, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[consts.KubeconfigSecretKey])
	if err != nil {
		return nil, fmt.Errorf("identity Secret %s/%s, data key %s: %w", tenantNamespace, name, consts.KubeconfigSecretKey, err)
	}
	cfg.Timeout = readTimeout
	remoteNS := secret.Annotations[consts.RemoteTenantNamespaceAnnotation]
	if remoteNS == "" {
		return nil, fmt.Errorf("identity Secret %s/%s has no %s annotation: the consumer's tenant namespace on the provider is unknown",
			tenantNamespace, name, consts.RemoteTenantNamespaceAnnotation)
	}
	remote, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("client of provider %s (%s) with identity Secret %s/%s: %w", providerID, cfg.Host, tenantNamespace, name, err)
	}
	list := &marketv1alpha1.OfferList{}
	if err := remote.List(ctx, list, client.InNamespace(remoteNS)); err != nil {
		return nil, fmt.Errorf("listing the Offers in namespace %s of provider %s (%s) as the consumer: %w", remoteNS, providerID, cfg.Host, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return &Published{Namespace: remoteNS, Offers: list.Items}, nil
}
