package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// upstreamCRDSets are the folders of upstream Liqo's CRDs our objects must fit: v1.2.0's (from
// its module, copied by `make liqoctl`, named in LIQO_UPSTREAM_CRDS) and the later master
// commit's in ../shared/reference.
func (r *sandboxRun) upstreamCRDSets(t *testing.T) map[string]string {
	t.Helper()
	sets := map[string]string{}
	if dir := os.Getenv("LIQO_UPSTREAM_CRDS"); dir != "" {
		sets["v1-2-0"] = dir
	} else {
		t.Error("LIQO_UPSTREAM_CRDS is not set: run through `make test`, which copies upstream v1.2.0's CRDs (make liqoctl)")
	}
	if dir := filepath.Join(r.root, "..", "shared", "reference", "liqo-v1.2-crds"); dirExists(dir) {
		sets["master"] = dir
	}
	for name, dir := range sets {
		if !dirExists(dir) {
			t.Errorf("upstream CRDs %s: %s is not a folder", name, dir)
			delete(sets, name)
		}
	}
	return sets
}

func dirExists(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}

// liqoObjects lists every object of our API groups in a cluster: what our provider and
// controllers wrote there.
func liqoObjects(ctx context.Context, c client.Client) ([]*unstructured.Unstructured, error) {
	scheme, err := api.NewScheme()
	if err != nil {
		return nil, err
	}
	var lists []schema.GroupVersionKind
	for gvk := range scheme.AllKnownTypes() {
		if strings.HasSuffix(gvk.Group, "liqo.io") && strings.HasSuffix(gvk.Kind, "List") {
			lists = append(lists, gvk)
		}
	}
	sort.Slice(lists, func(i, j int) bool { return lists[i].String() < lists[j].String() })
	var out []*unstructured.Unstructured
	for _, gvk := range lists {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk)
		if err := c.List(ctx, l); err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out, nil
}

// forApply keeps what an author sets of an object: its name, namespace, labels, annotations,
// spec and the rest of its content; not the server's fields nor references to other objects'
// UIDs (ownerReferences, finalizers), which mean nothing in another cluster. The status goes
// apart, for the status subresource.
func forApply(u *unstructured.Unstructured) (obj, status *unstructured.Unstructured) {
	obj = &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range u.Object {
		if k != "metadata" && k != "status" {
			obj.Object[k] = v
		}
	}
	obj.SetName(u.GetName())
	obj.SetNamespace(u.GetNamespace())
	obj.SetLabels(u.GetLabels())
	obj.SetAnnotations(u.GetAnnotations())
	if st, ok := u.Object["status"].(map[string]any); ok && len(st) > 0 {
		status = &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "status": st}}
		status.SetName(u.GetName())
		status.SetNamespace(u.GetNamespace())
	}
	return obj, status
}

// expectUpstreamAccepts: every liqo.io object in the sandbox's clusters server-side-applies
// with strict field validation, status included, to API servers serving upstream's CRDs, and
// what comes back holds every field as sent (upstream may only add its defaults).
func (r *sandboxRun) expectUpstreamAccepts(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	var objs []*unstructured.Unstructured
	for name, c := range r.clients {
		got, err := liqoObjects(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		objs = append(objs, got...)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	t.Logf("%d objects of our API groups in the sandbox: %v", len(objs), kinds)
	sets := r.upstreamCRDSets(t)
	var opts []testenv.ClusterOptions
	for name, dir := range sets {
		opts = append(opts, testenv.ClusterOptions{Name: "upstream-" + name, SkipLiqoCRDs: true, CRDPaths: []string{dir}})
	}
	if len(opts) == 0 {
		return
	}
	env := testenv.New(t, opts...)
	for _, up := range env.Clusters {
		t.Run(up.Name, func(t *testing.T) {
			c := up.Client
			for _, o := range objs {
				applyAndCompare(t, c, o)
			}
		})
	}
}

// applyAndCompare applies one object (and its status) and checks what comes back.
func applyAndCompare(t *testing.T, c client.Client, o *unstructured.Unstructured) {
	t.Helper()
	ctx := t.Context()
	what := fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
	if ns := o.GetNamespace(); ns != "" {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	obj, status := forApply(o)
	sent := obj.DeepCopy()
	owner := client.FieldOwner("liqo-compat-test")
	strict := client.FieldValidation(metav1.FieldValidationStrict)
	if err := c.Patch(ctx, obj, client.Apply, owner, client.ForceOwnership, strict); err != nil { //nolint:staticcheck // unstructured apply
		t.Errorf("applying %s: %v", what, err)
		return
	}
	for k, v := range sent.Object {
		if k == "metadata" {
			continue
		}
		if missing := lost(v, obj.Object[k]); missing != "" {
			t.Errorf("%s: %s%s sent, not kept: %s", what, k, missing, "upstream dropped or changed it")
		}
	}
	// Gone again before the next object: both sandbox clusters have objects of the same name
	// (their external-cidr Network, for one), each applied to this one API server in turn.
	defer func() {
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", what, err)
		}
	}()
	if status == nil {
		return
	}
	sentStatus := status.DeepCopy()
	if err := c.Status().Patch(ctx, status, client.Apply, owner, client.ForceOwnership, strict); err != nil { //nolint:staticcheck // unstructured apply
		t.Errorf("applying the status of %s: %v", what, err)
		return
	}
	if missing := lost(sentStatus.Object["status"], status.Object["status"]); missing != "" {
		t.Errorf("%s: status%s sent, not kept", what, missing)
	}
}

// lost names the first path of sent that got does not hold with the same value ("" when
// every field sent came back; got may hold more, upstream's defaults).
func lost(sent, got any) string {
	switch s := sent.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf(" (a map, came back as %T)", got)
		}
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if m := lost(s[k], g[k]); m != "" {
				return "." + k + m
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(s) {
			return fmt.Sprintf(" (a list of %d, came back as %v)", len(s), got)
		}
		for i := range s {
			if m := lost(s[i], g[i]); m != "" {
				return fmt.Sprintf("[%d]%s", i, m)
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(sent, got) {
			return fmt.Sprintf(" = %v, came back as %v", sent, got)
		}
		return ""
	}
}
