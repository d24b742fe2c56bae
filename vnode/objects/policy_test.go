package objects_test

import (
	"context"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode/namespaces"
	"github.com/peerkit/terraform-provider-liqo/vnode/objects"
	rt "github.com/peerkit/terraform-provider-liqo/vnode/reflection/reflectiontest"
)

// Namespaces of TestPoliciesAndIngresses, apart from TestReflection's on the shared clusters.
const (
	policyLocalNS  = "policies"
	policyRemoteNS = "policies-cl-consumer"
)

// TestPoliciesAndIngresses checks, on real API servers, the allow and deny annotations under
// both reflection policies, and the reflection of Ingresses.
func TestPoliciesAndIngresses(t *testing.T) {
	b := rt.FromShared(t, clusters)
	b.Namespaces(t, policyLocalNS, policyRemoteNS)
	top := t
	ctx := t.Context()
	mapper := namespaces.Static(map[string]string{policyLocalNS: policyRemoteNS})
	// ConfigMaps and Services (with their EndpointSlices) under AllowList; Secrets under the
	// default DenyList.
	rt.Start(top, &objects.Reflector{Policies: objects.Policies{
		objects.ResourceConfigMap: objects.AllowList, objects.ResourceService: objects.AllowList}}, b.Env(top, mapper))
	rt.Start(top, &objects.IngressReflector{}, b.Env(top, mapper))
	lcm, rcm := b.Local.CoreV1().ConfigMaps(policyLocalNS), b.Admin.CoreV1().ConfigMaps(policyRemoteNS)

	t.Run("AllowList: only objects annotated allow-reflection are reflected, the root CA always", func(t *testing.T) {
		for name, ann := range map[string]map[string]string{
			"plain":        nil,
			"allowed":      {consts.AllowReflectionAnnotation: "true"},
			"allowed-any":  {consts.AllowReflectionAnnotation: ""},
			"allow-false":  {consts.AllowReflectionAnnotation: "false"},
			"allow-denied": {consts.AllowReflectionAnnotation: "true", consts.SkipReflectionAnnotation: "true"},
		} {
			if _, err := lcm.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		root := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: consts.RootCAConfigMap}, Data: map[string]string{"ca.crt": "consumer"}}
		if _, err := lcm.Create(ctx, root, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitConfigMap(t, b, policyRemoteNS, "allowed", func(*corev1.ConfigMap) bool { return true })
		waitConfigMap(t, b, policyRemoteNS, "allowed-any", func(*corev1.ConfigMap) bool { return true })
		waitConfigMap(t, b, policyRemoteNS, consts.ReflectedRootCAConfigMap, func(r *corev1.ConfigMap) bool { return r.Data["ca.crt"] == "consumer" })
		rt.Never(t, "a ConfigMap not allowed reflected", time.Second, func(ctx context.Context) bool {
			for _, name := range []string{"plain", "allow-false", "allow-denied"} {
				if _, err := rcm.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return true
				}
			}
			return false
		})
		// The allowance withdrawn: the copy goes.
		cm, err := lcm.Get(ctx, "allowed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Annotations[consts.AllowReflectionAnnotation] = "false"
		if _, err := lcm.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "the copy of a ConfigMap no longer allowed deleted", func(ctx context.Context) error {
			_, err := rcm.Get(ctx, "allowed", metav1.GetOptions{})
			return err
		})
		// Allowed later: it comes.
		cm, err = lcm.Get(ctx, "plain", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Annotations = map[string]string{consts.AllowReflectionAnnotation: "yes"}
		if _, err := lcm.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitConfigMap(t, b, policyRemoteNS, "plain", func(*corev1.ConfigMap) bool { return true })
		// The root CA opted out explicitly: even it goes.
		root, err = lcm.Get(ctx, consts.RootCAConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		root.Annotations = map[string]string{consts.SkipReflectionAnnotation: "true"}
		if _, err := lcm.Update(ctx, root, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "the opted-out root CA's copy deleted", func(ctx context.Context) error {
			_, err := rcm.Get(ctx, consts.ReflectedRootCAConfigMap, metav1.GetOptions{})
			return err
		})
	})

	t.Run("DenyList: skip-reflection with any value but false opts out", func(t *testing.T) {
		ls, rs := b.Local.CoreV1().Secrets(policyLocalNS), b.Admin.CoreV1().Secrets(policyRemoteNS)
		for name, ann := range map[string]map[string]string{
			"s-plain": nil,
			"s-false": {consts.SkipReflectionAnnotation: "False"},
			"s-yes":   {consts.SkipReflectionAnnotation: "yes"},
			"s-empty": {consts.SkipReflectionAnnotation: ""},
		} {
			if _, err := ls.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
				Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{"s-plain", "s-false"} {
			rt.Eventually(t, "remote Secret "+name, timeout, func(ctx context.Context) (bool, error) {
				_, err := rs.Get(ctx, name, metav1.GetOptions{})
				return err == nil, err
			})
		}
		rt.Never(t, "an opted-out Secret reflected", time.Second, func(ctx context.Context) bool {
			_, e1 := rs.Get(ctx, "s-yes", metav1.GetOptions{})
			_, e2 := rs.Get(ctx, "s-empty", metav1.GetOptions{})
			return !apierrors.IsNotFound(e1) || !apierrors.IsNotFound(e2)
		})
		s, err := ls.Get(ctx, "s-plain", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Annotations = map[string]string{consts.SkipReflectionAnnotation: ""}
		if _, err := ls.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "the copy of a Secret annotated skip-reflection deleted", func(ctx context.Context) error {
			_, err := rs.Get(ctx, "s-plain", metav1.GetOptions{})
			return err
		})
	})

	t.Run("AllowList of Services: EndpointSlices follow their Service", func(t *testing.T) {
		ls, rs := b.Local.CoreV1().Services(policyLocalNS), b.Admin.CoreV1().Services(policyRemoteNS)
		lslices := b.Local.DiscoveryV1().EndpointSlices(policyLocalNS)
		shadowKey := client.ObjectKey{Namespace: policyRemoteNS, Name: "api-1"}
		if _, err := ls.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := lslices.Create(ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "api-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: "api"}}, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.9"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rt.Never(t, "a Service not allowed, or its slice, reflected", time.Second, func(ctx context.Context) bool {
			_, e1 := rs.Get(ctx, "api", metav1.GetOptions{})
			e2 := b.Provider.Client.Get(ctx, shadowKey, &offv1beta1.ShadowEndpointSlice{})
			return !apierrors.IsNotFound(e1) || !apierrors.IsNotFound(e2)
		})
		svc, err := ls.Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Annotations = map[string]string{consts.AllowReflectionAnnotation: "true"}
		if _, err := ls.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		rt.Eventually(t, "the allowed Service and its slice reflected", timeout, func(ctx context.Context) (bool, error) {
			_, e1 := rs.Get(ctx, "api", metav1.GetOptions{})
			e2 := b.Provider.Client.Get(ctx, shadowKey, &offv1beta1.ShadowEndpointSlice{})
			return e1 == nil && e2 == nil, nil
		})
	})

	t.Run("Ingress created, changed, opted out and deleted follows remotely, class kept", func(t *testing.T) {
		li, ri := b.Local.NetworkingV1().Ingresses(policyLocalNS), b.Admin.NetworkingV1().Ingresses(policyRemoteNS)
		pathType := networkingv1.PathTypePrefix
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"nginx.ingress.kubernetes.io/rewrite-target": "/"}},
			Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"),
				TLS: []networkingv1.IngressTLS{{Hosts: []string{"web.example.com"}, SecretName: "web-tls"}},
				Rules: []networkingv1.IngressRule{{Host: "web.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
					HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType,
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
							Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
		created, err := li.Create(ctx, ing, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := waitIngress(t, b, policyRemoteNS, "web", func(*networkingv1.Ingress) bool { return true })
		if !equality.Semantic.DeepEqual(got.Spec, created.Spec) {
			t.Errorf("remote spec %+v, want the local one %+v", got.Spec, created.Spec)
		}
		wantLabels := map[string]string{"app": "web", consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: string(rt.ConsumerID),
			consts.UpstreamOriginLabel: string(rt.ConsumerID), consts.UpstreamDestinationLabel: string(rt.ProviderID)}
		if !maps.Equal(got.Labels, wantLabels) || got.Annotations["nginx.ingress.kubernetes.io/rewrite-target"] != "/" ||
			got.Annotations[consts.OriginNamespaceAnnotation] != policyLocalNS {
			t.Errorf("remote labels %v, annotations %v", got.Labels, got.Annotations)
		}
		created.Spec.Rules[0].Host = "www.example.com"
		if _, err := li.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitIngress(t, b, policyRemoteNS, "web", func(r *networkingv1.Ingress) bool { return r.Spec.Rules[0].Host == "www.example.com" })
		// Changed on the provider: put back.
		got = waitIngress(t, b, policyRemoteNS, "web", func(*networkingv1.Ingress) bool { return true })
		got.Spec.Rules[0].Host = "tampered.example.com"
		if _, err := ri.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitIngress(t, b, policyRemoteNS, "web", func(r *networkingv1.Ingress) bool { return r.Spec.Rules[0].Host == "www.example.com" })
		// Opted out: the copy goes; back in: it comes back.
		cur, err := li.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Annotations[consts.SkipReflectionAnnotation] = "true"
		if cur, err = li.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "the opted-out Ingress's copy deleted", func(ctx context.Context) error {
			_, err := ri.Get(ctx, "web", metav1.GetOptions{})
			return err
		})
		delete(cur.Annotations, consts.SkipReflectionAnnotation)
		if _, err := li.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitIngress(t, b, policyRemoteNS, "web", func(*networkingv1.Ingress) bool { return true })
		if err := li.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "the deleted Ingress's copy deleted", func(ctx context.Context) error {
			_, err := ri.Get(ctx, "web", metav1.GetOptions{})
			return err
		})
	})

	t.Run("Ingress with a remote class: the class replaced, the class annotation dropped", func(t *testing.T) {
		const local, remote = "store", "store-cl-consumer"
		b.Namespaces(t, local, remote)
		rt.Start(top, &objects.IngressReflector{RemoteClass: "provider-lb", Policy: objects.AllowList},
			b.Env(top, namespaces.Static(map[string]string{local: remote})))
		li := b.Local.NetworkingV1().Ingresses(local)
		backend := &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "shop",
			Port: networkingv1.ServiceBackendPort{Name: "http"}}}
		for name, ann := range map[string]map[string]string{
			"by-annotation": {IngressClassAnnotation: "nginx", consts.AllowReflectionAnnotation: "true"},
			"not-allowed":   nil,
		} {
			if _, err := li.Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
				Spec: networkingv1.IngressSpec{DefaultBackend: backend}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		got := waitIngress(t, b, remote, "by-annotation", func(*networkingv1.Ingress) bool { return true })
		if got.Spec.IngressClassName == nil || *got.Spec.IngressClassName != "provider-lb" {
			t.Errorf("remote ingressClassName %v, want provider-lb", got.Spec.IngressClassName)
		}
		if _, ok := got.Annotations[IngressClassAnnotation]; ok {
			t.Errorf("remote annotations %v keep %s", got.Annotations, IngressClassAnnotation)
		}
		if got.Spec.DefaultBackend == nil || got.Spec.DefaultBackend.Service == nil || got.Spec.DefaultBackend.Service.Name != "shop" {
			t.Errorf("remote default backend %+v", got.Spec.DefaultBackend)
		}
		rt.Never(t, "an Ingress not allowed reflected", time.Second, func(ctx context.Context) bool {
			_, err := b.Admin.NetworkingV1().Ingresses(remote).Get(ctx, "not-allowed", metav1.GetOptions{})
			return !apierrors.IsNotFound(err)
		})
	})
}

// IngressClassAnnotation is objects.IngressClassAnnotation.
const IngressClassAnnotation = objects.IngressClassAnnotation

// waitIngress waits until the remote copy of an Ingress in ns satisfies ok, and returns it.
func waitIngress(t *testing.T, b *rt.Bed, ns, name string, ok func(*networkingv1.Ingress) bool) *networkingv1.Ingress {
	t.Helper()
	var got *networkingv1.Ingress
	rt.Eventually(t, "remote Ingress "+name, timeout, func(ctx context.Context) (bool, error) {
		var err error
		got, err = b.Admin.NetworkingV1().Ingresses(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && ok(got), err
	})
	return got
}
