package shadowendpointslice_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/shadowendpointslice"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

const (
	consumer = "cl-consumer"
	remoteNS = "demo-cl-consumer"
	timeout  = 30 * time.Second
)

// shadow is a ShadowEndpointSlice of Service web in remoteNS, as upstream's virtual kubelet
// writes it, with the given origin (upstream's label).
func shadow(name, origin string) *offv1beta1.ShadowEndpointSlice {
	return &offv1beta1.ShadowEndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: remoteNS, Name: name, Labels: map[string]string{
			discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice.reflection.liqo.io",
			consts.UpstreamOriginLabel: origin, consts.UpstreamDestinationLabel: "cl-provider"},
			Annotations: map[string]string{"note": "a"}},
		Spec: offv1beta1.ShadowEndpointSliceSpec{Template: offv1beta1.EndpointSliceTemplate{
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.7"},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, NodeName: ptr.To(consumer)}},
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
		}},
	}
}

// warned waits for a Warning Event with reason on the ShadowEndpointSlice named name in namespace ns.
func warned(t *testing.T, c client.Client, ns, name, reason string) {
	t.Helper()
	testenv.Eventually(t, "a "+reason+" Warning on "+name, timeout, func(ctx context.Context) bool {
		evs := &eventsv1.EventList{}
		return c.List(ctx, evs, client.InNamespace(ns)) == nil && slices.ContainsFunc(evs.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Name == name && e.Regarding.Kind == "ShadowEndpointSlice" && e.Reason == reason &&
				e.Type == corev1.EventTypeWarning
		})
	})
}

// TestShadowEndpointSlices: one provider API server (no garbage collector) with the controller,
// and a consumer's remote namespace in it.
func TestShadowEndpointSlices(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider"})
	c := env.Cluster("provider")
	testenv.StartManager(t, c, func(mgr ctrl.Manager) error {
		return (&shadowendpointslice.Reconciler{Client: mgr.GetClient(),
			Recorder: mgr.GetEventRecorder("liqo-shadowendpointslice")}).SetupWithManager(mgr)
	})
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: remoteNS, Labels: map[string]string{consts.RemoteNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
	} {
		if err := c.Client.Create(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("made, updated, deleted", func(t *testing.T) { testLifecycle(t, c.Client) })
	t.Run("wrong origin refused", func(t *testing.T) { testRefused(t, c.Client) })
	t.Run("foreign EndpointSlice left alone", func(t *testing.T) { testForeign(t, c.Client) })
	t.Run("EndpointSlice of an earlier virtual kubelet taken over", func(t *testing.T) { testAdopted(t, c.Client) })
	// Last: the consumer's ForeignCluster it makes stays.
	t.Run("not ready while the peering is down", func(t *testing.T) { testPeerDown(t, c.Client) })
	t.Run("addresses remapped", func(t *testing.T) { testRemapped(t, c.Client) })
}

// testLifecycle: a ShadowEndpointSlice becomes an EndpointSlice it controls, with its labels,
// annotations and template; changes reach it (an addressType change replaces it); deleting the
// ShadowEndpointSlice deletes it.
func testLifecycle(t *testing.T, c client.Client) {
	ctx := t.Context()
	sh := shadow("web-abcde", consumer)
	if err := c.Create(ctx, sh); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(sh)
	eps := &discoveryv1.EndpointSlice{}
	testenv.Eventually(t, "the EndpointSlice of the ShadowEndpointSlice", timeout, func(ctx context.Context) bool {
		return c.Get(ctx, key, eps) == nil
	})
	if !metav1.IsControlledBy(eps, sh) || eps.Labels[discoveryv1.LabelServiceName] != "web" || eps.Labels[consts.UpstreamOriginLabel] != consumer ||
		eps.Labels["liqo.io/managed-by"] != "shadowendpointslice" || eps.Annotations["note"] != "a" {
		t.Errorf("EndpointSlice: owners %v labels %v annotations %v; want controlled by the ShadowEndpointSlice, with its labels and annotations",
			eps.OwnerReferences, eps.Labels, eps.Annotations)
	}
	if eps.AddressType != discoveryv1.AddressTypeIPv4 || len(eps.Endpoints) != 1 || eps.Endpoints[0].Addresses[0] != "10.244.1.7" ||
		!ptr.Deref(eps.Endpoints[0].Conditions.Ready, false) || len(eps.Ports) != 1 || ptr.Deref(eps.Ports[0].Port, 0) != 80 {
		t.Errorf("EndpointSlice content: %s %+v %+v, want the ShadowEndpointSlice's template", eps.AddressType, eps.Endpoints, eps.Ports)
	}

	if err := c.Patch(ctx, sh, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"front"},"annotations":{"note":null}},`+
		`"spec":{"template":{"endpoints":[{"addresses":["10.244.1.8"],"conditions":{"ready":false}},{"addresses":["10.244.1.9"]}]}}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the label, annotation and endpoints on the EndpointSlice", timeout, func(ctx context.Context) bool {
		_, hasNote := eps.Annotations["note"]
		return c.Get(ctx, key, eps) == nil && eps.Labels["tier"] == "front" && !hasNote && len(eps.Endpoints) == 2 &&
			eps.Endpoints[0].Addresses[0] == "10.244.1.8" && !ptr.Deref(eps.Endpoints[0].Conditions.Ready, true)
	})

	oldUID := eps.UID
	if err := c.Patch(ctx, sh, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"template":{"addressType":"IPv6","endpoints":[{"addresses":["fd00::8"]}]}}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "an IPv6 EndpointSlice in place of the IPv4 one", timeout, func(ctx context.Context) bool {
		return c.Get(ctx, key, eps) == nil && eps.UID != oldUID && eps.AddressType == discoveryv1.AddressTypeIPv6 &&
			len(eps.Endpoints) == 1 && eps.Endpoints[0].Addresses[0] == "fd00::8"
	})

	if err := c.Delete(ctx, sh); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the EndpointSlice gone with its ShadowEndpointSlice (no garbage collector runs here)", timeout, func(ctx context.Context) bool {
		return apierrors.IsNotFound(c.Get(ctx, key, &discoveryv1.EndpointSlice{}))
	})
}

