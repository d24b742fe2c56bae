package gatewayserver_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/gatewaytest"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// customTemplate is a WgGatewayServerTemplate in upstream Liqo's layout whose string values use
// Go templates, including in numeric fields and in a string field that looks like a number.
const customTemplate = `{
  "objectKind": {"apiVersion": "networking.liqo.io/v1beta1", "kind": "WgGatewayServer"},
  "template": {
    "metadata": {"name": "{{ .Name }}"},
    "spec": {
      "deployment": {
        "metadata": {"labels": {"peer": "{{ .ClusterID }}"}, "annotations": {"example.org/owner": "{{ .Namespace }}"}},
        "spec": {
          "revisionHistoryLimit": "{{ .Spec.MTU }}",
          "template": {
            "metadata": {"labels": {"tier": "gateway"}},
            "spec": {
              "nodeSelector": {"example.org/gateway": "{{ .Name }}"},
              "terminationGracePeriodSeconds": "{{ .Spec.Endpoint.Port }}",
              "containers": [
                {"name": "gateway", "args": ["--keepalive=5s"],
                 "env": [{"name": "PORT", "value": "{{ .Spec.Endpoint.Port }}"}, {"name": "KEYS", "value": "{{ .SecretName }}"}],
                 "resources": {"limits": {"cpu": "500m"}}},
                {"name": "metrics", "image": "example.org/metrics:1", "ports": [{"containerPort": 9090}]}
              ]
            }
          }
        }
      },
      "service": {
        "metadata": {"annotations": {"a": "template", "b": "template"}, "labels": {"peer": "{{ .ClusterID }}"}},
        "spec": {"type": "LoadBalancer", "ports": [{"name": "metrics", "port": "9090", "targetPort": "{{ 9090 }}"}]}
      }
    }
  }
}`

