package peering

import (
	"context"
	"fmt"
	"net"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/remap"
)

// inBandProxyURL is the URL the consumer's control plane reaches the provider's API server
// through, in-band (as liqoctl peer --in-band makes it): the provider's API-server proxy, at
// the address of the provider's external CIDR its IP api-server-proxy was given, as the
// consumer sees that CIDR (remapped when it collides with one of the consumer's), on the
// proxy's port. It waits for the provider's controllers to allocate the address and for the
// consumer's to decide how it sees the provider's external CIDR.
func (p *pair) inBandProxyURL(ctx context.Context) (string, error) {
	ipKey := client.ObjectKey{Namespace: p.provider.liqoNamespace(), Name: consts.APIServerProxyIP}
	ip := &ipamv1alpha1.IP{}
	err := waitFor(ctx, p.opts.PollInterval, fmt.Sprintf("IP %s on %s to have an address of its external CIDR (made by its controller manager "+
		"from the API-server proxy's Service %s/%s)", ipKey, p.provider.Name, ipKey.Namespace, consts.APIServerProxyService),
		func(ctx context.Context) (bool, error) {
			err := p.provider.Client.Get(ctx, ipKey, ip)
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, fmt.Errorf("reading IP %s on %s: %w", ipKey, p.provider.Name, err)
			}
			return ip.Status.IP != "", nil
		})
	if err != nil {
		return "", err
	}
	confKey := clientKey(p.consumerNS(), string(p.providerID))
	conf := &netv1beta1.Configuration{}
	err = waitFor(ctx, p.opts.PollInterval, fmt.Sprintf("Configuration %s on %s to say how it sees the external CIDR of %s", confKey, p.consumer.Name, p.provider.Name),
		func(ctx context.Context) (bool, error) {
			if err := p.consumer.Client.Get(ctx, confKey, conf); err != nil {
				return false, fmt.Errorf("reading Configuration %s on %s: %w", confKey, p.consumer.Name, err)
			}
			return conf.Status.Remote != nil && len(conf.Status.Remote.CIDR.External) >= len(conf.Spec.Remote.CIDR.External), nil
		})
	if err != nil {
		return "", err
	}
	remaps, err := remap.FromConfiguration(conf)
	if err != nil {
		return "", fmt.Errorf("on %s: %w", p.consumer.Name, err)
	}
	addr := remap.Local(string(ip.Status.IP), remaps)
	return "http://" + net.JoinHostPort(addr, strconv.Itoa(consts.APIServerProxyPort)), nil
}
