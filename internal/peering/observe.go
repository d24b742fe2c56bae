package peering

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peerstatus"
)

// Module states: the ForeignCluster's own words (peerstatus.Summary), as `liqoctl info
// peer` shows them, and Disabled for networking left out of the peering, or offloading left out
// (no ResourceSlice) or granted without a virtual node.
const (
	StatusDisabled    = "Disabled"
	StatusNone        = string(corev1beta1.ConditionStatusNone)
	StatusPending     = string(corev1beta1.ConditionStatusPending)
	StatusEstablished = string(corev1beta1.ConditionStatusEstablished)
	StatusReady       = string(corev1beta1.ConditionStatusReady)
	StatusNotReady    = string(corev1beta1.ConditionStatusNotReady)
	StatusError       = string(corev1beta1.ConditionStatusError)
)

// Down says which module of the state is not up (networking Established or Disabled,
// authentication Established or Ready, offloading Ready or Disabled), e.g. "networking is Pending"; "" when every
// one is.
func (s *State) Down() string {
	var bad []string
	if s.Networking != StatusEstablished && s.Networking != StatusDisabled {
		bad = append(bad, "networking is "+s.Networking)
	}
	// Upstream Liqo v1.2's controller manager says Ready of a consumer's usable control-plane
	// identity, where ours says Established.
	if s.Authentication != StatusEstablished && s.Authentication != StatusReady {
		bad = append(bad, "authentication is "+s.Authentication)
	}
	if s.Offloading != StatusReady && s.Offloading != StatusDisabled {
		bad = append(bad, "offloading is "+s.Offloading)
	}
	return strings.Join(bad, ", ")
}

// observe reads the state of the peering. The state of each module is what the ForeignClusters
// report (the foreigncluster controller computes them; peerstatus sums them up): the consumer's
// for the provider gives networking, the consumer's identity and offloading (its virtual
// nodes); the provider's for the consumer tells whether it refuses the consumer's Tenant (a
// Tenant cordoned or drained on purpose is an administrative state, not a broken peering).
// Before the consumer has a virtual node, the ResourceSlice's negotiation tells offloading
// apart: Pending while asked, Error when denied (the ForeignCluster has no condition for it).
// The virtual node's name and the granted resources come from their objects.
func (p *pair) observe(ctx context.Context) (*State, error) {
	st := &State{ConsumerID: p.consumerID, ProviderID: p.providerID,
		ConsumerTenantNamespace: p.consumerNS(), ProviderTenantNamespace: p.providerNS(), Networking: StatusDisabled}
	consumerView, err := foreignClusterOf(ctx, p.consumer, p.providerID)
	if err != nil {
		return nil, err
	}
	providerView, err := foreignClusterOf(ctx, p.provider, p.consumerID)
	if err != nil {
		return nil, err
	}
	if p.opts.Networking {
		st.Networking = string(peerstatus.Summary(consumerView.Modules.Networking.Conditions))
		if err := p.observeTunnel(ctx, st); err != nil {
			return nil, err
		}
	}
	auth := peerstatus.ConditionsOf(consumerView.Modules.Authentication, corev1beta1.AuthIdentityControlPlaneStatusCondition)
	for _, c := range peerstatus.ConditionsOf(providerView.Modules.Authentication, corev1beta1.AuthTenantStatusCondition) {
		if c.Status == corev1beta1.ConditionStatusError {
			auth = append(auth, c)
		}
	}
	st.Authentication = string(peerstatus.Summary(auth))
	tenant := &authv1beta1.Tenant{}
	if err := p.provider.Client.Get(ctx, clientKey(p.providerNS(), string(p.consumerID)), tenant); client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("reading the Tenant of %s on %s: %w", p.consumerID, p.provider.Name, err)
	}
	st.ProxyURL = tenant.Spec.ProxyURL
	st.PodSecurity = tenant.Annotations[consts.TenantPodSecurityAnnotation]
	st.Offloading = string(peerstatus.Summary(consumerView.Modules.Offloading.Conditions))
	if err := p.observeSlice(ctx, st); err != nil {
		return nil, err
	}
	if !st.ResourceSlice && p.opts.NoResourceSlice {
		st.Offloading = StatusDisabled
	}
	return st, nil
}

