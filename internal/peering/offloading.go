package peering

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/identities"
)

// sliceName is the consumer's ResourceSlice of a peering (so its virtual node is named after
// the provider's cluster ID).
func (p *pair) sliceName() string { return string(p.providerID) }

// sliceOptions are the consumer's ResourceSlice of the peering: its class (default unless
// told), the resources asked, and whether a virtual node stands for it.
func (p *pair) sliceOptions() forge.ResourceSliceOptions {
	class := p.opts.SliceClass
	if class == authv1beta1.ResourceSliceClassUnknown {
		class = authv1beta1.ResourceSliceClassDefault
	}
	o := forge.ResourceSliceOptions{ConsumerID: string(p.consumerID), Class: class,
		Resources: p.opts.Resources, CreateVirtualNode: !p.opts.NoVirtualNode}
	if p.opts.Offer != nil {
		o.Contract = p.sliceName()
	}
	return o
}

// ensureContractedOffloading is ensureOffloading on the contract of opts.Offer, signed
// before the slice asks; without an offer, the contract made before is removed once the slice
// no longer names it.
func (p *pair) ensureContractedOffloading(ctx context.Context) error {
	if p.opts.Offer == nil {
		if err := p.ensureOffloading(ctx); err != nil {
			return err
		}
		return RemoveContract(ctx, p.consumer, p.consumerNS(), p.sliceName(), p.opts.PollInterval)
	}
	if _, err := EnsureContract(ctx, ContractRequest{Consumer: p.consumer, ConsumerID: p.consumerID, ProviderID: p.providerID,
		Name: p.sliceName(), Resources: p.opts.Resources, Accept: *p.opts.Offer, PollInterval: p.opts.PollInterval}); err != nil {
		return err
	}
	return p.ensureOffloading(ctx)
}

// sliceAsWanted tells whether slice already is what sliceOptions make of it.
func (p *pair) sliceAsWanted(slice *authv1beta1.ResourceSlice) bool {
	want := slice.DeepCopy()
	forge.MutateResourceSlice(want, string(p.providerID), p.sliceOptions())
	return equality.Semantic.DeepEqual(want.Spec, slice.Spec) && equality.Semantic.DeepEqual(want.Annotations, slice.Annotations)
}

// ensureOffloading asks the provider for the resources through a ResourceSlice (replicated to
// the provider by the consumer's controller manager), waits until the provider grants them and
// the virtual node standing for them is Ready.
func (p *pair) ensureOffloading(ctx context.Context) error {
	slice := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: p.consumerNS(), Name: p.sliceName()}}
	key := client.ObjectKeyFromObject(slice)
	err := p.consumer.Client.Get(ctx, key, slice)
	var previous corev1.ResourceList // the grant in force before a re-negotiation
	// A denial counts only once the provider answered the current request: the conditions
	// carry no generation, so a status written before our patch (same resourceVersion) may
	// still hold the previous request's denial.
	asked := ""
	switch {
	case apierrors.IsNotFound(err):
		forge.MutateResourceSlice(slice, string(p.providerID), p.sliceOptions())
		if err := p.consumer.Client.Create(ctx, slice); err != nil {
			return fmt.Errorf("creating ResourceSlice %s on %s: %w", key, p.consumer.Name, err)
		}
	case err != nil:
		return fmt.Errorf("reading ResourceSlice %s on %s: %w", key, p.consumer.Name, err)
	case !p.sliceAsWanted(slice):
		if granted(slice) && !equality.Semantic.DeepEqual(slice.Spec.Resources, p.opts.Resources) {
			previous = slice.Spec.Resources.DeepCopy()
		}
		before := slice.DeepCopy()
		forge.MutateResourceSlice(slice, string(p.providerID), p.sliceOptions())
		if err := p.consumer.Client.Patch(ctx, slice, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("asking %s for other resources (ResourceSlice %s on %s): %w", p.provider.Name, key, p.consumer.Name, err)
		}
		asked = slice.ResourceVersion
	}
	what := fmt.Sprintf("%s to grant ResourceSlice %s and sign its certificate request (spec.csr, which the controller manager of %s fills)",
		p.provider.Name, key, p.consumer.Name)
	switch class := p.sliceOptions().Class; class {
	case authv1beta1.ResourceSliceClassDefault:
	case consts.TetheredSliceClass:
		what += fmt.Sprintf(" (class %q: granted only when %s is tethered to %s, by liqo_tethering)", class, p.provider.Name, p.consumer.Name)
	default:
		what += fmt.Sprintf(" (class %q: the provider's controller for that class decides it; our controllers decide the default and tethered classes, upstream's the default one)", class)
	}
	err = waitFor(ctx, p.opts.PollInterval, what, func(ctx context.Context) (bool, error) {
		if err := p.consumer.Client.Get(ctx, key, slice); err != nil {
			return false, fmt.Errorf("reading ResourceSlice %s: %w", key, err)
		}
		for _, c := range slice.Status.Conditions {
			if c.Type != authv1beta1.ResourceSliceConditionTypeResources {
				continue
			}
			// Denied, or the new ask refused and the grant in force kept: either way it will not come.
			refused := c.Status == authv1beta1.ResourceSliceConditionDenied || c.Reason == consts.ResourceSliceGrantKept
			if refused && equality.Semantic.DeepEqual(slice.Spec.Resources, p.opts.Resources) &&
				!grantCovers(slice.Status.Resources, p.opts.Resources) && slice.ResourceVersion != asked {
				return false, stop("%s denied ResourceSlice %s: %s (%s); ask for less, or share more on the provider", p.provider.Name, key, c.Message, c.Reason)
			}
			return c.Status == authv1beta1.ResourceSliceConditionAccepted && grantCovers(slice.Status.Resources, p.opts.Resources) &&
				certified(slice), nil
		}
		return false, nil
	})
	if err != nil {
		if previous != nil {
			return p.restoreGrant(ctx, slice, previous, err)
		}
		return err
	}
	node := &corev1.Node{}
	name := consts.VirtualNodeName(string(*slice.Spec.ProviderClusterID), slice.Name)
	if p.opts.NoVirtualNode {
		return waitNodeGone(ctx, p.consumer, name, p.opts.PollInterval)
	}
	return waitFor(ctx, p.opts.PollInterval, fmt.Sprintf("virtual node %s on %s to be Ready with the granted resources and the slice's identity", name, p.consumer.Name),
		func(ctx context.Context) (bool, error) {
			if err := p.consumer.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			for res, q := range slice.Status.Resources {
				if got, ok := node.Status.Capacity[res]; !ok || got.Cmp(q) != 0 {
					return false, nil
				}
			}
			if !nodeReady(node) {
				return false, nil
			}
			return p.onSliceSecret(ctx, slice, name)
		})
}

