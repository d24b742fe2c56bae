package clusteridentity

import (
	"context"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// A consumer writes the provider's copies of its ResourceSlices (the replication), so RBAC lets
// it change their annotations; the provider's own cordon of a slice (liqo.io/cordon, set by
// `liqoctl cordon resourceslice` on the provider, and liqo.io/cordon-tenant, set by the tenant
// controller) must stay the provider's to set and lift, as upstream's webhook keeps it. A
// consumer's own cordon reaches the provider's copy under ConsumerCordonAnnotation instead.
//
// Who is a consumer: as for the Secrets policy (the user named as the namespace's remote
// cluster ID, or any user of the consumers' group; never a system user).

// providerCordonAnnotations are the annotations only the provider writes on its copies.
var providerCordonAnnotations = []string{consts.CordonAnnotation, consts.CordonTenantAnnotation}

// slicePolicyValidations refuse a consumer's create or update that sets, changes or removes one
// of providerCordonAnnotations.
func slicePolicyValidations() []admissionregistrationv1.Validation {
	const absent = "'<absent>'"
	value := func(v, key string) string {
		return v + ` == null ? ` + absent + ` : ` + v + `.metadata.?annotations[?'` + key + `'].orValue(` + absent + `)`
	}
	var same []string
	for _, key := range providerCordonAnnotations {
		same = append(same, "("+value("object", key)+") == ("+value("oldObject", key)+")")
	}
	return []admissionregistrationv1.Validation{{
		Expression: `!variables.consumer || ` + strings.Join(same, " && "),
		Message: "a peered consumer may not set, change or lift the provider's cordon of a ResourceSlice (annotations " +
			strings.Join(providerCordonAnnotations, ", ") + " on the provider's copy): the provider lifts it " +
			"(liqoctl uncordon resourceslice, or its Tenant made Active); the consumer cordons its own slice instead",
		Reason: ptr.To(metav1.StatusReasonForbidden),
	}}
}

// ensureSlicePolicy installs the policy on consumers' ResourceSlice writes, and its binding.
func ensureSlicePolicy(ctx context.Context, c client.Client) error {
	return ensurePolicy(ctx, c, consts.SliceCordonPolicy, admissionregistrationv1.Rule{APIGroups: []string{authv1beta1.GroupVersion.Group},
		APIVersions: []string{authv1beta1.GroupVersion.Version}, Resources: []string{"resourceslices"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		secretPolicyVariables[:2], slicePolicyValidations())
}
