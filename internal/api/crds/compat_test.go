package crds_test

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	"github.com/peerkit/terraform-provider-liqo/internal/api/crds"
	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
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
	if len(ours) != 16 {
		t.Errorf("we have %d CRDs, want 16", len(ours))
	}
	for _, our := range ours {
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
