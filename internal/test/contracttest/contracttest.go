// Package contracttest is what tests of seed 004's contracts share: on a provider's test API
// server, the provider's signing key, a consumer's Tenant holding its public key, and the
// provider's own copies of Contracts, signed by both (Provider); and, for tests of the
// consumer's side, a stand-in for the controllers that sign (StartStandIn).
package contracttest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// Provider is a provider cluster's side of contracts in a test.
type Provider struct {
	// Client writes the provider's API server.
	Client client.Client
	// ID is the provider's cluster ID.
	ID string
	// Key is the provider's signing key, in its Secret consts.SigningKeySecret.
	Key *signing.KeyPair
	// Consumers are the consumers' keys by cluster ID (Consumer).
	Consumers map[string]*signing.KeyPair
}

// NewProvider makes the Liqo namespace (if missing) and the provider's signing key Secret.
func NewProvider(t *testing.T, c client.Client, id string) *Provider {
	t.Helper()
	p := &Provider{Client: c, ID: id, Key: NewKey(t), Consumers: map[string]*signing.KeyPair{}}
	create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}})
	priv, err := p.Key.EncodePrivate()
	if err != nil {
		t.Fatal(err)
	}
	create(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: consts.SigningKeySecret},
		Data: map[string][]byte{consts.PrivateKeySecretKey: priv}})
	return p
}

// NewKey is a new Ed25519 key pair.
func NewKey(t *testing.T) *signing.KeyPair {
	t.Helper()
	k, err := signing.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Consumer peers consumer: its tenant namespace (consts.TenantNamespace, labelled as the
// tenant controller labels it) and its Active Tenant holding a new public key; it returns the
// namespace.
func (p *Provider) Consumer(t *testing.T, consumer string) string {
	t.Helper()
	key := NewKey(t)
	p.Consumers[consumer] = key
	ns := consts.TenantNamespace(consumer)
	create(t, p.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: consts.TenantNamespaceLabels(consumer)}})
	pub, err := key.EncodePublic()
	if err != nil {
		t.Fatal(err)
	}
	create(t, p.Client, &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: consumer},
		Spec: authv1beta1.TenantSpec{ClusterID: corev1beta1.ClusterID(consumer), PublicKey: pub,
			TenantCondition: authv1beta1.TenantConditionActive}})
	return ns
}

// Terms are terms of consumer with this provider for resources (pairs of name and amount, each
// priced at price per unit and hour in EUR) from start for d, to the second.
func (p *Provider) Terms(consumer string, start time.Time, d time.Duration, price string, resources ...string) marketv1alpha1.ContractTerms {
	start = start.Truncate(time.Second)
	terms := marketv1alpha1.ContractTerms{ConsumerClusterID: corev1beta1.ClusterID(consumer), ProviderClusterID: corev1beta1.ClusterID(p.ID),
		OfferName: "offer", Resources: corev1.ResourceList{}, Prices: map[corev1.ResourceName]marketv1alpha1.Price{},
		Currency: "EUR", Start: metav1.NewTime(start), End: metav1.NewTime(start.Add(d))}
	for i := 0; i+1 < len(resources); i += 2 {
		terms.Resources[corev1.ResourceName(resources[i])] = resource.MustParse(resources[i+1])
		terms.Prices[corev1.ResourceName(resources[i])] = marketv1alpha1.Price{Amount: price}
	}
	return terms
}

// Sign signs terms with key.
func Sign(t *testing.T, terms *marketv1alpha1.ContractTerms, key *signing.KeyPair) []byte {
	t.Helper()
	sig, err := contract.Sign(terms, key)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// Copy writes (creates or replaces) the provider's own copy of contract name of consumer in the
// Liqo namespace: terms signed by consumerKey and providerKey (nil: the consumer's and the
// provider's own keys), in phase. It returns the copy as stored.
func (p *Provider) Copy(t *testing.T, consumer, name string, terms marketv1alpha1.ContractTerms, phase marketv1alpha1.ContractPhase,
	consumerKey, providerKey *signing.KeyPair) *marketv1alpha1.Contract {
	t.Helper()
	if consumerKey == nil {
		consumerKey = p.Consumers[consumer]
	}
	if providerKey == nil {
		providerKey = p.Key
	}
	ctx := t.Context()
	c := &marketv1alpha1.Contract{ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: consts.ProviderContractName(consumer, name)}}
	err := p.Client.Get(ctx, client.ObjectKeyFromObject(c), c)
	switch {
	case apierrors.IsNotFound(err):
		c.Labels = map[string]string{consts.ContractConsumerLabel: consumer, consts.ContractNameLabel: name}
		c.Spec = marketv1alpha1.ContractSpec{Terms: terms, ConsumerSignature: Sign(t, &terms, consumerKey)}
		err = p.Client.Create(ctx, c)
	case err == nil:
		c.Spec = marketv1alpha1.ContractSpec{Terms: terms, ConsumerSignature: Sign(t, &terms, consumerKey)}
		err = p.Client.Update(ctx, c)
	}
	if err != nil {
		t.Fatalf("writing contract %s: %v", c.Name, err)
	}
	c.Status.Phase, c.Status.ProviderSignature = phase, Sign(t, &terms, providerKey)
	if err := p.Client.Status().Update(ctx, c); err != nil {
		t.Fatalf("writing the status of contract %s: %v", c.Name, err)
	}
	return c
}

func create(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), o); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}
