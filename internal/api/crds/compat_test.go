package crds_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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
	"github.com/peerkit/terraform-provider-liqo/internal/api/crds"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// referenceEnv overrides where upstream Liqo's CRDs are read from.
const referenceEnv = "LIQO_REFERENCE_CRDS"

// upstreamDir returns the folder of upstream Liqo v1.2's CRDs (../shared/reference/liqo-v1.2-crds
// beside the repository), or skips the test when it is absent.
func upstreamDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(referenceEnv)
	if dir == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "..", "shared", "reference", "liqo-v1.2-crds")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("upstream Liqo CRDs not found at %s (set %s to their folder): skipping the compatibility check", dir, referenceEnv)
	}
	return dir
}

func loadCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return crd
}

// TestFieldsExistUpstream: for each of our CRDs, the upstream CRD of the same name exists with
// the same group, kind, plural, scope, short names and versions; every field we define exists
// upstream with the same type and format, our enums are subsets of upstream's, and our printer
// columns are upstream's.
func TestFieldsExistUpstream(t *testing.T) {
	dir := upstreamDir(t)
	ours, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(ours) != 25 {
		t.Errorf("we have %d CRDs, want 25", len(ours))
	}
	for _, our := range ours {
		if our.Spec.Group == marketv1alpha1.GroupVersion.Group {
			continue // our own group (seed 004's offers and contracts): upstream has no counterpart
		}
		t.Run(our.Name, func(t *testing.T) {
			up := loadCRD(t, filepath.Join(dir, our.Spec.Group+"_"+our.Spec.Names.Plural+".yaml"))
			if up.Name != our.Name || up.Spec.Group != our.Spec.Group || up.Spec.Names.Kind != our.Spec.Names.Kind ||
				up.Spec.Names.Plural != our.Spec.Names.Plural || up.Spec.Scope != our.Spec.Scope {
				t.Errorf("names differ: ours %s %s/%s %s, upstream %s %s/%s %s", our.Name, our.Spec.Group, our.Spec.Names.Kind,
					our.Spec.Scope, up.Name, up.Spec.Group, up.Spec.Names.Kind, up.Spec.Scope)
			}
			if !slices.Equal(sorted(our.Spec.Names.ShortNames), sorted(up.Spec.Names.ShortNames)) {
				t.Errorf("short names: ours %v, upstream %v", our.Spec.Names.ShortNames, up.Spec.Names.ShortNames)
			}
			if len(our.Spec.Versions) != 1 {
				t.Fatalf("we serve %d versions, want 1", len(our.Spec.Versions))
			}
			ov := our.Spec.Versions[0]
			uv := upstreamVersion(up, ov.Name)
			if uv == nil {
				t.Fatalf("upstream does not serve version %s", ov.Name)
			}
			if (ov.Subresources != nil && ov.Subresources.Status != nil) != (uv.Subresources != nil && uv.Subresources.Status != nil) {
				t.Errorf("status subresource: ours %v, upstream %v", ov.Subresources, uv.Subresources)
			}
			upCols := map[string]string{}
			for _, c := range uv.AdditionalPrinterColumns {
				upCols[strings.TrimSpace(c.Name)] = c.JSONPath
			}
			for _, c := range ov.AdditionalPrinterColumns {
				if path, ok := upCols[c.Name]; !ok || path != c.JSONPath {
					t.Errorf("printer column %q (%s) not upstream (upstream has %v)", c.Name, c.JSONPath, upCols)
				}
			}
			var compared, missing int
			compareSchema(t, "", ov.Schema.OpenAPIV3Schema, uv.Schema.OpenAPIV3Schema, &compared, &missing)
			t.Logf("%d fields compared, all present upstream with the same type", compared)
		})
	}
}

func upstreamVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// compareSchema checks that everything in ours exists in up with the same type.
func compareSchema(t *testing.T, path string, ours, up *apiextensionsv1.JSONSchemaProps, compared, missing *int) {
	t.Helper()
	if ours == nil {
		return
	}
	if up == nil {
		t.Errorf("%s: defined by us, not upstream", path)
		*missing++
		return
	}
	*compared++
	if ours.Type != up.Type || ours.XIntOrString != up.XIntOrString {
		t.Errorf("%s: type %q (int-or-string %v), upstream %q (int-or-string %v)", path, ours.Type, ours.XIntOrString, up.Type, up.XIntOrString)
	}
	if ours.Format != "" && ours.Format != up.Format {
		t.Errorf("%s: format %q, upstream %q", path, ours.Format, up.Format)
	}
	if len(ours.Enum) > 0 {
		upEnum := map[string]bool{}
		for _, e := range up.Enum {
			upEnum[string(e.Raw)] = true
		}
		for _, e := range ours.Enum {
			if len(up.Enum) > 0 && !upEnum[string(e.Raw)] {
				t.Errorf("%s: enum value %s is not upstream's", path, e.Raw)
			}
		}
	}
	if ours.XPreserveUnknownFields != nil && *ours.XPreserveUnknownFields &&
		(up.XPreserveUnknownFields == nil || !*up.XPreserveUnknownFields) {
		t.Errorf("%s: we preserve unknown fields, upstream does not", path)
	}
	for name := range ours.Properties {
		o := ours.Properties[name]
		var u *apiextensionsv1.JSONSchemaProps
		if p, ok := up.Properties[name]; ok {
			u = &p
		}
		compareSchema(t, path+"."+name, &o, u, compared, missing)
	}
	if ours.Items != nil && ours.Items.Schema != nil {
		var u *apiextensionsv1.JSONSchemaProps
		if up.Items != nil {
			u = up.Items.Schema
		}
		compareSchema(t, path+"[]", ours.Items.Schema, u, compared, missing)
	}
	if ours.AdditionalProperties != nil && ours.AdditionalProperties.Schema != nil {
		var u *apiextensionsv1.JSONSchemaProps
		if up.AdditionalProperties != nil {
			u = up.AdditionalProperties.Schema
		}
		compareSchema(t, path+"{}", ours.AdditionalProperties.Schema, u, compared, missing)
	}
}

// readFixtures decodes the multi-document YAML files of testdata/seed003.
func readFixtures(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, file := range []string{"consumer.yaml", "provider.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", "seed003", file))
		if err != nil {
			t.Fatal(err)
		}
		docs, err := testenv.SplitYAML(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, doc := range docs {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			objs = append(objs, u)
		}
	}
	return objs
}

