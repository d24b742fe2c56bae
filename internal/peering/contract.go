package peering

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/offers"
)

// costDigits is how many decimals messages show of a cost.
const costDigits = 6

// Accept says on which offer of the provider (seed 004's advertisement) the consumer takes the
// resources it asks, and at most at what cost.
type Accept struct {
	// Offer is the offer's name, as the provider published it to the consumer (liqo_offers).
	Offer string
	// MaxCostPerHour is the ceiling of the resources' cost per hour, a decimal in the offer's
	// currency: an offer costing more is refused before any contract is written.
	MaxCostPerHour string
	// Duration is how long the contract runs from its start (0: contract.DurationFor the offer).
	Duration time.Duration
}

// ContractRequest is the consumer's contract for one ResourceSlice.
type ContractRequest struct {
	// Consumer is the consumer cluster, where the Contract is written.
	Consumer Cluster
	// ConsumerID and ProviderID are the two clusters' IDs.
	ConsumerID, ProviderID corev1beta1.ClusterID
	// Namespace is the slice's namespace on the consumer, the tenant namespace of the provider
	// that holds the consumer's identity ("": TenantNamespace(ProviderID)).
	Namespace string
	// Name is the ResourceSlice's name, and so the Contract's.
	Name string
	// Resources are what the slice asks.
	Resources corev1.ResourceList
	// Accept names the offer, the ceiling and the duration.
	Accept Accept
	// PollInterval is how often the wait looks (0: 250ms).
	PollInterval time.Duration
}

// key is the Contract's: the consumer's tenant namespace of the provider, the slice's name.
func (r *ContractRequest) key() client.ObjectKey {
	if r.Namespace == "" {
		return client.ObjectKey{Namespace: TenantNamespace(r.ProviderID), Name: r.Name}
	}
	return client.ObjectKey{Namespace: r.Namespace, Name: r.Name}
}

// EnsureContract writes the consumer's Contract accepting r.Accept's offer for r.Resources and
// waits until the provider signed it (status.phase Signed, as the consumer's copy reports it).
// It reads the offer as the consumer does (offers.ReadAsConsumer), refuses it, before writing
// anything, when the resources cost more per hour than the ceiling, and keeps the start of a
// Contract already there: changing the duration or the resources rewrites its terms in place (a
// renewal), which the provider signs again. A contract the provider refuses is an error with
// its reason; the context's deadline bounds the wait.
func EnsureContract(ctx context.Context, r ContractRequest) (*marketv1alpha1.Contract, error) {
	if r.PollInterval == 0 {
		r.PollInterval = 250 * time.Millisecond
	}
	key := r.key()
	cur := &marketv1alpha1.Contract{}
	err := r.Consumer.Client.Get(ctx, key, cur)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading contract %s on %s: %w", key, r.Consumer.Name, err)
	}
	terms, err := r.terms(ctx, cur, exists)
	if err != nil {
		return nil, err
	}
	if err := r.checkCeiling(terms); err != nil {
		return nil, err
	}
	before := cur.Status.DeepCopy()
	written := !exists || !bytes.Equal(contract.Canonical(&cur.Spec.Terms), contract.Canonical(terms))
	if written {
		if err := r.write(ctx, cur, terms, exists); err != nil {
			return nil, err
		}
	}
	return cur, r.waitSigned(ctx, cur, before, written)
}

