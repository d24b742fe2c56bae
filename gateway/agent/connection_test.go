package agent

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// TestConnectionMeta: a Connection carries its gateway's remote cluster label and the gateway as
// controlling owner (what upstream liqoctl and garbage collection rely on), once, whatever it
// held before; before the gateway is read, nothing changes.
func TestConnectionMeta(t *testing.T) {
	a := &Agent{opts: Options{Mode: ModeClient, Namespace: "liqo-tenant-p", GatewayName: "p", ConnectionName: "p"}}
	conn := a.newConnection()
	if a.connectionMeta(conn) || len(conn.Labels) != 0 || len(conn.OwnerReferences) != 0 {
		t.Fatalf("connectionMeta with no gateway read changed the Connection: %+v", conn.ObjectMeta)
	}
	a.gateway = &netv1beta1.GatewayClient{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo-tenant-p", Name: "p", UID: "uid-1",
		Labels: map[string]string{consts.RemoteClusterIDLabel: "provider"}}}
	conn.Labels = map[string]string{"team": "net"}
	if !a.connectionMeta(conn) {
		t.Fatal("connectionMeta reported no change on an unlabelled Connection")
	}
	if got := conn.Labels[consts.RemoteClusterIDLabel]; got != "provider" || conn.Labels["team"] != "net" {
		t.Errorf("labels = %v, want %s=provider beside team=net", conn.Labels, consts.RemoteClusterIDLabel)
	}
	owner := metav1.GetControllerOf(conn)
	if owner == nil || owner.Kind != "GatewayClient" || owner.Name != "p" || owner.UID != "uid-1" ||
		owner.APIVersion != netv1beta1.GroupVersion.String() || owner.BlockOwnerDeletion != nil {
		t.Errorf("controller = %+v, want GatewayClient p (uid-1), not blocking deletion", owner)
	}
	if a.connectionMeta(conn) {
		t.Error("connectionMeta changed a Connection that had everything already")
	}

	// The last handshake seen, once there is one, and again when a new one completes.
	a.handshakeSeen = time.Date(2026, 11, 26, 17, 0, 0, 0, time.UTC)
	if !a.connectionMeta(conn) || conn.Annotations[consts.LastHandshakeAnnotation] != "2026-11-26T17:00:00Z" {
		t.Errorf("after a handshake: annotations %v, want %s=2026-11-26T17:00:00Z", conn.Annotations, consts.LastHandshakeAnnotation)
	}
	if a.connectionMeta(conn) {
		t.Error("connectionMeta changed a Connection that had the last handshake already")
	}
	a.handshakeSeen = a.handshakeSeen.Add(2 * time.Minute)
	if !a.connectionMeta(conn) || conn.Annotations[consts.LastHandshakeAnnotation] != "2026-11-26T17:02:00Z" {
		t.Errorf("after a new handshake: annotations %v", conn.Annotations)
	}

	a.opts.Mode = ModeServer
	srv := a.newConnection()
	a.connectionMeta(srv)
	if owner := metav1.GetControllerOf(srv); owner == nil || owner.Kind != "GatewayServer" {
		t.Errorf("server Connection's controller = %+v, want a GatewayServer", owner)
	}
}
