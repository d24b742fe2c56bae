package gatewayclient_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/gatewayclient"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/gatewaytest"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// clientTemplate is a WgGatewayClientTemplate in upstream Liqo's layout.
const clientTemplate = `{
  "template": {
    "spec": {
      "deployment": {
        "metadata": {"labels": {"peer": "{{ .ClusterID }}"}},
        "spec": {
          "template": {
            "spec": {
              "priorityClassName": "system-node-critical",
              "containers": [{"name": "gateway", "image": "example.org/custom-gw:2", "args": ["--probe-interval={{ .Spec.MTU }}ms"]}]
            }
          }
        }
      }
    }
  }
}`

// TestGatewayClientTemplates checks spec.clientTemplateRef (a custom template is the base of the
// Deployment; a missing one is a Warning Event and nothing is rendered until it appears) and
// status.internalEndpoint (the running gateway pod's IP and node; KWOK runs the pod).
func TestGatewayClientTemplates(t *testing.T) {
	ctx := t.Context()
	env := testenv.New(t, testenv.ClusterOptions{Name: "b", Scheduler: true, ControllerManager: true,
		Nodes: []testenv.NodeOptions{{Name: "gw-node"}}})
	cl := env.Cluster("b")
	c := cl.Client
	testenv.StartManager(t, cl, func(mgr ctrl.Manager) error {
		return (&gatewayclient.Reconciler{Client: mgr.GetClient(), Image: "example.org/gw:test", Recorder: mgr.GetEventRecorder("gatewayclient")}).SetupWithManager(mgr)
	})
	const ns = "liqo-tenant-a"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	udp := corev1.ProtocolUDP
	gw := &netv1beta1.GatewayClient{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "client", Labels: map[string]string{"liqo.io/remote-cluster-id": "cluster-a"}},
		Spec: netv1beta1.GatewayClientSpec{MTU: 1340, ClientTemplateRef: corev1.ObjectReference{Kind: "WgGatewayClientTemplate", Name: "custom"},
			Endpoint: netv1beta1.EndpointStatus{Addresses: []string{"192.0.2.1"}, Port: 30742, Protocol: &udp}}}
	if err := c.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{}
	depKey := client.ObjectKey{Namespace: ns, Name: "gw-client"}

	// No template yet (the reference has no namespace: the GatewayClient's).
	testenv.EventuallyOK(t, "TemplateNotFound event", 30*time.Second, func() error {
		return gatewaytest.Warning(ctx, c, gw, "TemplateNotFound", ns+"/custom")
	})
	time.Sleep(300 * time.Millisecond)
	if err := c.Get(ctx, depKey, dep); !apierrors.IsNotFound(err) {
		t.Fatalf("deployment without its template: %v", err)
	}

	tmpl := &netv1beta1.WgGatewayClientTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "custom"}}
	if err := json.Unmarshal([]byte(clientTemplate), &tmpl.Spec); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyOK(t, "deployment from the template", 30*time.Second, func() error { return c.Get(ctx, depKey, dep) })
	if dep.Labels["peer"] != "cluster-a" || dep.Spec.Template.Spec.PriorityClassName != "system-node-critical" {
		t.Errorf("labels %v, priority class %q: want the template's", dep.Labels, dep.Spec.Template.Spec.PriorityClassName)
	}
	ctr := dep.Spec.Template.Spec.Containers[0]
	if ctr.Image != "example.org/custom-gw:2" || !slices.Contains(ctr.Args, "--mode=client") || ctr.Args[len(ctr.Args)-1] != "--probe-interval=1340ms" {
		t.Errorf("container image %s args %v: want the template's image, the controller's args then the template's", ctr.Image, ctr.Args)
	}
	if ctr.SecurityContext == nil || !slices.Contains(ctr.SecurityContext.Capabilities.Add, "NET_ADMIN") || len(ctr.VolumeMounts) != 1 {
		t.Errorf("security context %+v, mounts %+v", ctr.SecurityContext, ctr.VolumeMounts)
	}

	testenv.EventuallyOK(t, "internal endpoint", 30*time.Second, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if gw.Status.InternalEndpoint == nil {
			return fmt.Errorf("no internal endpoint")
		}
		return nil
	})
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "client"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d gateway pods", len(pods.Items))
	}
	ie := gw.Status.InternalEndpoint
	if p := pods.Items[0]; ie.IP == nil || p.Status.PodIP == "" || string(*ie.IP) != p.Status.PodIP || ptr.Deref(ie.Node, "") != "gw-node" {
		t.Errorf("internal endpoint %v/%v: want pod IP %q on gw-node", ptr.Deref(ie.IP, ""), ptr.Deref(ie.Node, ""), p.Status.PodIP)
	}
}
