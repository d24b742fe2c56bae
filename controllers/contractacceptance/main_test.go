package contractacceptance_test

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peerrbac"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

const (
	consumerID, providerID = "cl-consumer", "cl-provider"
	// provNS is the consumer's tenant namespace on the provider, consNS the provider's on the
	// consumer; otherNS is another consumer's tenant namespace on the provider.
	provNS, consNS, otherNS = "liqo-tenant-cl-consumer", "liqo-tenant-cl-provider", "liqo-tenant-cl-other"
)

// pair is a consumer and a provider peered as the tenant controllers leave them: tenant
// namespaces for each other, the consumer's Tenant on the provider with its public key, its
// identity bound there to peerrbac.ControlPlaneRules, its identity Secret on the consumer; and
// the provider's Offers (offers). Each test uses Contracts of its own names.
var pair = testenv.NewShared(setupPair, testenv.ClusterOptions{Name: "consumer"}, testenv.ClusterOptions{Name: "provider"})

// TestMain stops the shared clusters when the package's tests end.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunShared(m, pair))
}

// offers are the provider's Offers: "small" (4 CPUs, at most 3 a contract, and memory),
// "short" and "withdrawn" (CPUs), "private" (made to another consumer only).
func offers() []*marketv1alpha1.Offer {
	cpu := func(name, n string, consumers ...string) *marketv1alpha1.Offer {
		return &marketv1alpha1.Offer{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: name},
			Spec: marketv1alpha1.OfferSpec{Resources: corev1.ResourceList{"cpu": resource.MustParse(n)}, Currency: "EUR",
				Prices: map[corev1.ResourceName]marketv1alpha1.Price{"cpu": {Amount: "0.05"}}, Consumers: consumers}}
	}
	small := cpu("small", "4")
	small.Spec.Resources["memory"] = resource.MustParse("8Gi")
	gi := resource.MustParse("1Gi")
	small.Spec.Prices["memory"] = marketv1alpha1.Price{Amount: "0.01", Per: &gi}
	small.Spec.Maximum = corev1.ResourceList{"cpu": resource.MustParse("3")}
	return []*marketv1alpha1.Offer{small, cpu("short", "2"), cpu("withdrawn", "2"), cpu("private", "2", "cl-someone")}
}

// obj is an object to create in a cluster.
type obj struct {
	c client.Client
	o client.Object
}

// clusterKey makes the Liqo namespace of c and the cluster's signing key in it.
func clusterKey(ctx context.Context, c client.Client) error {
	key, err := signing.Generate()
	if err != nil {
		return err
	}
	pem, err := key.EncodePrivate()
	if err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}}); err != nil {
		return err
	}
	return c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: consts.SigningKeySecret},
		Data: map[string][]byte{consts.PrivateKeySecretKey: pem}})
}

// setupPair peers the pair (see pair).
func setupPair(ctx context.Context, env *testenv.Env) error {
	cons, prov := env.Cluster("consumer").Client, env.Cluster("provider").Client
	for _, c := range []client.Client{cons, prov} {
		if err := clusterKey(ctx, c); err != nil {
			return err
		}
	}
	consKey, err := signing.ReadClusterKey(ctx, cons, consts.LiqoNamespace)
	if err != nil {
		return err
	}
	pub, err := consKey.EncodePublic()
	if err != nil {
		return err
	}
	objs := []obj{
		{prov, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: provNS, Labels: consts.TenantNamespaceLabels(consumerID)}}},
		{prov, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNS, Labels: consts.TenantNamespaceLabels("cl-other")}}},
		{cons, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consNS, Labels: consts.TenantNamespaceLabels(providerID)}}},
		{prov, &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: provNS, Name: consumerID},
			Spec: authv1beta1.TenantSpec{ClusterID: consumerID, PublicKey: pub}}},
	}
	for ns, id := range map[string]string{provNS: consumerID, otherNS: "cl-other"} {
		objs = append(objs,
			obj{prov, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "controlplane"}, Rules: peerrbac.ControlPlaneRules()}},
			obj{prov, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "controlplane"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "controlplane"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: id}}}})
	}
	for _, o := range offers() {
		objs = append(objs, obj{prov, o})
	}
	for _, o := range objs {
		if err := o.c.Create(ctx, o.o); err != nil {
			return err
		}
	}
	kc, err := env.Cluster("provider").UserKubeconfig(consumerID, consts.ConsumerGroup)
	if err != nil {
		return err
	}
	return cons.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "kubeconfig-controlplane",
		Labels:      map[string]string{consts.IdentityTypeLabel: "ControlPlane", consts.RemoteClusterIDLabel: providerID},
		Annotations: map[string]string{consts.RemoteTenantNamespaceAnnotation: provNS}},
		Data: map[string][]byte{consts.KubeconfigSecretKey: kc}})
}
