package upstream_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv/upstream"
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

	fc := createForeignCluster(t, cl, "peer")
	testenv.Poll(t, "upstream's ForeignCluster controller to reconcile ForeignCluster peer", time.Minute,
		func(ctx context.Context) (bool, error) {
			if err := cl.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
				return false, err
			}
			role, _, _ := unstructured.NestedString(fc.Object, "status", "role")
			networking, found, _ := unstructured.NestedBool(fc.Object, "status", "modules", "networking", "enabled")
			return role == "Unknown" && found && !networking, nil
		})
	logRSS(t, cm, rep)
}

// TestWebhookMutatesForeignCluster starts upstream's webhook as a process, with its webhook
// configurations pointed at it, and checks that the API server calls it: a ForeignCluster is
// created with the cluster-ID label upstream's mutating webhook adds. Skipped unless
// LIQO_UPSTREAM_BIN is set.
func TestWebhookMutatesForeignCluster(t *testing.T) {
	upstream.BinDir(t)
	e := testenv.New(t, upstream.ClusterOptions(t, "up"))
	cl := e.Cluster("up")
	objs := upstream.Render(t, "up")
	upstream.Install(t, cl, objs)
	wh := upstream.StartWebhook(t, cl, objs)
	t.Logf("upstream webhook serving in %v", time.Since(wh.Started).Round(time.Millisecond))
	fc := createForeignCluster(t, cl, "peer")
	if got := fc.GetLabels()["liqo.io/remote-cluster-id"]; got != "peer" {
		t.Errorf("ForeignCluster peer's label liqo.io/remote-cluster-id = %q, want peer (labels %v)", got, fc.GetLabels())
	}
	logRSS(t, wh)
}

// createForeignCluster creates a ForeignCluster named and with the cluster ID id in cl.
func createForeignCluster(t *testing.T, cl *testenv.Cluster, id string) *unstructured.Unstructured {
	t.Helper()
	fc := &unstructured.Unstructured{}
	fc.SetAPIVersion("core.liqo.io/v1beta1")
	fc.SetKind("ForeignCluster")
	fc.SetName(id)
	if err := unstructured.SetNestedField(fc.Object, id, "spec", "clusterID"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Client.Create(t.Context(), fc); err != nil {
		t.Fatalf("creating ForeignCluster %s: %v", id, err)
	}
	return fc
}

// logRSS checks that each process still runs and logs its resident memory.
func logRSS(t *testing.T, procs ...*upstream.Process) {
	t.Helper()
	for _, p := range procs {
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