// testRefused: a ShadowEndpointSlice naming another consumer, or two (upstream's label and ours
// disagreeing), or none, or outside a remote namespace, gets a Warning and no EndpointSlice; one
// whose origin label changes to another consumer loses its EndpointSlice; one with our labels
// only is accepted.
func testRefused(t *testing.T, c client.Client) {
	ctx := t.Context()
	other := shadow("other-origin", "cl-other")
	ours := shadow("ours-other-origin", consumer) // upstream's label and ours disagree
	ours.Labels[consts.OriginClusterIDLabel], ours.Labels[consts.ReflectedLabel] = "cl-other", "true"
	none := shadow("no-origin", consumer)
	delete(none.Labels, consts.UpstreamOriginLabel)
	outside := shadow("outside", consumer)
	outside.Namespace = "plain"
	for _, s := range []*offv1beta1.ShadowEndpointSlice{other, ours, none, outside} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	warned(t, c, remoteNS, "other-origin", "OriginMismatch")
	warned(t, c, remoteNS, "ours-other-origin", "OriginMismatch")
	warned(t, c, remoteNS, "no-origin", "OriginMismatch")
	warned(t, c, "plain", "outside", "NotInRemoteNamespace")
	for _, s := range []*offv1beta1.ShadowEndpointSlice{other, ours, none, outside} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), &discoveryv1.EndpointSlice{}); !apierrors.IsNotFound(err) {
			t.Errorf("EndpointSlice of refused ShadowEndpointSlice %s/%s: %v, want not found", s.Namespace, s.Name, err)
		}
	}

	oursOnly := shadow("ours-only", consumer)
	delete(oursOnly.Labels, consts.UpstreamOriginLabel)
	oursOnly.Labels[consts.OriginClusterIDLabel], oursOnly.Labels[consts.ReflectedLabel] = consumer, "true"
	if err := c.Create(ctx, oursOnly); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the EndpointSlice of a ShadowEndpointSlice with our origin labels only", timeout, func(ctx context.Context) bool {
		return c.Get(ctx, client.ObjectKeyFromObject(oursOnly), &discoveryv1.EndpointSlice{}) == nil
	})

	turned := shadow("turned", consumer)
	if err := c.Create(ctx, turned); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(turned)
	testenv.Eventually(t, "the EndpointSlice of turned", timeout, func(ctx context.Context) bool {
		return c.Get(ctx, key, &discoveryv1.EndpointSlice{}) == nil
	})
	if err := c.Patch(ctx, turned, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"`+consts.UpstreamOriginLabel+`":"cl-other"}}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the EndpointSlice of turned deleted once its origin is another consumer", timeout, func(ctx context.Context) bool {
		return apierrors.IsNotFound(c.Get(ctx, key, &discoveryv1.EndpointSlice{}))
	})
}

