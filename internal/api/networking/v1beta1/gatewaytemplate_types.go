package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// GatewayTemplateSpec is the template a gateway's workload is made from. Template is free-form;
// the gateway controllers read template.spec.deployment ({metadata, spec} of a Deployment) and,
// for servers, template.spec.service ({metadata, spec} of a Service), as upstream Liqo's
// templates lay them out; string values may hold Go templates (see package internal/gateway/workload).
type GatewayTemplateSpec struct {
	// ObjectKind is the kind of the object the template describes (upstream Liqo renders an
	// intermediate WgGatewayServer or WgGatewayClient; the gateway controllers here render the
	// Deployment and Service directly and do not read it).
	// +optional
	ObjectKind metav1.TypeMeta `json:"objectKind,omitempty"`
	// Template is the template of the gateway's workload.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Template runtime.RawExtension `json:"template,omitempty"`
}

// WgGatewayServerTemplate is a template of the workload of WireGuard gateway servers, named by
// a GatewayServer's spec.serverTemplateRef.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=wggst;wgst,categories=liqo
type WgGatewayServerTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GatewayTemplateSpec `json:"spec,omitempty"`
}

// WgGatewayServerTemplateList is a list of WgGatewayServerTemplate.
// +kubebuilder:object:root=true
type WgGatewayServerTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WgGatewayServerTemplate `json:"items"`
}

// WgGatewayClientTemplate is a template of the workload of WireGuard gateway clients, named by
// a GatewayClient's spec.clientTemplateRef.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=wggct;wgct,categories=liqo
type WgGatewayClientTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GatewayTemplateSpec `json:"spec,omitempty"`
}

// WgGatewayClientTemplateList is a list of WgGatewayClientTemplate.
// +kubebuilder:object:root=true
type WgGatewayClientTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WgGatewayClientTemplate `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WgGatewayServerTemplate{}, &WgGatewayServerTemplateList{},
		&WgGatewayClientTemplate{}, &WgGatewayClientTemplateList{})
}
