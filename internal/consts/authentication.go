package consts

// The authentication handshake (DESIGN.md section 3), with upstream Liqo's names, which its liqoctl
// writes and waits for: a provider's nonce Secret, the consumer's signed-nonce Secret, the
// cluster's signing key.
const (
	// SigningKeySecret is the Secret in LiqoNamespace holding the cluster's Ed25519 signing key
	// (PKCS #8 and PKIX PEM under PrivateKeySecretKey and PublicKeySecretKey).
	SigningKeySecret = "authentication-keys"
	// NonceSecret holds a provider's nonce (data key NonceKey) in a tenant namespace; someone
	// may create it empty (upstream liqoctl does) and wait for the provider to fill it in.
	NonceSecret = "liqo-nonce"
	// SignedNonceSecret, on the consumer, holds a provider's nonce to sign (NonceKey) and, once
	// answered, SignedNonceKey, PublicKeySecretKey (PKIX PEM) and CSRKey (PEM).
	SignedNonceSecret = "liqo-signed-nonce" //nolint:gosec // a Secret's name, not a credential
	// NonceLabel ("true") marks a provider's nonce Secret; with RemoteClusterIDLabel it names the
	// consumer.
	NonceLabel = "liqo.io/nonce"
	// SignedNonceLabel ("true") marks a consumer's signed-nonce Secret; with
	// RemoteClusterIDLabel it names the provider.
	SignedNonceLabel = "liqo.io/signed-nonce"
	// NonceKey is the data key of a nonce (base64 text).
	NonceKey = "nonce"
	// SignedNonceKey is the data key of a nonce's signature.
	SignedNonceKey = "signedNonce"
	// CSRKey is the data key of a consumer's certificate request (PEM) in a signed-nonce Secret.
	CSRKey = "csr"
	// TenantNamespacePrefix begins every tenant namespace's name; TenantNamespace builds it.
	TenantNamespacePrefix = "liqo-tenant-"
)

// TenantNamespace is the name of the namespace holding the peering with the cluster whose ID is
// remoteClusterID.
func TenantNamespace(remoteClusterID string) string { return TenantNamespacePrefix + remoteClusterID }

// VirtualNodeName is the VirtualNode (and Node) made from a provider's ResourceSlice: the
// provider's cluster ID, followed by the slice's name unless they are the same (upstream Liqo names
// it after the slice alone; a slice named after the provider, as liqoctl makes it, gets the same
// name in both).
func VirtualNodeName(providerClusterID, sliceName string) string {
	if sliceName == providerClusterID {
		return providerClusterID
	}
	return providerClusterID + "-" + sliceName
}

// Pod Security admission's labels, which a tenant namespace carries at the privileged level as
// upstream Liqo's do: the peering's gateway pods run there with NET_ADMIN.
const (
	// PodSecurityEnforceLabel is Pod Security admission's enforce level.
	PodSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"
	// PodSecurityAuditLabel is Pod Security admission's audit level.
	PodSecurityAuditLabel = "pod-security.kubernetes.io/audit"
	// PodSecurityWarnLabel is Pod Security admission's warn level.
	PodSecurityWarnLabel = "pod-security.kubernetes.io/warn"
	// PodSecurityPrivileged is the privileged level.
	PodSecurityPrivileged = "privileged"
)

// TenantNamespaceLabels are the labels of the tenant namespace of the peering with
// remoteClusterID: whose it is, that it is one, and Pod Security's privileged level.
func TenantNamespaceLabels(remoteClusterID string) map[string]string {
	return map[string]string{
		RemoteClusterIDLabel:    remoteClusterID,
		TenantNamespaceLabel:    "true",
		PodSecurityEnforceLabel: PodSecurityPrivileged,
		PodSecurityAuditLabel:   PodSecurityPrivileged,
		PodSecurityWarnLabel:    PodSecurityPrivileged,
	}
}
