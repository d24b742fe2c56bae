package peering_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
)

// TestPeerSliceOptions: liqoctl peer's offloading options, applied in place on one peering. No
// virtual node: the slice is granted, annotated so, and no node stands for it (offloading
// Disabled); asking for one makes it Ready; no slice: the slice and the virtual node go, the
// peering is still found (authenticated) with offloading Disabled; the slice asked again
// brings the virtual node back; Unpeer leaves nothing.
func TestPeerSliceOptions(t *testing.T) {
	a, b, _ := twoClusters(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	sliceKey := client.ObjectKey{Namespace: peering.TenantNamespace("cl-b"), Name: "cl-b"}
	noNode := func(when string) {
		t.Helper()
		if err := a.Client.Get(ctx, client.ObjectKey{Name: "cl-b"}, &corev1.Node{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: virtual node cl-b: %v, want none", when, err)
		}
	}

	opts := peering.Options{Resources: resources("1", "1Gi", "10"), NoVirtualNode: true}
	st, err := peering.Peer(ctx, a, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if st.Offloading != peering.StatusDisabled || st.VirtualNode != "" || st.Granted.Cpu().String() != "1" || !st.ResourceSlice ||
		st.VirtualNodeWanted || st.SliceClass != authv1beta1.ResourceSliceClassDefault {
		t.Errorf("without a virtual node: %+v, want offloading Disabled, the grant, a default-class slice wanting no node", st)
	}
	slice := &authv1beta1.ResourceSlice{}
	if err := a.Client.Get(ctx, sliceKey, slice); err != nil || slice.Annotations[consts.CreateVirtualNodeAnnotation] != "false" {
		t.Errorf("slice %s: annotations %v, %v; want %s=false", sliceKey, slice.Annotations, err, consts.CreateVirtualNodeAnnotation)
	}
	noNode("without a virtual node")

	opts.NoVirtualNode = false
	if st, err = peering.Peer(ctx, a, b, opts); err != nil {
		t.Fatal(err)
	}
	if st.Offloading != peering.StatusReady || st.VirtualNode != "cl-b" || !st.VirtualNodeWanted {
		t.Errorf("with a virtual node again: %+v", st)
	}

	opts.NoResourceSlice = true
	if st, err = peering.Peer(ctx, a, b, opts); err != nil {
		t.Fatal(err)
	}
	if st.Offloading != peering.StatusDisabled || st.ResourceSlice || st.VirtualNode != "" || st.Authentication != peering.StatusEstablished {
		t.Errorf("without a slice: %+v, want offloading Disabled, no slice, no virtual node, authenticated", st)
	}
	if err := a.Client.Get(ctx, sliceKey, slice); !apierrors.IsNotFound(err) {
		t.Errorf("slice %s without a slice: %v", sliceKey, err)
	}
	noNode("without a slice")
	if _, found, err := peering.Observe(ctx, a, b, opts); err != nil || !found {
		t.Errorf("Observe of a peering without a slice: found %v, %v; want found (its Tenant is there)", found, err)
	}
	if _, found, err := peering.Observe(ctx, a, b, peering.Options{}); err != nil || found {
		t.Errorf("Observe asking for a slice, of a peering without one: found %v, %v; want not found", found, err)
	}

	opts.NoResourceSlice = false
	if st, err = peering.Peer(ctx, a, b, opts); err != nil {
		t.Fatal(err)
	}
	if st.Offloading != peering.StatusReady || st.VirtualNode != "cl-b" {
		t.Errorf("the slice asked again: %+v", st)
	}
	if err := peering.Unpeer(ctx, a, b, opts); err != nil {
		t.Fatal(err)
	}
	for _, c := range []peering.Cluster{a, b} {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return len(liqoObjects(t, c.Client)) == 0, nil
		})
		if err != nil {
			t.Errorf("left on %s after Unpeer: %v", c.Name, liqoObjects(t, c.Client))
		}
	}
}
