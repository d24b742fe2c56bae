package foreigncluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/tenant"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peerstatus"
	"github.com/peerkit/terraform-provider-liqo/internal/remap"
)

// observation is what the local cluster holds about one remote cluster.
type observation struct {
	tenantNamespaces []string
	tenants          []authv1beta1.Tenant
	refusals         map[string]*tenant.Refusal // why a tenant gets no identity, by namespace/name
	identities       []authv1beta1.Identity
	slices           []authv1beta1.ResourceSlice // asked of the remote cluster (it provides)
	granted          []authv1beta1.ResourceSlice // asked by the remote cluster (it consumes)
	configurations   []netv1beta1.Configuration
	gatewayServers   []netv1beta1.GatewayServer
	gatewayClients   []netv1beta1.GatewayClient
	connections      []netv1beta1.Connection
	virtualNodes     []offv1beta1.VirtualNode
	nodes            []corev1.Node
}

// empty reports whether nothing refers to the remote cluster any more.
func (o *observation) empty() bool {
	return len(o.tenantNamespaces)+len(o.tenants)+len(o.identities)+len(o.slices)+len(o.granted)+len(o.configurations)+
		len(o.gatewayServers)+len(o.gatewayClients)+len(o.connections)+len(o.virtualNodes)+len(o.nodes) == 0
}

