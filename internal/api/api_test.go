package api_test

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	ipamv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/ipam/v1alpha1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// ourGroups are the API groups this module defines.
var ourGroups = map[string]bool{
	corev1beta1.GroupVersion.Group: true, netv1beta1.GroupVersion.Group: true, authv1beta1.GroupVersion.Group: true,
	offv1beta1.GroupVersion.Group: true, ipamv1alpha1.GroupVersion.Group: true, marketv1alpha1.GroupVersion.Group: true,
}

// loadSamples decodes testdata/samples.yaml strictly into our Go types: a field in the YAML that
// the types do not have is an error.
func loadSamples(t *testing.T, scheme *runtime.Scheme) []client.Object {
	t.Helper()
	data, err := os.ReadFile("testdata/samples.yaml")
	if err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	docs, err := testenv.SplitYAML(data)
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, doc := range docs {
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("decoding sample: %v\n%s", err, doc)
		}
		objs = append(objs, obj.(client.Object))
	}
	return objs
}

// TestSamplesCoverEveryKind: every kind registered for our groups has a sample, so the tests
// below cover every kind.
func TestSamplesCoverEveryKind(t *testing.T) {
	scheme, err := api.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, o := range loadSamples(t, scheme) {
		gvks, _, err := scheme.ObjectKinds(o)
		if err != nil {
			t.Fatal(err)
		}
		covered[gvks[0].Kind] = true
	}
	want := []string{"ForeignCluster", "Configuration", "GatewayServer", "GatewayClient", "PublicKey", "Connection",
		"Tenant", "Identity", "ResourceSlice", "VirtualNode", "NamespaceOffloading", "NamespaceMap", "ShadowPod", "ShadowEndpointSlice", "Network", "IP", "Contract", "Offer"}
	for _, k := range want {
		if !covered[k] {
			t.Errorf("no sample of kind %s", k)
		}
	}
	for gvk, typ := range scheme.AllKnownTypes() {
		ours := strings.HasPrefix(typ.PkgPath(), "github.com/peerkit/terraform-provider-liqo/internal/api/")
		if ourGroups[gvk.Group] && ours && !strings.HasSuffix(gvk.Kind, "List") && !covered[gvk.Kind] {
			t.Errorf("kind %s is registered but has no sample", gvk)
		}
	}
}

// TestEveryKindInTwoClusters: two clusters start with our CRDs; an object of every kind is
// created in each; each cluster lists only its own objects; the API server rejects invalid
// objects with the validation message.
func TestEveryKindInTwoClusters(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "consumer"}, testenv.ClusterOptions{Name: "provider"})
	ctx := t.Context()
	scheme := env.Clusters[0].Client.Scheme()

	for _, c := range env.Clusters {
		ns := "liqo-tenant-" + c.Name
		if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		for _, o := range loadSamples(t, scheme) {
			if o.GetNamespace() != "" {
				o.SetNamespace(ns)
			} else {
				o.SetName(o.GetName() + "-" + c.Name)
			}
			if err := c.Client.Create(ctx, o, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Errorf("cluster %s: creating %T %s: %v", c.Name, o, o.GetName(), err)
			}
		}
	}

	for _, c := range env.Clusters {
		for _, o := range loadSamples(t, scheme) {
			gvk, err := c.Client.GroupVersionKindFor(o)
			if err != nil {
				t.Fatal(err)
			}
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := c.Client.List(ctx, list); err != nil {
				t.Fatalf("cluster %s: listing %s: %v", c.Name, gvk.Kind, err)
			}
			if len(list.Items) != 1 {
				t.Errorf("cluster %s sees %d %s objects, want 1 (its own)", c.Name, len(list.Items), gvk.Kind)
				continue
			}
			item := list.Items[0]
			if own := "liqo-tenant-" + c.Name; item.Namespace != "" && item.Namespace != own ||
				item.Namespace == "" && !strings.HasSuffix(item.Name, "-"+c.Name) {
				t.Errorf("cluster %s sees %s %s/%s, which is not its own", c.Name, gvk.Kind, item.Namespace, item.Name)
			}
		}
	}

	// Spec fields survive the API server: the VirtualNode sample carries upstream's
	// offloadingPatch, template, images and vkOptionsTemplateRef.
	for _, c := range env.Clusters {
		for _, o := range loadSamples(t, scheme) {
			want, ok := o.(*offv1beta1.VirtualNode)
			if !ok {
				continue
			}
			got := &offv1beta1.VirtualNode{}
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "liqo-tenant-" + c.Name, Name: want.Name}, got); err != nil {
				t.Fatal(err)
			}
			if want.Spec.OffloadingPatch == nil || want.Spec.Template == nil || len(want.Spec.Images) == 0 || want.Spec.VkOptionsTemplateRef == nil {
				t.Fatalf("the VirtualNode sample lacks one of offloadingPatch, template, images, vkOptionsTemplateRef: %+v", want.Spec)
			}
			if !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
				t.Errorf("cluster %s: VirtualNode spec read back differs from the one created:\ngot  %+v\nwant %+v", c.Name, got.Spec, want.Spec)
			}
		}
	}

	t.Run("validation", func(t *testing.T) { testValidation(t, env.Cluster("consumer").Client, "liqo-tenant-consumer") })
}