// testForeign: an EndpointSlice that the ShadowEndpointSlice of the same name does not own is
// left as it is, with a NameTaken Warning.
func testForeign(t *testing.T, c client.Client) {
	ctx := t.Context()
	foreign := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNS, Name: "taken",
		Labels: map[string]string{discoveryv1.LabelServiceName: "mine"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}}}
	if err := c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, shadow("taken", consumer)); err != nil {
		t.Fatal(err)
	}
	warned(t, c, remoteNS, "taken", "NameTaken")
	got := &discoveryv1.EndpointSlice{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil {
		t.Fatal(err)
	}
	if got.UID != foreign.UID || got.ResourceVersion != foreign.ResourceVersion || len(got.OwnerReferences) != 0 ||
		got.Labels[discoveryv1.LabelServiceName] != "mine" || got.Endpoints[0].Addresses[0] != "10.0.0.1" {
		t.Errorf("the foreign EndpointSlice changed: %+v", got)
	}
}

// testPeerDown: while the consumer's ForeignCluster reports its network tunnel not established,
// the endpoints the consumer says are ready (or does not say) are not ready, one it says is not
// ready stays so; once the tunnel is up they are as the consumer wrote them.
func testPeerDown(t *testing.T, c client.Client) {
	ctx := t.Context()
	fc := &corev1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: consumer}, Spec: corev1beta1.ForeignClusterSpec{ClusterID: consumer}}
	if err := c.Create(ctx, fc); err != nil {
		t.Fatal(err)
	}
	setTunnel := func(s corev1beta1.ConditionStatusType) {
		t.Helper()
		fc.Status.Role = corev1beta1.ConsumerRole
		fc.Status.Modules.Networking = corev1beta1.Module{Enabled: true,
			Conditions: []corev1beta1.Condition{{Type: corev1beta1.NetworkConnectionStatusCondition, Status: s}}}
		if err := c.Status().Update(ctx, fc); err != nil {
			t.Fatal(err)
		}
	}
	setTunnel(corev1beta1.ConditionStatusPending)

	sh := shadow("peer-down", consumer)
	sh.Spec.Template.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		{Addresses: []string{"10.244.1.11"}}, {Addresses: []string{"10.244.1.12"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}}
	if err := c.Create(ctx, sh); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(sh)
	readiness := func(ctx context.Context, want ...*bool) bool {
		eps := &discoveryv1.EndpointSlice{}
		if c.Get(ctx, key, eps) != nil || len(eps.Endpoints) != len(want) {
			return false
		}
		for i, w := range want {
			if got := eps.Endpoints[i].Conditions.Ready; (got == nil) != (w == nil) || got != nil && *got != *w {
				return false
			}
		}
		return true
	}
	testenv.Eventually(t, "every endpoint not ready while the tunnel is pending", timeout, func(ctx context.Context) bool {
		return readiness(ctx, ptr.To(false), ptr.To(false), ptr.To(false))
	})
	setTunnel(corev1beta1.ConditionStatusEstablished)
	testenv.Eventually(t, "the endpoints as the consumer wrote them once the tunnel is established", timeout, func(ctx context.Context) bool {
		return readiness(ctx, ptr.To(true), nil, ptr.To(false))
	})
}

