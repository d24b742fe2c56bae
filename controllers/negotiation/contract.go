package negotiation

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// Reasons of the Resources condition of a slice whose grant follows a contract (annotation
// consts.ContractAnnotation).
const (
	// ReasonContractNotSigned denies a slice whose contract has no provider's copy signed by both
	// parties (missing, Pending, Refused, or a signature that does not verify).
	ReasonContractNotSigned = "ContractNotSigned"
	// ReasonContractNotStarted denies a slice whose signed contract has not started yet.
	ReasonContractNotStarted = "ContractNotStarted"
	// ReasonContractExpired keeps the grant of a slice whose contract ended: the slice is
	// cordoned (consts.ContractExpiredAnnotation) until the contract is renewed.
	ReasonContractExpired = "ContractExpired"
)

// decideContract decides a slice that names a contract (consts.ContractAnnotation) by the
// provider's own copy of it (Liqo namespace, consts.ProviderContractName of the slice's
// tenant's consumer and the name), whatever the Policy: granted exactly the contract's
// resources while it runs, kept and cordoned (consts.ContractExpiredAnnotation on the slice)
// once it ended, denied otherwise. again is when to look again (the contract's start or end).
func (r *Reconciler) decideContract(ctx context.Context, slice *authv1beta1.ResourceSlice, tenant *authv1beta1.Tenant,
	status *authv1beta1.ResourceSliceStatus) (res authv1beta1.ResourceSliceCondition, again time.Duration, err error) {
	name := slice.Annotations[consts.ContractAnnotation]
	c, renewing, why, err := r.signedContract(ctx, tenant, name)
	if err != nil {
		return res, 0, err
	}
	if c == nil && renewing && Condition(slice, authv1beta1.ResourceSliceConditionTypeResources) == authv1beta1.ResourceSliceConditionAccepted &&
		len(slice.Status.Resources) > 0 {
		// Between the two writes of a renewal (the copy's new terms, then its countersignature),
		// the grant in force and the cordon stay as they are: withdrawing the grant would take
		// the consumer's virtual node away with it.
		return kept(slice, fmt.Sprintf("contract %s is being renewed: %s", name, why)), 2 * time.Second, nil
	}
	now := time.Now()
	expired := c != nil && (c.Status.Phase == marketv1alpha1.ContractExpired || !now.Before(c.Spec.Terms.End.Time))
	switch {
	case c == nil:
		res = cond(authv1beta1.ResourceSliceConditionTypeResources, false, ReasonContractNotSigned,
			fmt.Sprintf("ResourceSlice %s/%s names contract %s, which is not signed: %s", slice.Namespace, slice.Name, name, why))
		status.Resources = nil
	case now.Before(c.Spec.Terms.Start.Time):
		res = cond(authv1beta1.ResourceSliceConditionTypeResources, false, ReasonContractNotStarted,
			fmt.Sprintf("contract %s starts at %s: nothing is granted before", name, c.Spec.Terms.Start.UTC().Format(time.RFC3339)))
		status.Resources = nil
		again = time.Until(c.Spec.Terms.Start.Time) + time.Second
	case expired:
		res = cond(authv1beta1.ResourceSliceConditionTypeResources, true, ReasonContractExpired,
			fmt.Sprintf("contract %s ended at %s: its grant is kept for the pods running, and the slice is cordoned (annotation %s) so that "+
				"no new pod is admitted, until the contract is renewed", name, c.Spec.Terms.End.UTC().Format(time.RFC3339), consts.ContractExpiredAnnotation))
		status.Resources = c.Spec.Terms.Resources.DeepCopy()
	default:
		msg := fmt.Sprintf("granted the resources of contract %s, until %s", name, c.Spec.Terms.End.UTC().Format(time.RFC3339))
		if d := differences(slice.Spec.Resources, c.Spec.Terms.Resources); d != "" {
			msg += fmt.Sprintf("; the slice asks for something else (%s): the contract's resources are granted, never more nor less", d)
		}
		res = cond(authv1beta1.ResourceSliceConditionTypeResources, true, ReasonGranted, msg)
		status.Resources = c.Spec.Terms.Resources.DeepCopy()
		again = time.Until(c.Spec.Terms.End.Time) + time.Second
	}
	return res, again, r.markExpired(ctx, slice, expired)
}

