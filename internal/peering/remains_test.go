package peering_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

// TestRemainsAndEstablished: what a peering in one direction is made of, as Remains and
// Established see it, and Unpeer removing whatever of it exists:
//   - a create stopped before the Tenant (tenant namespaces and the nonce request only) is not an
//     established peering, but remains, and Unpeer removes it, leaving no Terminating namespace;
//   - a whole peering is established (Tenant, Identity, ResourceSlice) in its direction only;
//     the other direction has nothing of its own and, since the tenant namespaces serve this
//     one, nothing remains of it;
//   - with the Identity and the slice deleted out of band (a handshake half undone), the Tenant
//     still marks it, and Unpeer removes the rest.
func TestRemainsAndEstablished(t *testing.T) {
	a, b, _ := twoClusters(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	names := func(what string, got []string, err error, want ...string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, w := range want {
			if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
				t.Errorf("%s: %q, want one naming %q", what, got, w)
			}
		}
		if len(want) == 0 && len(got) > 0 {
			t.Errorf("%s: %q, want none", what, got)
		}
	}
	unpeered := func() {
		t.Helper()
		if err := peering.Unpeer(ctx, a, b, peering.Options{}); err != nil {
			t.Fatal(err)
		}
		left, err := peering.Remains(ctx, a, b)
		names("Remains after Unpeer", left, err)
		for _, c := range []peering.Cluster{a, b} {
			var objs []string
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				objs = liqoObjects(t, c.Client)
				return len(objs) == 0, nil
			})
			if err != nil {
				t.Errorf("on %s after Unpeer: %v", c.Name, objs)
			}
		}
	}

	left, err := peering.Remains(ctx, a, b)
	names("Remains before anything", left, err)

	// A create stopped before the Tenant.
	for _, s := range []struct {
		c          peering.Cluster
		ns, remote string
	}{{a, "liqo-tenant-cl-b", "cl-b"}, {b, "liqo-tenant-cl-a", "cl-a"}} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}
		forge.MutateTenantNamespace(ns, s.remote)
		if err := s.c.Client.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	if err := peering.AskNonce(ctx, b.Client, "liqo-tenant-cl-a", "cl-a"); err != nil {
		t.Fatal(err)
	}
	marks, err := peering.Established(ctx, a, b)
	names("Established with the nonce asked", marks, err)
	left, err = peering.Remains(ctx, a, b)
	names("Remains with the nonce asked", left, err, `nonce Secret liqo-tenant-cl-a/`, `tenant namespace liqo-tenant-cl-b on a`,
		`tenant namespace liqo-tenant-cl-a on b`)
	unpeered()

	// A whole peering.
	if _, err := peering.Peer(ctx, a, b, peering.Options{Resources: resources("1", "1Gi", "10")}); err != nil {
		t.Fatal(err)
	}
	marks, err = peering.Established(ctx, a, b)
	names("Established", marks, err, `Tenant liqo-tenant-cl-a/cl-a on b`, `Identity liqo-tenant-cl-b/controlplane-cl-b on a`,
		`ResourceSlice liqo-tenant-cl-b/cl-b on a`)
	marks, err = peering.Established(ctx, b, a)
	names("Established in the other direction", marks, err)
	left, err = peering.Remains(ctx, b, a)
	names("Remains of the other direction", left, err)
	left, err = peering.Remains(ctx, a, b)
	names("Remains", left, err, "Tenant", "Identity", "ResourceSlice", "nonce Secret", "signed nonce Secret", "virtual node cl-b on a",
		"tenant namespace")

	// The handshake half undone out of band.
	for _, o := range []client.Object{
		&authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-cl-b", Name: "cl-b"}},
		&authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-cl-b", Name: "controlplane-cl-b"}},
	} {
		if err := a.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if _, found, err := peering.Observe(ctx, a, b, peering.Options{}); err != nil || found {
		t.Fatalf("Observe without the slice: found %v, %v; want not found", found, err)
	}
	marks, err = peering.Established(ctx, a, b)
	names("Established with the Tenant only", marks, err, "Tenant")
	unpeered()
}
