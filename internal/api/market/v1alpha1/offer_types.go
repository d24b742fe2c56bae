package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Price is what one unit of a resource costs per hour.
type Price struct {
	// Amount is the price of Per of the resource for one hour, a non-negative decimal in the
	// offer's currency (e.g. "0.025").
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	Amount string `json:"amount"`
	// Per is the amount of the resource the price is for (default: 1, e.g. one CPU; "1Gi" for
	// memory priced by the gibibyte).
	// +optional
	Per *resource.Quantity `json:"per,omitempty"`
}

// OfferSpec is what a provider is willing to share, with whom and at what price: seed 004's
// advertisement.
// +kubebuilder:validation:XValidation:rule="!has(self.prices) || self.prices.all(r, r in self.resources)",message="every priced resource must be offered in resources"
// +kubebuilder:validation:XValidation:rule="size(self.resources) > 0",message="an offer offers at least one resource"
// +kubebuilder:validation:XValidation:rule="!has(self.prices) || size(self.prices) == 0 || has(self.currency)",message="prices need a currency"
// +kubebuilder:validation:XValidation:rule="!has(self.minimum) || self.minimum.all(r, r in self.resources)",message="every resource in minimum must be offered in resources"
// +kubebuilder:validation:XValidation:rule="!has(self.maximum) || self.maximum.all(r, r in self.resources)",message="every resource in maximum must be offered in resources"
type OfferSpec struct {
	// Resources are the amounts offered (cpu, memory, pods, ephemeral-storage, storage and
	// extended resources such as nvidia.com/gpu).
	Resources corev1.ResourceList `json:"resources"`
	// Currency is the ISO 4217 code of the prices' currency (e.g. EUR).
	// +kubebuilder:validation:Pattern=`^[A-Z]{3}$`
	// +optional
	Currency string `json:"currency,omitempty"`
	// Prices are, per offered resource, the price of a unit of it for one hour. A resource
	// without a price is offered free of charge.
	// +optional
	Prices map[corev1.ResourceName]Price `json:"prices,omitempty"`
	// Minimum is, per resource, the least amount a consumer may take under this offer.
	// +optional
	Minimum corev1.ResourceList `json:"minimum,omitempty"`
	// Maximum is, per resource, the most a consumer may take under this offer (default: all of
	// Resources).
	// +optional
	Maximum corev1.ResourceList `json:"maximum,omitempty"`
	// MinDuration is the shortest time a consumer may take the resources for.
	// +optional
	MinDuration *metav1.Duration `json:"minDuration,omitempty"`
	// MaxDuration is the longest time a consumer may take the resources for.
	// +optional
	MaxDuration *metav1.Duration `json:"maxDuration,omitempty"`
	// Consumers are the cluster IDs of the consumers the offer is made to; empty: every consumer.
	// +listType=set
	// +optional
	Consumers []string `json:"consumers,omitempty"`
}

// Offer is an advertisement: what a provider cluster is willing to share with its consumers and
// at what price. The provider declares it in its Liqo namespace; its controller manager
// publishes a copy in the tenant namespace of every consumer it is made to, where the consumer
// reads it with its own identity.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=liqo
// +kubebuilder:printcolumn:name="Currency",type=string,JSONPath=`.spec.currency`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Offer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec OfferSpec `json:"spec"`
}

// OfferList is a list of Offer.
// +kubebuilder:object:root=true
type OfferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Offer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Offer{}, &OfferList{})
}
