package gatewayserver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestGatewayServerPortConflict: two GatewayServers of one cluster on one UDP port (gateways
// listen in their node's network namespace). The first keeps it; the second gets, within
// seconds, the annotation networking.liqo.io/port-conflict naming the first and a free port,
// and a Warning Event PortInUse, and its gateway Deployment runs no replica. Moving the second
// to the free port lifts that. Then the first moves onto the port the second now holds: the one
// that runs there keeps it (the first is refused, though created earlier). Deleting the second
// frees the port for the first.
func TestGatewayServerPortConflict(t *testing.T) {
	ctx := t.Context()
	env := plain.Env(t)
	c := env.Cluster("a").Client
	startManager(t, env.Cluster("a"), true)
	server := func(remote string, port int32) *netv1beta1.GatewayServer {
		t.Helper()
		ns := "liqo-tenant-" + remote
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		gw := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: remote,
			Labels: map[string]string{consts.RemoteClusterIDLabel: remote}},
			Spec: netv1beta1.GatewayServerSpec{Endpoint: netv1beta1.Endpoint{Port: port, ServiceType: corev1.ServiceTypeClusterIP}}}
		if err := c.Create(ctx, gw); err != nil {
			t.Fatal(err)
		}
		return gw
	}
	// state reads a GatewayServer's conflict annotation and its Deployment's replicas.
	state := func(gw *netv1beta1.GatewayServer) (string, int32, error) {
		cur := &netv1beta1.GatewayServer{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(gw), cur); err != nil {
			return "", 0, err
		}
		dep := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: gw.Namespace, Name: "gw-" + gw.Name}, dep); err != nil {
			return "", 0, err
		}
		return cur.Annotations[consts.PortConflictAnnotation], *dep.Spec.Replicas, nil
	}
	expect := func(what string, gw *netv1beta1.GatewayServer, wantConflict []string, wantReplicas int32) time.Duration {
		t.Helper()
		start := time.Now()
		testenv.EventuallyOK(t, what, 15*time.Second, func() error {
			why, replicas, err := state(gw)
			if err != nil {
				return err
			}
			for _, w := range wantConflict {
				if !strings.Contains(why, w) {
					return fmt.Errorf("annotation %q, want it to say %q", why, w)
				}
			}
			if len(wantConflict) == 0 && why != "" {
				return fmt.Errorf("annotation %q, want none", why)
			}
			if replicas != wantReplicas {
				return fmt.Errorf("%d replicas, want %d", replicas, wantReplicas)
			}
			return nil
		})
		return time.Since(start)
	}
	setPort := func(gw *netv1beta1.GatewayServer, port int32) {
		t.Helper()
		cur := &netv1beta1.GatewayServer{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(gw), cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.Endpoint.Port = port
		if err := c.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
	}

	first := server("cl-first", 51840)
	expect("the first GatewayServer runs", first, nil, 1)
	time.Sleep(1100 * time.Millisecond) // a later creation second: the first is the older one
	second := server("cl-second", 51840)
	took := expect("the second GatewayServer refused", second, []string{"UDP port 51840 is taken",
		"GatewayServer liqo-tenant-cl-first/cl-first (the tunnel to cluster cl-first)", "port 51841 is free"}, 0)
	t.Logf("port conflict recorded on the GatewayServer %s after its creation", took.Round(time.Millisecond))
	expect("the first still runs", first, nil, 1)
	testenv.EventuallyOK(t, "the Warning Event PortInUse on the second", 15*time.Second, func() error {
		evs := &corev1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(second.Namespace)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == consts.PortInUseReason && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == second.Name &&
				strings.Contains(e.Message, "UDP port 51840 is taken") {
				return nil
			}
		}
		return fmt.Errorf("none among %d Events", len(evs.Items))
	})

	setPort(second, 51841)
	expect("the second runs on the free port", second, nil, 1)

	// The first moves onto the port the second runs on: the second keeps it.
	setPort(first, 51841)
	expect("the first refused on the second's port", first, []string{"UDP port 51841 is taken", "liqo-tenant-cl-second/cl-second"}, 0)
	expect("the second keeps its port", second, nil, 1)

	if err := c.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}
	expect("the first runs once the second is gone", first, nil, 1)
}
