package forge

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// TenantOptions are what a Tenant's writer decides.
type TenantOptions struct {
	// AuthzPolicy says whether the consumer's signed nonce is checked (KeysExchange) or not.
	AuthzPolicy authv1beta1.AuthzPolicy
	// Condition is the tenant's administrative state (Active, Cordoned, Drained).
	Condition authv1beta1.TenantCondition
	// PublicKey is the consumer's signing public key, Signature its signature of the
	// provider's nonce, and CSR its certificate request.
	PublicKey, Signature, CSR []byte
	// ProxyURL is the proxy the consumer reaches the provider's API server through (in-band
	// peering: the provider's API-server proxy, through the tunnel); "" for none.
	ProxyURL string
	// PodSecurity is the Pod Security level of the consumer's remote namespaces
	// (consts.TenantPodSecurityAnnotation); "" for the provider's default.
	PodSecurity string
}

// MutateTenant makes t the provider's Tenant for the consumer consumerID as o says: labelled
// consts.RemoteClusterIDLabel=consumerID, with spec.clusterID the consumer, annotated
// consts.TenantPodSecurityAnnotation with o.PodSecurity (removed when "").
func MutateTenant(t *authv1beta1.Tenant, consumerID string, o TenantOptions) {
	setLabels(t, map[string]string{consts.RemoteClusterIDLabel: consumerID})
	SetTenantPodSecurity(t, o.PodSecurity)
	t.Spec.ClusterID = corev1beta1.ClusterID(consumerID)
	t.Spec.AuthzPolicy = o.AuthzPolicy
	t.Spec.TenantCondition = o.Condition
	t.Spec.PublicKey = o.PublicKey
	t.Spec.Signature = o.Signature
	t.Spec.CSR = o.CSR
	t.Spec.ProxyURL = o.ProxyURL
}

// MutateIdentity makes id the consumer's Identity of type typ towards the provider providerID,
// whose tenant namespace for the consumer is remoteNamespace: labelled
// consts.RemoteClusterIDLabel=providerID, with the credentials params in spec.authParams.
func MutateIdentity(id *authv1beta1.Identity, providerID string, typ authv1beta1.IdentityType, remoteNamespace string, params authv1beta1.AuthParams) {
	setLabels(id, map[string]string{consts.RemoteClusterIDLabel: providerID})
	id.Spec.ClusterID = corev1beta1.ClusterID(providerID)
	id.Spec.Type = typ
	id.Spec.Namespace = remoteNamespace
	id.Spec.AuthParams = params
}

// SetTenantPodSecurity sets the Pod Security level of a Tenant's consumer
// (consts.TenantPodSecurityAnnotation), or removes it when level is "" (the provider's default
// applies), and tells whether that changed the Tenant.
func SetTenantPodSecurity(t *authv1beta1.Tenant, level string) bool {
	annotations := t.GetAnnotations()
	if cur, ok := annotations[consts.TenantPodSecurityAnnotation]; (ok && cur == level) || (!ok && level == "") {
		return false
	}
	if level == "" {
		delete(annotations, consts.TenantPodSecurityAnnotation)
		return true
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[consts.TenantPodSecurityAnnotation] = level
	t.SetAnnotations(annotations)
	return true
}

// ResourceSliceIdentityName is the consumer's Identity for its ResourceSlice slice (upstream
// Liqo's name): "resourceslice-<slice>", in the slice's namespace.
func ResourceSliceIdentityName(slice string) string { return "resourceslice-" + slice }

// MutateResourceSliceIdentity makes id the consumer's Identity of type ResourceSlice for its
// granted slice, as upstream Liqo's consumers make it: MutateIdentity towards the slice's
// provider with the credentials of the slice's status.authParams and no namespace, labelled
// consts.ResourceSliceNameLabel=<slice>.
func MutateResourceSliceIdentity(id *authv1beta1.Identity, slice *authv1beta1.ResourceSlice) {
	provider, params := "", authv1beta1.AuthParams{}
	if slice.Spec.ProviderClusterID != nil {
		provider = string(*slice.Spec.ProviderClusterID)
	}
	if slice.Status.AuthParams != nil {
		params = *slice.Status.AuthParams
	}
	MutateIdentity(id, provider, authv1beta1.ResourceSliceIdentityType, "", params)
	setLabels(id, map[string]string{consts.ResourceSliceNameLabel: slice.Name})
}

// NonceLabels are the labels of the nonce Secret a provider keeps for consumer consumerID in
// its tenant namespace, as upstream's tools look it up.
func NonceLabels(consumerID string) map[string]string {
	return map[string]string{consts.NonceLabel: "true", consts.RemoteClusterIDLabel: consumerID}
}

// NonceRequest is the nonce Secret a consumer creates, empty, in its tenant namespace on the
// provider to ask for a nonce, as upstream liqoctl does; the provider's nonce controller fills it.
func NonceRequest(tenantNamespace, consumerID string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: consts.NonceSecret, Labels: NonceLabels(consumerID)}}
}

// SignedNonceRequest is the Secret a consumer creates in its tenant namespace for provider
// providerID holding the provider's nonce, for its controller manager to sign.
func SignedNonceRequest(tenantNamespace, providerID string, nonce []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: consts.SignedNonceSecret,
		Labels: map[string]string{consts.SignedNonceLabel: "true", consts.RemoteClusterIDLabel: providerID}},
		Data: map[string][]byte{consts.NonceKey: nonce}}
}
