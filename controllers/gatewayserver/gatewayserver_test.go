package gatewayserver_test

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/gatewayserver"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/gatewaytest"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// startManager runs the GatewayServer reconciler on c until the test ends; withEvents, it
// records Events too.
func startManager(t *testing.T, c *testenv.Cluster, withEvents bool) {
	t.Helper()
	testenv.StartManager(t, c, func(mgr ctrl.Manager) error {
		r := &gatewayserver.Reconciler{Client: mgr.GetClient(), Image: "example.org/gw:test"}
		if withEvents {
			r.Recorder = mgr.GetEventRecorder("gatewayserver")
		}
		return r.SetupWithManager(mgr)
	})
}

type failure string

func (f failure) Error() string { return string(f) }

// TestGatewayServer checks the rendered Deployment, Service, generated key Secret and the
// endpoint in status for NodePort, ClusterIP and LoadBalancer servers.
func TestGatewayServer(t *testing.T) {
	ctx := t.Context()
	env := plain.Env(t)
	c := env.Cluster("a").Client
	startManager(t, env.Cluster("a"), false)
	ns := "liqo-tenant-b"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}}
	if err := c.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}

	t.Run("NodePort, generated key Secret", func(t *testing.T) {
		gw := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "np", Labels: map[string]string{"liqo.io/remote-cluster-id": "b"}},
			Spec: netv1beta1.GatewayServerSpec{Endpoint: netv1beta1.Endpoint{Port: 51900, ServiceType: corev1.ServiceTypeNodePort}, MTU: 1340}}
		if err := c.Create(ctx, gw); err != nil {
			t.Fatal(err)
		}
		testenv.EventuallyOK(t, "status endpoint", 15*time.Second, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
				return err
			}
			if gw.Status.Endpoint == nil || gw.Status.SecretRef == nil || gw.Status.ServerRef == nil {
				return failure("status incomplete")
			}
			return nil
		})
		svc := &corev1.Service{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw-np"}, svc); err != nil {
			t.Fatal(err)
		}
		if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].Protocol != corev1.ProtocolUDP || svc.Spec.Ports[0].Port != 51900 || svc.Spec.Ports[0].NodePort == 0 {
			t.Errorf("service spec: %+v", svc.Spec)
		}
		ep := gw.Status.Endpoint
		if !slices.Equal(ep.Addresses, []string{"192.0.2.10"}) || ep.Port != svc.Spec.Ports[0].NodePort || ep.Protocol == nil || *ep.Protocol != corev1.ProtocolUDP {
			t.Errorf("endpoint %+v: want the node address and node port %d over UDP", ep, svc.Spec.Ports[0].NodePort)
		}
		secret := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: gw.Status.SecretRef.Name}, secret); err != nil {
			t.Fatalf("generated key Secret: %v", err)
		}
		gatewaytest.CheckKeyPair(t, secret)
		if secret.Labels["liqo.io/remote-cluster-id"] != "b" || !metav1.IsControlledBy(secret, gw) {
			t.Errorf("secret labels %v, owners %v", secret.Labels, secret.OwnerReferences)
		}
		dep := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: gw.Status.ServerRef.Name}, dep); err != nil {
			t.Fatal(err)
		}
		checkDeployment(t, dep, gw, "--mode=server", "--secret="+secret.Name)
		if dep.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort != 51900 {
			t.Errorf("container port %+v", dep.Spec.Template.Spec.Containers[0].Ports)
		}
	})

	t.Run("ClusterIP, existing Secret", func(t *testing.T) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"}, Data: map[string][]byte{"privateKey": make([]byte, 32)}}
		if err := c.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
		gw := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cip"},
			Spec: netv1beta1.GatewayServerSpec{SecretRef: corev1.LocalObjectReference{Name: "mine"}, Endpoint: netv1beta1.Endpoint{Ports: []int32{51842}}}}
		if err := c.Create(ctx, gw); err != nil {
			t.Fatal(err)
		}
		testenv.EventuallyOK(t, "status endpoint", 15*time.Second, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
				return err
			}
			if gw.Status.Endpoint == nil {
				return failure("no endpoint")
			}
			return nil
		})
		svc := &corev1.Service{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw-cip"}, svc); err != nil {
			t.Fatal(err)
		}
		if ep := gw.Status.Endpoint; !slices.Equal(ep.Addresses, []string{svc.Spec.ClusterIP}) || ep.Port != 51842 {
			t.Errorf("endpoint %+v: want cluster IP %s, port 51842", ep, svc.Spec.ClusterIP)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			t.Fatal(err)
		}
		if len(secret.OwnerReferences) != 0 || string(secret.Data["privateKey"]) != string(make([]byte, 32)) {
			t.Error("an existing key Secret was changed")
		}
	})

	t.Run("being deleted, nothing is written again", func(t *testing.T) {
		// A foreground deletion waits for the garbage collector to remove the Deployment and the
		// Service: re-creating them would hold the GatewayServer forever.
		gw := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "going", Finalizers: []string{"example.org/hold"}},
			Spec: netv1beta1.GatewayServerSpec{Endpoint: netv1beta1.Endpoint{Port: 51901, ServiceType: corev1.ServiceTypeClusterIP}}}
		if err := c.Create(ctx, gw); err != nil {
			t.Fatal(err)
		}
		dep, svc := &appsv1.Deployment{}, &corev1.Service{}
		testenv.EventuallyOK(t, "deployment and service", 15*time.Second, func() error {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw-going"}, dep); err != nil {
				return err
			}
			return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw-going"}, svc)
		})
		if err := c.Delete(ctx, gw); err != nil { // held by its finalizer
			t.Fatal(err)
		}
		for _, o := range []client.Object{dep, svc} {
			if err := c.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Second) // the reconciler answers within milliseconds
		for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw-going"}, o); err == nil {
				t.Errorf("%T gw-going written again while its GatewayServer is being deleted", o)
			}
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			t.Fatal(err)
		}
		gw.Finalizers = nil
		if err := c.Update(ctx, gw); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("LoadBalancer", func(t *testing.T) {
		gw := &netv1beta1.GatewayServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lb"},
			Spec: netv1beta1.GatewayServerSpec{Endpoint: netv1beta1.Endpoint{Port: 443, ServiceType: corev1.ServiceTypeLoadBalancer},
				ServiceAnnotations: map[string]string{"example.org/lb": "internal"}}}
		if err := c.Create(ctx, gw); err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{}
		testenv.EventuallyOK(t, "service", 15*time.Second, func() error { return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw-lb"}, svc) })
		if svc.Annotations["example.org/lb"] != "internal" {
			t.Errorf("service annotations %v", svc.Annotations)
		}
		time.Sleep(500 * time.Millisecond)
		if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			t.Fatal(err)
		}
		if gw.Status.Endpoint != nil {
			t.Errorf("endpoint %+v before the load balancer has an address", gw.Status.Endpoint)
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.5"}}
		if err := c.Status().Update(ctx, svc); err != nil {
			t.Fatal(err)
		}
		testenv.EventuallyOK(t, "load balancer endpoint", 15*time.Second, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
				return err
			}
			if gw.Status.Endpoint == nil || !slices.Equal(gw.Status.Endpoint.Addresses, []string{"203.0.113.5"}) || gw.Status.Endpoint.Port != 443 {
				return failure("endpoint not the load balancer's")
			}
			return nil
		})
	})
}

