package api

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
)

// AddToScheme adds every kind of our API groups to s.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{
		corev1beta1.AddToScheme,
		netv1beta1.AddToScheme,
		authv1beta1.AddToScheme,
		offv1beta1.AddToScheme,
		ipamv1alpha1.AddToScheme,
		marketv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return fmt.Errorf("registering API types: %w", err)
		}
	}
	return nil
}

// NewScheme returns a scheme with the Kubernetes built-in kinds, CustomResourceDefinitions
// and every kind of our API groups.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("registering Kubernetes types: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("registering apiextensions types: %w", err)
	}
	if err := AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewClient returns a client of the cluster cfg reaches, knowing every kind NewScheme knows.
func NewClient(cfg *rest.Config) (client.Client, error) {
	s, err := NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return c, nil
}
