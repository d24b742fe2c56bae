package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Endpoint is how a gateway server is exposed: its ports and the Service that publishes them.
// Exactly one of Port and Ports is set, and at most one of NodePort and NodePorts.
// +kubebuilder:validation:XValidation:rule="!(has(self.port) && has(self.ports))",message="port and ports are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="!(has(self.nodePort) && has(self.nodePorts))",message="nodePort and nodePorts are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="has(self.port) || (has(self.ports) && size(self.ports) > 0)",message="at least one of port or ports must be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.ports)) || self.ports.all(p, self.ports.filter(q, q == p).size() == 1)",message="ports must not contain duplicates"
// +kubebuilder:validation:XValidation:rule="!(has(self.nodePorts)) || self.nodePorts.all(p, self.nodePorts.filter(q, q == p).size() == 1)",message="nodePorts must not contain duplicates"
type Endpoint struct {
	// Port is the single port of the endpoint. Liqo deprecates it in favour of Ports but still
	// accepts it; it cannot be set together with Ports.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// Ports are the ports of the endpoint, without duplicates.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=65535
	// +optional
	Ports []int32 `json:"ports,omitempty"`
	// ServiceType is the type of the Service that exposes the gateway server.
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer;ExternalName
	// +kubebuilder:default=ClusterIP
	// +optional
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`
	// NodePort is the single static node port of a NodePort Service. Liqo deprecates it in
	// favour of NodePorts but still accepts it; it cannot be set together with NodePorts.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	NodePort *int32 `json:"nodePort,omitempty"`
	// NodePorts are the static node ports of a NodePort Service, without duplicates.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=65535
	// +optional
	NodePorts []int32 `json:"nodePorts,omitempty"`
	// LoadBalancerIP asks a LoadBalancer Service for a specific IP address (e.g. a static one).
	// It is used only when ServiceType is LoadBalancer and the load-balancer provider supports it.
	// +optional
	LoadBalancerIP *string `json:"loadBalancerIP,omitempty"`
}

// GatewayServerSpec is the desired state of a GatewayServer.
type GatewayServerSpec struct {
	// MTU is the MTU of the tunnel.
	// +optional
	MTU int `json:"mtu,omitempty"`
	// Endpoint is how the gateway server is exposed to the remote cluster.
	// +optional
	Endpoint Endpoint `json:"endpoint,omitempty"`
	// SecretRef names the Secret holding the gateway's keys. Leave it empty to let the operator
	// create one.
	// +optional
	SecretRef corev1.LocalObjectReference `json:"secretRef,omitempty"`
	// ServerTemplateRef points to the template the gateway server's workload is made from.
	// +optional
	ServerTemplateRef corev1.ObjectReference `json:"serverTemplateRef,omitempty"`
	// ServiceAnnotations are added to the gateway server's Service; they take precedence over
	// the annotations of the server template.
	// +optional
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`
	// ServiceLabels are added to the gateway server's Service; they take precedence over the
	// labels of the server template.
	// +optional
	ServiceLabels map[string]string `json:"serviceLabels,omitempty"`
}

// GatewayServerStatus is the observed state of a GatewayServer.
type GatewayServerStatus struct {
	// ServerRef points to the resource made from the server template.
	// +optional
	ServerRef *corev1.ObjectReference `json:"serverRef,omitempty"`
	// Endpoint is where the remote gateway client can reach this server.
	// +optional
	Endpoint *EndpointStatus `json:"endpoint,omitempty"`
	// InternalEndpoint is where the gateway server can be reached inside this cluster.
	// +optional
	InternalEndpoint *InternalGatewayEndpoint `json:"internalEndpoint,omitempty"`
	// SecretRef points to the Secret holding the gateway's keys.
	// +optional
	SecretRef *corev1.ObjectReference `json:"secretRef,omitempty"`
}

// GatewayServer is a tunnel gateway that the remote cluster's gateway client connects to.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=gws;gwserver,categories=liqo
// +kubebuilder:printcolumn:name="Template Kind",type=string,JSONPath=`.spec.serverTemplateRef.kind`,priority=1
// +kubebuilder:printcolumn:name="Template Name",type=string,JSONPath=`.spec.serverTemplateRef.name`
// +kubebuilder:printcolumn:name="Template Namespace",type=string,JSONPath=`.spec.serverTemplateRef.namespace`,priority=1
// +kubebuilder:printcolumn:name="IP",type=string,JSONPath=`.status.endpoint.addresses[*]`
// +kubebuilder:printcolumn:name="Port",type=string,JSONPath=`.status.endpoint.port`
// +kubebuilder:printcolumn:name="Protocol",type=string,JSONPath=`.status.endpoint.protocol`,priority=1
// +kubebuilder:printcolumn:name="MTU",type=integer,JSONPath=`.spec.mtu`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GatewayServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GatewayServerSpec   `json:"spec,omitempty"`
	Status GatewayServerStatus `json:"status,omitempty"`
}

// GatewayServerList is a list of GatewayServer.
// +kubebuilder:object:root=true
type GatewayServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GatewayServer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GatewayServer{}, &GatewayServerList{})
}
