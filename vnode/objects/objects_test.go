package objects_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/shadowendpointslice"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/namespaces"
	"github.com/peerkit/terraform-provider-liqo/vnode/objects"
	rt "github.com/peerkit/terraform-provider-liqo/vnode/reflection/reflectiontest"
)

const (
	localNS  = "app"
	remoteNS = "app-cl-consumer"
	timeout  = 20 * time.Second
)

// TestReflection runs the objects reflector as the consumer's user on the provider (bound to
// liqo-remote-workload in the remote namespace and nothing else) and checks every behaviour
// on real API servers.
func TestReflection(t *testing.T) {
	b := rt.FromShared(t, clusters)
	b.Namespaces(t, localNS, remoteNS)
	mapper := namespaces.Static(map[string]string{localNS: remoteNS})
	top := t // the reflector lives as long as the whole test, not a subtest
	stop := rt.Start(top, objects.New(), b.Env(top, mapper))
	startShadowEndpointSlices(top, b)
	ctx := t.Context()
	lcm, rcm := b.Local.CoreV1().ConfigMaps(localNS), b.Admin.CoreV1().ConfigMaps(remoteNS)

	t.Run("RBAC: the consumer's user may do nothing outside its remote namespaces", func(t *testing.T) {
		if _, err := b.Remote.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("listing ConfigMaps of default as the consumer: %v, want Forbidden", err)
		}
		if _, err := b.Remote.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("listing ConfigMaps cluster-wide as the consumer: %v, want Forbidden", err)
		}
	})

	t.Run("RBAC: the consumer's user may not read Secrets, even in its remote namespace", func(t *testing.T) {
		rs := b.Remote.CoreV1().Secrets(remoteNS)
		if _, err := rs.Get(ctx, "anything", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("getting a Secret as the consumer: %v, want Forbidden", err)
		}
		if _, err := rs.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("listing Secrets as the consumer: %v, want Forbidden", err)
		}
		if w, err := rs.Watch(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			if w != nil {
				w.Stop()
			}
			t.Errorf("watching Secrets as the consumer: %v, want Forbidden", err)
		}
	})

	t.Run("ConfigMap created, changed and deleted locally follows remotely", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"note": "one"}}, Data: map[string]string{"a": "1"}}
		if _, err := lcm.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitConfigMap(t, b, remoteNS, "settings", func(r *corev1.ConfigMap) bool { return r.Data["a"] == "1" })
		wantLabels := map[string]string{"app": "web", consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: string(rt.ConsumerID),
			consts.UpstreamOriginLabel: string(rt.ConsumerID), consts.UpstreamDestinationLabel: string(rt.ProviderID)}
		if !maps.Equal(got.Labels, wantLabels) {
			t.Errorf("remote labels %v, want %v", got.Labels, wantLabels)
		}
		if got.Annotations["note"] != "one" || got.Annotations[consts.OriginNamespaceAnnotation] != localNS {
			t.Errorf("remote annotations %v", got.Annotations)
		}
		cm, err := lcm.Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{"a": "2", "b": "3"}
		cm.Labels["tier"] = "front"
		cm.Annotations["note"] = "two"
		if _, err := lcm.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitConfigMap(t, b, remoteNS, "settings", func(r *corev1.ConfigMap) bool {
			return r.Data["a"] == "2" && r.Data["b"] == "3" && r.Labels["tier"] == "front" && r.Annotations["note"] == "two"
		})
		if err := lcm.Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "the remote ConfigMap deleted", func(ctx context.Context) error {
			_, err := rcm.Get(ctx, "settings", metav1.GetOptions{})
			return err
		})
	})

	t.Run("Secret follows; service-account tokens stay home", func(t *testing.T) {
		ls, rs := b.Local.CoreV1().Secrets(localNS), b.Admin.CoreV1().Secrets(remoteNS)
		token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sa-token",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
			Type: corev1.SecretTypeServiceAccountToken}
		if _, err := ls.Create(ctx, token, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{"username": []byte("u"), "password": []byte("p1")}}
		if _, err := ls.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rt.Eventually(t, "the remote Secret", timeout, func(ctx context.Context) (bool, error) {
			r, err := rs.Get(ctx, "db", metav1.GetOptions{})
			return err == nil && r.Type == corev1.SecretTypeBasicAuth && string(r.Data["password"]) == "p1" &&
				r.Labels[consts.ReflectedLabel] == "true" && r.Labels[consts.OriginClusterIDLabel] == string(rt.ConsumerID) &&
				r.Annotations[consts.OriginNamespaceAnnotation] == localNS, err
		})
		if !ledgerHas(t, b, remoteNS, "db") {
			t.Error("the reflected Secret is not in the ledger")
		}
		s, err := ls.Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Data["password"] = []byte("p2")
		if _, err := ls.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		rt.Eventually(t, "the remote Secret changed", timeout, func(ctx context.Context) (bool, error) {
			r, err := rs.Get(ctx, "db", metav1.GetOptions{})
			return err == nil && string(r.Data["password"]) == "p2", err
		})
		rt.Never(t, "the service-account token reflected", time.Second, func(ctx context.Context) bool {
			_, err := rs.Get(ctx, "sa-token", metav1.GetOptions{})
			return !apierrors.IsNotFound(err)
		})
		if err := ls.Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "the remote Secret deleted", func(ctx context.Context) error {
			_, err := rs.Get(ctx, "db", metav1.GetOptions{})
			return err
		})
		rt.Eventually(t, "the deleted Secret out of the ledger", timeout, func(context.Context) (bool, error) {
			return !ledgerHas(t, b, remoteNS, "db"), nil
		})

	})

	t.Run("Secrets opted out are not reflected and lose their remote copy; the provider's own are left alone", func(t *testing.T) {
		ls, rs := b.Local.CoreV1().Secrets(localNS), b.Admin.CoreV1().Secrets(remoteNS)
		// The provider's own Secret, of a name the consumer uses too.
		if _, err := rs.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "clash"},
			Data: map[string][]byte{"owner": []byte("provider")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitSecretPolicy(t, b, remoteNS, "clash")
		for name, ann := range map[string]map[string]string{
			"private": {consts.SkipReflectionAnnotation: "true"}, "later-private": nil, "clash": nil,
		} {
			if _, err := ls.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
				Data: map[string][]byte{"owner": []byte("consumer")}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		rt.Eventually(t, "the remote Secret later-private", timeout, func(ctx context.Context) (bool, error) {
			_, err := rs.Get(ctx, "later-private", metav1.GetOptions{})
			return err == nil, err
		})
		rt.Never(t, "the opted-out Secret reflected, or the provider's own overwritten", time.Second, func(ctx context.Context) bool {
			_, err := rs.Get(ctx, "private", metav1.GetOptions{})
			r, cerr := rs.Get(ctx, "clash", metav1.GetOptions{})
			return !apierrors.IsNotFound(err) || cerr != nil || string(r.Data["owner"]) != "provider" || r.Labels[consts.ReflectedLabel] != ""
		})
		later, err := ls.Get(ctx, "later-private", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		later.Annotations = map[string]string{consts.SkipReflectionAnnotation: "true"}
		if _, err := ls.Update(ctx, later, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "the remote copy of a Secret that opted out deleted", func(ctx context.Context) error {
			_, err := rs.Get(ctx, "later-private", metav1.GetOptions{})
			return err
		})
		// Gone locally: the provider's Secret of that name stays.
		if err := ls.Delete(ctx, "clash", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		rt.Never(t, "the provider's own Secret deleted", time.Second, func(ctx context.Context) bool {
			_, err := rs.Get(ctx, "clash", metav1.GetOptions{})
			return err != nil
		})
		if ledgerHas(t, b, remoteNS, "clash") || ledgerHas(t, b, remoteNS, "later-private") || ledgerHas(t, b, remoteNS, "private") {
			t.Errorf("ledger %v: names of Secrets not reflected", ledger(t, b, remoteNS))
		}
	})

	t.Run("a remote copy edited or deleted on the provider is restored", func(t *testing.T) {
		if _, err := lcm.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "guarded"},
			Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r := waitConfigMap(t, b, remoteNS, "guarded", func(r *corev1.ConfigMap) bool { return r.Data["k"] == "v" })
		r.Data["k"] = "tampered"
		r.Labels["extra"] = "x"
		if _, err := rcm.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitConfigMap(t, b, remoteNS, "guarded", func(r *corev1.ConfigMap) bool { return r.Data["k"] == "v" && r.Labels["extra"] == "" })
		uid := r.UID
		if err := rcm.Delete(ctx, "guarded", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitConfigMap(t, b, remoteNS, "guarded", func(r *corev1.ConfigMap) bool { return r.UID != uid && r.Data["k"] == "v" })
	})

	t.Run("opted-out objects are not reflected and lose their remote copy", func(t *testing.T) {
		if _, err := lcm.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "private",
			Annotations: map[string]string{consts.SkipReflectionAnnotation: "true"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := lcm.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later-private"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitConfigMap(t, b, remoteNS, "later-private", func(*corev1.ConfigMap) bool { return true })
		rt.Never(t, "the opted-out ConfigMap reflected", time.Second, func(ctx context.Context) bool {
			_, err := rcm.Get(ctx, "private", metav1.GetOptions{})
			return !apierrors.IsNotFound(err)
		})
		cm, err := lcm.Get(ctx, "later-private", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Annotations = map[string]string{consts.SkipReflectionAnnotation: "true"}
		if _, err := lcm.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "the remote copy of an object that opted out deleted", func(ctx context.Context) error {
			_, err := rcm.Get(ctx, "later-private", metav1.GetOptions{})
			return err
		})
	})

	t.Run("kube-root-ca.crt lands as liqo-kube-root-ca.crt; the provider's own objects are left alone", func(t *testing.T) {
		// The provider's own root CA and an unrelated ConfigMap that happens to share a name.
		for _, name := range []string{consts.RootCAConfigMap, "clash"} {
			if _, err := rcm.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
				Data: map[string]string{"owner": "provider"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{consts.RootCAConfigMap, "clash"} {
			if _, err := lcm.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
				Data: map[string]string{"owner": "consumer"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
		// A cluster with a controller manager publishes its own kube-root-ca.crt: make it ours.
		root, err := lcm.Get(ctx, consts.RootCAConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		root.Data = map[string]string{"owner": "consumer"}
		if _, err := lcm.Update(ctx, root, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitConfigMap(t, b, remoteNS, consts.ReflectedRootCAConfigMap, func(r *corev1.ConfigMap) bool { return r.Data["owner"] == "consumer" })
		for _, name := range []string{consts.RootCAConfigMap, "clash"} {
			r, err := rcm.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Data["owner"] != "provider" || r.Labels[consts.ReflectedLabel] != "" {
				t.Errorf("the provider's own ConfigMap %s was touched: %v %v", name, r.Labels, r.Data)
			}
		}
	})

	t.Run("Service and EndpointSlice reflected; the provider allocates its own cluster IP", func(t *testing.T) {
		ls, rs := b.Local.CoreV1().Services(localNS), b.Admin.CoreV1().Services(remoteNS)
		// 10.0.0.123 is taken on the provider, so a copied cluster IP would fail.
		if _, err := b.Admin.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "squatter"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.123", Ports: []corev1.ServicePort{{Port: 1}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.0.0.123", Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080}}}}
		if _, err := ls.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var remote *corev1.Service
		rt.Eventually(t, "the remote Service", timeout, func(ctx context.Context) (bool, error) {
			var err error
			remote, err = rs.Get(ctx, "web", metav1.GetOptions{})
			return err == nil, err
		})
		if remote.Spec.ClusterIP == "" || remote.Spec.ClusterIP == "10.0.0.123" {
			t.Errorf("remote cluster IP %q, want one the provider allocated", remote.Spec.ClusterIP)
		}
		if remote.Spec.Type != corev1.ServiceTypeNodePort || remote.Spec.Selector["app"] != "web" || len(remote.Spec.Ports) != 1 ||
			remote.Spec.Ports[0].Port != 80 || remote.Spec.Ports[0].TargetPort.IntVal != 8080 || remote.Spec.Ports[0].NodePort == 0 {
			t.Errorf("remote spec %+v", remote.Spec)
		}

		lslices := b.Local.DiscoveryV1().EndpointSlices(localNS)
		slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abcde",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.244.1.5"}, NodeName: ptr.To("worker-1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
					TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: localNS, Name: "web-local"}},
				{Addresses: []string{"10.99.0.7"}, NodeName: ptr.To(rt.NodeName), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
					TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: localNS, Name: "web-offloaded"}},
			}}
		if _, err := lslices.Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		shadow := waitShadowSlice(t, b, remoteNS, "web-abcde", func(*offv1beta1.ShadowEndpointSlice) bool { return true })
		wantLabels := map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: consts.UpstreamEndpointSliceManagedBy,
			consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: string(rt.ConsumerID),
			consts.UpstreamOriginLabel: string(rt.ConsumerID), consts.UpstreamDestinationLabel: string(rt.ProviderID)}
		if !maps.Equal(shadow.Labels, wantLabels) {
			t.Errorf("ShadowEndpointSlice labels %v, want %v", shadow.Labels, wantLabels)
		}
		tpl := shadow.Spec.Template
		if tpl.AddressType != discoveryv1.AddressTypeIPv4 || len(tpl.Ports) != 1 || ptr.Deref(tpl.Ports[0].Port, 0) != 8080 ||
			len(tpl.Endpoints) != 1 || tpl.Endpoints[0].Addresses[0] != "10.244.1.5" || tpl.Endpoints[0].NodeName != nil ||
			tpl.Endpoints[0].TargetRef != nil {
			t.Errorf("ShadowEndpointSlice template %+v, want only the consumer-side endpoint, without node and pod reference", tpl)
		}
		eps := waitProviderSlice(t, b, remoteNS, "web-abcde", func(e *discoveryv1.EndpointSlice) bool { return metav1.IsControlledBy(e, shadow) })
		if len(eps.Endpoints) != 1 || eps.Endpoints[0].Addresses[0] != "10.244.1.5" || eps.Labels[discoveryv1.LabelServiceName] != "web" {
			t.Errorf("the provider's EndpointSlice: labels %v endpoints %+v", eps.Labels, eps.Endpoints)
		}
		slice, err := lslices.Get(ctx, "web-abcde", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.244.2.9"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
		if _, err := lslices.Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitProviderSlice(t, b, remoteNS, "web-abcde", func(e *discoveryv1.EndpointSlice) bool {
			return len(e.Endpoints) == 2 && e.Endpoints[1].Addresses[0] == "10.244.2.9"
		})
		// The Service opts out: it and its slices leave the provider.
		svc, err = ls.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Annotations = map[string]string{consts.SkipReflectionAnnotation: "true"}
		if _, err := ls.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "the opted-out Service's remote copy deleted", func(ctx context.Context) error {
			_, err := rs.Get(ctx, "web", metav1.GetOptions{})
			return err
		})
		waitGone(t, "the opted-out Service's ShadowEndpointSlice deleted", func(ctx context.Context) error {
			return b.Provider.Client.Get(ctx, client.ObjectKey{Namespace: remoteNS, Name: "web-abcde"}, &offv1beta1.ShadowEndpointSlice{})
		})
		waitGone(t, "the opted-out Service's EndpointSlice on the provider deleted", func(ctx context.Context) error {
			_, err := b.Admin.DiscoveryV1().EndpointSlices(remoteNS).Get(ctx, "web-abcde", metav1.GetOptions{})
			return err
		})
	})

	t.Run("upgrade: an EndpointSlice an earlier version reflected directly is taken over, the same object", func(t *testing.T) {
		testUpgradedEndpointSlice(t, b)
	})

	t.Run("after a restart, changes made meanwhile are reflected", func(t *testing.T) {
		ls, rs := b.Local.CoreV1().Secrets(localNS), b.Admin.CoreV1().Secrets(remoteNS)
		for _, name := range []string{"kept", "dropped", "retyped"} {
			if _, err := lcm.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
				Data: map[string]string{"v": "1"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitConfigMap(t, b, remoteNS, name, func(*corev1.ConfigMap) bool { return true })
			if _, err := ls.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret-" + name},
				Data: map[string][]byte{"v": []byte("1")}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			rt.Eventually(t, "the remote Secret secret-"+name, timeout, func(ctx context.Context) (bool, error) {
				_, err := rs.Get(ctx, "secret-"+name, metav1.GetOptions{})
				return err == nil, err
			})
		}
		stop()
		s, err := ls.Get(ctx, "secret-kept", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Data["v"] = []byte("2")
		if _, err := ls.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := ls.Delete(ctx, "secret-dropped", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Replaced by one of another type, a field that cannot change: the copy is replaced too.
		if err := ls.Delete(ctx, "secret-retyped", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := ls.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret-retyped"}, Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{"username": []byte("u")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cm, err := lcm.Get(ctx, "kept", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = "2"
		if _, err := lcm.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := lcm.Delete(ctx, "dropped", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// From now on, Secrets are written again every second.
		stop = rt.Start(top, &objects.Reflector{SecretRefresh: time.Second}, b.Env(top, mapper))
		waitConfigMap(t, b, remoteNS, "kept", func(r *corev1.ConfigMap) bool { return r.Data["v"] == "2" })
		waitGone(t, "the copy of a ConfigMap deleted while the reflector was down", func(ctx context.Context) error {
			_, err := rcm.Get(ctx, "dropped", metav1.GetOptions{})
			return err
		})
		rt.Eventually(t, "the remote Secret changed while the reflector was down", timeout, func(ctx context.Context) (bool, error) {
			r, err := rs.Get(ctx, "secret-kept", metav1.GetOptions{})
			return err == nil && string(r.Data["v"]) == "2", err
		})
		waitGone(t, "the copy of a Secret deleted while the reflector was down", func(ctx context.Context) error {
			_, err := rs.Get(ctx, "secret-dropped", metav1.GetOptions{})
			return err
		})
		rt.Eventually(t, "the remote Secret replaced with its new type", timeout, func(ctx context.Context) (bool, error) {
			r, err := rs.Get(ctx, "secret-retyped", metav1.GetOptions{})
			return err == nil && r.Type == corev1.SecretTypeBasicAuth && string(r.Data["username"]) == "u", err
		})
		if ledgerHas(t, b, remoteNS, "secret-dropped") || !ledgerHas(t, b, remoteNS, "secret-kept") {
			t.Errorf("ledger after the sweep: %v", ledger(t, b, remoteNS))
		}
		// The reflector cannot watch Secrets on the provider: a copy changed or deleted there
		// is put back by the refresh.
		r, err := rs.Get(ctx, "secret-kept", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r.Data["v"] = []byte("tampered")
		if _, err := rs.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		rt.Eventually(t, "the remote Secret edited on the provider put back", timeout, func(ctx context.Context) (bool, error) {
			r, err := rs.Get(ctx, "secret-kept", metav1.GetOptions{})
			return err == nil && string(r.Data["v"]) == "2", err
		})
		if err := rs.Delete(ctx, "secret-kept", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		rt.Eventually(t, "the remote Secret deleted on the provider put back", timeout, func(ctx context.Context) (bool, error) {
			r, err := rs.Get(ctx, "secret-kept", metav1.GetOptions{})
			return err == nil && string(r.Data["v"]) == "2", err
		})
	})

	t.Run("a namespace removed from the mapping stops reflection", func(t *testing.T) {
		waitConfigMap(t, b, remoteNS, "guarded", func(*corev1.ConfigMap) bool { return true })
		mapper.Set(localNS, "")
		if _, err := lcm.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unmapped"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := lcm.Delete(ctx, "guarded", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		rt.Never(t, "reflection in an unmapped namespace", 2*time.Second, func(ctx context.Context) bool {
			_, errNew := rcm.Get(ctx, "unmapped", metav1.GetOptions{})
			_, errOld := rcm.Get(ctx, "guarded", metav1.GetOptions{})
			return !apierrors.IsNotFound(errNew) || errOld != nil // created, or the old copy deleted
		})
		mapper.Set(localNS, remoteNS)
		waitConfigMap(t, b, remoteNS, "unmapped", func(*corev1.ConfigMap) bool { return true })
		waitGone(t, "the copy of a ConfigMap deleted while unmapped", func(ctx context.Context) error {
			_, err := rcm.Get(ctx, "guarded", metav1.GetOptions{})
			return err
		})
	})
	t.Run("in a virtual node's runner, following the NamespaceMap the provider accepted", func(t *testing.T) {
		const local, remote, tenant = "shop", "shop-cl-consumer", "liqo-tenant-cl-provider"
		const local2, remote2 = "shop2", "shop2-cl-consumer"
		b.Namespaces(t, local, remote)
		b.Namespaces(t, local2, remote2)
		if _, err := b.Local.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		nm := &offv1beta1.NamespaceMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: string(rt.ProviderID),
			Labels: map[string]string{consts.RemoteClusterIDLabel: string(rt.ProviderID), consts.ReplicationLabel: "true"}},
			Spec: offv1beta1.NamespaceMapSpec{DesiredMapping: map[string]string{local: remote}}}
		if err := b.Consumer.Client.Create(ctx, nm); err != nil {
			t.Fatal(err)
		}
		runner := vnode.NewRunner(b.Local, vnode.Options{ConsumerID: rt.ConsumerID, LocalConfig: b.Consumer.Config,
			Reflectors: []vnode.Reflector{objects.New()}}, testr.New(top))
		vn := &offv1beta1.VirtualNode{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "vk-" + string(rt.ProviderID)},
			Spec: offv1beta1.VirtualNodeSpec{ClusterID: rt.ProviderID}}
		if err := runner.Ensure(top.Context(), vn, b.RemoteConfig); err != nil {
			t.Fatal(err)
		}
		top.Cleanup(func() { _ = runner.Stop(context.Background(), vn.Name) })
		lc, rc := b.Local.CoreV1().ConfigMaps(local), b.Admin.CoreV1().ConfigMaps(remote)
		for _, ns := range []string{local, local2} {
			if _, err := b.Local.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "early"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		rt.Never(t, "reflection before the provider accepted the mapping", time.Second, func(ctx context.Context) bool {
			_, err := rc.Get(ctx, "early", metav1.GetOptions{})
			return !apierrors.IsNotFound(err)
		})
		// The provider's answer, as replication brings it back; shop2 is accepted but not
		// desired (yet).
		nm.Status.CurrentMapping = map[string]offv1beta1.RemoteNamespaceStatus{
			local:  {RemoteNamespace: remote, Phase: offv1beta1.MappingAccepted},
			local2: {RemoteNamespace: remote2, Phase: offv1beta1.MappingAccepted}}
		if err := b.Consumer.Client.Status().Update(ctx, nm); err != nil {
			t.Fatal(err)
		}
		rt.Eventually(t, "the ConfigMap reflected once the mapping is accepted", timeout, func(ctx context.Context) (bool, error) {
			_, err := rc.Get(ctx, "early", metav1.GetOptions{})
			return err == nil, err
		})
		// shop withdrawn from the desired mapping and shop2 added, in one change: once shop2 is
		// reflected, the mapper has handled shop's withdrawal too (ends come first).
		nm.Spec.DesiredMapping = map[string]string{local2: remote2}
		if err := b.Consumer.Client.Update(ctx, nm); err != nil {
			t.Fatal(err)
		}
		rt.Eventually(t, "the newly desired namespace reflected", timeout, func(ctx context.Context) (bool, error) {
			_, err := b.Admin.CoreV1().ConfigMaps(remote2).Get(ctx, "early", metav1.GetOptions{})
			return err == nil, err
		})
		if _, err := lc.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rt.Never(t, "reflection after the mapping was withdrawn", 2*time.Second, func(ctx context.Context) bool {
			_, err := rc.Get(ctx, "late", metav1.GetOptions{})
			return !apierrors.IsNotFound(err)
		})
	})
}

// waitConfigMap waits until the copy of a ConfigMap in remote namespace ns satisfies ok, and
// returns it.
func waitConfigMap(t *testing.T, b *rt.Bed, ns, name string, ok func(*corev1.ConfigMap) bool) *corev1.ConfigMap {
	t.Helper()
	var got *corev1.ConfigMap
	rt.Eventually(t, "remote ConfigMap "+name, timeout, func(ctx context.Context) (bool, error) {
		var err error
		got, err = b.Admin.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && ok(got), err
	})
	return got
}

// ledger returns the names the reflector recorded in remote namespace ns's Secret ledger.
func ledger(t *testing.T, b *rt.Bed, ns string) []string {
	t.Helper()
	cm, err := b.Admin.CoreV1().ConfigMaps(ns).Get(t.Context(), objects.SecretLedgerConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(cm.Data))
}

// ledgerHas says whether the Secret ledger of remote namespace ns records name.
func ledgerHas(t *testing.T, b *rt.Bed, ns, name string) bool {
	t.Helper()
	return slices.Contains(ledger(t, b, ns), name)
}

// waitSecretPolicy waits until the provider enforces its policy on consumers' Secret writes
// (the API server loads policies asynchronously): the consumer's dry-run delete of the
// provider's own Secret name in remote namespace ns is denied.
func waitSecretPolicy(t *testing.T, b *rt.Bed, ns, name string) {
	t.Helper()
	rt.Eventually(t, "the provider's Secret policy enforced", timeout, func(ctx context.Context) (bool, error) {
		err := b.Remote.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), consts.ReflectedSecretsPolicy), err
	})
}

