package tenant_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/identity"
	"github.com/peerkit/terraform-provider-liqo/controllers/namespacemap"
	"github.com/peerkit/terraform-provider-liqo/controllers/nonce"
	"github.com/peerkit/terraform-provider-liqo/controllers/tenant"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

func tenantNamespace(name, remote string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{consts.RemoteClusterIDLabel: remote, consts.TenantNamespaceLabel: "true"}}}
}

// handshake carries the provider's nonce in ns to the consumer and returns the consumer's answer.
func handshake(t *testing.T, provider, consumer client.Client, providerNS, consumerNS string) *corev1.Secret {
	t.Helper()
	ctx := t.Context()
	ns := &corev1.Namespace{}
	if err := provider.Get(ctx, client.ObjectKey{Name: providerNS}, ns); err != nil {
		t.Fatal(err)
	}
	if err := peering.AskNonce(ctx, provider, providerNS, ns.Labels[consts.RemoteClusterIDLabel]); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Secret{}
	testenv.Poll(t, "the provider's nonce", 45*time.Second, func(ctx context.Context) (bool, error) {
		return provider.Get(ctx, client.ObjectKey{Namespace: providerNS, Name: consts.NonceSecret}, n) == nil && len(n.Data[consts.NonceKey]) > 0, nil
	})
	req := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consumerNS, Name: consts.SignedNonceSecret},
		Data: map[string][]byte{consts.NonceKey: n.Data[consts.NonceKey]}}
	if err := consumer.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the consumer's signature", 45*time.Second, func(ctx context.Context) (bool, error) {
		err := consumer.Get(ctx, client.ObjectKeyFromObject(req), req)
		return err == nil && len(req.Data[consts.SignedNonceKey]) > 0, nil
	})
	return req
}

// peerClusters starts a consumer and a provider (with a controller manager, which signs the
// consumer's certificates), each with its cluster identity: cl-consumer and cl-provider.
func peerClusters(t *testing.T) (cons, prov *testenv.Cluster) {
	t.Helper()
	env := testenv.New(t, testenv.ClusterOptions{Name: "consumer"}, testenv.ClusterOptions{Name: "provider", ControllerManager: true})
	cons, prov = env.Cluster("consumer"), env.Cluster("provider")
	if _, err := clusteridentity.Ensure(t.Context(), cons.Client, clusteridentity.Config{ClusterID: "cl-consumer"}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusteridentity.Ensure(t.Context(), prov.Client, clusteridentity.Config{ClusterID: "cl-provider"}); err != nil {
		t.Fatal(err)
	}
	return cons, prov
}

// identityClient is a client of the provider authenticated as the identity whose kubeconfig
// Secret is secret.
func identityClient(t *testing.T, secret *corev1.Secret, scheme *runtime.Scheme) client.Client {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[consts.KubeconfigSecretKey])
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// handshakeInTenantNamespaces creates the tenant namespaces t-cons on the provider and t-prov
// on the consumer, and carries the provider's nonce to the consumer; it returns the consumer's
// answer.
func handshakeInTenantNamespaces(t *testing.T, prov, cons *testenv.Cluster) *corev1.Secret {
	t.Helper()
	if err := prov.Client.Create(t.Context(), tenantNamespace("t-cons", "cl-consumer")); err != nil {
		t.Fatal(err)
	}
	if err := cons.Client.Create(t.Context(), tenantNamespace("t-prov", "cl-provider")); err != nil {
		t.Fatal(err)
	}
	return handshake(t, prov.Client, cons.Client, "t-cons", "t-prov")
}

// answeredTenant is the Tenant of cl-consumer in the provider's namespace ns, with condition
// cond, made of the consumer's answer to the handshake.
func answeredTenant(answer *corev1.Secret, ns string, cond authv1beta1.TenantCondition) *authv1beta1.Tenant {
	return &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cl-consumer"}, Spec: authv1beta1.TenantSpec{
		ClusterID: "cl-consumer", AuthzPolicy: "KeysExchange", TenantCondition: cond,
		PublicKey: answer.Data[consts.PublicKeySecretKey], Signature: answer.Data[consts.SignedNonceKey], CSR: answer.Data[consts.CSRKey],
	}}
}