// onSliceSecret tells whether the slice's VirtualNode name runs with the Secret
// VirtualNodeSecret gives, and, once the provider signed the slice's certificate, whether that
// is the slice's own Identity's (made from the signed certificate just after it): so an apply
// returns with the virtual kubelet authenticating as the provider expects it to.
func (p *pair) onSliceSecret(ctx context.Context, slice *authv1beta1.ResourceSlice, name string) (bool, error) {
	want, err := identities.SliceIdentitySecret(ctx, p.consumer.Client, slice.Namespace, slice.Name)
	switch {
	case err != nil:
		return false, err
	case want == "" && slice.Status.AuthParams != nil && len(slice.Status.AuthParams.SignedCRT) > 0:
		return false, nil // signed: its Identity is coming
	case want == "":
		if want, err = identities.ControlPlaneSecret(ctx, p.consumer.Client, slice.Namespace, *slice.Spec.ProviderClusterID); err != nil {
			return false, err
		}
	}
	vn := &offv1beta1.VirtualNode{}
	if err := p.consumer.Client.Get(ctx, client.ObjectKey{Namespace: slice.Namespace, Name: name}, vn); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return vn.Spec.KubeconfigSecretRef != nil && vn.Spec.KubeconfigSecretRef.Name == want, nil
}

// removeOffloading deletes the ResourceSlice and its Contract, and releases the provider
// (ReleaseSlice).
func (p *pair) removeOffloading(ctx context.Context) error {
	slice := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: p.consumerNS(), Name: p.sliceName()}}
	if err := deleteAndWait(ctx, p.consumer, slice, p.opts.PollInterval); err != nil {
		return err
	}
	if err := RemoveContract(ctx, p.consumer, p.consumerNS(), p.sliceName(), p.opts.PollInterval); err != nil {
		return err
	}
	return ReleaseSlice(ctx, p.consumer, p.consumerNS(), p.sliceName(), p.providerID, p.opts.PollInterval)
}