// waitGone waits until get reports NotFound.
func waitGone(t *testing.T, what string, get func(ctx context.Context) error) {
	t.Helper()
	rt.Eventually(t, what, timeout, func(ctx context.Context) (bool, error) {
		err := get(ctx)
		return apierrors.IsNotFound(err), err
	})
}

// startShadowEndpointSlices runs, until t ends, the provider's ShadowEndpointSlice controller,
// which makes the EndpointSlices of the reflected ShadowEndpointSlices.
func startShadowEndpointSlices(t *testing.T, b *rt.Bed) {
	testenv.StartManager(t, b.Provider, func(mgr ctrl.Manager) error {
		return (&shadowendpointslice.Reconciler{Client: mgr.GetClient(),
			Recorder: mgr.GetEventRecorder("liqo-shadowendpointslice")}).SetupWithManager(mgr)
	})
}

// waitShadowSlice waits for the ShadowEndpointSlice ns/name on the provider to satisfy ok.
func waitShadowSlice(t *testing.T, b *rt.Bed, ns, name string, ok func(*offv1beta1.ShadowEndpointSlice) bool) *offv1beta1.ShadowEndpointSlice {
	t.Helper()
	got := &offv1beta1.ShadowEndpointSlice{}
	rt.Eventually(t, "the ShadowEndpointSlice "+ns+"/"+name, timeout, func(ctx context.Context) (bool, error) {
		err := b.Provider.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got)
		return err == nil && ok(got), err
	})
	return got
}

