package clusteridentity_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestConsumerCannotProposeContracts: a consumer writes Contracts in its tenant namespace on the
// provider, but none labelled as the provider's own proposal (liqo.io/replication=true), which
// the provider would sign with its key; the provider's administrator may.
func TestConsumerCannotProposeContracts(t *testing.T) {
	const consumer, tenantNS = "cl-k", "liqo-tenant-cl-k"
	admin, as := consumerOnProvider(t, consumer, tenantNS)
	now := time.Now().Truncate(time.Second)
	contractOf := func(name string, labels map[string]string) *marketv1alpha1.Contract {
		return &marketv1alpha1.Contract{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name, Labels: labels},
			Spec: marketv1alpha1.ContractSpec{Terms: marketv1alpha1.ContractTerms{ConsumerClusterID: "cl-a", ProviderClusterID: consumer,
				OfferName: "o", Resources: corev1.ResourceList{"cpu": resource.MustParse("1")},
				Prices: map[corev1.ResourceName]marketv1alpha1.Price{"cpu": {Amount: "1"}}, Currency: "EUR",
				Start: metav1.NewTime(now), End: metav1.NewTime(now.Add(time.Hour))}}}
	}
	proposal := map[string]string{consts.ReplicationLabel: "true", consts.RemoteClusterIDLabel: consumer}
	testenv.Poll(t, "the policy "+consts.ContractProposalPolicy+" in effect", 30*time.Second, func(ctx context.Context) (bool, error) {
		return apierrors.IsForbidden(as.Create(ctx, contractOf("probe", proposal), client.DryRunAll)), nil
	})
	err := as.Create(t.Context(), contractOf("forged", proposal))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), consts.ContractProposalPolicy) {
		t.Errorf("the consumer labels a Contract as the provider's proposal: %v, want a denial by %s", err, consts.ContractProposalPolicy)
	}
	mine := contractOf("mine", map[string]string{consts.RemoteClusterIDLabel: consumer})
	if err := as.Create(t.Context(), mine); err != nil {
		t.Fatalf("the consumer writes its own Contract: %v", err)
	}
	mine.Labels[consts.ReplicationLabel] = "true"
	if err := as.Update(t.Context(), mine); !apierrors.IsForbidden(err) {
		t.Errorf("the consumer relabels its Contract as the provider's proposal: %v, want forbidden", err)
	}
	if err := admin.Create(t.Context(), contractOf("admins", proposal)); err != nil {
		t.Errorf("the provider's administrator writes a proposal: %v", err)
	}
}