// observe lists every object about the remote cluster id.
func observe(ctx context.Context, c client.Client, id corev1beta1.ClusterID) (*observation, error) {
	o := &observation{}
	for _, step := range []func(context.Context, client.Client, corev1beta1.ClusterID) error{
		o.observeAuthentication, o.observeSlices, o.observeNetworking, o.observeOffloading,
	} {
		if err := step(ctx, c, id); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// observeAuthentication lists the tenant namespaces, the tenants (with why each is refused an
// identity, if it is) and the identities about id.
func (o *observation) observeAuthentication(ctx context.Context, c client.Client, id corev1beta1.ClusterID) error {
	nss := &corev1.NamespaceList{}
	if err := c.List(ctx, nss, client.MatchingLabels{consts.RemoteClusterIDLabel: string(id)}); err != nil {
		return fmt.Errorf("listing tenant namespaces: %w", err)
	}
	for _, ns := range nss.Items {
		if ns.Labels[consts.TenantNamespaceLabel] == "true" && ns.DeletionTimestamp == nil {
			o.tenantNamespaces = append(o.tenantNamespaces, ns.Name)
		}
	}

	tenants := &authv1beta1.TenantList{}
	if err := c.List(ctx, tenants); err != nil {
		return fmt.Errorf("listing tenants: %w", err)
	}
	o.refusals = map[string]*tenant.Refusal{}
	for _, t := range tenants.Items {
		if !names(t.Spec.ClusterID, t.Labels, id) {
			continue
		}
		o.tenants = append(o.tenants, t)
		if t.DeletionTimestamp != nil {
			continue
		}
		refusal, err := tenant.Check(ctx, c, &t)
		if err != nil {
			return fmt.Errorf("checking tenant %s/%s: %w", t.Namespace, t.Name, err)
		}
		o.refusals[t.Namespace+"/"+t.Name] = refusal
	}
	ids := &authv1beta1.IdentityList{}
	if err := c.List(ctx, ids); err != nil {
		return fmt.Errorf("listing identities: %w", err)
	}
	for _, i := range ids.Items {
		if names(i.Spec.ClusterID, i.Labels, id) {
			o.identities = append(o.identities, i)
		}
	}
	return nil
}

// observeSlices lists the resource slices asked of id and those asked by id.
func (o *observation) observeSlices(ctx context.Context, c client.Client, id corev1beta1.ClusterID) error {
	slices := &authv1beta1.ResourceSliceList{}
	if err := c.List(ctx, slices); err != nil {
		return fmt.Errorf("listing resource slices: %w", err)
	}
	for _, s := range slices.Items {
		// A slice that names no cluster in its spec is asked of the cluster its label names
		// (the provider's copies always name their consumer).
		if s.Spec.ProviderClusterID != nil && *s.Spec.ProviderClusterID == id ||
			s.Spec.ProviderClusterID == nil && s.Spec.ConsumerClusterID == nil && s.Labels[consts.RemoteClusterIDLabel] == string(id) {
			o.slices = append(o.slices, s)
		}
		if s.Spec.ConsumerClusterID != nil && *s.Spec.ConsumerClusterID == id {
			o.granted = append(o.granted, s)
		}
	}
	return nil
}

// observeNetworking lists the network objects labelled with id.
func (o *observation) observeNetworking(ctx context.Context, c client.Client, id corev1beta1.ClusterID) error {
	confs, servers := &netv1beta1.ConfigurationList{}, &netv1beta1.GatewayServerList{}
	clients, conns := &netv1beta1.GatewayClientList{}, &netv1beta1.ConnectionList{}
	for _, l := range []struct {
		list client.ObjectList
		what string
	}{{confs, "configurations"}, {servers, "gateway servers"}, {clients, "gateway clients"}, {conns, "connections"}} {
		if err := c.List(ctx, l.list, client.MatchingLabels{consts.RemoteClusterIDLabel: string(id)}); err != nil {
			return fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	o.configurations, o.gatewayServers, o.gatewayClients, o.connections = confs.Items, servers.Items, clients.Items, conns.Items
	return nil
}

// observeOffloading lists the virtual nodes of id and their Nodes.
func (o *observation) observeOffloading(ctx context.Context, c client.Client, id corev1beta1.ClusterID) error {
	vns := &offv1beta1.VirtualNodeList{}
	if err := c.List(ctx, vns); err != nil {
		return fmt.Errorf("listing virtual nodes: %w", err)
	}
	for _, vn := range vns.Items {
		if names(vn.Spec.ClusterID, vn.Labels, id) {
			o.virtualNodes = append(o.virtualNodes, vn)
		}
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.MatchingLabels{consts.TypeLabel: consts.VirtualNodeType, consts.RemoteClusterIDLabel: string(id)}); err != nil {
		return fmt.Errorf("listing virtual nodes' Nodes: %w", err)
	}
	o.nodes = nodes.Items
	return nil
}

// status computes the ForeignCluster status from the observation, keeping the transition
// times of conditions whose status did not change.
func (o *observation) status(old corev1beta1.ForeignClusterStatus, now metav1.Time) corev1beta1.ForeignClusterStatus {
	st := corev1beta1.ForeignClusterStatus{Role: o.role(), APIServerURL: old.APIServerURL}
	if len(o.tenantNamespaces) > 0 {
		st.TenantNamespace.Local = o.tenantNamespaces[0]
	}
	for _, i := range o.identities {
		if i.Spec.Namespace != "" {
			st.TenantNamespace.Remote = i.Spec.Namespace
		}
		if i.Spec.AuthParams.APIServer != "" {
			st.APIServerURL = i.Spec.AuthParams.APIServer
		}
	}
	st.Modules.Networking = module(o.networkingConditions(), old.Modules.Networking.Conditions, now)
	st.Modules.Authentication = module(o.authenticationConditions(), old.Modules.Authentication.Conditions, now)
	st.Modules.Offloading = module(o.offloadingConditions(), old.Modules.Offloading.Conditions, now)
	// A provider offloads for its consumer once it holds its slices (the virtual nodes and
	// their conditions are on the consumer's side).
	st.Modules.Offloading.Enabled = st.Modules.Offloading.Enabled || len(o.granted) > 0
	return st
}

// networkingConditions are the conditions of the networking module: one per Configuration
// (Ready once its status maps every remote CIDR, remap.Remapped), the gateway server's and client's, and one per
// Connection (its tunnel's state).
func (o *observation) networkingConditions() []corev1beta1.Condition {
	var net []corev1beta1.Condition
	for _, c := range o.configurations {
		s := corev1beta1.ConditionStatusPending
		if done, _ := remap.Remapped(&c); done {
			s = corev1beta1.ConditionStatusReady
		}
		net = append(net, cond(corev1beta1.NetworkConfigurationStatusCondition, s, "Configuration "+c.Name))
	}
	if len(o.gatewayServers) > 0 {
		net = append(net, cond(corev1beta1.NetworkGatewayServerStatusCondition, corev1beta1.ConditionStatusReady, "GatewayServer "+o.gatewayServers[0].Name))
	}
	if len(o.gatewayClients) > 0 {
		net = append(net, cond(corev1beta1.NetworkGatewayClientStatusCondition, corev1beta1.ConditionStatusReady, "GatewayClient "+o.gatewayClients[0].Name))
	}
	for _, c := range o.connections {
		net = append(net, connectionCondition(c))
	}
	return net
}

// connectionCondition is the condition of one Connection: its tunnel's state.
func connectionCondition(c netv1beta1.Connection) corev1beta1.Condition {
	s := corev1beta1.ConditionStatusPending
	switch c.Status.Value {
	case netv1beta1.Connected:
		// No latency here: it changes at every measurement, and the ForeignCluster would be
		// rewritten (and the plans reading it changed) as often. It stays on the Connection.
		s = corev1beta1.ConditionStatusEstablished
	case netv1beta1.ConnectionError:
		s = corev1beta1.ConditionStatusError
	}
	return cond(corev1beta1.NetworkConnectionStatusCondition, s, "tunnel "+string(c.Status.Value))
}

// authenticationConditions are the conditions of the authentication module: one per Tenant
// and one per control-plane Identity (Established once its kubeconfig Secret exists).
func (o *observation) authenticationConditions() []corev1beta1.Condition {
	var auth []corev1beta1.Condition
	for _, t := range o.tenants {
		auth = append(auth, o.tenantCondition(t))
	}
	for _, i := range o.identities {
		if i.Spec.Type != authv1beta1.IdentityType("ControlPlane") {
			continue
		}
		s := corev1beta1.ConditionStatusPending
		if i.Status.KubeconfigSecretRef != nil && i.Status.KubeconfigSecretRef.Name != "" {
			s = corev1beta1.ConditionStatusEstablished
		}
		auth = append(auth, cond(corev1beta1.AuthIdentityControlPlaneStatusCondition, s, fmt.Sprintf("Identity %s/%s", i.Namespace, i.Name)))
	}
	return auth
}

// tenantCondition is the condition of one Tenant: Established while it is active, NotReady
// when it is not, Error when the Tenant reconciler refuses it.
func (o *observation) tenantCondition(t authv1beta1.Tenant) corev1beta1.Condition {
	c := cond(corev1beta1.AuthTenantStatusCondition, corev1beta1.ConditionStatusEstablished,
		fmt.Sprintf("Tenant %s/%s is %s", t.Namespace, t.Name, t.Spec.TenantCondition))
	if f := o.refusals[t.Namespace+"/"+t.Name]; f != nil && f.Reason != tenant.ReasonNotActive {
		// Refused: the reason the Tenant reconciler gives, with the field at fault.
		c.Status, c.Reason, c.Message = corev1beta1.ConditionStatusError, f.Reason, fmt.Sprintf("Tenant %s/%s refused: %s", t.Namespace, t.Name, f.Message)
	} else if t.Spec.TenantCondition != authv1beta1.TenantConditionActive && t.Spec.TenantCondition != "" {
		c.Status, c.Reason = corev1beta1.ConditionStatusNotReady, string(corev1beta1.ConditionStatusNotReady)
	}
	return c
}

// offloadingConditions are the conditions of the offloading module. A virtual node is ready
// when its virtual kubelet runs; each one that creates a Node expects it Ready (a Node not
// registered yet is not).
func (o *observation) offloadingConditions() []corev1beta1.Condition {
	var off []corev1beta1.Condition
	running, expected := o.runningKubelets()
	if len(o.virtualNodes) > 0 {
		off = append(off, cond(corev1beta1.OffloadingVirtualNodeStatusCondition, readiness(running, len(o.virtualNodes)),
			fmt.Sprintf("%d of %d virtual kubelet(s) running", running, len(o.virtualNodes))))
	}
	if expected = max(expected, len(o.nodes)); expected > 0 {
		ready := o.readyNodes()
		off = append(off, cond(corev1beta1.OffloadingNodeStatusCondition, readiness(ready, expected),
			fmt.Sprintf("%d of %d node(s) Ready", ready, expected)))
	}
	return off
}

// runningKubelets counts the virtual nodes' running virtual kubelets, and the virtual nodes
// that create a Node.
func (o *observation) runningKubelets() (running, createNode int) {
	for _, vn := range o.virtualNodes {
		for _, c := range vn.Status.Conditions {
			if c.Type == offv1beta1.VirtualKubeletConditionType && c.Status == offv1beta1.RunningConditionStatusType {
				running++
			}
		}
		if vn.Spec.CreateNode == nil || *vn.Spec.CreateNode {
			createNode++
		}
	}
	return running, createNode
}

// readyNodes counts the virtual nodes' Nodes that are Ready.
func (o *observation) readyNodes() int {
	ready := 0
	for _, n := range o.nodes {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready
}

// names tells whether an object is about the remote cluster id: its spec's cluster ID, or,
// when the spec names none, its liqo.io/remote-cluster-id label.
func names(spec corev1beta1.ClusterID, labels map[string]string, id corev1beta1.ClusterID) bool {
	if spec != "" {
		return spec == id
	}
	return labels[consts.RemoteClusterIDLabel] == string(id)
}

// readiness is the state of total parts of which ready are ready.
func readiness(ready, total int) corev1beta1.ConditionStatusType {
	switch ready {
	case total:
		return corev1beta1.ConditionStatusReady
	case 0:
		return corev1beta1.ConditionStatusNotReady
	}
	return corev1beta1.ConditionStatusSomeNotReady
}

// role is the remote cluster's role: a Consumer when we keep a Tenant or slices for it, a
// Provider when we hold an identity or slices from it.
func (o *observation) role() corev1beta1.RoleType {
	consumer := len(o.tenants) > 0 || len(o.granted) > 0
	provider := len(o.identities) > 0 || len(o.slices) > 0 || len(o.virtualNodes) > 0
	switch {
	case consumer && provider:
		return corev1beta1.ConsumerAndProviderRole
	case consumer:
		return corev1beta1.ConsumerRole
	case provider:
		return corev1beta1.ProviderRole
	}
	return corev1beta1.UnknownRole
}

func cond(t corev1beta1.ConditionType, s corev1beta1.ConditionStatusType, msg string) corev1beta1.Condition {
	return corev1beta1.Condition{Type: t, Status: s, Reason: string(s), Message: msg}
}

// module merges conditions of one type into the worst of them and keeps transition times.
func module(conds, old []corev1beta1.Condition, now metav1.Time) corev1beta1.Module {
	merged := map[corev1beta1.ConditionType]corev1beta1.Condition{}
	var order []corev1beta1.ConditionType
	for _, c := range conds {
		prev, seen := merged[c.Type]
		if !seen {
			order = append(order, c.Type)
			merged[c.Type] = c
			continue
		}
		if peerstatus.Severity(c.Status) > peerstatus.Severity(prev.Status) {
			merged[c.Type] = c
		}
	}
	m := corev1beta1.Module{Enabled: len(conds) > 0}
	for _, t := range order {
		c := merged[t]
		c.LastTransitionTime = now
		for _, o := range old {
			if o.Type == t && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		m.Conditions = append(m.Conditions, c)
	}
	return m
}
