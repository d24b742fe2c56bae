package upstream_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/testenv/upstream"
)

// TestControllerManagerComesUp starts upstream's controller manager and CRD replicator as
// processes against a cluster with upstream's CRDs and chart objects, and checks that upstream's
// ForeignCluster controller reconciles a ForeignCluster with networking disabled: it gives it
// the Unknown role (no tenant, no resource slice yet) and a disabled networking module. It logs
// how long each took to start and its memory. Skipped unless LIQO_UPSTREAM_BIN is set.
func TestControllerManagerComesUp(t *testing.T) {
	upstream.BinDir(t)
	start := time.Now()
	e := testenv.New(t, upstream.ClusterOptions(t, "up"))
	cl := e.Cluster("up")
	t.Logf("cluster up in %v", time.Since(start).Round(time.Millisecond))
	objs := upstream.Render(t, "up")
	upstream.Install(t, cl, objs)
	cm := upstream.StartControllerManager(t, cl, objs)
	t.Logf("upstream controller manager ready in %v", time.Since(cm.Started).Round(time.Millisecond))
	rep := upstream.StartCRDReplicator(t, cl, objs)
	t.Logf("upstream CRD replicator started in %v", time.Since(rep.Started).Round(time.Millisecond))

	fc := &unstructured.Unstructured{}
	fc.SetAPIVersion("core.liqo.io/v1beta1")
	fc.SetKind("ForeignCluster")
	fc.SetName("peer")
	if err := unstructured.SetNestedField(fc.Object, "peer", "spec", "clusterID"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Client.Create(t.Context(), fc); err != nil {
		t.Fatalf("creating ForeignCluster peer: %v", err)
	}
	testenv.Poll(t, "upstream's ForeignCluster controller to reconcile ForeignCluster peer", time.Minute,
		func(ctx context.Context) (bool, error) {
			if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
				return false, err
			}
			role, _, _ := unstructured.NestedString(fc.Object, "status", "role")
			networking, found, _ := unstructured.NestedBool(fc.Object, "status", "modules", "networking", "enabled")
			return role == "Unknown" && found && !networking, nil
		})
	for _, p := range []*upstream.Process{cm, rep} {
		if done, err := p.Exited(); done {
			t.Fatalf("upstream %s exited: %v", p.Name, err)
		}
		rss, err := p.RSSKiB()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("upstream %s: RSS %d MiB", p.Name, rss/1024)
	}
}