// signedContract returns the provider's copy of the contract name of tenant's consumer when it
// is Signed (or Expired) and both signatures verify, else nil and why not; renewing says the
// copy is Signed or Expired but its signatures do not verify for its terms (the provider writes
// a renewal's terms before their countersignature).
func (r *Reconciler) signedContract(ctx context.Context, tenant *authv1beta1.Tenant, name string) (c *marketv1alpha1.Contract, renewing bool, why string, err error) {
	consumer := string(tenant.Spec.ClusterID)
	key := client.ObjectKey{Namespace: consts.LiqoNamespaceOr(r.LiqoNamespace), Name: consts.ProviderContractName(consumer, name)}
	c = &marketv1alpha1.Contract{}
	if err := r.Client.Get(ctx, key, c); apierrors.IsNotFound(err) {
		return nil, false, fmt.Sprintf("this cluster has not accepted it (no Contract %s): wait for its acceptance, or see the Contract's "+
			"status in the tenant namespace for why it is refused", key), nil
	} else if err != nil {
		return nil, false, "", fmt.Errorf("reading the provider's copy %s of contract %s: %w", key, name, err)
	}
	switch {
	case c.Status.Phase != marketv1alpha1.ContractSigned && c.Status.Phase != marketv1alpha1.ContractExpired:
		return nil, false, fmt.Sprintf("Contract %s is in phase %q (%s)", key, c.Status.Phase, c.Status.Reason), nil
	case string(c.Spec.Terms.ConsumerClusterID) != consumer:
		return nil, false, fmt.Sprintf("Contract %s is for consumer %s, not %s", key, c.Spec.Terms.ConsumerClusterID, consumer), nil
	}
	consumerPub, err := signing.ParseTenantKey(tenant.Spec.PublicKey)
	if err != nil {
		return nil, false, fmt.Sprintf("the consumer's public key (spec.publicKey of Tenant %s/%s) is unusable: %v", tenant.Namespace, tenant.Name, err), nil
	}
	providerPub, err := r.clusterPublicKey(ctx)
	if err != nil {
		return nil, false, "", err
	}
	if err := contract.VerifyBoth(c, consumerPub, providerPub); err != nil {
		return nil, true, err.Error(), nil
	}
	return c, false, "", nil
}

// clusterPublicKey reads this cluster's public signing key (uncached: Secrets are not cached).
func (r *Reconciler) clusterPublicKey(ctx context.Context) (ed25519.PublicKey, error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	k, err := signing.ReadClusterKey(ctx, reader, consts.LiqoNamespaceOr(r.LiqoNamespace))
	if err != nil {
		return nil, fmt.Errorf("verifying contracts: %w", err)
	}
	return k.Public, nil
}

// markExpired sets (expired) or removes consts.ContractExpiredAnnotation on the slice.
func (r *Reconciler) markExpired(ctx context.Context, slice *authv1beta1.ResourceSlice, expired bool) error {
	_, present := slice.Annotations[consts.ContractExpiredAnnotation]
	if (expired && consts.CordonSet(slice.Annotations, consts.ContractExpiredAnnotation)) || (!expired && !present) {
		return nil
	}
	patched := slice.DeepCopy()
	if expired {
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[consts.ContractExpiredAnnotation] = "true"
	} else {
		delete(patched.Annotations, consts.ContractExpiredAnnotation)
	}
	if err := r.Client.Patch(ctx, patched, client.MergeFrom(slice)); err != nil {
		return fmt.Errorf("annotating ResourceSlice %s/%s %s=%v: %w", slice.Namespace, slice.Name, consts.ContractExpiredAnnotation, expired, err)
	}
	return nil
}

// differences describes how asked differs from contracted, sorted by resource; "" when equal.
func differences(asked, contracted corev1.ResourceList) string {
	var out []string
	for name, q := range asked {
		if c, ok := contracted[name]; !ok || c.Cmp(q) != 0 {
			out = append(out, fmt.Sprintf("%s: asked %s, contracted %s", name, q.String(), c.String()))
		}
	}
	for name, c := range contracted {
		if _, ok := asked[name]; !ok {
			out = append(out, fmt.Sprintf("%s: not asked, contracted %s", name, c.String()))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// slicesOfContract maps a provider's copy of a Contract (in the Liqo namespace, labelled with
// its consumer and name) to the slices of that consumer naming it.
func (r *Reconciler) slicesOfContract(c client.Reader) handler.EventHandler {
	newList := func() client.ObjectList { return &authv1beta1.ResourceSliceList{} }
	return enqueue.Listed(c, newList, nil, func(o client.Object, s *authv1beta1.ResourceSlice) bool {
		l := o.GetLabels()
		return o.GetNamespace() == consts.LiqoNamespaceOr(r.LiqoNamespace) && l[consts.ContractConsumerLabel] != "" &&
			s.Annotations[consts.ContractAnnotation] == l[consts.ContractNameLabel] &&
			s.Spec.ConsumerClusterID != nil && string(*s.Spec.ConsumerClusterID) == l[consts.ContractConsumerLabel]
	})
}