// waitProviderSlice waits for the EndpointSlice ns/name on the provider to satisfy ok.
func waitProviderSlice(t *testing.T, b *rt.Bed, ns, name string, ok func(*discoveryv1.EndpointSlice) bool) *discoveryv1.EndpointSlice {
	t.Helper()
	var got *discoveryv1.EndpointSlice
	rt.Eventually(t, "the provider's EndpointSlice "+ns+"/"+name, timeout, func(ctx context.Context) (bool, error) {
		var err error
		got, err = b.Admin.DiscoveryV1().EndpointSlices(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && ok(got), err
	})
	return got
}

// testUpgradedEndpointSlice: an EndpointSlice that an earlier version of our virtual kubelet
// reflected directly into the remote namespace (its managed-by value, our reflection labels) is
// not left beside the one made of the ShadowEndpointSlice now reflected: the provider takes it
// over, the same object, with the new content.
func testUpgradedEndpointSlice(t *testing.T, b *rt.Bed) {
	ctx := t.Context()
	legacy := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "legacy-abcde",
		Labels: map[string]string{discoveryv1.LabelServiceName: "legacy", discoveryv1.LabelManagedBy: consts.LegacyEndpointSliceManagedBy,
			consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: string(rt.ConsumerID)},
		Annotations: map[string]string{consts.OriginNamespaceAnnotation: localNS}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.3.1"}}}}
	legacy, err := b.Admin.DiscoveryV1().EndpointSlices(remoteNS).Create(ctx, legacy, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Local.CoreV1().Services(localNS).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "legacy"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Local.DiscoveryV1().EndpointSlices(localNS).Create(ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{
		Name: "legacy-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: "legacy"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.3.2"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	shadow := waitShadowSlice(t, b, remoteNS, "legacy-abcde", func(*offv1beta1.ShadowEndpointSlice) bool { return true })
	eps := waitProviderSlice(t, b, remoteNS, "legacy-abcde", func(e *discoveryv1.EndpointSlice) bool { return metav1.IsControlledBy(e, shadow) })
	if eps.UID != legacy.UID || len(eps.Endpoints) != 1 || eps.Endpoints[0].Addresses[0] != "10.244.3.2" ||
		eps.Labels[discoveryv1.LabelManagedBy] != consts.UpstreamEndpointSliceManagedBy {
		t.Errorf("EndpointSlice after the upgrade: uid %s (earlier %s), labels %v, endpoints %+v; want the earlier object, taken over",
			eps.UID, legacy.UID, eps.Labels, eps.Endpoints)
	}
	list, err := b.Admin.DiscoveryV1().EndpointSlices(remoteNS).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=legacy"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Errorf("%d EndpointSlices of Service legacy on the provider, want 1", len(list.Items))
	}
}
