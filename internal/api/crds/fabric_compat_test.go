package crds_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// fabricCRDs are the network fabric's kinds (issue 32), whose every upstream field we define.
var fabricCRDs = []string{"internalnodes", "internalfabrics", "genevetunnels", "routeconfigurations", "firewallconfigurations"}

// TestFabricKindsHaveEveryUpstreamField: the reverse of TestFieldsExistUpstream for the fabric's
// kinds: every field of upstream's schema (spec and status, down to the leaves of the firewall
// table) exists in ours with the same type, and every enum value upstream accepts ours accepts.
func TestFabricKindsHaveEveryUpstreamField(t *testing.T) {
	dir := upstreamDir(t)
	for _, plural := range fabricCRDs {
		t.Run(plural, func(t *testing.T) {
			up := loadCRD(t, filepath.Join(dir, "networking.liqo.io_"+plural+".yaml"))
			our := ourCRD(t, plural+".networking.liqo.io")
			us := upstreamVersion(up, "v1beta1").Schema.OpenAPIV3Schema
			ours := our.Spec.Versions[0].Schema.OpenAPIV3Schema
			if missing := missingFields("", us, ours); len(missing) > 0 {
				sort.Strings(missing)
				t.Errorf("%d upstream fields missing from ours:\n%s", len(missing), strings.Join(missing, "\n"))
			}
			if narrower := narrowerEnums("", us, ours); len(narrower) > 0 {
				t.Errorf("enum values upstream accepts and ours refuses:\n%s", strings.Join(narrower, "\n"))
			}
		})
	}
}

// narrowerEnums lists the enum values of up (below path) that ours lacks.
func narrowerEnums(path string, u, o *apiextensionsv1.JSONSchemaProps) []string {
	if u == nil || o == nil {
		return nil
	}
	var out []string
	if len(o.Enum) > 0 {
		have := sets.New[string]()
		for _, e := range o.Enum {
			have.Insert(string(e.Raw))
		}
		for _, e := range u.Enum {
			if !have.Has(string(e.Raw)) {
				out = append(out, path+": "+string(e.Raw))
			}
		}
	}
	for name := range u.Properties {
		p := u.Properties[name]
		if q, ok := o.Properties[name]; ok {
			out = append(out, narrowerEnums(path+"."+name, &p, &q)...)
		}
	}
	if u.Items != nil && o.Items != nil {
		out = append(out, narrowerEnums(path+"[]", u.Items.Schema, o.Items.Schema)...)
	}
	return out
}

// readFabricObjects decodes testdata/fabric-upstream.yaml.
func readFabricObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "fabric-upstream.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := testenv.SplitYAML(data)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	return objs
}

// TestFabricObjectsDecodeIntoOurTypes: the fabric objects upstream's controller manager writes
// fit our Go types (strict decoding) and encode again without losing a field.
func TestFabricObjectsDecodeIntoOurTypes(t *testing.T) {
	scheme, err := api.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	objs := readFabricObjects(t)
	if len(objs) != 7 {
		t.Fatalf("testdata holds %d objects, want 7", len(objs))
	}
	for _, u := range objs {
		data, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := decoder.Decode(data, nil, nil)
		if err != nil {
			t.Errorf("%s %s: %v", u.GetKind(), u.GetName(), err)
			continue
		}
		if l := lost(".spec", normalized(t, u.Object["spec"]), normalized(t, specOf(t, obj))); len(l) > 0 {
			t.Errorf("%s %s: our Go types lose:\n%s", u.GetKind(), u.GetName(), strings.Join(l, "\n"))
		}
	}
}

// specOf returns the Spec field of one of our API objects.
func specOf(t *testing.T, obj any) any {
	t.Helper()
	v := reflect.ValueOf(obj).Elem().FieldByName("Spec")
	if !v.IsValid() {
		t.Fatalf("%T has no Spec", obj)
	}
	return v.Interface()
}

// TestFabricObjectsApplyToOurAndUpstreamCRDs: the same objects are created, with strict field
// validation, on an API server running our CRDs and on one running upstream's; each keeps
// everything sent and both give back the same specs.
func TestFabricObjectsApplyToOurAndUpstreamCRDs(t *testing.T) {
	up := upstreamDir(t)
	env := testenv.New(t,
		testenv.ClusterOptions{Name: "ours"},
		testenv.ClusterOptions{Name: "upstream", SkipLiqoCRDs: true, CRDPaths: []string{up}},
	)
	specs := map[string][]any{}
	for _, c := range env.Clusters {
		ctx := t.Context()
		for _, name := range []string{"liqo", "liqo-tenant-provider"} {
			ns := &unstructured.Unstructured{}
			ns.SetAPIVersion("v1")
			ns.SetKind("Namespace")
			ns.SetName(name)
			if err := c.Client.Create(ctx, ns); err != nil {
				t.Fatal(err)
			}
		}
		for _, sent := range readFabricObjects(t) {
			if err := c.Client.Create(ctx, sent.DeepCopy(), client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Errorf("%s: creating %s %s: %v", c.Name, sent.GetKind(), sent.GetName(), err)
				continue
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(sent.GroupVersionKind())
			if err := c.Client.Get(ctx, client.ObjectKeyFromObject(sent), got); err != nil {
				t.Fatal(err)
			}
			spec := normalized(t, got.Object["spec"])
			if l := lost(".spec", normalized(t, sent.Object["spec"]), spec); len(l) > 0 {
				t.Errorf("%s: %s %s not kept as sent:\n%s", c.Name, sent.GetKind(), sent.GetName(), strings.Join(l, "\n"))
			}
			specs[c.Name] = append(specs[c.Name], spec)
		}
	}
	if !reflect.DeepEqual(specs["ours"], specs["upstream"]) {
		a, _ := json.Marshal(specs["ours"])
		b, _ := json.Marshal(specs["upstream"])
		t.Errorf("our API server gives back other specs than upstream's:\nours:     %s\nupstream: %s", a, b)
	}
}