// TestHandshakeIssuesLeastPrivilegeIdentity: from nonce to a working consumer identity across two
// clusters; the identity can do what a consumer's control plane needs in its tenant namespace
// and nothing else, and works in the consumer's remote namespace; a wrong signature is refused
// with a reason; deleting the Tenant revokes the access, in the tenant namespace and in the
// remote namespace, where the consumer is not bound again.
func TestHandshakeIssuesLeastPrivilegeIdentity(t *testing.T) {
	cons, prov := peerClusters(t)
	ctx := t.Context()
	testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		if err := (&nonce.ProviderReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err
		}
		if err := (&namespacemap.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("namespacemap")}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&tenant.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("tenant"),
			APIServerURL: prov.Config.Host, CAData: prov.Config.CAData}).SetupWithManager(mgr)
	})
	testenv.StartManager(t, cons, func(mgr ctrl.Manager) error {
		if err := (&nonce.ConsumerReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&identity.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})

	const provNS, consNS = "liqo-tenant-cl-consumer", "liqo-tenant-cl-provider"
	const remoteNS = "demo-cl-consumer" // the consumer's remote namespace on the provider
	for _, o := range []struct {
		c  client.Client
		ns *corev1.Namespace
	}{{prov.Client, tenantNamespace(provNS, "cl-consumer")}, {cons.Client, tenantNamespace(consNS, "cl-provider")},
		{prov.Client, tenantNamespace("other-tenant", "cl-other")}} {
		if err := o.c.Create(ctx, o.ns); err != nil {
			t.Fatal(err)
		}
	}
	answer := handshake(t, prov.Client, cons.Client, provNS, consNS)

	tn := answeredTenant(answer, provNS, authv1beta1.TenantConditionActive)
	if err := prov.Client.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the tenant's issued certificate", 45*time.Second, func(ctx context.Context) (bool, error) {
		err := prov.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn)
		return err == nil && tn.Status.AuthParams != nil && len(tn.Status.AuthParams.SignedCRT) > 0, nil
	})

	id := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "controlplane"}, Spec: authv1beta1.IdentitySpec{
		ClusterID: "cl-provider", Type: "ControlPlane", Namespace: provNS, AuthParams: *tn.Status.AuthParams,
	}}
	if err := cons.Client.Create(ctx, id); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	testenv.Poll(t, "the identity's kubeconfig Secret", 45*time.Second, func(ctx context.Context) (bool, error) {
		err := cons.Client.Get(ctx, client.ObjectKey{Namespace: consNS, Name: identity.SecretName(id.Name)}, secret)
		return err == nil, nil
	})
	if secret.Labels[consts.IdentityTypeLabel] != "ControlPlane" || secret.Labels[consts.RemoteClusterIDLabel] != "cl-provider" ||
		secret.Annotations[consts.RemoteTenantNamespaceAnnotation] != provNS {
		t.Errorf("kubeconfig Secret labels %v annotations %v", secret.Labels, secret.Annotations)
	}

	// The issued identity, used for real requests against the provider.
	peer := identityClient(t, secret, prov.Client.Scheme())
	providerID := corev1beta1.ClusterID("cl-provider")
	slice := func(ns string) *authv1beta1.ResourceSlice {
		return &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "slice-"},
			Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &providerID}}
	}
	if err := peer.Create(ctx, slice(provNS)); err != nil {
		t.Errorf("consumer identity cannot create a ResourceSlice in its tenant namespace: %v", err)
	}
	if err := peer.Create(ctx, slice("other-tenant")); !apierrors.IsForbidden(err) {
		t.Errorf("creating a ResourceSlice in another tenant's namespace: %v, want Forbidden", err)
	}
	if err := peer.List(ctx, &corev1.SecretList{}, client.InNamespace(provNS)); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets in its tenant namespace: %v, want Forbidden", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if err := peer.Create(ctx, pod); !apierrors.IsForbidden(err) {
		t.Errorf("creating a pod: %v, want Forbidden", err)
	}

	// A remote namespace of the consumer, as its replicated NamespaceMap asks: the identity
	// works there.
	nm := &offv1beta1.NamespaceMap{ObjectMeta: metav1.ObjectMeta{Namespace: provNS, Name: "cl-provider",
		Labels: map[string]string{consts.ReplicationOriginLabel: "cl-consumer", consts.RemoteClusterIDLabel: "cl-consumer"}},
		Spec: offv1beta1.NamespaceMapSpec{DesiredMapping: map[string]string{"demo": remoteNS}}}
	if err := prov.Client.Create(ctx, nm); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the remote namespace Accepted", 45*time.Second, func(ctx context.Context) (bool, error) {
		err := prov.Client.Get(ctx, client.ObjectKeyFromObject(nm), nm)
		return err == nil && nm.Status.CurrentMapping["demo"].Phase == offv1beta1.MappingAccepted, nil
	})
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}
	shadowPod := func() error {
		return peer.Create(ctx, &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNS, GenerateName: "sp-"},
			Spec: offv1beta1.ShadowPodSpec{Pod: podSpec}})
	}
	getConfigMap := func() error {
		return peer.Get(ctx, client.ObjectKey{Namespace: remoteNS, Name: "cm"}, &corev1.ConfigMap{})
	}
	if err := shadowPod(); err != nil {
		t.Errorf("consumer identity cannot create a ShadowPod in its remote namespace: %v", err)
	}
	if err := peer.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNS, Name: "cm"}}); err != nil {
		t.Errorf("consumer identity cannot create a ConfigMap in its remote namespace: %v", err)
	}
	if err := getConfigMap(); err != nil {
		t.Errorf("consumer identity cannot read a ConfigMap in its remote namespace: %v", err)
	}

	// Nothing of the network fabric, nor Nodes: in its tenant namespace, its remote namespace,
	// the liqo namespace or cluster-wide.
	wantNoFabricAccess(t, peer, provNS, remoteNS, consts.LiqoNamespace)

	// A wrong signature is refused, with the reason in an Event.
	bad := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "other-tenant", Name: "cl-other"}, Spec: authv1beta1.TenantSpec{
		ClusterID: "cl-other", AuthzPolicy: "KeysExchange", PublicKey: answer.Data[consts.PublicKeySecretKey],
		Signature: answer.Data[consts.SignedNonceKey], CSR: answer.Data[consts.CSRKey],
	}}
	if err := prov.Client.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, prov.Client, bad, "SignatureInvalid")
	if err := prov.Client.Get(ctx, client.ObjectKeyFromObject(bad), bad); err != nil || bad.Status.AuthParams != nil {
		t.Errorf("refused tenant got credentials: %+v %v", bad.Status.AuthParams, err)
	}

	// Deleting the Tenant revokes the access once the consumer's replicated Renews are gone (the
	// copy upstream's CRD replicator deletes before it lets the consumer's original go): until
	// then the consumer may still delete it.
	renew := &authv1beta1.Renew{ObjectMeta: metav1.ObjectMeta{Namespace: provNS, Name: "controlplane-cl-provider",
		Labels: map[string]string{consts.ReplicationOriginLabel: "cl-consumer", consts.ReplicatedLabel: "true"}},
		Spec: authv1beta1.RenewSpec{ConsumerClusterID: "cl-consumer", IdentityType: authv1beta1.ControlPlaneIdentityType}}
	if err := peer.Create(ctx, renew); err != nil {
		t.Fatalf("the consumer's control plane replicating a Renew: %v", err)
	}
	if err := prov.Client.Delete(ctx, tn); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := peer.Delete(ctx, renew); err != nil {
		t.Errorf("the consumer deleting its replicated Renew 3 s after its Tenant was deleted: %v, want it still allowed", err)
	}
	testenv.Poll(t, "access revoked", 45*time.Second, func(ctx context.Context) (bool, error) {
		err := peer.List(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(provNS))
		return apierrors.IsForbidden(err), nil
	})
	testenv.Poll(t, "tenant gone (finalizer released)", 45*time.Second, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(prov.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn)), nil
	})
	// Also in its remote namespace, which stays: no ShadowPod, no ConfigMap; and the
	// NamespaceMap controller, having seen the consumer has no Tenant, does not bind it again.
	testenv.Poll(t, "access to the remote namespace revoked", 45*time.Second, func(ctx context.Context) (bool, error) {
		return apierrors.IsForbidden(shadowPod()) && apierrors.IsForbidden(getConfigMap()), nil
	})
	expectEvent(t, prov.Client, nm, "NoTenant")
	for _, name := range []string{namespacemap.RoleBindingName, namespacemap.SliceRoleBindingName} {
		if err := prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNS, Name: name}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
			t.Errorf("workload binding %s after the Tenant went: %v, want NotFound", name, err)
		}
	}
	if err := prov.Client.Get(ctx, client.ObjectKey{Name: remoteNS}, &corev1.Namespace{}); err != nil {
		t.Errorf("remote namespace after the Tenant went: %v", err)
	}
	if err := shadowPod(); !apierrors.IsForbidden(err) {
		t.Errorf("creating a ShadowPod in the remote namespace after revocation: %v, want Forbidden", err)
	}
	if err := getConfigMap(); !apierrors.IsForbidden(err) {
		t.Errorf("reading a ConfigMap in the remote namespace after revocation: %v, want Forbidden", err)
	}
}

