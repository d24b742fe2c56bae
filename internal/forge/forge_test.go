package forge_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// someoneElses is a label another writer set, which every builder keeps.
var someoneElses = map[string]string{"team": "blue"}

func meta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "liqo-tenant-b", Name: "b", Labels: map[string]string{"team": "blue"}}
}

func wantLabels(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range someoneElses {
		want[k] = v
	}
	if len(got) != len(want) {
		t.Errorf("%s labels %v, want %v", what, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s label %s = %q, want %q (all: %v)", what, k, got[k], v, got)
		}
	}
}

func TestMutateConfiguration(t *testing.T) {
	conf := &netv1beta1.Configuration{ObjectMeta: meta()}
	conf.Spec.Remote.CIDR.External = []netv1beta1.CIDR{"10.99.0.0/16"} // an earlier external CIDR, dropped
	forge.MutateConfiguration(conf, "b", []string{"10.1.0.0/16", "10.2.0.0/16"}, nil)
	wantLabels(t, "Configuration", conf.Labels, map[string]string{consts.RemoteClusterIDLabel: "b"})
	if got := conf.Spec.Remote.CIDR.Pod; len(got) != 2 || got[0] != "10.1.0.0/16" || got[1] != "10.2.0.0/16" {
		t.Errorf("pod CIDRs %v", got)
	}
	if conf.Spec.Remote.CIDR.External != nil {
		t.Errorf("external CIDRs %v, want none (nil: the list is omitted)", conf.Spec.Remote.CIDR.External)
	}
	forge.MutateConfiguration(conf, "b", []string{"10.1.0.0/16"}, []string{"10.70.0.0/16"})
	if got := conf.Spec.Remote.CIDR.External; len(got) != 1 || got[0] != "10.70.0.0/16" {
		t.Errorf("external CIDRs %v", got)
	}
}

func TestMutateGatewayServerWritesTheWholeEndpoint(t *testing.T) {
	gs := &netv1beta1.GatewayServer{ObjectMeta: meta()}
	gs.Spec.Endpoint.Ports = []int32{51840, 51841} // written by a newer writer: replaced by Port
	gs.Spec.Endpoint.NodePorts = []int32{30001}
	gs.Spec.SecretRef.Name = "keys"
	gs.Spec.ServerTemplateRef = corev1.ObjectReference{Kind: "WgGatewayServerTemplate", Name: "custom", Namespace: "liqo"}
	forge.MutateGatewayServer(gs, "b", forge.GatewayServerOptions{MTU: 1340, ServiceType: corev1.ServiceTypeNodePort, Port: 51840, NodePort: ptr.To[int32](30000)})
	wantLabels(t, "GatewayServer", gs.Labels, map[string]string{consts.RemoteClusterIDLabel: "b"})
	ep := gs.Spec.Endpoint
	if gs.Spec.MTU != 1340 || ep.Port != 51840 || ep.Ports != nil || ep.NodePorts != nil || ep.ServiceType != corev1.ServiceTypeNodePort ||
		ep.NodePort == nil || *ep.NodePort != 30000 || ep.LoadBalancerIP != nil {
		t.Errorf("spec %+v", gs.Spec)
	}
	if gs.Spec.SecretRef.Name != "keys" || gs.Spec.ServerTemplateRef.Name != "custom" {
		t.Errorf("nil SecretRef/TemplateRef options changed the object's: %+v", gs.Spec)
	}
	forge.MutateGatewayServer(gs, "b", forge.GatewayServerOptions{ServiceType: corev1.ServiceTypeLoadBalancer, Port: 51840,
		LoadBalancerIP: ptr.To("192.0.2.1"), SecretRef: &corev1.LocalObjectReference{}, TemplateRef: &corev1.ObjectReference{Name: "other"}})
	ep = gs.Spec.Endpoint
	if ep.NodePort != nil || ep.LoadBalancerIP == nil || *ep.LoadBalancerIP != "192.0.2.1" || gs.Spec.SecretRef.Name != "" ||
		gs.Spec.ServerTemplateRef.Name != "other" || gs.Spec.MTU != 0 {
		t.Errorf("second write: spec %+v", gs.Spec)
	}
}

