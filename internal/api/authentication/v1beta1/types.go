package v1beta1

// AuthParams are the parameters a cluster needs to authenticate to the API server of another
// cluster: the server's address and CA, and a client certificate signed by that server.
// Upstream's awsConfig (credentials for EKS clusters) is not implemented and therefore
// not part of the schema.
type AuthParams struct {
	// CA is the PEM-encoded certificate authority of the API server.
	// +optional
	CA []byte `json:"ca,omitempty"`
	// SignedCRT is the PEM-encoded client certificate signed by the API server's CA.
	// +optional
	SignedCRT []byte `json:"signedCRT,omitempty"`
	// APIServer is the URL of the API server.
	// +optional
	APIServer string `json:"apiServer,omitempty"`
	// ProxyURL is the URL of the proxy to go through to reach the API server.
	// +optional
	ProxyURL string `json:"proxyURL,omitempty"`
}

// StorageType is a storage class offered by a provider cluster.
type StorageType struct {
	// StorageClassName is the name of the storage class.
	StorageClassName string `json:"storageClassName"`
	// Default tells whether this is the storage class used when none is requested.
	// +optional
	Default bool `json:"default,omitempty"`
}

// IngressType is an ingress class offered by a provider cluster.
type IngressType struct {
	// IngressClassName is the name of the ingress class.
	IngressClassName string `json:"ingressClassName"`
	// Default tells whether this is the ingress class used when none is requested.
	// +optional
	Default bool `json:"default,omitempty"`
}

// LoadBalancerType is a load balancer class offered by a provider cluster.
type LoadBalancerType struct {
	// LoadBalancerClassName is the name of the load balancer class.
	LoadBalancerClassName string `json:"loadBalancerClassName"`
	// Default tells whether this is the load balancer class used when none is requested.
	// +optional
	Default bool `json:"default,omitempty"`
}