// fabricKinds are the network fabric's kinds (networking.liqo.io, issue 32) and Nodes, which
// the fabric reads: a consumer's identity on a provider may do nothing with any of them.
var fabricKinds = []struct {
	kind       string
	namespaced bool
}{{"InternalNode", false}, {"InternalFabric", true}, {"GeneveTunnel", true}, {"RouteConfiguration", true},
	{"FirewallConfiguration", true}, {"Node", false}}

// wantNoFabricAccess checks that peer, a consumer's identity on the provider, is Forbidden to
// list, get, create and delete each of fabricKinds: cluster-wide, and in each of namespaces for
// the namespaced ones.
func wantNoFabricAccess(t *testing.T, peer client.Client, namespaces ...string) {
	t.Helper()
	ctx := t.Context()
	for _, k := range fabricKinds {
		gv := "networking.liqo.io/v1beta1"
		if k.kind == "Node" {
			gv = "v1"
		}
		obj := func(ns string) *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(gv)
			u.SetKind(k.kind)
			u.SetNamespace(ns)
			u.SetName("probe")
			return u
		}
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(gv)
		list.SetKind(k.kind + "List")
		scopes := []string{""}
		if k.namespaced {
			scopes = append(scopes, namespaces...)
		}
		for _, ns := range scopes {
			verbs := map[string]func() error{"list": func() error { return peer.List(ctx, list, client.InNamespace(ns)) }}
			if ns != "" || !k.namespaced { // a namespaced object has a namespace: cluster-wide, only list
				verbs["get"] = func() error { return peer.Get(ctx, client.ObjectKeyFromObject(obj(ns)), obj(ns)) }
				verbs["create"] = func() error { return peer.Create(ctx, obj(ns)) }
				verbs["delete"] = func() error { return peer.Delete(ctx, obj(ns)) }
			}
			for verb, do := range verbs {
				if err := do(); !apierrors.IsForbidden(err) {
					t.Errorf("consumer identity: %s %s in namespace %q: %v, want Forbidden", verb, k.kind, ns, err)
				}
			}
		}
	}
}