// checkDeployment checks what every gateway Deployment needs.
func checkDeployment(t *testing.T, dep *appsv1.Deployment, owner client.Object, args ...string) {
	t.Helper()
	if !metav1.IsControlledBy(dep, owner) {
		t.Error("deployment not owned by the gateway")
	}
	ctr := dep.Spec.Template.Spec.Containers[0]
	if ctr.Image != "example.org/gw:test" {
		t.Errorf("image %s", ctr.Image)
	}
	for _, a := range args {
		if !slices.Contains(ctr.Args, a) {
			t.Errorf("args %v lack %s", ctr.Args, a)
		}
	}
	if ctr.SecurityContext == nil || ctr.SecurityContext.Capabilities == nil || !slices.Contains(ctr.SecurityContext.Capabilities.Add, "NET_ADMIN") {
		t.Errorf("no NET_ADMIN: %+v", ctr.SecurityContext)
	}
	if ctr.SecurityContext == nil || ctr.SecurityContext.Privileged == nil || !*ctr.SecurityContext.Privileged {
		t.Errorf("not privileged (the gateway turns on IP forwarding): %+v", ctr.SecurityContext)
	}
	if ps := dep.Spec.Template.Spec; !ps.HostNetwork || ps.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork %v, dnsPolicy %q: want the node's network with ClusterFirstWithHostNet", ps.HostNetwork, ps.DNSPolicy)
	}
	vols := dep.Spec.Template.Spec.Volumes
	if len(vols) != 1 || vols[0].HostPath == nil || vols[0].HostPath.Path != "/dev/net/tun" || len(ctr.VolumeMounts) != 1 || ctr.VolumeMounts[0].MountPath != "/dev/net/tun" {
		t.Errorf("no /dev/net/tun: volumes %+v, mounts %+v", vols, ctr.VolumeMounts)
	}
}