// observeSlice reads the consumer's ResourceSlice of the peering into st: what it asks, what
// the provider grants, its virtual node, and offloading's state before the virtual node is
// there.
func (p *pair) observeSlice(ctx context.Context, st *State) error {
	slice := &authv1beta1.ResourceSlice{}
	err := p.consumer.Client.Get(ctx, clientKey(p.consumerNS(), p.sliceName()), slice)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading the ResourceSlice of %s on %s: %w", p.providerID, p.consumer.Name, err)
	}
	st.Granted = slice.Status.Resources.DeepCopy()
	st.Asked = slice.Spec.Resources.DeepCopy()
	st.ResourceSlice, st.SliceClass = true, slice.Spec.Class
	st.VirtualNodeWanted = slice.Annotations[consts.CreateVirtualNodeAnnotation] != "false"
	if st.Offloading == StatusNone {
		st.Offloading = StatusPending
		for _, c := range slice.Status.Conditions {
			if c.Type == authv1beta1.ResourceSliceConditionTypeResources && c.Status == authv1beta1.ResourceSliceConditionDenied {
				st.Offloading = StatusError
			}
		}
	}
	if !st.VirtualNodeWanted && granted(slice) {
		// Granted, and no virtual node of the peering's is to stand for it: virtual nodes made
		// apart from it (liqo_virtual_node) report their own state.
		st.Offloading = StatusDisabled
	}
	name := consts.VirtualNodeName(string(*slice.Spec.ProviderClusterID), slice.Name)
	err = p.consumer.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{})
	switch {
	case err == nil:
		st.VirtualNode = name
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading virtual node %s on %s: %w", name, p.consumer.Name, err)
	}
	return nil
}

// foreignClusterOf returns the status of c's ForeignCluster for the cluster id (an empty one
// when it has none yet).
func foreignClusterOf(ctx context.Context, c Cluster, id corev1beta1.ClusterID) (corev1beta1.ForeignClusterStatus, error) {
	// Ours and liqoctl's are named after the cluster ID: one GET, not a LIST of every peer's
	// (which the waits repeat every PollInterval). Another name is found by listing.
	fc := &corev1beta1.ForeignCluster{}
	switch err := c.Client.Get(ctx, client.ObjectKey{Name: string(id)}, fc); {
	case err == nil && fc.Spec.ClusterID == id:
		return fc.Status, nil
	case err != nil && !apierrors.IsNotFound(err):
		return corev1beta1.ForeignClusterStatus{}, fmt.Errorf("reading ForeignCluster %s of %s: %w", id, c.Name, err)
	}
	fcs := &corev1beta1.ForeignClusterList{}
	if err := c.Client.List(ctx, fcs); err != nil {
		return corev1beta1.ForeignClusterStatus{}, fmt.Errorf("listing the ForeignClusters of %s: %w", c.Name, err)
	}
	for _, fc := range fcs.Items {
		if fc.Spec.ClusterID == id {
			return fc.Status, nil
		}
	}
	return corev1beta1.ForeignClusterStatus{}, nil
}

// waitUp waits until the ForeignClusters report every module of the peering up (State.Down),
// and returns that state: the controllers write them after the objects the steps awaited.
func (p *pair) waitUp(ctx context.Context) (*State, error) {
	var st *State
	err := waitFor(ctx, p.opts.PollInterval, fmt.Sprintf("the ForeignClusters of %s on %s and of %s on %s to report the peering up",
		p.providerID, p.consumer.Name, p.consumerID, p.provider.Name), func(ctx context.Context) (bool, error) {
		var err error
		if st, err = p.observe(ctx); err != nil {
			return false, err
		}
		if down := st.Down(); down != "" {
			return false, fmt.Errorf("%s", down)
		}
		return true, nil
	})
	return st, err
}

// exists tells whether the peering's defining objects are there: the provider's Tenant for
// the consumer and, unless the peering has none, the consumer's ResourceSlice.
func (p *pair) exists(ctx context.Context) bool {
	t := p.provider.Client.Get(ctx, clientKey(p.providerNS(), string(p.consumerID)), &authv1beta1.Tenant{})
	if p.opts.NoResourceSlice {
		return t == nil
	}
	s := p.consumer.Client.Get(ctx, clientKey(p.consumerNS(), p.sliceName()), &authv1beta1.ResourceSlice{})
	return t == nil && s == nil
}
