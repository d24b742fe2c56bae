package clusteridentity

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// contractPolicyValidations refuse a consumer's create or update of a Contract labelled as this
// cluster's own proposal (consts.ReplicationLabel "true"): the contract-signing controller signs
// those with this cluster's key, as the consumer of the provider they go to.
var contractPolicyValidations = []admissionregistrationv1.Validation{{
	Expression: `!variables.consumer || request.operation == 'DELETE' || ` +
		`object.metadata.?labels[?'` + consts.ReplicationLabel + `'].orValue('') != 'true'`,
	Message: "a peered consumer may not label a Contract " + consts.ReplicationLabel + "=true on the provider: that marks " +
		"the provider's own proposals to other clusters, which it signs; the consumer's contracts do not carry it",
	Reason: ptr.To(metav1.StatusReasonForbidden),
}}

// ensureContractPolicy installs the policy on consumers' Contract writes, and its binding.
func ensureContractPolicy(ctx context.Context, c client.Client) error {
	return ensurePolicy(ctx, c, consts.ContractProposalPolicy, admissionregistrationv1.Rule{APIGroups: []string{marketv1alpha1.GroupVersion.Group},
		APIVersions: []string{marketv1alpha1.GroupVersion.Version}, Resources: []string{"contracts"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		consumerVariables, contractPolicyValidations)
}