// ReleaseSlice finishes the removal of a consumer's ResourceSlice (namespace/name, of the
// provider providerID) once the slice is deleted: it waits until the slice's virtual node is
// gone (drained, its pods' copies on the provider removed), and, when no other slice of that
// provider remains in the namespace, deletes the namespace maps of the namespaces offloaded to
// the provider and waits until they are gone, so that the provider deletes their remote
// namespaces while the consumer's identity can still reach it. Callers delete the identity
// only after it returns. interval is how often it looks.
func ReleaseSlice(ctx context.Context, consumer Cluster, namespace, name string, providerID corev1beta1.ClusterID, interval time.Duration) error {
	slice := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &providerID}}
	if err := waitNodeGone(ctx, consumer, consts.VirtualNodeName(string(*slice.Spec.ProviderClusterID), slice.Name), interval); err != nil {
		return err
	}
	slices := &authv1beta1.ResourceSliceList{}
	if err := consumer.Client.List(ctx, slices, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing the resource slices in %s on %s: %w", namespace, consumer.Name, err)
	}
	for _, s := range slices.Items {
		if s.Name != name && s.Spec.ProviderClusterID != nil && *s.Spec.ProviderClusterID == providerID {
			return nil // the provider still serves another slice, and the offloaded namespaces with it
		}
	}
	// With no virtual node of the provider left no NamespaceOffloading selects it any more, so
	// the maps are not written again.
	maps := &offv1beta1.NamespaceMapList{}
	if err := consumer.Client.List(ctx, maps, client.InNamespace(namespace),
		client.MatchingLabels{consts.RemoteClusterIDLabel: string(providerID), consts.ReplicationLabel: "true"}); err != nil {
		return fmt.Errorf("listing the namespace maps of %s on %s: %w", providerID, consumer.Name, err)
	}
	for i := range maps.Items {
		if err := deleteAndWait(ctx, consumer, &maps.Items[i], interval); err != nil {
			return err
		}
	}
	return nil
}

// waitNodeGone waits until the consumer's virtual node named node is gone (drained: the
// copies of its pods on the provider removed).
func waitNodeGone(ctx context.Context, consumer Cluster, node string, interval time.Duration) error {
	return waitGone(ctx, interval, fmt.Sprintf("virtual node %s on %s to be gone", node, consumer.Name),
		func(ctx context.Context) (bool, error) {
			err := consumer.Client.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			if err != nil {
				return false, fmt.Errorf("reading node %s: %w", node, err)
			}
			return false, nil
		})
}

// granted tells whether a slice's current request is granted.
func granted(s *authv1beta1.ResourceSlice) bool {
	for _, c := range s.Status.Conditions {
		if c.Type == authv1beta1.ResourceSliceConditionTypeResources {
			return c.Status == authv1beta1.ResourceSliceConditionAccepted && grantCovers(s.Status.Resources, s.Spec.Resources)
		}
	}
	return false
}

// certified tells whether a slice of the default (or tethered) class whose authentication its
// provider accepted has its own certificate: the consumer's controller manager fills spec.csr,
// the provider's negotiation signs it into status.authParams, and the consumer's copy gets it
// back. A slice of another class is decided by that class's controller, which may sign nothing.
// Waiting for it makes an apply return once the slice stands still, and its identity
// (forge.ResourceSliceIdentityName) can be made.
func certified(s *authv1beta1.ResourceSlice) bool {
	switch s.Spec.Class {
	case authv1beta1.ResourceSliceClassUnknown, authv1beta1.ResourceSliceClassDefault, consts.TetheredSliceClass:
	default:
		return true
	}
	for _, c := range s.Status.Conditions {
		if c.Type == authv1beta1.ResourceSliceConditionTypeAuthentication && c.Status == authv1beta1.ResourceSliceConditionAccepted {
			return len(s.Spec.CSR) > 0 && s.Status.AuthParams != nil && len(s.Status.AuthParams.SignedCRT) > 0
		}
	}
	return true
}

// restoreGrant puts back the request that was granted before a re-negotiation failed, so that
// the virtual node keeps running with it, and returns the failure.
func (p *pair) restoreGrant(ctx context.Context, slice *authv1beta1.ResourceSlice, previous corev1.ResourceList, failure error) error {
	before := slice.DeepCopy()
	slice.Spec.Resources = previous
	if err := p.consumer.Client.Patch(ctx, slice, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("%w; putting back the previous request also failed: %w", failure, err)
	}
	return fmt.Errorf("%w; the previous request (%s) was put back, so the virtual node keeps it", failure, describe(previous))
}

// describe prints a resource list in a stable order.
func describe(l corev1.ResourceList) string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		q := l[corev1.ResourceName(n)]
		out = append(out, n+"="+q.String())
	}
	return strings.Join(out, ",")
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// grantCovers says a grant gives exactly what was asked for each resource asked. A provider
// also grants resources not asked for (its defaultNodeResources, e.g. ephemeral-storage where
// its nodes have some), which do not make the grant differ from the ask.
func grantCovers(granted, asked corev1.ResourceList) bool {
	for k, q := range asked {
		g, ok := granted[k]
		if !ok || g.Cmp(q) != 0 {
			return false
		}
	}
	return true
}
