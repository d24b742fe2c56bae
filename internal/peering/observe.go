package peering

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Module states, as `liqoctl info peer` words them.
const (
	StatusDisabled    = "Disabled"
	StatusNone        = "None"
	StatusPending     = "Pending"
	StatusEstablished = "Established"
	StatusReady       = "Ready"
	StatusNotReady    = "NotReady"
	StatusError       = "Error"
)

// observe reads the state of each module.
func (p *pair) observe(ctx context.Context) (*State, error) {
	st := &State{ConsumerID: p.consumerID, ProviderID: p.providerID,
		ConsumerTenantNamespace: p.consumerNS(), ProviderTenantNamespace: p.providerNS(),
		Networking: StatusDisabled, Authentication: StatusNone, Offloading: StatusNone}

	if p.opts.Networking {
		st.Networking = StatusNone
		conns := &netv1beta1.ConnectionList{}
		if err := p.consumer.Client.List(ctx, conns, client.InNamespace(p.consumerNS())); err != nil {
			return nil, fmt.Errorf("listing Connections in %s on %s: %w", p.consumerNS(), p.consumer.Name, err)
		}
		for _, c := range conns.Items {
			switch c.Status.Value {
			case netv1beta1.Connected:
				st.Networking = StatusEstablished
			case netv1beta1.ConnectionError:
				st.Networking = StatusError
			default:
				st.Networking = StatusPending
			}
		}
	}

	tenant := &authv1beta1.Tenant{}
	err := p.provider.Client.Get(ctx, clientKey(p.providerNS(), string(p.consumerID)), tenant)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading the Tenant of %s on %s: %w", p.consumerID, p.provider.Name, err)
	default:
		st.Authentication = StatusPending
		id := &authv1beta1.Identity{}
		err := p.consumer.Client.Get(ctx, clientKey(p.consumerNS(), IdentityPrefix+string(p.providerID)), id)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the Identity of %s on %s: %w", p.providerID, p.consumer.Name, err)
		}
		if err == nil && id.Status.KubeconfigSecretRef != nil && tenant.Status.AuthParams != nil {
			st.Authentication = StatusEstablished
		}
		// Credentials issued once do not make a Tenant accepted now (its signature no longer
		// matching the nonce, say): the provider's ForeignCluster tells whether it refuses it.
		refused, err := p.tenantRefused(ctx)
		if err != nil {
			return nil, err
		}
		if refused {
			st.Authentication = StatusError
		}
	}

	slice := &authv1beta1.ResourceSlice{}
	err = p.consumer.Client.Get(ctx, clientKey(p.consumerNS(), p.sliceName()), slice)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading the ResourceSlice of %s on %s: %w", p.providerID, p.consumer.Name, err)
	default:
		st.Offloading = StatusPending
		st.Granted = slice.Status.Resources.DeepCopy()
		st.Asked = slice.Spec.Resources.DeepCopy()
		for _, c := range slice.Status.Conditions {
			if c.Type == authv1beta1.ResourceSliceConditionTypeResources && c.Status == authv1beta1.ResourceSliceConditionDenied {
				st.Offloading = StatusError
			}
		}
		node := &corev1.Node{}
		name := consts.VirtualNodeName(string(*slice.Spec.ProviderClusterID), slice.Name)
		err := p.consumer.Client.Get(ctx, client.ObjectKey{Name: name}, node)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading virtual node %s on %s: %w", name, p.consumer.Name, err)
		}
		if err == nil {
			st.VirtualNode = name
			st.Offloading = StatusNotReady
			if nodeReady(node) {
				st.Offloading = StatusReady
			}
		}
	}
	return st, nil
}

// tenantRefused tells whether the provider refuses the consumer's Tenant, as the provider's
// ForeignCluster for the consumer reports it (its controller checks the Tenant as the Tenant
// reconciler does).
func (p *pair) tenantRefused(ctx context.Context) (bool, error) {
	fcs := &corev1beta1.ForeignClusterList{}
	if err := p.provider.Client.List(ctx, fcs); err != nil {
		return false, fmt.Errorf("listing the ForeignClusters of %s: %w", p.provider.Name, err)
	}
	for _, fc := range fcs.Items {
		if fc.Spec.ClusterID != p.consumerID {
			continue
		}
		for _, c := range fc.Status.Modules.Authentication.Conditions {
			if c.Type == corev1beta1.AuthTenantStatusCondition && c.Status == corev1beta1.ConditionStatusError {
				return true, nil
			}
		}
	}
	return false, nil
}

// exists tells whether the peering's defining objects are there: the provider's Tenant for
// the consumer and the consumer's ResourceSlice.
func (p *pair) exists(ctx context.Context) bool {
	t := p.provider.Client.Get(ctx, clientKey(p.providerNS(), string(p.consumerID)), &authv1beta1.Tenant{})
	s := p.consumer.Client.Get(ctx, clientKey(p.consumerNS(), p.sliceName()), &authv1beta1.ResourceSlice{})
	return t == nil && s == nil
}

// reverseExists tells whether the provider consumes from the consumer too (a peering in the
// other direction), which shares the tenant namespaces and the network.
func (p *pair) reverseExists(ctx context.Context) (bool, error) {
	err := p.consumer.Client.Get(ctx, clientKey(p.consumerNS(), string(p.providerID)), &authv1beta1.Tenant{})
	if err == nil {
		return true, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("looking for a peering of %s with %s: %w", p.provider.Name, p.consumer.Name, err)
	}
	err = p.provider.Client.Get(ctx, clientKey(p.providerNS(), string(p.consumerID)), &authv1beta1.ResourceSlice{})
	if err == nil {
		return true, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("looking for a peering of %s with %s: %w", p.provider.Name, p.consumer.Name, err)
	}
	return false, nil
}
