package contracttest

// The TEST STAND-IN for the two controllers that sign a Contract (market.peerkit.io/v1alpha1):
// the consumer's contractsigning and the provider's contractacceptance. Tests of the consumer's
// side of the contract flow (the Terraform provider's `offer`, internal/peering.EnsureContract)
// run it where those controllers do not: it signs each Contract of the consumer's tenant
// namespace of the provider as they would, with the two clusters' own keys (their
// authentication-keys Secrets), and writes the provider's answer straight into the consumer's
// copy (no replication in between). It checks nothing of what contractacceptance checks beyond
// contract.CheckTerms; a test decides refusals.

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// Refuse decides the stand-in provider's answer to terms: "" signs, else the reason of a refusal.
type Refuse func(terms *marketv1alpha1.ContractTerms) string

// StandIn signs the consumer's Contracts in one tenant namespace.
type StandIn struct {
	consumer             client.Client
	namespace            string
	consumerKey, provKey *signing.KeyPair
	refuse               Refuse
}

// StartStandIn runs the stand-in until the test ends: every 100ms, each Contract in namespace (the
// consumer's tenant namespace of the provider) on consumer whose status does not answer its
// current terms gets the consumer's signature in spec.consumerSignature and, unless refuse
// gives a reason, status phase Signed with the provider's signature in status.providerSignature;
// else phase Refused with the reason. The keys are read from each cluster's Liqo namespace
// (liqoNS) when first needed, as the controller managers write them.
func StartStandIn(t *testing.T, consumer, provider client.Client, liqoNS, namespace string, refuse Refuse) {
	t.Helper()
	if refuse == nil {
		refuse = func(*marketv1alpha1.ContractTerms) string { return "" }
	}
	s := &StandIn{consumer: consumer, namespace: namespace, refuse: refuse}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := s.keys(ctx, consumer, provider, liqoNS); err == nil {
				s.pass(ctx, t)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// keys reads both clusters' signing keys once.
func (s *StandIn) keys(ctx context.Context, consumer, provider client.Client, liqoNS string) error {
	if s.provKey != nil {
		return nil
	}
	ck, err := signing.ReadClusterKey(ctx, consumer, liqoNS)
	if err != nil {
		return err
	}
	pk, err := signing.ReadClusterKey(ctx, provider, liqoNS)
	if err != nil {
		return err
	}
	s.consumerKey, s.provKey = ck, pk
	return nil
}

// pass answers each Contract once.
func (s *StandIn) pass(ctx context.Context, t *testing.T) {
	list := &marketv1alpha1.ContractList{}
	if err := s.consumer.List(ctx, list, client.InNamespace(s.namespace)); err != nil {
		return
	}
	for i := range list.Items {
		c := &list.Items[i]
		if c.Labels[consts.ReplicationLabel] != "true" || !c.DeletionTimestamp.IsZero() {
			continue
		}
		if err := s.answer(ctx, c); err != nil && ctx.Err() == nil {
			t.Logf("contract stand-in: %s/%s: %v", c.Namespace, c.Name, err)
		}
	}
}

// answer signs c as the consumer (when its signature does not verify), then answers it as the
// provider (when its status does not answer the current terms yet).
func (s *StandIn) answer(ctx context.Context, c *marketv1alpha1.Contract) error {
	terms := &c.Spec.Terms
	if contract.Verify(terms, c.Spec.ConsumerSignature, s.consumerKey.Public) != nil {
		sig, err := contract.Sign(terms, s.consumerKey)
		if err != nil {
			return err
		}
		c.Spec.ConsumerSignature = sig
		if err := s.consumer.Update(ctx, c); err != nil {
			return fmt.Errorf("signing as the consumer: %w", err)
		}
	}
	reason := s.refuse(terms)
	want := marketv1alpha1.ContractStatus{Phase: marketv1alpha1.ContractRefused, Reason: reason}
	if reason == "" {
		sig, err := contract.Sign(terms, s.provKey)
		if err != nil {
			return err
		}
		want = marketv1alpha1.ContractStatus{Phase: marketv1alpha1.ContractSigned, ProviderSignature: sig}
	}
	if c.Status.Phase == want.Phase && c.Status.Reason == want.Reason && bytes.Equal(c.Status.ProviderSignature, want.ProviderSignature) {
		return nil
	}
	want.AccruedCost, want.ResourceSeconds, want.LastMetered = c.Status.AccruedCost, c.Status.ResourceSeconds, c.Status.LastMetered
	c.Status = want
	if err := s.consumer.Status().Update(ctx, c); err != nil {
		return fmt.Errorf("answering as the provider (%s): %w", want.Phase, err)
	}
	return nil
}