// TestSeed003FixturesDecodeIntoOurTypes: every Liqo object of the seed-003 flow fits our Go types
// (strict decoding: no field we lack).
func TestSeed003FixturesDecodeIntoOurTypes(t *testing.T) {
	scheme, err := api.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	var liqo int
	for _, u := range readFixtures(t) {
		if !strings.HasSuffix(u.GroupVersionKind().Group, "liqo.io") {
			continue
		}
		liqo++
		data, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := decoder.Decode(data, nil, nil); err != nil {
			t.Errorf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	if liqo != 9 {
		t.Errorf("fixtures hold %d Liqo objects, want 9", liqo)
	}
}

// TestSeed003AppliesToOurAndUpstreamCRDs: the declarative peering of seed 003 applies cleanly,
// with strict field validation, to an API server with our CRDs and to one with upstream's.
func TestSeed003AppliesToOurAndUpstreamCRDs(t *testing.T) {
	up := upstreamDir(t)
	env := testenv.New(t,
		testenv.ClusterOptions{Name: "ours"},
		testenv.ClusterOptions{Name: "upstream", SkipLiqoCRDs: true, CRDPaths: []string{up}},
	)
	for _, c := range env.Clusters {
		t.Run(c.Name, func(t *testing.T) {
			for _, u := range readFixtures(t) {
				err := c.Client.Create(t.Context(), u, client.FieldValidation(metav1.FieldValidationStrict))
				if err != nil {
					t.Errorf("creating %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
				}
			}
		})
	}
}

// virtualNodeCRD is the name of the VirtualNode CRD, ours and upstream's.
const virtualNodeCRD = "virtualnodes.offloading.liqo.io"

// ourCRD returns our CRD of that name.
func ourCRD(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("we have no CRD %s", name)
	return nil
}

// missingFields lists the fields of want (below path) that have lacks or types differently.
func missingFields(path string, want, have *apiextensionsv1.JSONSchemaProps) []string {
	if want == nil {
		return nil
	}
	if have == nil {
		return []string{path}
	}
	if want.Type != have.Type || want.XIntOrString != have.XIntOrString {
		return []string{fmt.Sprintf("%s (type %q, ours %q)", path, want.Type, have.Type)}
	}
	var out []string
	for name := range want.Properties {
		w := want.Properties[name]
		var h *apiextensionsv1.JSONSchemaProps
		if p, ok := have.Properties[name]; ok {
			h = &p
		}
		out = append(out, missingFields(path+"."+name, &w, h)...)
	}
	if want.Items != nil && want.Items.Schema != nil {
		var h *apiextensionsv1.JSONSchemaProps
		if have.Items != nil {
			h = have.Items.Schema
		}
		out = append(out, missingFields(path+"[]", want.Items.Schema, h)...)
	}
	if want.AdditionalProperties != nil && want.AdditionalProperties.Schema != nil {
		var h *apiextensionsv1.JSONSchemaProps
		if have.AdditionalProperties != nil {
			h = have.AdditionalProperties.Schema
		}
		out = append(out, missingFields(path+"{}", want.AdditionalProperties.Schema, h)...)
	}
	return out
}

// TestVirtualNodeHasEveryUpstreamSpecField: the reverse of TestFieldsExistUpstream for the
// VirtualNode spec, whose every field upstream's liqoctl may write: each field of upstream's
// spec (offloadingPatch, template, images and vkOptionsTemplateRef included, down to the leaves
// of the Deployment template) exists in ours with the same type, so the API server prunes
// nothing upstream writes.
func TestVirtualNodeHasEveryUpstreamSpecField(t *testing.T) {
	up := loadCRD(t, filepath.Join(upstreamDir(t), "offloading.liqo.io_virtualnodes.yaml"))
	our := ourCRD(t, virtualNodeCRD)
	upSpec := upstreamVersion(up, "v1beta1").Schema.OpenAPIV3Schema.Properties["spec"]
	ourSpec := our.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if missing := missingFields(".spec", &upSpec, &ourSpec); len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("%d upstream VirtualNode fields missing from ours:\n%s", len(missing), strings.Join(missing, "\n"))
	}
	for _, f := range []string{"offloadingPatch", "template", "images", "vkOptionsTemplateRef"} {
		if _, ok := ourSpec.Properties[f]; !ok {
			t.Errorf("our VirtualNode spec has no %s", f)
		}
	}
}

// readUpstreamVirtualNode decodes testdata/virtualnode-upstream.yaml.
func readUpstreamVirtualNode(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "virtualnode-upstream.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// normalized is v through JSON (numbers as float64), to compare YAML input with API output.
func normalized(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// lost lists what of want (below path) got lacks or holds with another value; got may have
// more (defaults the API server fills in).
func lost(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %v, want an object", path, got)}
		}
		var out []string
		for _, k := range sets.List(sets.KeySet(w)) {
			if _, ok := g[k]; !ok {
				out = append(out, path+"."+k+": dropped")
				continue
			}
			out = append(out, lost(path+"."+k, w[k], g[k])...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: got %v, want %d items", path, got, len(w))}
		}
		var out []string
		for i := range w {
			out = append(out, lost(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(want, got) {
		return []string{fmt.Sprintf("%s: got %v, want %v", path, got, want)}
	}
	return nil
}

// TestVirtualNodeUpstreamFieldsRoundTrip: a VirtualNode with every spec field upstream's
// liqoctl and webhook write (testdata/virtualnode-upstream.yaml: offloadingPatch with
// labelsNotReflected, annotationsNotReflected, nodeSelector, tolerations, affinity and
// runtimeClassName; template; images; vkOptionsTemplateRef) is created, with strict field
// validation, on an API server running our CRDs and on one running upstream's. Each gives back
// everything that was sent, both give back the same spec, and what ours gives back decodes
// strictly into our Go types and encodes again without losing a field (so our controllers'
// updates keep them too).
func TestVirtualNodeUpstreamFieldsRoundTrip(t *testing.T) {
	up := upstreamDir(t)
	env := testenv.New(t,
		testenv.ClusterOptions{Name: "ours"},
		testenv.ClusterOptions{Name: "upstream", SkipLiqoCRDs: true, CRDPaths: []string{up}},
	)
	sent := readUpstreamVirtualNode(t)
	want := normalized(t, sent.Object["spec"])
	specs := map[string]any{}
	for _, c := range env.Clusters {
		ctx := t.Context()
		ns := &unstructured.Unstructured{}
		ns.SetAPIVersion("v1")
		ns.SetKind("Namespace")
		ns.SetName(sent.GetNamespace())
		if err := c.Client.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		if err := c.Client.Create(ctx, sent.DeepCopy(), client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
			t.Fatalf("%s: creating the VirtualNode: %v", c.Name, err)
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(sent.GroupVersionKind())
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(sent), got); err != nil {
			t.Fatal(err)
		}
		specs[c.Name] = normalized(t, got.Object["spec"])
		if l := lost(".spec", want, specs[c.Name]); len(l) > 0 {
			t.Errorf("%s: the API server did not keep the VirtualNode as sent:\n%s", c.Name, strings.Join(l, "\n"))
		}
	}
	if !reflect.DeepEqual(specs["ours"], specs["upstream"]) {
		t.Errorf("our API server gives back a VirtualNode spec other than upstream's:\nours:     %v\nupstream: %v", specs["ours"], specs["upstream"])
	}

	// Through our Go types: strict decoding, then encoding again.
	scheme, err := api.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(map[string]any{"apiVersion": sent.GetAPIVersion(), "kind": sent.GetKind(),
		"metadata": map[string]any{"name": sent.GetName(), "namespace": sent.GetNamespace()}, "spec": specs["ours"]})
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("decoding the VirtualNode into our types: %v", err)
	}
	vn, ok := obj.(*offv1beta1.VirtualNode)
	if !ok {
		t.Fatalf("decoded a %T, want a VirtualNode", obj)
	}
	if l := lost(".spec", specs["ours"], normalized(t, vn.Spec)); len(l) > 0 {
		t.Errorf("our Go types lose what the API server keeps:\n%s", strings.Join(l, "\n"))
	}
	if p := vn.Spec.OffloadingPatch; p == nil || p.NodeSelector["node-role.example.com/offload"] != "true" || len(p.Tolerations) != 2 ||
		p.Affinity == nil || p.Affinity.NodeAffinity == nil || p.RuntimeClassName == nil || *p.RuntimeClassName != "gvisor" ||
		len(p.LabelsNotReflected) != 1 || len(p.AnnotationsNotReflected) != 1 {
		t.Errorf("offloadingPatch in our types: %+v", p)
	}
	if tpl := vn.Spec.Template; tpl == nil || tpl.Labels["app.kubernetes.io/name"] != "virtual-kubelet" || len(tpl.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("template in our types: %+v", tpl)
	}
	if len(vn.Spec.Images) != 1 || vn.Spec.Images[0].SizeBytes != 12345678 {
		t.Errorf("images in our types: %+v", vn.Spec.Images)
	}
	if ref := vn.Spec.VkOptionsTemplateRef; ref == nil || ref.Namespace != "liqo" || ref.Name != "virtual-kubelet-default" {
		t.Errorf("vkOptionsTemplateRef in our types: %+v", ref)
	}
}