func TestMutateGatewayClient(t *testing.T) {
	gc := &netv1beta1.GatewayClient{ObjectMeta: meta()}
	gc.Spec.ClientTemplateRef.Name = "custom"
	ep := netv1beta1.EndpointStatus{Addresses: []string{"192.0.2.10"}, Port: 30000, Protocol: ptr.To(corev1.ProtocolUDP)}
	forge.MutateGatewayClient(gc, "b", forge.GatewayClientOptions{MTU: 1340, Endpoint: ep})
	ep.Addresses[0] = "changed after the call"
	wantLabels(t, "GatewayClient", gc.Labels, map[string]string{consts.RemoteClusterIDLabel: "b"})
	if gc.Spec.MTU != 1340 || gc.Spec.Endpoint.Port != 30000 || gc.Spec.Endpoint.Addresses[0] != "192.0.2.10" || gc.Spec.ClientTemplateRef.Name != "custom" {
		t.Errorf("spec %+v (the endpoint must be a copy, a nil TemplateRef keeps the object's)", gc.Spec)
	}
	forge.MutateGatewayClient(gc, "b", forge.GatewayClientOptions{Endpoint: ep, SecretRef: &corev1.LocalObjectReference{Name: "keys"},
		TemplateRef: &corev1.ObjectReference{Name: "other"}})
	if gc.Spec.SecretRef.Name != "keys" || gc.Spec.ClientTemplateRef.Name != "other" {
		t.Errorf("spec %+v", gc.Spec)
	}
}

func TestMutatePublicKey(t *testing.T) {
	pk := &netv1beta1.PublicKey{ObjectMeta: meta()}
	key := make([]byte, 32)
	key[0] = 7
	forge.MutatePublicKey(pk, "b", key)
	key[0] = 8
	wantLabels(t, "PublicKey", pk.Labels, map[string]string{consts.RemoteClusterIDLabel: "b", consts.GatewayResourceLabel: "true"})
	if len(pk.Spec.PublicKey) != 32 || pk.Spec.PublicKey[0] != 7 {
		t.Errorf("public key %v, want a copy of the one given", pk.Spec.PublicKey)
	}
}

func TestMutateTenantNamespace(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: meta()}
	if forge.IsTenantNamespaceOf(ns, "b") {
		t.Error("a plain namespace is taken for a tenant namespace")
	}
	forge.MutateTenantNamespace(ns, "b")
	wantLabels(t, "Namespace", ns.Labels, consts.TenantNamespaceLabels("b"))
	if !forge.IsTenantNamespaceOf(ns, "b") || forge.IsTenantNamespaceOf(ns, "c") {
		t.Errorf("IsTenantNamespaceOf after MutateTenantNamespace(b): labels %v", ns.Labels)
	}
}

func TestMutateTenantAndIdentity(t *testing.T) {
	tenant := &authv1beta1.Tenant{ObjectMeta: meta()}
	forge.MutateTenant(tenant, "a", forge.TenantOptions{AuthzPolicy: authv1beta1.KeysExchange, Condition: authv1beta1.TenantConditionActive,
		PublicKey: []byte("pub"), Signature: []byte("sig"), CSR: []byte("csr")})
	wantLabels(t, "Tenant", tenant.Labels, map[string]string{consts.RemoteClusterIDLabel: "a"})
	if s := tenant.Spec; s.ClusterID != "a" || s.AuthzPolicy != authv1beta1.KeysExchange || s.TenantCondition != authv1beta1.TenantConditionActive ||
		string(s.PublicKey) != "pub" || string(s.Signature) != "sig" || string(s.CSR) != "csr" {
		t.Errorf("Tenant spec %+v", s)
	}
	if _, ok := tenant.Annotations[consts.TenantPodSecurityAnnotation]; ok {
		t.Errorf("Tenant without a Pod Security level: annotations %v", tenant.Annotations)
	}
	forge.MutateTenant(tenant, "a", forge.TenantOptions{PodSecurity: "privileged"})
	if tenant.Annotations[consts.TenantPodSecurityAnnotation] != "privileged" {
		t.Errorf("Tenant with level privileged: annotations %v", tenant.Annotations)
	}
	if forge.SetTenantPodSecurity(tenant, "privileged") {
		t.Error("setting the same level again reports a change")
	}
	if !forge.SetTenantPodSecurity(tenant, "") || tenant.Annotations[consts.TenantPodSecurityAnnotation] != "" {
		t.Errorf("removing the level: annotations %v", tenant.Annotations)
	}

	id := &authv1beta1.Identity{ObjectMeta: meta()}
	forge.MutateIdentity(id, "b", authv1beta1.ControlPlaneIdentityType, "liqo-tenant-a", authv1beta1.AuthParams{APIServer: "https://b:6443"})
	wantLabels(t, "Identity", id.Labels, map[string]string{consts.RemoteClusterIDLabel: "b"})
	if s := id.Spec; s.ClusterID != "b" || s.Type != authv1beta1.ControlPlaneIdentityType || s.Namespace != "liqo-tenant-a" || s.AuthParams.APIServer != "https://b:6443" {
		t.Errorf("Identity spec %+v", s)
	}
}

