package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
)

// ContractKind is the kind of a Contract.
const ContractKind = "Contract"

// Decimal is a non-negative decimal number written out in full ("0.05", "12", never "1e3" nor
// "-1"): an amount of a currency.
// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
// +kubebuilder:validation:MaxLength=64
type Decimal string

// CurrencyCode is an ISO 4217 currency code: three upper-case letters, such as EUR or USD.
// +kubebuilder:validation:Pattern=`^[A-Z]{3}$`
type CurrencyCode string

// ContractTerms are what a consumer and a provider agree on, and what both sign: who, which
// offer, how much of each resource, at what price, and for how long. Package internal/contract
// defines their canonical encoding, which the signatures cover.
// +kubebuilder:validation:XValidation:rule="self.end > self.start",message="terms.end must be after terms.start"
// +kubebuilder:validation:XValidation:rule="self.resources.all(r, r in self.prices)",message="every resource in terms.resources needs its price in terms.prices"
// +kubebuilder:validation:XValidation:rule="self.prices.all(r, r in self.resources)",message="every price in terms.prices needs its resource in terms.resources"
type ContractTerms struct {
	// ConsumerClusterID is the cluster ID of the consumer, which uses the resources and pays.
	ConsumerClusterID corev1beta1.ClusterID `json:"consumerClusterID"`
	// ProviderClusterID is the cluster ID of the provider, which shares the resources.
	ProviderClusterID corev1beta1.ClusterID `json:"providerClusterID"`
	// OfferName is the name of the provider's Offer the contract accepts.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	OfferName string `json:"offerName"`
	// OfferUID is the UID of the Offer the contract accepts, so that a new offer of the same
	// name is not taken for it.
	// +optional
	OfferUID string `json:"offerUID,omitempty"`
	// OfferGeneration is the generation of the Offer the contract accepts: the version of its
	// terms the consumer read.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OfferGeneration int64 `json:"offerGeneration,omitempty"`
	// Resources are the amounts of each resource contracted (cpu, memory, pods, storage,
	// extended resources such as nvidia.com/gpu), each above zero.
	// +kubebuilder:validation:XValidation:rule="size(self) > 0",message="terms.resources must name at least one resource"
	Resources corev1.ResourceList `json:"resources"`
	// Prices are the price of each resource in Resources for one hour, in Currency, as the
	// accepted Offer gives it: an amount per a quantity of the resource (per default 1: one CPU,
	// one pod, one device; "1Gi" for memory priced by the gibibyte).
	// +kubebuilder:validation:XValidation:rule="size(self) > 0",message="terms.prices must price at least one resource"
	Prices map[corev1.ResourceName]Price `json:"prices"`
	// Currency is the ISO 4217 code of the prices' currency.
	Currency CurrencyCode `json:"currency"`
	// Start is when the contract starts (RFC 3339, to the second).
	Start metav1.Time `json:"start"`
	// End is when the contract ends (RFC 3339, to the second), after Start.
	End metav1.Time `json:"end"`
}

// ContractSpec is what the consumer proposes: the terms and its signature of them. The provider's
// countersignature is its answer, in the status, which only the provider writes (a consumer's
// identity may write contracts in its tenant namespace but not their status).
type ContractSpec struct {
	// Terms are what both parties agree on.
	Terms ContractTerms `json:"terms"`
	// ConsumerSignature is the consumer's Ed25519 signature (with its cluster key, whose public
	// half its Tenant on the provider holds) of the terms' canonical encoding, in base64.
	// +optional
	ConsumerSignature []byte `json:"consumerSignature,omitempty"`
}

// ContractPhase is where a contract stands.
// +kubebuilder:validation:Enum=Pending;Signed;Refused;Expired
type ContractPhase string

const (
	// ContractPending is a contract not yet signed by both parties, nor refused.
	ContractPending ContractPhase = "Pending"
	// ContractSigned is a contract both parties signed, each signature verified: it runs from
	// its start to its end.
	ContractSigned ContractPhase = "Signed"
	// ContractRefused is a contract whose terms are invalid, differ from the offer, or whose
	// signatures do not verify: status.reason says why. Nothing is granted for it.
	ContractRefused ContractPhase = "Refused"
	// ContractExpired is a signed contract past its end.
	ContractExpired ContractPhase = "Expired"
)

// ContractStatus is where a contract stands, as the cluster keeping this copy sees it.
type ContractStatus struct {
	// Phase is where the contract stands.
	// +optional
	Phase ContractPhase `json:"phase,omitempty"`
	// Reason says why the contract is in its phase: for Refused, what is wrong and the fix.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Conditions are the observations of the contract's aspects.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// AccruedCost is the cost metered so far, in the terms' currency, a decimal number.
	// +optional
	AccruedCost Decimal `json:"accruedCost,omitempty"`
	// LastMetered is when AccruedCost was last brought up to date.
	// +optional
	LastMetered *metav1.Time `json:"lastMetered,omitempty"`
	// ResourceSeconds is, for each resource of the terms, what the consumer's offloaded pods
	// requested integrated over their lifetimes (e.g. 2 CPUs for an hour: 7200), metered so far.
	// +optional
	ResourceSeconds map[corev1.ResourceName]Decimal `json:"resourceSeconds,omitempty"`
	// ProviderSignature is the provider's Ed25519 signature (with its cluster key) of the
	// canonical encoding of spec.terms, in base64: set when the provider accepted them.
	// +optional
	ProviderSignature []byte `json:"providerSignature,omitempty"`
}

// Contract is seed 004's contract: the terms a consumer accepted of a provider's offer, signed
// by both. The provider keeps it in the consumer's tenant namespace; the consumer keeps a copy.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=liqo
// +kubebuilder:printcolumn:name="Consumer",type=string,JSONPath=`.spec.terms.consumerClusterID`
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.terms.providerClusterID`
// +kubebuilder:printcolumn:name="Offer",type=string,JSONPath=`.spec.terms.offerName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="End",type=date,JSONPath=`.spec.terms.end`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Contract struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ContractSpec   `json:"spec"`
	Status ContractStatus `json:"status,omitempty"`
}

// ContractList is a list of Contract.
// +kubebuilder:object:root=true
type ContractList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Contract `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Contract{}, &ContractList{})
}