// TestGatewayServerTemplates checks spec.serverTemplateRef: a custom template is the base of the
// Deployment and Service, with its Go templates rendered and the controller's part filled in; a
// missing template (object or kind) is a Warning Event and nothing is rendered, until it appears;
// the default template is created when missing. And status.internalEndpoint: the running
// gateway pod's IP and node (KWOK runs the pod).
func TestGatewayServerTemplates(t *testing.T) {
	ctx := t.Context()
	// Its own cluster: a scheduler, a controller manager and a KWOK node the shared one lacks.
	env := testenv.New(t, testenv.ClusterOptions{Name: "a", Scheduler: true, ControllerManager: true,
		Nodes: []testenv.NodeOptions{{Name: "gw-node", Labels: map[string]string{"example.org/gateway": "custom"}}}})
	cl := env.Cluster("a")
	c := cl.Client
	startManager(t, cl, true)
	for _, ns := range []string{"liqo", "liqo-tenant-b", "templates"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	const ns = "liqo-tenant-b"
	newServer := func(name string, ref corev1.ObjectReference) *netv1beta1.GatewayServer {
		t.Helper()
		gw := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"liqo.io/remote-cluster-id": "cluster-b"}},
			Spec: netv1beta1.GatewayServerSpec{Endpoint: netv1beta1.Endpoint{Port: 51900, ServiceType: corev1.ServiceTypeNodePort}, MTU: 1340,
				ServerTemplateRef: ref, ServiceAnnotations: map[string]string{"b": "gateway"}}}
		if err := c.Create(ctx, gw); err != nil {
			t.Fatal(err)
		}
		return gw
	}
	createTemplate := func(name string) {
		t.Helper()
		tmpl := &netv1beta1.WgGatewayServerTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "templates", Name: name}}
		if err := json.Unmarshal([]byte(customTemplate), &tmpl.Spec); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, tmpl); err != nil {
			t.Fatal(err)
		}
	}
	deployment := func(gw *netv1beta1.GatewayServer) (*appsv1.Deployment, error) {
		dep := &appsv1.Deployment{}
		return dep, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw-" + gw.Name}, dep)
	}

	t.Run("custom template", func(t *testing.T) {
		createTemplate("custom")
		gw := newServer("custom", corev1.ObjectReference{APIVersion: "networking.liqo.io/v1beta1", Kind: "WgGatewayServerTemplate",
			Name: "custom", Namespace: "templates"})
		var dep *appsv1.Deployment
		testenv.EventuallyOK(t, "deployment", 15*time.Second, func() (err error) { dep, err = deployment(gw); return err })
		checkDeployment(t, dep, gw, "--mode=server", "--namespace="+ns, "--gateway=custom")
		if dep.Labels["peer"] != "cluster-b" || dep.Annotations["example.org/owner"] != ns || dep.Labels["app.kubernetes.io/name"] != "custom" {
			t.Errorf("deployment labels %v annotations %v: want the template's, rendered, and the selector", dep.Labels, dep.Annotations)
		}
		if ptr.Deref(dep.Spec.RevisionHistoryLimit, 0) != 1340 {
			t.Errorf("revisionHistoryLimit %v: want the rendered number 1340", dep.Spec.RevisionHistoryLimit)
		}
		pod := dep.Spec.Template
		if pod.Labels["tier"] != "gateway" || pod.Labels["app.kubernetes.io/name"] != "custom" || pod.Spec.NodeSelector["example.org/gateway"] != "custom" ||
			ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, 0) != 51900 || pod.Spec.ServiceAccountName != "gw-custom" {
			t.Errorf("pod template labels %v, node selector %v, grace %v, service account %q", pod.Labels, pod.Spec.NodeSelector,
				pod.Spec.TerminationGracePeriodSeconds, pod.Spec.ServiceAccountName)
		}
		if len(pod.Spec.Containers) != 2 || pod.Spec.Containers[1].Name != "metrics" || pod.Spec.Containers[1].Image != "example.org/metrics:1" {
			t.Fatalf("containers %+v: want the template's gateway and metrics containers", pod.Spec.Containers)
		}
		gwc := pod.Spec.Containers[0]
		if gwc.Args[len(gwc.Args)-1] != "--keepalive=5s" || !slices.Contains(gwc.Args, "--secret=custom-keys") {
			t.Errorf("args %v: want the controller's then the template's", gwc.Args)
		}
		if len(gwc.Env) != 2 || gwc.Env[0].Value != "51900" || gwc.Env[1].Value != "custom-keys" || gwc.Resources.Limits.Cpu().String() != "500m" {
			t.Errorf("env %+v, resources %+v: want the template's, rendered (a number stays a string in a string field)", gwc.Env, gwc.Resources)
		}
		if len(gwc.Ports) != 1 || gwc.Ports[0].ContainerPort != 51900 || gwc.Ports[0].Protocol != corev1.ProtocolUDP {
			t.Errorf("gateway ports %+v", gwc.Ports)
		}
		svc := &corev1.Service{}
		// The Deployment is written first: the Service may follow a moment later.
		testenv.EventuallyOK(t, "service", 15*time.Second, func() error { return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw-custom"}, svc) })
		if svc.Spec.Type != corev1.ServiceTypeNodePort {
			t.Errorf("service type %s: the GatewayServer's NodePort wins over the template's LoadBalancer", svc.Spec.Type)
		}
		if svc.Annotations["a"] != "template" || svc.Annotations["b"] != "gateway" || svc.Labels["peer"] != "cluster-b" {
			t.Errorf("service annotations %v labels %v: want the template's, the GatewayServer's winning", svc.Annotations, svc.Labels)
		}
		var names []string
		for _, p := range svc.Spec.Ports {
			names = append(names, fmt.Sprintf("%s/%s/%d->%s", p.Name, p.Protocol, p.Port, p.TargetPort.String()))
		}
		if !slices.Equal(names, []string{"wireguard/UDP/51900->51900", "metrics/TCP/9090->9090"}) {
			t.Errorf("service ports %v", names)
		}
	})

	t.Run("internal endpoint", func(t *testing.T) {
		gw := &netv1beta1.GatewayServer{}
		testenv.EventuallyOK(t, "internal endpoint", 15*time.Second, func() error {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "custom"}, gw); err != nil {
				return err
			}
			if gw.Status.InternalEndpoint == nil {
				return failure("no internal endpoint")
			}
			return nil
		})
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "custom"}); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 1 {
			t.Fatalf("%d gateway pods", len(pods.Items))
		}
		p := pods.Items[0]
		ie := gw.Status.InternalEndpoint
		if ie.IP == nil || string(*ie.IP) != p.Status.PodIP || p.Status.PodIP == "" || ie.Node == nil || *ie.Node != "gw-node" || p.Spec.NodeName != "gw-node" {
			t.Errorf("internal endpoint %v/%v: want pod IP %q on node %q", ptr.Deref(ie.IP, ""), ptr.Deref(ie.Node, ""), p.Status.PodIP, p.Spec.NodeName)
		}
	})

	t.Run("missing template", func(t *testing.T) {
		gw := newServer("late", corev1.ObjectReference{Kind: "WgGatewayServerTemplate", Name: "late", Namespace: "templates"})
		testenv.EventuallyOK(t, "TemplateNotFound event", 15*time.Second, func() error { return gatewaytest.Warning(ctx, c, gw, "TemplateNotFound", "templates/late") })
		if _, err := deployment(gw); !apierrors.IsNotFound(err) {
			t.Fatalf("deployment without its template: %v", err)
		}
		createTemplate("late")
		testenv.EventuallyOK(t, "deployment once the template exists", 15*time.Second, func() error { _, err := deployment(gw); return err })
	})

	t.Run("kind not served", func(t *testing.T) {
		gw := newServer("nokind", corev1.ObjectReference{APIVersion: "example.org/v1", Kind: "GatewayTemplate", Name: "x", Namespace: "templates"})
		testenv.EventuallyOK(t, "TemplateNotFound event", 15*time.Second, func() error { return gatewaytest.Warning(ctx, c, gw, "TemplateNotFound", "GatewayTemplate") })
		if _, err := deployment(gw); !apierrors.IsNotFound(err) {
			t.Fatalf("deployment without its template: %v", err)
		}
	})

	t.Run("default template", func(t *testing.T) {
		gw := newServer("default", corev1.ObjectReference{APIVersion: "networking.liqo.io/v1beta1", Kind: "WgGatewayServerTemplate",
			Name: "wireguard-server", Namespace: "liqo"})
		var dep *appsv1.Deployment
		testenv.EventuallyOK(t, "deployment", 15*time.Second, func() (err error) { dep, err = deployment(gw); return err })
		checkDeployment(t, dep, gw, "--mode=server", "--gateway=default")
		tmpl := &netv1beta1.WgGatewayServerTemplate{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "liqo", Name: "wireguard-server"}, tmpl); err != nil {
			t.Fatalf("default template not created: %v", err)
		}
		if !strings.Contains(string(tmpl.Spec.Template.Raw), `"deployment"`) {
			t.Errorf("default template %s", tmpl.Spec.Template.Raw)
		}
	})
}