// testRemapped: once the consumer's Configuration says this cluster sees its pod CIDR
// 10.244.0.0/16 as 10.71.0.0/16, the endpoints in it are written under the remapped CIDR, the
// others as they are.
func testRemapped(t *testing.T, c client.Client) {
	ctx := t.Context()
	sh := shadow("remapped", consumer)
	sh.Spec.Template.Endpoints = append(sh.Spec.Template.Endpoints, discoveryv1.Endpoint{Addresses: []string{"192.168.5.5"}})
	if err := c.Create(ctx, sh); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(sh)
	addresses := func(ctx context.Context, want ...string) bool {
		eps := &discoveryv1.EndpointSlice{}
		if c.Get(ctx, key, eps) != nil || len(eps.Endpoints) != len(want) {
			return false
		}
		for i, w := range want {
			if eps.Endpoints[i].Addresses[0] != w {
				return false
			}
		}
		return true
	}
	testenv.Eventually(t, "the addresses as written without a Configuration", timeout, func(ctx context.Context) bool {
		return addresses(ctx, "10.244.1.7", "192.168.5.5")
	})
	tenant := "liqo-tenant-" + consumer
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}}); err != nil {
		t.Fatal(err)
	}
	conf := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: consumer,
		Labels: map[string]string{consts.RemoteClusterIDLabel: consumer}},
		Spec: netv1beta1.ConfigurationSpec{Remote: netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{"10.244.0.0/16"}}}}}
	if err := c.Create(ctx, conf); err != nil {
		t.Fatal(err)
	}
	conf.Status.Remote = &netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{"10.71.0.0/16"}}}
	if err := c.Status().Update(ctx, conf); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the pod address under the remapped CIDR", timeout, func(ctx context.Context) bool {
		return addresses(ctx, "10.71.1.7", "192.168.5.5")
	})
}

// legacySlice is an EndpointSlice as our virtual kubelet reflected it directly before it wrote
// ShadowEndpointSlices, from cluster origin.
func legacySlice(name, origin string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNS, Name: name,
		Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: consts.LegacyEndpointSliceManagedBy,
			consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: origin}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.1"}}}}
}

// testAdopted: an EndpointSlice that our virtual kubelet of this consumer reflected directly
// (an upgrade from before ShadowEndpointSlices) is taken over, the same object, by the
// ShadowEndpointSlice of its name; one labelled so by another consumer is not.
func testAdopted(t *testing.T, c client.Client) {
	ctx := t.Context()
	old, foreign := legacySlice("upgraded", consumer), legacySlice("other-legacy", "cl-other")
	for _, eps := range []*discoveryv1.EndpointSlice{old, foreign} {
		if err := c.Create(ctx, eps); err != nil {
			t.Fatal(err)
		}
	}
	sh := shadow("upgraded", consumer)
	if err := c.Create(ctx, sh); err != nil {
		t.Fatal(err)
	}
	eps := &discoveryv1.EndpointSlice{}
	testenv.Eventually(t, "the earlier virtual kubelet's EndpointSlice controlled by the ShadowEndpointSlice", timeout, func(ctx context.Context) bool {
		return c.Get(ctx, client.ObjectKeyFromObject(old), eps) == nil && metav1.IsControlledBy(eps, sh)
	})
	if eps.UID != old.UID || eps.Labels[discoveryv1.LabelManagedBy] != consts.UpstreamEndpointSliceManagedBy ||
		eps.Labels["liqo.io/managed-by"] != "shadowendpointslice" || len(eps.Endpoints) != 1 || eps.Endpoints[0].Addresses[0] != "10.244.1.7" {
		t.Errorf("taken-over EndpointSlice: uid %s (was %s), labels %v, endpoints %+v; want the same object with the ShadowEndpointSlice's labels and template",
			eps.UID, old.UID, eps.Labels, eps.Endpoints)
	}
	if err := c.Create(ctx, shadow("other-legacy", consumer)); err != nil {
		t.Fatal(err)
	}
	warned(t, c, remoteNS, "other-legacy", "NameTaken")
	got := &discoveryv1.EndpointSlice{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != foreign.ResourceVersion || len(got.OwnerReferences) != 0 {
		t.Errorf("another consumer's reflected EndpointSlice changed: %+v", got)
	}
}