// TestCordonedTenantGetsNoIdentity: a Cordoned tenant's request is not signed, and says why;
// its consumer's ResourceSlices (the slices of its namespace, also one stripped of its labels)
// are marked liqo.io/cordon-tenant (this cluster's own request there is not), and unmarked once
// the tenant is Active again.
func TestCordonedTenantGetsNoIdentity(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "consumer"}, testenv.ClusterOptions{Name: "provider", ControllerManager: true})
	cons, prov := env.Cluster("consumer"), env.Cluster("provider")
	ctx := t.Context()
	if _, err := clusteridentity.Ensure(ctx, cons.Client, clusteridentity.Config{ClusterID: "cl-consumer"}); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		if err := (&nonce.ProviderReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&tenant.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("tenant"), APIServerURL: prov.Config.Host}).SetupWithManager(mgr)
	})
	testenv.StartManager(t, cons, func(mgr ctrl.Manager) error {
		return (&nonce.ConsumerReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})
	answer := handshakeInTenantNamespaces(t, prov, cons)
	providerID := corev1beta1.ClusterID("cl-provider")
	for name, labels := range map[string]map[string]string{
		"mine":     {consts.RemoteClusterIDLabel: "cl-consumer"},
		"stripped": {},                                                                            // the consumer removed its label: still its slice
		"ours":     {consts.RemoteClusterIDLabel: "cl-consumer", consts.ReplicationLabel: "true"}, // this cluster's own request
	} {
		s := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "t-cons", Name: name, Labels: labels},
			Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &providerID}}
		if err := prov.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	tn := answeredTenant(answer, "t-cons", authv1beta1.TenantConditionCordoned)
	if err := prov.Client.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, prov.Client, tn, "NotActive")
	if err := prov.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn); err != nil || tn.Status.AuthParams != nil {
		t.Errorf("cordoned tenant got credentials: %+v %v", tn.Status.AuthParams, err)
	}
	marked := func(ctx context.Context, name string) (bool, error) {
		s := &authv1beta1.ResourceSlice{}
		if err := prov.Client.Get(ctx, client.ObjectKey{Namespace: "t-cons", Name: name}, s); err != nil {
			return false, err
		}
		return s.Annotations[consts.CordonTenantAnnotation] == "true", nil
	}
	for _, name := range []string{"mine", "stripped"} {
		testenv.Poll(t, "the cordoned tenant's slice "+name+" marked "+consts.CordonTenantAnnotation, 30*time.Second, func(ctx context.Context) (bool, error) {
			return marked(ctx, name)
		})
	}
	if m, err := marked(ctx, "ours"); err != nil || m {
		t.Errorf("this cluster's own request marked %s: %t (%v)", consts.CordonTenantAnnotation, m, err)
	}
	before := tn.DeepCopy()
	tn.Spec.TenantCondition = authv1beta1.TenantConditionActive
	if err := prov.Client.Patch(ctx, tn, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the slice unmarked once the tenant is Active", 30*time.Second, func(ctx context.Context) (bool, error) {
		m, err := marked(ctx, "mine")
		return !m, err
	})
}

