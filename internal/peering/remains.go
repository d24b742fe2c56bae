package peering

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
)

// The objects a peering is made of, as Peer writes them (and `liqoctl peer` does, under the
// same names), fall in two groups.
//
// A direction's own objects serve only the peering of this consumer with this provider: the
// provider's nonce Secret and Tenant of the consumer; the consumer's signed nonce Secret,
// Identity of the provider's control plane and ResourceSlice of the provider, and the virtual
// node made from that slice. Of these, the Tenant, the Identity and the ResourceSlice mark an
// established peering (Established); the nonce and its signature are only a handshake under way.
//
// The shared objects serve both directions of a bidirectional peering: the tenant namespaces on
// both sides and, in them, the network (the Configurations, the gateway server and client, the
// public keys, and what the controllers make of those: Connections, Networks, the gateways'
// Deployments and Services). They belong to a direction only while the other direction holds
// none of its marks (see reverseExists).
//
// What the controllers make of the rest (the ForeignClusters, the provider's copy of the slice,
// the RoleBindings of the Tenant) goes with what it was made of.

// objectOn is one object of a peering on one of its clusters, with its kind for messages.
type objectOn struct {
	c    Cluster
	kind string
	obj  client.Object
}

// String names the object, e.g. `Tenant liqo-tenant-a/a on cluster "b"`.
func (o objectOn) String() string {
	key := o.obj.GetName()
	if ns := o.obj.GetNamespace(); ns != "" {
		key = ns + "/" + key
	}
	return fmt.Sprintf("%s %s on %s", o.kind, key, o.c.Name)
}

// exists tells whether the object is there. A tenant namespace counts only when it is the
// tenant namespace of the expected peer (Peer refuses another namespace of that name).
func (o objectOn) exists(ctx context.Context) (bool, error) {
	got, ok := o.obj.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Errorf("%s: not a Kubernetes object", o)
	}
	err := o.c.Client.Get(ctx, client.ObjectKeyFromObject(o.obj), got)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s: %w", o, err)
	}
	if ns, isNS := got.(*corev1.Namespace); isNS {
		return forge.IsTenantNamespaceOf(ns, o.obj.GetLabels()[consts.RemoteClusterIDLabel]), nil
	}
	return true, nil
}

// marks are the direction's objects that show an established peering: the provider's Tenant of
// the consumer, the consumer's Identity of the provider's control plane and its ResourceSlice.
func (p *pair) marks() []objectOn {
	return []objectOn{
		{p.provider, "Tenant", &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: p.providerNS(), Name: string(p.consumerID)}}},
		{p.consumer, "Identity", &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: p.consumerNS(), Name: IdentityPrefix + string(p.providerID)}}},
		{p.consumer, "ResourceSlice", &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: p.consumerNS(), Name: p.sliceName()}}},
	}
}

// ownObjects are every object of the direction's own: its marks, the handshake's Secrets and
// the virtual node of its slice.
func (p *pair) ownObjects() []objectOn {
	return append(p.marks(),
		objectOn{p.provider, "nonce Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.providerNS(), Name: consts.NonceSecret}}},
		objectOn{p.consumer, "signed nonce Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.consumerNS(), Name: consts.SignedNonceSecret}}},
		objectOn{p.consumer, "virtual node", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: consts.VirtualNodeName(string(p.providerID), p.sliceName())}}},
	)
}

// sharedObjects are the tenant namespaces, which hold the network of both directions.
func (p *pair) sharedObjects() []objectOn {
	ns := func(c Cluster, name string, remote string) objectOn {
		return objectOn{c, "tenant namespace", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{consts.RemoteClusterIDLabel: remote}}}}
	}
	return []objectOn{ns(p.consumer, p.consumerNS(), string(p.providerID)), ns(p.provider, p.providerNS(), string(p.consumerID))}
}

// reverse is the pair of the peering in the other direction.
func (p *pair) reverse() *pair {
	return &pair{consumer: p.provider, provider: p.consumer, consumerID: p.providerID, providerID: p.consumerID, opts: p.opts}
}

// existing names those of objs that exist.
func existing(ctx context.Context, objs []objectOn) ([]string, error) {
	var out []string
	for _, o := range objs {
		ok, err := o.exists(ctx)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, o.String())
		}
	}
	return out, nil
}

// reverseExists tells whether the provider consumes from the consumer too: the peering in the
// other direction holds one of its marks (Tenant, Identity, ResourceSlice), so the tenant
// namespaces and the network serve it. A reverse direction whose handshake never got as far
// holds nothing that outlives the tenant namespaces.
func (p *pair) reverseExists(ctx context.Context) (bool, error) {
	marks, err := existing(ctx, p.reverse().marks())
	if err != nil {
		return false, fmt.Errorf("looking for a peering of %s with %s: %w", p.provider.Name, p.consumer.Name, err)
	}
	return len(marks) > 0, nil
}

// Established names the objects that show that consumer already peers with provider in this
// direction, whoever made them (another Terraform state, liqoctl): the provider's Tenant of the
// consumer, the consumer's Identity of the provider's control plane, its ResourceSlice of the
// provider. None of them is made by the peering in the other direction, and a create that failed
// before the Tenant (tenant namespaces, network, nonce) leaves none of them. Empty when there is
// none.
func Established(ctx context.Context, consumer, provider Cluster) ([]string, error) {
	p, err := newPair(ctx, consumer, provider, Options{})
	if err != nil {
		return nil, err
	}
	return existing(ctx, p.marks())
}

// Remains names every object of the peering of consumer with provider that is still there on
// either cluster: its own objects, and the tenant namespaces (with the network in them) unless
// the peering in the other direction uses them. Empty when Unpeer has nothing left to remove.
func Remains(ctx context.Context, consumer, provider Cluster) ([]string, error) {
	p, err := newPair(ctx, consumer, provider, Options{})
	if err != nil {
		return nil, err
	}
	left, err := existing(ctx, p.ownObjects())
	if err != nil {
		return nil, err
	}
	reverse, err := p.reverseExists(ctx)
	if err != nil || reverse {
		return left, err
	}
	shared, err := existing(ctx, p.sharedObjects())
	if err != nil {
		return nil, err
	}
	return append(left, shared...), nil
}