// terms are the terms accepting the offer: from the start of the Contract there (cur, when it
// exists and accepts the same offer) or now.
func (r *ContractRequest) terms(ctx context.Context, cur *marketv1alpha1.Contract, exists bool) (*marketv1alpha1.ContractTerms, error) {
	offer, err := r.offer(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if exists && cur.Spec.Terms.OfferName == r.Accept.Offer {
		start = cur.Spec.Terms.Start.Time
	}
	d := r.Accept.Duration
	if d == 0 {
		d = contract.DurationFor(&offer.Spec)
	}
	terms, err := contract.TermsFor(offer, r.ConsumerID, r.ProviderID, r.Resources, start, start.Add(d))
	if err != nil {
		return nil, fmt.Errorf("provider %s, consumer %s: %w", r.ProviderID, r.ConsumerID, err)
	}
	return terms, nil
}

// offerWait is how long the consumer waits for the offer it names to be published to it: the
// provider's controller manager publishes its offers once the consumer's tenant namespace there
// exists, which a peering has just made.
const offerWait = 20 * time.Second

// offer reads the offer r.Accept names, as the consumer, waiting offerWait for it to be published.
func (r *ContractRequest) offer(ctx context.Context) (*marketv1alpha1.Offer, error) {
	ns := r.key().Namespace
	var offer *marketv1alpha1.Offer
	var names []string
	wctx, cancel := context.WithTimeout(ctx, offerWait)
	defer cancel()
	err := waitFor(wctx, r.PollInterval, fmt.Sprintf("offer %q of %s to be published to %s", r.Accept.Offer, r.ProviderID, r.ConsumerID),
		func(ctx context.Context) (bool, error) {
			pub, err := offers.ReadAsConsumer(ctx, r.Consumer.Client, r.Consumer.Client.Scheme(), ns, string(r.ProviderID))
			if err != nil {
				return false, fmt.Errorf("reading the offers of %s on %s: %w", r.ProviderID, r.Consumer.Name, err)
			}
			names = names[:0]
			for i := range pub.Offers {
				names = append(names, contract.OfferName(&pub.Offers[i]))
				if contract.OfferName(&pub.Offers[i]) == r.Accept.Offer {
					offer = &pub.Offers[i]
				}
			}
			return offer != nil, nil
		})
	switch {
	case offer != nil:
		return offer, nil
	case ctx.Err() == nil && names != nil:
		return nil, fmt.Errorf("provider %s publishes no offer %q to %s (its offers there: [%s]): name one of them (data liqo_offers lists them)",
			r.ProviderID, r.Accept.Offer, r.ConsumerID, strings.Join(names, ", "))
	}
	return nil, err
}

// checkCeiling refuses terms costing more per hour than the ceiling.
func (r *ContractRequest) checkCeiling(terms *marketv1alpha1.ContractTerms) error {
	ceiling, err := contract.ParseDecimal("max_cost_per_hour", r.Accept.MaxCostPerHour)
	if err != nil {
		return fmt.Errorf("accepting offer %s of %s: %w", terms.OfferName, r.ProviderID, err)
	}
	cost, err := contract.HourlyCost(terms)
	if err != nil {
		return fmt.Errorf("accepting offer %s of %s: %w", terms.OfferName, r.ProviderID, err)
	}
	if cost.Cmp(ceiling) > 0 {
		c := contract.FormatDecimal(cost, costDigits)
		return fmt.Errorf("offer %s of %s costs %s %s per hour for %s, above the ceiling max_cost_per_hour = %s: raise "+
			"max_cost_per_hour to at least %s, ask for fewer resources, or choose a cheaper offer (data liqo_offers lists them); "+
			"no contract was written", terms.OfferName, r.ProviderID, c, terms.Currency, describe(terms.Resources),
			r.Accept.MaxCostPerHour, c)
	}
	return nil
}

// write creates the Contract, or rewrites its terms and puts its status back to Pending (the
// provider answers the new terms).
func (r *ContractRequest) write(ctx context.Context, cur *marketv1alpha1.Contract, terms *marketv1alpha1.ContractTerms, exists bool) error {
	key := r.key()
	if !exists {
		*cur = marketv1alpha1.Contract{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		forge.MutateConsumerContract(cur, terms)
		if err := r.Consumer.Client.Create(ctx, cur); err != nil {
			return fmt.Errorf("creating contract %s on %s: %w", key, r.Consumer.Name, err)
		}
		return nil
	}
	// The consumer's controller manager writes the contract too (its signature): on a conflict,
	// read it again and rewrite.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := r.Consumer.Client.Get(ctx, key, cur); err != nil {
			return fmt.Errorf("reading it: %w", err)
		}
		forge.MutateConsumerContract(cur, terms)
		if err := r.Consumer.Client.Update(ctx, cur); err != nil {
			return fmt.Errorf("writing spec.terms: %w", err)
		}
		cur.Status = marketv1alpha1.ContractStatus{Phase: marketv1alpha1.ContractPending, AccruedCost: cur.Status.AccruedCost,
			ResourceSeconds: cur.Status.ResourceSeconds, LastMetered: cur.Status.LastMetered}
		if err := r.Consumer.Client.Status().Update(ctx, cur); err != nil {
			return fmt.Errorf("writing status.phase: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("renewing contract %s on %s (new terms, status back to Pending): %w", key, r.Consumer.Name, err)
	}
	return nil
}

// waitSigned waits until the provider signed the Contract's current terms: Signed with
// another countersignature than before the terms were written (an Ed25519 signature is
// deterministic: other terms, another signature). A refusal stops it with the provider's
// reason; a refusal still carrying the reason of before the terms were written is awaited over.
func (r *ContractRequest) waitSigned(ctx context.Context, c *marketv1alpha1.Contract, before *marketv1alpha1.ContractStatus, written bool) error {
	key := r.key()
	what := fmt.Sprintf("contract %s on %s to be signed: the controller manager of %s (controller contractsigning) signs "+
		"spec.consumerSignature and replicates the contract to %s, whose controller manager (controller contractacceptance) "+
		"countersigns it in status.providerSignature", key, r.Consumer.Name, r.Consumer.Name, r.ProviderID)
	return waitFor(ctx, r.PollInterval, what, func(ctx context.Context) (bool, error) {
		if err := r.Consumer.Client.Get(ctx, key, c); err != nil {
			return false, fmt.Errorf("reading contract %s: %w", key, err)
		}
		st := c.Status
		stale := written && st.Phase == before.Phase && st.Reason == before.Reason && bytes.Equal(st.ProviderSignature, before.ProviderSignature)
		switch {
		case stale:
			return false, fmt.Errorf("status still the previous terms' (phase %q)", st.Phase)
		case st.Phase == marketv1alpha1.ContractSigned:
			return len(st.ProviderSignature) > 0, nil
		case st.Phase == marketv1alpha1.ContractRefused:
			return false, stop("provider %s refused contract %s on offer %s: %s", r.ProviderID, key, c.Spec.Terms.OfferName, st.Reason)
		case st.Phase == marketv1alpha1.ContractExpired && !written:
			return false, stop("contract %s on offer %s expired at %s: renew it with a longer duration", key, c.Spec.Terms.OfferName,
				c.Spec.Terms.End.UTC().Format(time.RFC3339))
		}
		return false, fmt.Errorf("status.phase %q, consumer signature %t", st.Phase, len(c.Spec.ConsumerSignature) > 0)
	})
}

// RemoveContract deletes the consumer's Contract namespace/name (in its tenant namespace of the
// provider) and waits until it is gone (the provider's own copy runs to its end). A cluster
// without the Contract API (upstream Liqo's CRDs alone) has none.
func RemoveContract(ctx context.Context, consumer Cluster, namespace, name string, interval time.Duration) error {
	if interval == 0 {
		interval = 250 * time.Millisecond
	}
	c := &marketv1alpha1.Contract{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	switch err := consumer.Client.Get(ctx, client.ObjectKeyFromObject(c), c); {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading contract %s on %s: %w", client.ObjectKeyFromObject(c), consumer.Name, err)
	}
	return deleteAndWait(ctx, consumer, c, interval)
}