// testValidation checks that invalid objects are rejected with a message naming the problem.
func testValidation(t *testing.T, c client.Client, ns string) {
	ctx := t.Context()
	create := []struct {
		name    string
		obj     client.Object
		message string
	}{
		{"bad pod CIDR", &netv1beta1.Configuration{
			ObjectMeta: metav1.ObjectMeta{Name: "bad-cidr", Namespace: ns},
			Spec: netv1beta1.ConfigurationSpec{Remote: netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{
				Pod: []netv1beta1.CIDR{"10.0.0.0/33"}}}},
		}, `spec.remote.cidr.pod[0]: Invalid value: "10.0.0.0/33": spec.remote.cidr.pod[0] in body must be of type cidr`},
		{"bad network CIDR", &ipamv1alpha1.Network{
			ObjectMeta: metav1.ObjectMeta{Name: "bad-cidr", Namespace: ns},
			Spec:       ipamv1alpha1.NetworkSpec{CIDR: "not-a-cidr"},
		}, `spec.cidr in body must be of type cidr`},
		{"bad IP", &ipamv1alpha1.IP{
			ObjectMeta: metav1.ObjectMeta{Name: "bad-ip", Namespace: ns},
			Spec:       ipamv1alpha1.IPSpec{IP: "10.0.0.300"},
		}, `spec.ip in body must be of type ipv4`},
		{"cluster ID not a DNS label", &corev1beta1.ForeignCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "bad-id"},
			Spec:       corev1beta1.ForeignClusterSpec{ClusterID: "Cluster_One"},
		}, `spec.clusterID in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'`},
		{"tenant cluster ID not a DNS label", &authv1beta1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: "bad-id", Namespace: ns},
			Spec:       authv1beta1.TenantSpec{ClusterID: "-starts-with-dash"},
		}, `spec.clusterID in body should match`},
		{"NamespaceOffloading not named offloading", &offv1beta1.NamespaceOffloading{
			ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns},
		}, `must be named offloading`},
	}
	for _, tc := range create {
		err := c.Create(ctx, tc.obj)
		if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.message) {
			t.Errorf("%s: got error %v, want Invalid containing %q", tc.name, err, tc.message)
		}
	}

	// Immutable fields: a change is rejected with the rule's message, the object keeps its value.
	fc := &corev1beta1.ForeignCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: "peer-consumer"}, fc); err != nil {
		t.Fatal(err)
	}
	fc.Spec.ClusterID = "cl-other"
	if err := c.Update(ctx, fc); err == nil || !strings.Contains(err.Error(), "clusterID is immutable") {
		t.Errorf("changing ForeignCluster clusterID: got %v, want 'clusterID is immutable'", err)
	}
	tenant := &authv1beta1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "peer"}, tenant); err != nil {
		t.Fatal(err)
	}
	tenant.Spec.ClusterID = "cl-other"
	if err := c.Update(ctx, tenant); err == nil || !strings.Contains(err.Error(), "clusterID is immutable") {
		t.Errorf("changing Tenant clusterID: got %v, want 'clusterID is immutable'", err)
	}
	network := &ipamv1alpha1.Network{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pod-cidr-10-244-0-0-16"}, network); err != nil {
		t.Fatal(err)
	}
	network.Spec.CIDR = "10.245.0.0/16"
	if err := c.Update(ctx, network); err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.cidr") {
		t.Errorf("changing Network spec.cidr: got %v, want Invalid naming spec.cidr", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(network), network); err != nil || network.Spec.CIDR != "10.244.0.0/16" {
		t.Errorf("Network spec.cidr after the rejected change = %q (err %v), want 10.244.0.0/16", network.Spec.CIDR, err)
	}

	ip := &ipamv1alpha1.IP{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api-server-proxy"}, ip); err != nil {
		t.Fatal(err)
	}
	ip.Spec.IP = "10.96.0.21"
	if err := c.Update(ctx, ip); err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "IP field is immutable") {
		t.Errorf("changing IP spec.ip: got %v, want Invalid saying 'IP field is immutable'", err)
	}

	vn := &offv1beta1.VirtualNode{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "peer"}, vn); err != nil {
		t.Fatal(err)
	}
	vn.Spec.ClusterID = "cl-other"
	if err := c.Update(ctx, vn); err == nil || !strings.Contains(err.Error(), "clusterID is immutable") {
		t.Errorf("changing VirtualNode clusterID: got %v, want 'clusterID is immutable'", err)
	}
	vn.Spec.ClusterID = ""
	if err := c.Update(ctx, vn); err == nil || !strings.Contains(err.Error(), "clusterID cannot be removed once set") {
		t.Errorf("removing VirtualNode clusterID: got %v, want 'clusterID cannot be removed once set'", err)
	}
	conn := &netv1beta1.Connection{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "connection"}, conn); err != nil {
		t.Fatal(err)
	}
	conn.Spec.Type = netv1beta1.ConnectionType("Server")
	if err := c.Update(ctx, conn); err == nil || !strings.Contains(err.Error(), "type is immutable") {
		t.Errorf("changing Connection type: got %v, want 'type is immutable'", err)
	}

	// Defaults: what the API server fills in.
	if tenant.Spec.TenantCondition != authv1beta1.TenantCondition("Active") {
		t.Errorf("tenant condition = %q, want Active", tenant.Spec.TenantCondition)
	}
}
