package provider

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

// TestPeeringLockPair: the two directions of a pair share one lock (a second holder waits
// until the first lets go, or until its context ends, then says which operation of which
// peering holds it, since when, and what that one waits for); other pairs do not wait.
func TestPeeringLockPair(t *testing.T) {
	set := &clusterSet{}
	pm := func(consumer, provider string) *peeringModel {
		return &peeringModel{ConsumerCluster: types.StringValue(consumer), ProviderCluster: types.StringValue(provider)}
	}
	held, unlock, err := lockPair(t.Context(), set, pm("a", "b"), "create")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	// The holder waits (as internal/peering's waits report it, through the context).
	done := peering.ReportWait(held, "GatewayServer liqo-tenant-a/a on b to report its endpoint")
	_, _, err = lockPair(ctx, set, pm("b", "a"), "create")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the other direction while a→b is held: %v, want a deadline error", err)
	}
	for _, want := range []string{`another operation on the peering of "b" and "a"`, `until this create's timeout`,
		`the create of the peering of consumer "a" with provider "b" has held it since `,
		`waiting for GatewayServer liqo-tenant-a/a on b to report its endpoint`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q: want it to say %q", err, want)
		}
	}
	t.Logf("the other direction's error: %v", err)
	done()
	ctx2, cancel2 := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel2()
	if _, _, err := lockPair(ctx2, set, pm("b", "a"), "delete"); err == nil || !strings.Contains(err.Error(), "between two of its steps") {
		t.Errorf("while the holder waits for nothing: %v, want it to say so", err)
	}
	_, other, err := lockPair(t.Context(), set, pm("a", "c"), "create")
	if err != nil {
		t.Fatalf("another pair: %v", err)
	}
	other()
	if _, _, err := lockPair(t.Context(), &clusterSet{}, pm("a", "b"), "create"); err != nil {
		t.Fatalf("the same keys of another provider configuration: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		_, u, err := lockPair(t.Context(), set, pm("b", "a"), "update")
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("b→a got the lock while a→b held it: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("b→a did not get the lock once a→b let go")
	}
}

// TestPeeringRefresh: the requested resources are read from the grant, keeping the configured
// spelling of equal quantities; what was not granted becomes null (a difference in the plan);
// what the provider grants without being asked (ephemeral-storage from its defaults) shows in
// granted only.
func TestPeeringRefresh(t *testing.T) {
	ctx := t.Context()
	m := peeringModel{
		ConsumerCluster: types.StringValue("c"), ProviderCluster: types.StringValue("p"),
		quantitiesModel: quantitiesModel{CPU: types.StringValue("2000m"), Memory: types.StringValue("1024Mi"), Pods: types.StringValue("20"),
			Resources: types.MapValueMust(types.StringType, map[string]attr.Value{"nvidia.com/gpu": types.StringValue("1")})},
		Networking: types.BoolValue(false), Gateway: types.ObjectNull(peeringGatewayAttrTypes),
	}
	st := &peering.State{ConsumerID: "cl-c", ProviderID: "cl-p", ConsumerTenantNamespace: "liqo-tenant-cl-p",
		ProviderTenantNamespace: "liqo-tenant-cl-c", VirtualNode: "cl-p",
		Networking: peering.StatusDisabled, Authentication: peering.StatusEstablished, Offloading: peering.StatusReady,
		Granted: corev1.ResourceList{corev1.ResourceCPU: kresource.MustParse("2"), corev1.ResourceMemory: kresource.MustParse("1Gi"),
			corev1.ResourcePods: kresource.MustParse("10"), corev1.ResourceEphemeralStorage: kresource.MustParse("20Gi")},
		Asked: corev1.ResourceList{corev1.ResourceCPU: kresource.MustParse("2"), corev1.ResourceMemory: kresource.MustParse("1Gi"),
			corev1.ResourcePods: kresource.MustParse("20"), "nvidia.com/gpu": kresource.MustParse("1")}}
	if err := m.refresh(ctx, st); err != nil {
		t.Fatal(err)
	}
	if m.ID.ValueString() != "c/p" || m.CPU.ValueString() != "2000m" || m.Memory.ValueString() != "1024Mi" ||
		m.Pods.ValueString() != "10" || !m.EphemeralStorage.IsNull() {
		t.Errorf("after refresh: id %s cpu %s memory %s pods %s ephemeral %s", m.ID, m.CPU, m.Memory, m.Pods, m.EphemeralStorage)
	}
	if g := m.Granted.Elements()["ephemeral-storage"]; g == nil || g.String() != `"20Gi"` {
		t.Errorf("granted after refresh: %v, want ephemeral-storage 20Gi in it", m.Granted)
	}
	if len(m.Resources.Elements()) != 0 || m.Resources.IsNull() {
		t.Errorf("resources after a grant without the GPU: %v, want an empty map (configured, not granted)", m.Resources)
	}
	if !m.Gateway.Equal(peeringDefaultGateway()) {
		t.Errorf("gateway after refresh of a null one: %v, want the defaults", m.Gateway)
	}
	if r := m.unhealthy(); r != "" {
		t.Errorf("unhealthy(%v) = %q, want healthy", m.Status, r)
	}
	// A slice asking for nothing (liqoctl's default) asks for what is granted.
	imported := peeringModel{ConsumerCluster: types.StringValue("c"), ProviderCluster: types.StringValue("p"),
		quantitiesModel: quantitiesModel{Resources: types.MapNull(types.StringType)}, Gateway: types.ObjectNull(peeringGatewayAttrTypes)}
	asked := st.Asked
	st.Asked = nil
	if err := imported.refresh(ctx, st); err != nil {
		t.Fatal(err)
	}
	st.Asked = asked
	if imported.CPU.ValueString() != "2" || imported.EphemeralStorage.ValueString() != "20Gi" {
		t.Errorf("refresh of a slice asking for nothing: cpu %s ephemeral %s, want the grant (2, 20Gi)", imported.CPU, imported.EphemeralStorage)
	}
	st.Authentication, st.Offloading = peering.StatusPending, peering.StatusNotReady
	if err := m.refresh(ctx, st); err != nil {
		t.Fatal(err)
	}
	if r := m.unhealthy(); r != "authentication is Pending, offloading is NotReady" {
		t.Errorf("unhealthy = %q", r)
	}
}

// TestPeeringOptions: the model's attributes become the library's options.
func TestPeeringOptions(t *testing.T) {
	m := peeringModel{
		quantitiesModel: quantitiesModel{CPU: types.StringValue("1"), Memory: types.StringValue("2Gi"), Pods: types.StringValue("20"),
			EphemeralStorage: types.StringNull(), Resources: types.MapNull(types.StringType)},
		Networking: types.BoolValue(true), CreateResourceSlice: types.BoolValue(true), CreateVirtualNode: types.BoolValue(true),
		ResourceSliceClass: types.StringValue("default"),
		Gateway: types.ObjectValueMust(peeringGatewayAttrTypes, map[string]attr.Value{"service_type": types.StringValue("NodePort"),
			"server_location": types.StringValue("Provider"), "load_balancer_ip": types.StringNull(),
			"client_address": types.StringNull(), "client_port": types.Int64Null(),
			"port": types.Int64Value(51000), "node_port": types.Int64Value(30100), "mtu": types.Int64Value(1400)}),
	}
	opts, err := m.options(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := peering.Gateway{ServiceType: corev1.ServiceTypeNodePort, Port: 51000, NodePort: 30100, MTU: 1400}
	if !opts.Networking || opts.Gateway != want || len(opts.Resources) != 3 || opts.Resources.Memory().String() != "2Gi" ||
		opts.NoResourceSlice || opts.NoVirtualNode || opts.SliceClass != "default" {
		t.Errorf("options: %+v", opts)
	}

	// liqoctl peer's other options: server on the consumer, behind NAT, a slice of another
	// class without a virtual node; then no slice at all (nothing asked).
	m.Gateway = types.ObjectValueMust(peeringGatewayAttrTypes, map[string]attr.Value{"service_type": types.StringValue("LoadBalancer"),
		"server_location": types.StringValue("Consumer"), "load_balancer_ip": types.StringValue("192.0.2.7"),
		"client_address": types.StringValue("gw.example.com"), "client_port": types.Int64Value(41000),
		"port": types.Int64Value(51840), "node_port": types.Int64Null(), "mtu": types.Int64Value(1340)})
	m.CreateVirtualNode, m.ResourceSliceClass = types.BoolValue(false), types.StringValue("gpu")
	if opts, err = m.options(t.Context()); err != nil {
		t.Fatal(err)
	}
	want = peering.Gateway{ServerOnConsumer: true, ServiceType: corev1.ServiceTypeLoadBalancer, Port: 51840, MTU: 1340,
		LoadBalancerIP: "192.0.2.7", ClientAddress: "gw.example.com", ClientPort: 41000}
	if opts.Gateway != want || !opts.NoVirtualNode || opts.NoResourceSlice || opts.SliceClass != "gpu" || opts.Gateway.ServerLocation() != "Consumer" {
		t.Errorf("options: %+v", opts)
	}
	m.CreateResourceSlice = types.BoolValue(false)
	if opts, err = m.options(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !opts.NoResourceSlice || opts.Resources != nil {
		t.Errorf("options without a slice: %+v, want NoResourceSlice and nothing asked", opts)
	}
}

// TestPeeringGatewayReadKeepsServerLocation: on refresh the state's server_location stays, even
// when the tunnel's server is on the other side (a bidirectional peering's tunnel, made by the
// direction since destroyed, is the remaining one's now); on import it is read from the tunnel.
func TestPeeringGatewayReadKeepsServerLocation(t *testing.T) {
	st := &peering.State{Tunnel: &peering.Tunnel{Gateway: peering.Gateway{ServerOnConsumer: true, Port: 51840, MTU: 1340}}}
	prior := peeringGatewayOn("Provider")
	got, err := peeringGatewayRead(prior, st)
	if err != nil {
		t.Fatal(err)
	}
	if loc := got.Attributes()["server_location"]; !loc.Equal(types.StringValue("Provider")) {
		t.Errorf("refresh: server_location %v, want the state's Provider", loc)
	}
	if got, err = peeringGatewayRead(types.ObjectNull(peeringGatewayAttrTypes), st); err != nil {
		t.Fatal(err)
	}
	if loc := got.Attributes()["server_location"]; !loc.Equal(types.StringValue("Consumer")) {
		t.Errorf("import: server_location %v, want the tunnel's Consumer", loc)
	}
}