// expectEvent waits for an Event with reason on obj.
func expectEvent(t *testing.T, c client.Client, obj client.Object, reason string) {
	t.Helper()
	testenv.ExpectEvent(t, c, obj, reason, 45*time.Second)
}

// TestHandshakeConvergesAfterRestart: the provider's controllers stop right after the Tenant is
// created, before anything is issued; started again, they finish the job. The Tenant asks for
// in-band access (spec.proxyURL), which the issued identity carries.
func TestHandshakeConvergesAfterRestart(t *testing.T) {
	cons, prov := peerClusters(t)
	ctx := t.Context()
	providerSetup := func(mgr ctrl.Manager) error {
		if err := (&nonce.ProviderReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&tenant.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("tenant"),
			APIServerURL: prov.Config.Host, CAData: prov.Config.CAData}).SetupWithManager(mgr)
	}
	stopProvider := testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		return (&nonce.ProviderReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr) // nonces only, for now
	})
	testenv.StartManager(t, cons, func(mgr ctrl.Manager) error {
		return (&nonce.ConsumerReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})
	answer := handshakeInTenantNamespaces(t, prov, cons)
	stopProvider() // killed mid-handshake: the Tenant arrives while nothing runs
	tn := answeredTenant(answer, "t-cons", authv1beta1.TenantConditionActive)
	const proxyURL = "http://10.71.0.1:8118"
	tn.Spec.ProxyURL = proxyURL
	if err := prov.Client.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := prov.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn); err != nil || tn.Status.AuthParams != nil {
		t.Fatalf("issued while stopped? %+v %v", tn.Status.AuthParams, err)
	}
	testenv.StartManager(t, prov, providerSetup)
	testenv.Poll(t, "the certificate after the restart", 45*time.Second, func(ctx context.Context) (bool, error) {
		err := prov.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn)
		return err == nil && tn.Status.AuthParams != nil && len(tn.Status.AuthParams.SignedCRT) > 0, nil
	})
	if got := tn.Status.AuthParams.ProxyURL; got != proxyURL {
		t.Errorf("the issued identity's proxy URL %q, want the Tenant's %q", got, proxyURL)
	}
}

