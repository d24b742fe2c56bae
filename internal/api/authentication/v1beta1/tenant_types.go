package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
)

// AuthzPolicy is how a provider cluster decides whether to accept a ResourceSlice of a tenant.
// +kubebuilder:validation:Enum=KeysExchange;TolerateNoHandshake
type AuthzPolicy string

const (
	// KeysExchange accepts ResourceSlices only from a tenant whose keys were exchanged in a
	// handshake (its public key and signed nonce are known).
	KeysExchange AuthzPolicy = "KeysExchange"
	// TolerateNoHandshake accepts ResourceSlices also from a tenant that did no handshake.
	TolerateNoHandshake AuthzPolicy = "TolerateNoHandshake"
)

// TenantCondition is the administrative state of a tenant.
// +kubebuilder:validation:Enum=Active;Cordoned;Drained
type TenantCondition string

const (
	// TenantConditionActive means the tenant can use the provider's resources normally.
	TenantConditionActive TenantCondition = "Active"
	// TenantConditionCordoned means the tenant keeps its workloads but cannot get new ones scheduled.
	TenantConditionCordoned TenantCondition = "Cordoned"
	// TenantConditionDrained means the tenant's workloads are evicted and none can be scheduled.
	TenantConditionDrained TenantCondition = "Drained"
)

// TenantSpec is what a provider cluster knows of a consumer cluster that peered with it.
type TenantSpec struct {
	// ClusterID is the identity of the consumer cluster. It cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterID is immutable"
	// +optional
	ClusterID corev1beta1.ClusterID `json:"clusterID,omitempty"`
	// AuthzPolicy is how ResourceSlices of this tenant are authorized.
	// +kubebuilder:default=KeysExchange
	// +optional
	AuthzPolicy AuthzPolicy `json:"authzPolicy,omitempty"`
	// TenantCondition is the administrative state of the tenant.
	// +kubebuilder:default=Active
	// +optional
	TenantCondition TenantCondition `json:"tenantCondition,omitempty"`
	// PublicKey is the public key of the consumer cluster.
	// +optional
	PublicKey []byte `json:"publicKey,omitempty"`
	// CSR is the certificate signing request of the consumer cluster's control plane identity.
	// +optional
	CSR []byte `json:"csr,omitempty"`
	// Signature is the nonce of the handshake, signed with the consumer cluster's private key.
	// +optional
	Signature []byte `json:"signature,omitempty"`
	// ProxyURL is the URL of the proxy the consumer cluster goes through to reach this cluster.
	// +optional
	ProxyURL string `json:"proxyURL,omitempty"`
}

// TenantStatus is the observed state of a tenant.
type TenantStatus struct {
	// AuthParams are the credentials issued to the consumer cluster's control plane.
	// +optional
	AuthParams *AuthParams `json:"authParams,omitempty"`
	// TenantNamespace is the namespace of this cluster that holds the tenant's objects.
	// +optional
	TenantNamespace string `json:"tenantNamespace,omitempty"`
}

// Tenant is a consumer cluster as seen by the provider cluster it peered with.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=tn,categories=liqo
// +kubebuilder:printcolumn:name="Condition",type=string,JSONPath=`.spec.tenantCondition`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantSpec   `json:"spec,omitempty"`
	Status TenantStatus `json:"status,omitempty"`
}

// TenantList is a list of Tenant.
// +kubebuilder:object:root=true
type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenant `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Tenant{}, &TenantList{})
}
