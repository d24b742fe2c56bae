package contractacceptance

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
)

// sameTerms tells whether the provider's copy own holds the terms and signature of tc.
func sameTerms(own, tc *marketv1alpha1.Contract) bool {
	return bytes.Equal(contract.Canonical(&own.Spec.Terms), contract.Canonical(&tc.Spec.Terms)) &&
		bytes.Equal(own.Spec.ConsumerSignature, tc.Spec.ConsumerSignature)
}

// keep writes the provider's copy of tc, countersigned with sig: created, or its terms
// replaced (a renewal), and its status Signed.
func (r *Reconciler) keep(ctx context.Context, tc, own *marketv1alpha1.Contract, consumer string, sig []byte) (*marketv1alpha1.Contract, error) {
	if own == nil {
		own = &marketv1alpha1.Contract{ObjectMeta: metav1.ObjectMeta{Namespace: r.liqoNamespace(), Name: consts.ProviderContractName(consumer, tc.Name),
			Labels: map[string]string{consts.ContractConsumerLabel: consumer, consts.ContractNameLabel: tc.Name}}, Spec: *tc.Spec.DeepCopy()}
		if err := r.Client.Create(ctx, own); err != nil {
			return nil, fmt.Errorf("creating the provider's copy %s/%s of Contract %s/%s: %w", own.Namespace, own.Name, tc.Namespace, tc.Name, err)
		}
	} else if !equality.Semantic.DeepEqual(own.Spec, tc.Spec) {
		before := own.DeepCopy()
		own.Spec = *tc.Spec.DeepCopy()
		if err := r.Client.Patch(ctx, own, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return nil, fmt.Errorf("renewing the provider's copy %s/%s of Contract %s/%s: %w", own.Namespace, own.Name, tc.Namespace, tc.Name, err)
		}
	}
	err := r.setStatus(ctx, own, func(s *marketv1alpha1.ContractStatus) {
		s.Phase, s.Reason, s.ProviderSignature = marketv1alpha1.ContractSigned, "", sig
		accepted(s, own.Generation, metav1.ConditionTrue, "Signed", "countersigned by the provider")
	})
	return own, err
}

// phaseOf is the phase of the provider's copy own now: Expired past its end, else Signed.
func (r *Reconciler) phaseOf(own *marketv1alpha1.Contract) marketv1alpha1.ContractPhase {
	if own.Spec.Terms.End.After(r.now()) {
		return marketv1alpha1.ContractSigned
	}
	return marketv1alpha1.ContractExpired
}

// mirror writes the answer of the provider's copy own (Signed or Expired, its signature) on the
// tenant copy tc, which holds the same terms.
func (r *Reconciler) mirror(ctx context.Context, tc, own *marketv1alpha1.Contract) error {
	phase := r.phaseOf(own)
	message := "countersigned by the provider"
	if phase == marketv1alpha1.ContractExpired {
		message = "the contract ended at " + own.Spec.Terms.End.UTC().Format("2006-01-02T15:04:05Z")
	}
	if err := r.setStatus(ctx, own, func(s *marketv1alpha1.ContractStatus) {
		s.Phase, s.Reason = phase, ""
		accepted(s, own.Generation, metav1.ConditionTrue, string(phase), message)
	}); err != nil {
		return err
	}
	signed := tc.Status.Phase != marketv1alpha1.ContractSigned && phase == marketv1alpha1.ContractSigned
	if err := r.setStatus(ctx, tc, func(s *marketv1alpha1.ContractStatus) {
		s.Phase, s.Reason, s.ProviderSignature = phase, "", own.Status.ProviderSignature
		accepted(s, tc.Generation, metav1.ConditionTrue, string(phase), message)
		meta.RemoveStatusCondition(&s.Conditions, ConditionRunningTermsKept)
	}); err != nil {
		return err
	}
	if signed {
		r.event(tc, corev1.EventTypeNormal, ReasonSigned, "countersigned: runs until %s (the provider's copy: %s/%s)",
			own.Spec.Terms.End.UTC().Format("2006-01-02T15:04:05Z"), own.Namespace, own.Name)
	}
	return nil
}