// TestNonceForUpstreamLiqoctl: upstream liqoctl creates the provider's nonce Secret itself,
// empty and labelled, then waits for a controller to fill it: ours fills it (a base64 nonce, text
// that survives stringData) and keeps its labels; its own nonces carry upstream's labels too.
func TestNonceForUpstreamLiqoctl(t *testing.T) {
	prov := loneProvider.Env(t).Cluster("provider")
	ctx := t.Context()
	testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		return (&nonce.ProviderReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
	})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-cl-up"}}
	if err := prov.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: consts.NonceSecret,
		Labels: map[string]string{consts.NonceLabel: "true", consts.RemoteClusterIDLabel: "cl-up"}}}
	if err := prov.Client.Create(ctx, empty); err != nil {
		t.Fatal(err)
	}
	// Now a tenant namespace (liqoctl makes the namespace first; the order does not matter).
	ns.Labels = map[string]string{consts.RemoteClusterIDLabel: "cl-up", consts.TenantNamespaceLabel: "true"}
	if err := prov.Client.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the nonce filled in", 45*time.Second, func(ctx context.Context) (bool, error) {
		err := prov.Client.Get(ctx, client.ObjectKeyFromObject(empty), empty)
		return err == nil && len(empty.Data[consts.NonceKey]) > 0, nil
	})
	if _, err := base64.StdEncoding.DecodeString(string(empty.Data[consts.NonceKey])); err != nil || len(empty.Data[consts.NonceKey]) < 64 {
		t.Errorf("nonce %q: want base64 text of at least 64 characters (%v)", empty.Data[consts.NonceKey], err)
	}
	if empty.Labels[consts.NonceLabel] != "true" || empty.Labels[consts.RemoteClusterIDLabel] != "cl-up" {
		t.Errorf("labels %v", empty.Labels)
	}

	// The controller makes no nonce on its own: liqoctl creates the Secret itself and fails
	// when it is already there. A tenant namespace nobody asked a nonce in stays without one,
	// while a request made after it is answered (so the controller saw both namespaces).
	if err := prov.Client.Create(ctx, tenantNamespace("liqo-tenant-cl-quiet", "cl-quiet")); err != nil {
		t.Fatal(err)
	}
	if err := prov.Client.Create(ctx, tenantNamespace("liqo-tenant-cl-later", "cl-later")); err != nil {
		t.Fatal(err)
	}
	if err := peering.AskNonce(ctx, prov.Client, "liqo-tenant-cl-later", "cl-later"); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the later request answered", 45*time.Second, func(ctx context.Context) (bool, error) {
		n := &corev1.Secret{}
		err := prov.Client.Get(ctx, client.ObjectKey{Namespace: "liqo-tenant-cl-later", Name: consts.NonceSecret}, n)
		return err == nil && len(n.Data[consts.NonceKey]) > 0, nil
	})
	err := prov.Client.Get(ctx, client.ObjectKey{Namespace: "liqo-tenant-cl-quiet", Name: consts.NonceSecret}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a nonce in a namespace nobody asked one in: %v", err)
	}
}
