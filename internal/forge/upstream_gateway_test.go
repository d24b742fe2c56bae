package forge_test

// The networking contract with upstream Liqo v1.2.0's gateway and controllers: the objects our
// peering flow (internal/peering/networking.go) builds with these builders, checked field by
// field against what upstream's code reads, and validated against upstream's CRD schemas. The
// upstream paths below are relative to github.com/liqotech/liqo@v1.2.0.

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/gateway/workload"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// Upstream's names, written out (not our consts) so that a change of ours shows here.
const (
	upRemoteClusterIDLabel = "liqo.io/remote-cluster-id"           // pkg/consts: RemoteClusterID
	upGatewayResourceLabel = "networking.liqo.io/gateway-resource" // pkg/consts: GatewayResourceLabel
	upPrivateKeyField      = "privateKey"                          // pkg/consts: PrivateKeyField
	upPublicKeyField       = "publicKey"                           // pkg/consts: PublicKeyField
	upRemoteID             = "cluster-upstream"
)

// upstreamCRDSchema returns upstream v1.2's schema of networking.liqo.io plural at v1beta1, from
// LIQO_REFERENCE_CRDS (or ../shared/reference/liqo-v1.2-crds beside the repository); it skips
// the test when the folder is absent.
func upstreamCRDSchema(t *testing.T, plural string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	dir := os.Getenv("LIQO_REFERENCE_CRDS")
	if dir == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "..", "shared", "reference", "liqo-v1.2-crds")
	}
	data, err := os.ReadFile(filepath.Join(dir, "networking.liqo.io_"+plural+".yaml"))
	if os.IsNotExist(err) {
		t.Skipf("upstream Liqo CRDs not found in %s (set LIQO_REFERENCE_CRDS)", dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("%s: %v", plural, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1beta1" {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("upstream's %s CRD serves no v1beta1", plural)
	return nil
}

// upstreamSchemaErrors validates obj (one of our API objects, or its JSON map) against
// upstream's CRD of plural as its API server does on a create with strict field validation:
// no field the schema does not know (pruning), and the schema's types, formats (cidr, byte,
// int32), enums, patterns and required fields (OpenAPI validation).
func upstreamSchemaErrors(t *testing.T, plural string, obj any) []string {
	t.Helper()
	v1 := upstreamCRDSchema(t, plural)
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := map[string]any{}
	if err := json.Unmarshal(data, &u); err != nil {
		t.Fatal(err)
	}
	u["apiVersion"], u["kind"] = netv1beta1.GroupVersion.String(), "Any"
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, internal, nil); err != nil {
		t.Fatalf("%s: converting the schema: %v", plural, err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatalf("%s: structural schema: %v", plural, err)
	}
	var out []string
	for _, p := range pruning.PruneWithOptions(u, structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		out = append(out, "unknown field "+p)
	}
	raw, err := json.Marshal(v1)
	if err != nil {
		t.Fatal(err)
	}
	openapi := &spec.Schema{}
	if err := json.Unmarshal(raw, openapi); err != nil {
		t.Fatalf("%s: OpenAPI schema: %v", plural, err)
	}
	for _, e := range validate.NewSchemaValidator(openapi, nil, "", strfmt.Default).Validate(u).Errors {
		out = append(out, e.Error())
	}
	return out
}

func wantValidUpstream(t *testing.T, plural string, obj any) {
	t.Helper()
	if errs := upstreamSchemaErrors(t, plural, obj); len(errs) > 0 {
		t.Errorf("%s invalid for upstream's CRD:\n%s", plural, strings.Join(errs, "\n"))
	}
}

func wantRemoteLabel(t *testing.T, kind string, labels map[string]string) {
	t.Helper()
	if labels[upRemoteClusterIDLabel] != upRemoteID {
		t.Errorf("%s: label %s = %q, want %q (labels %v)", kind, upRemoteClusterIDLabel, labels[upRemoteClusterIDLabel], upRemoteID, labels)
	}
}

// TestConfigurationAsUpstreamReadsIt: the Configuration of the peer's networks, as
// peering.ensureConfiguration builds it (two pod CIDRs, the external CIDR).
func TestConfigurationAsUpstreamReadsIt(t *testing.T) {
	conf := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-up", Name: upRemoteID}}
	forge.MutateConfiguration(conf, upRemoteID, []string{"10.200.0.0/16", "10.201.0.0/16"}, []string{"10.70.0.0/16"})
	// external-network/configuration/label.go (its Networks' labels), route/k8s.go
	// GetRemoteClusterID and remapping/cidr.go: the peer is read from this label only.
	wantRemoteLabel(t, "Configuration", conf.Labels)
	// external-network/configuration/configuration_controller.go remaps each spec.remote.cidr
	// entry into status.remote.cidr, one by one (Networks made with net.ParseCIDR-able CIDRs).
	for _, c := range append(append([]netv1beta1.CIDR{}, conf.Spec.Remote.CIDR.Pod...), conf.Spec.Remote.CIDR.External...) {
		if _, n, err := net.ParseCIDR(string(c)); err != nil || n.String() != string(c) {
			t.Errorf("CIDR %q is not a canonical network address (%v)", c, err)
		}
	}
	if len(conf.Spec.Remote.CIDR.Pod) != 2 {
		t.Errorf("spec.remote.cidr.pod = %v, want both pod CIDRs", conf.Spec.Remote.CIDR.Pod)
	}
	// The same controller's isConfigured wants a non-empty external list (cidrutils.AllNonVoid)
	// and upstream writes exactly one (forge.MutateConfiguration: cidrutils.SetPrimary; readers
	// take cidrutils.GetPrimary, the first).
	if len(conf.Spec.Remote.CIDR.External) != 1 {
		t.Errorf("spec.remote.cidr.external = %v, want exactly one CIDR", conf.Spec.Remote.CIDR.External)
	}
	// Status is each side's own (its controller's remapping): our builder leaves it alone.
	if conf.Status.Remote != nil {
		t.Errorf("the builder wrote status.remote: %+v", conf.Status.Remote)
	}
	wantValidUpstream(t, "configurations", conf)
}

// serverEndpoint is the status.endpoint our GatewayServer controller reports for a NodePort
// Service (controllers/gatewayserver: endpoint), which peering.ensureClient copies.
func serverEndpoint() netv1beta1.EndpointStatus {
	return netv1beta1.EndpointStatus{Addresses: []string{"172.18.0.3"}, Port: 30840, Protocol: ptr.To(corev1.ProtocolUDP)}
}

// TestGatewayServerAsUpstreamReadsIt: the GatewayServer as peering.ensureServer builds it, for
// each Service type liqo_peering offers.
func TestGatewayServerAsUpstreamReadsIt(t *testing.T) {
	for _, o := range []forge.GatewayServerOptions{
		{MTU: 1340, ServiceType: corev1.ServiceTypeNodePort, Port: 51840, NodePort: ptr.To[int32](30840)},
		{MTU: 1340, ServiceType: corev1.ServiceTypeLoadBalancer, Port: 51841, LoadBalancerIP: ptr.To("192.0.2.10")},
		{MTU: 1340, ServiceType: corev1.ServiceTypeClusterIP, Port: 51842},
	} {
		t.Run(string(o.ServiceType), func(t *testing.T) {
			gw := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-up", Name: upRemoteID}}
			forge.MutateGatewayServer(gw, upRemoteID, o)
			// server-operator/server_controller.go EnsureGatewayServer: fails without this label,
			// and renders it as {{ .ClusterID }} (the gateway's --remote-cluster-id).
			wantRemoteLabel(t, "GatewayServer", gw.Labels)
			ep := gw.Spec.Endpoint
			// The chart's wireguard-server template (liqo-wireguard-gateway-server-template.yaml)
			// renders .Spec.MTU (--mtu), .Spec.Endpoint.Port (--listen-port, the Service's port
			// and targetPort), .Spec.Endpoint.ServiceType (the Service's type) and the optional
			// ?nodePort and ?loadBalancerIP.
			if gw.Spec.MTU != o.MTU || ep.Port != o.Port || ep.ServiceType != o.ServiceType {
				t.Errorf("mtu %d, port %d, service type %q; want %d, %d, %q", gw.Spec.MTU, ep.Port, ep.ServiceType, o.MTU, o.Port, o.ServiceType)
			}
			if !ptr.Equal(ep.NodePort, o.NodePort) || !ptr.Equal(ep.LoadBalancerIP, o.LoadBalancerIP) {
				t.Errorf("nodePort %v, loadBalancerIP %v; want %v, %v", ep.NodePort, ep.LoadBalancerIP, o.NodePort, o.LoadBalancerIP)
			}
			// The deprecated lists, which upstream's template does not render: left empty.
			if len(ep.Ports) > 0 || len(ep.NodePorts) > 0 {
				t.Errorf("deprecated ports %v / nodePorts %v set", ep.Ports, ep.NodePorts)
			}
			// The template reads .Spec.SecretRef.Name (the WgGatewayServer's secretRef; empty:
			// upstream's wggatewayserver_controller.go makes the key Secret).
			if gw.Spec.SecretRef.Name != "" {
				t.Errorf("secretRef %q, want none: the controllers generate the keys", gw.Spec.SecretRef.Name)
			}
			wantValidUpstream(t, "gatewayservers", gw)
		})
	}
}

// TestGatewayClientAsUpstreamReadsIt: the GatewayClient as peering.ensureClient builds it from
// the server's reported endpoint.
func TestGatewayClientAsUpstreamReadsIt(t *testing.T) {
	gw := &netv1beta1.GatewayClient{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-up", Name: upRemoteID}}
	forge.MutateGatewayClient(gw, upRemoteID, forge.GatewayClientOptions{MTU: 1340, Endpoint: serverEndpoint()})
	// client-operator/client_controller.go EnsureGatewayClient: fails without this label.
	wantRemoteLabel(t, "GatewayClient", gw.Labels)
	ep := gw.Spec.Endpoint
	// The wireguard-client template renders --endpoint-address={{ index .Spec.Endpoint.Addresses
	// 0 }} (an empty list fails the rendering), --endpoint-port and --mtu; upstream's gateway
	// resolves the address by DNS (tunnel/wireguard/dns.go), so an IP or a host name.
	if len(ep.Addresses) == 0 || ep.Addresses[0] != "172.18.0.3" || ep.Port != 30840 || gw.Spec.MTU != 1340 {
		t.Errorf("endpoint %v:%d, mtu %d; want [172.18.0.3]:30840, 1340", ep.Addresses, ep.Port, gw.Spec.MTU)
	}
	// Upstream's forge.MutateGatewayClient always writes protocol UDP (forge.DefaultProtocol).
	if ep.Protocol == nil || *ep.Protocol != corev1.ProtocolUDP {
		t.Errorf("endpoint protocol %v, want UDP", ep.Protocol)
	}
	wantValidUpstream(t, "gatewayclients", gw)
}

// TestDefaultTemplateRefsAsUpstreamResolvesThem: the template references our builders write
// when given the default ones (liqo_gateway_server/client, liqoctl's objects kept) are what
// upstream's operators resolve: server_controller.go and client_controller.go parse apiVersion,
// turn kind into a resource with utils.KindToResource (meta.UnsafeGuessKindToResource) and get
// namespace/name with a dynamic client, so all four must be set and the resource must be the
// plural of upstream's template CRDs.
func TestDefaultTemplateRefsAsUpstreamResolvesThem(t *testing.T) {
	refs := workload.DefaultTemplateRefs("liqo")
	gs := &netv1beta1.GatewayServer{}
	forge.MutateGatewayServer(gs, upRemoteID, forge.GatewayServerOptions{TemplateRef: &refs[0]})
	gc := &netv1beta1.GatewayClient{}
	forge.MutateGatewayClient(gc, upRemoteID, forge.GatewayClientOptions{Endpoint: serverEndpoint(), TemplateRef: &refs[1]})
	for ref, plural := range map[corev1.ObjectReference]string{
		gs.Spec.ServerTemplateRef: "wggatewayservertemplates", // upstream forge.DefaultGwServerType
		gc.Spec.ClientTemplateRef: "wggatewayclienttemplates", // upstream forge.DefaultGwClientType
	} {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv != (schema.GroupVersion{Group: "networking.liqo.io", Version: "v1beta1"}) {
			t.Errorf("%+v: apiVersion %q, want networking.liqo.io/v1beta1 (%v)", ref, ref.APIVersion, err)
		}
		if res, _ := apimeta.UnsafeGuessKindToResource(gv.WithKind(ref.Kind)); res.Resource != plural {
			t.Errorf("%+v: kind %q resolves to %q, want %q", ref, ref.Kind, res.Resource, plural)
		}
		if ref.Namespace != "liqo" || ref.Name == "" {
			t.Errorf("%+v: want the template's namespace and name", ref)
		}
	}
	// The names upstream's chart installs (forge.DefaultGwServerTemplateName, ...ClientTemplateName).
	if refs[0].Name != "wireguard-server" || refs[1].Name != "wireguard-client" {
		t.Errorf("default template names %q, %q", refs[0].Name, refs[1].Name)
	}
	wantValidUpstream(t, "gatewayservers", gs)
	wantValidUpstream(t, "gatewayclients", gc)
}

// TestPublicKeyAsUpstreamReadsIt: the gateway key Secret (forge.MutateGatewayKeys, as our
// gateway controllers make it) and the PublicKey peering.exchangeKeys builds from it.
func TestPublicKeyAsUpstreamReadsIt(t *testing.T) {
	private, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	forge.MutateGatewayKeys(secret, upRemoteID, &private)
	// tunnel/wireguard/k8s.go CheckKeysSecret (the gateway's own keys) and
	// networking/getters/publickey.go ExtractKeyFromSecretRef (what liqoctl sends the peer):
	// raw 32-byte keys under privateKey and publicKey.
	if k := secret.Data[upPrivateKeyField]; len(k) != wgtypes.KeyLen || wgtypes.Key(k) != private {
		t.Errorf("secret %s: %d bytes, want the raw %d-byte private key", upPrivateKeyField, len(k), wgtypes.KeyLen)
	}
	pub := private.PublicKey()
	if k := secret.Data[upPublicKeyField]; len(k) != wgtypes.KeyLen || wgtypes.Key(k) != pub {
		t.Errorf("secret %s: %d bytes, want the raw %d-byte public key", upPublicKeyField, len(k), wgtypes.KeyLen)
	}
	if secret.Labels[upGatewayResourceLabel] != "true" {
		t.Errorf("secret labels %v, want %s=true", secret.Labels, upGatewayResourceLabel)
	}

	pk := &netv1beta1.PublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-up", Name: upRemoteID}}
	forge.MutatePublicKey(pk, upRemoteID, secret.Data[upPublicKeyField])
	// tunnel/wireguard/publickeys_controller.go Predicates: the gateway takes only the PublicKey
	// labelled with its --remote-cluster-id; getters.GetPublicKeyByClusterID (liqoctl) selects
	// by it too; upstream's forge.MutatePublicKey also sets gateway-resource=true.
	wantRemoteLabel(t, "PublicKey", pk.Labels)
	if pk.Labels[upGatewayResourceLabel] != "true" {
		t.Errorf("PublicKey labels %v, want %s=true", pk.Labels, upGatewayResourceLabel)
	}
	// Reconcile converts spec.publicKey with wgtypes.Key(...): exactly the 32 raw bytes (a
	// shorter slice panics, base64 text would be another key).
	if len(pk.Spec.PublicKey) != wgtypes.KeyLen || wgtypes.Key(pk.Spec.PublicKey) != pub {
		t.Errorf("spec.publicKey %d bytes, want the raw %d-byte peer key", len(pk.Spec.PublicKey), wgtypes.KeyLen)
	}
	// On the wire (the CRD's format: byte) it is the key's standard base64, as wg(8) shows it.
	data, err := json.Marshal(pk.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"publicKey":"` + base64.StdEncoding.EncodeToString(pub[:]) + `"}`; string(data) != want || pub.String() != base64.StdEncoding.EncodeToString(pub[:]) {
		t.Errorf("spec on the wire %s, want %s", data, want)
	}
	wantValidUpstream(t, "publickeies", pk)
}

// TestUpstreamSchemaCheckFails: the schema check above refuses what upstream's API server
// refuses (so that its passing means something).
func TestUpstreamSchemaCheckFails(t *testing.T) {
	conf := &netv1beta1.Configuration{}
	forge.MutateConfiguration(conf, upRemoteID, []string{"10.200.0.0/33"}, nil)
	if errs := upstreamSchemaErrors(t, "configurations", conf); len(errs) == 0 {
		t.Error("a pod CIDR 10.200.0.0/33 passed upstream's schema (format: cidr)")
	}
	gw := &netv1beta1.GatewayServer{}
	forge.MutateGatewayServer(gw, upRemoteID, forge.GatewayServerOptions{ServiceType: "Headless", Port: 51840})
	extra := map[string]any{}
	data, err := json.Marshal(gw)
	if err == nil {
		err = json.Unmarshal(data, &extra)
	}
	if err != nil {
		t.Fatal(err)
	}
	extra["spec"].(map[string]any)["notUpstream"] = true
	if errs := upstreamSchemaErrors(t, "gatewayservers", extra); len(errs) < 2 {
		t.Errorf("service type Headless and an unknown field: %v, want both refused", errs)
	}
}