// TestMutateResourceSliceIdentity: a slice's Identity is upstream's: named resourceslice-<slice>,
// type ResourceSlice towards the slice's provider with its status.authParams and no namespace,
// labelled with the provider and the slice.
func TestMutateResourceSliceIdentity(t *testing.T) {
	provider := corev1beta1.ClusterID("b")
	rs := &authv1beta1.ResourceSlice{ObjectMeta: meta(), Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &provider},
		Status: authv1beta1.ResourceSliceStatus{AuthParams: &authv1beta1.AuthParams{APIServer: "https://b:6443", SignedCRT: []byte("crt")}}}
	if name := forge.ResourceSliceIdentityName(rs.Name); name != "resourceslice-b" {
		t.Errorf("Identity name %q, want resourceslice-b", name)
	}
	id := &authv1beta1.Identity{ObjectMeta: meta()}
	forge.MutateResourceSliceIdentity(id, rs)
	wantLabels(t, "Identity", id.Labels, map[string]string{consts.RemoteClusterIDLabel: "b", consts.ResourceSliceNameLabel: "b"})
	if s := id.Spec; s.ClusterID != "b" || s.Type != authv1beta1.ResourceSliceIdentityType || s.Namespace != "" ||
		s.AuthParams.APIServer != "https://b:6443" || string(s.AuthParams.SignedCRT) != "crt" {
		t.Errorf("Identity spec %+v", s)
	}
}

func TestMutateResourceSlice(t *testing.T) {
	rs := &authv1beta1.ResourceSlice{ObjectMeta: meta()}
	asked := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	forge.MutateResourceSlice(rs, "b", forge.ResourceSliceOptions{ConsumerID: "a", Class: "default", Resources: asked, CreateVirtualNode: true})
	asked[corev1.ResourceCPU] = resource.MustParse("64")
	wantLabels(t, "ResourceSlice", rs.Labels, map[string]string{consts.RemoteClusterIDLabel: "b", consts.ReplicationLabel: "true",
		consts.ReplicationDestinationLabel: "b"})
	if rs.Annotations[consts.CreateVirtualNodeAnnotation] != "true" {
		t.Errorf("annotations %v", rs.Annotations)
	}
	if s := rs.Spec; s.ProviderClusterID == nil || *s.ProviderClusterID != "b" || s.ConsumerClusterID == nil || *s.ConsumerClusterID != "a" ||
		s.Class != "default" || s.Resources.Cpu().String() != "2" {
		t.Errorf("spec %+v (resources must be a copy)", s)
	}
	// No consumer ID: the one set stays (the API forbids removing it).
	forge.MutateResourceSlice(rs, "b", forge.ResourceSliceOptions{Class: "default", Resources: asked})
	if rs.Spec.ConsumerClusterID == nil || *rs.Spec.ConsumerClusterID != "a" || rs.Annotations[consts.CreateVirtualNodeAnnotation] != "false" {
		t.Errorf("second write: spec %+v, annotations %v", rs.Spec, rs.Annotations)
	}
}