// refuse writes on the tenant copy tc that its terms are refused, and why; when the provider's
// copy own still runs, that its signed terms are kept to their end.
func (r *Reconciler) refuse(ctx context.Context, tc, own *marketv1alpha1.Contract, why string) error {
	changed := tc.Status.Phase != marketv1alpha1.ContractRefused || tc.Status.Reason != why
	err := r.setStatus(ctx, tc, func(s *marketv1alpha1.ContractStatus) {
		s.Phase, s.Reason, s.ProviderSignature = marketv1alpha1.ContractRefused, why, nil
		accepted(s, tc.Generation, metav1.ConditionFalse, "Refused", why)
		if own != nil && own.Status.Phase == marketv1alpha1.ContractSigned && r.phaseOf(own) == marketv1alpha1.ContractSigned {
			meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: ConditionRunningTermsKept, Status: metav1.ConditionTrue,
				ObservedGeneration: tc.Generation, Reason: "SignedTermsRun", Message: fmt.Sprintf("the terms signed before run "+
					"unchanged until %s (the provider's copy: %s/%s)", own.Spec.Terms.End.UTC().Format("2006-01-02T15:04:05Z"), own.Namespace, own.Name)})
		} else {
			meta.RemoveStatusCondition(&s.Conditions, ConditionRunningTermsKept)
		}
	})
	if err == nil && changed {
		r.event(tc, corev1.EventTypeWarning, ReasonRefused, "refused: %s", why)
	}
	return err
}

// accepted sets the Accepted condition.
func accepted(s *marketv1alpha1.ContractStatus, generation int64, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: ConditionAccepted, Status: status,
		ObservedGeneration: generation, Reason: reason, Message: message})
}

// setStatus applies change to c's status and patches what changed, on the spec read: a change
// of the terms meanwhile fails the patch (a conflict), and they are answered again. Other fields
// of the status (the metering's) are left as they are.
func (r *Reconciler) setStatus(ctx context.Context, c *marketv1alpha1.Contract, change func(*marketv1alpha1.ContractStatus)) error {
	before := c.DeepCopy()
	change(&c.Status)
	if equality.Semantic.DeepEqual(before.Status, c.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("writing the status of Contract %s/%s (phase %s): %w", c.Namespace, c.Name, c.Status.Phase, err)
	}
	return nil
}

// reconcileOwn keeps a provider's copy: Expired at its end; deleted when the tenant copy is gone
// and it ended or its consumer has no Tenant left.
func (r *Reconciler) reconcileOwn(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	own := &marketv1alpha1.Contract{}
	if err := r.Client.Get(ctx, req.NamespacedName, own); err != nil || own.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	consumer, name := own.Labels[consts.ContractConsumerLabel], own.Labels[consts.ContractNameLabel]
	if consumer == "" || name == "" || own.Status.Phase == "" {
		return reconcile.Result{}, nil
	}
	phase := r.phaseOf(own)
	if err := r.setStatus(ctx, own, func(s *marketv1alpha1.ContractStatus) {
		if s.Phase == marketv1alpha1.ContractSigned && phase == marketv1alpha1.ContractExpired {
			s.Phase = phase
			accepted(s, own.Generation, metav1.ConditionTrue, string(phase), "the contract ended at "+own.Spec.Terms.End.UTC().Format("2006-01-02T15:04:05Z"))
		}
	}); err != nil {
		return reconcile.Result{}, err
	}
	held, err := r.tenantCopyExists(ctx, consumer, name)
	if err != nil || held {
		return r.untilEnd(own), err
	}
	peered, err := r.hasTenant(ctx, consumer)
	if err != nil {
		return reconcile.Result{}, err
	}
	if peered && phase == marketv1alpha1.ContractSigned {
		return r.untilEnd(own), nil // the consumer deleting its copy does not end a running contract
	}
	if err := r.Client.Delete(ctx, own, client.Preconditions{UID: &own.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return reconcile.Result{}, fmt.Errorf("deleting the provider's copy %s of Contract %s of %s: %w", req, name, consumer, err)
	}
	log.FromContext(ctx).Info("provider's copy of a contract deleted", "copy", req, "phase", phase, "peered", peered)
	return reconcile.Result{}, nil
}

// tenantCopyExists tells whether a tenant namespace of consumer holds the Contract name.
func (r *Reconciler) tenantCopyExists(ctx context.Context, consumer, name string) (bool, error) {
	nss, err := r.tenantNamespaces(ctx, consumer)
	if err != nil {
		return false, err
	}
	for _, ns := range nss {
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &marketv1alpha1.Contract{})
		if err == nil {
			return true, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("reading Contract %s/%s of consumer %s: %w", ns, name, consumer, err)
		}
	}
	return false, nil
}

// hasTenant tells whether consumer has a Tenant (not being deleted) left: it is still peered.
func (r *Reconciler) hasTenant(ctx context.Context, consumer string) (bool, error) {
	tenants := &authv1beta1.TenantList{}
	if err := r.Client.List(ctx, tenants); err != nil {
		return false, fmt.Errorf("listing the Tenants to find consumer %s's: %w", consumer, err)
	}
	for i := range tenants.Items {
		if string(tenants.Items[i].Spec.ClusterID) == consumer && tenants.Items[i].DeletionTimestamp == nil {
			return true, nil
		}
	}
	return false, nil
}
