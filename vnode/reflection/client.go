package reflection

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
)

// RESTClient is a REST client of one of our API group versions (offloading.liqo.io/v1beta1 for
// the provider's ShadowEndpointSlices) on the cluster cfg reaches, limited to qps and burst
// (DefaultQPS and DefaultBurst when zero). Its errors name the group version.
func RESTClient(cfg *rest.Config, gv schema.GroupVersion, qps float32, burst int) (rest.Interface, error) {
	if cfg == nil {
		return nil, fmt.Errorf("REST client of %s: no configuration to reach the cluster", gv)
	}
	scheme, err := api.NewScheme()
	if err != nil {
		return nil, fmt.Errorf("REST client of %s: %w", gv, err)
	}
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = qps, burst
	if qps <= 0 {
		c.QPS = DefaultQPS
	}
	if burst <= 0 {
		c.Burst = DefaultBurst
	}
	return GroupRESTClient(c, scheme, gv)
}

// GroupRESTClient is a REST client of API group version gv of a custom resource group
// (offloading.liqo.io, networking.liqo.io) on the cluster cfg reaches, with cfg's own rate
// limits, decoding with scheme. Its errors name the group version.
func GroupRESTClient(cfg *rest.Config, scheme *runtime.Scheme, gv schema.GroupVersion) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("REST client of %s: %w", gv, err)
	}
	return rc, nil
}
