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
// it change their annotations and delete them; the provider's own cordon of a slice
// (liqo.io/cordon, set by `liqoctl cordon resourceslice` on the provider, and
// liqo.io/cordon-tenant, set by the tenant controller, and market.peerkit.io/contract-expired,
// set by the negotiation when the slice's contract ended) must stay the provider's to set and
// lift, as upstream's webhook keeps it. A consumer's own cordon reaches the provider's copy
// under ConsumerCordonAnnotation instead.
//
// Deleting the copy must not lift the cordon either (replication would create it again
// without): the provider's controller manager holds a cordoned copy with the finalizer
// consts.ProviderCordonFinalizer (grantenforcement.CordonHold), so a consumer's delete leaves
// it, terminating and still cordoned, until the provider lifts the cordon or the peering goes.
// The policy keeps that hold out of the consumer's reach: it may not add or remove the
// finalizer, nor delete a cordoned copy before it is held (the moment after the cordon is set,
// or while the controller manager is down) unless the namespace is being deleted; nor label a
// slice as this cluster's own request (liqo.io/replication=true), which the hold, the grant
// and the negotiation leave alone. Nor may it write a slice's status (RBAC lets it, as
// upstream's role does): that is the provider's grant, which the grant webhook enforces.
//
// Who is a consumer: as for the Secrets policy (the namespace's remote cluster ID as a user or
// a group, or any user of the consumers' group; never a system user).

// providerCordonAnnotations are the annotations only the provider writes on its copies.
var providerCordonAnnotations = []string{consts.CordonAnnotation, consts.CordonTenantAnnotation, consts.ContractExpiredAnnotation}

// slicePolicyVariables are who asks (consumerVariables, as for Secrets) and whether the
// namespace is being deleted.
var slicePolicyVariables = append(append([]admissionregistrationv1.Variable{}, consumerVariables...),
	admissionregistrationv1.Variable{Name: "namespaceGoing",
		Expression: `namespaceObject != null && namespaceObject.metadata.?deletionTimestamp.hasValue()`})

// slicePolicyValidations refuse a consumer's create or update that sets, changes or removes one
// of providerCordonAnnotations or consts.ProviderCordonFinalizer, or labels a slice as this
// cluster's own request; any write of a slice's status; and its delete of a cordoned copy the
// provider does not hold yet.
func slicePolicyValidations() []admissionregistrationv1.Validation {
	const absent = "'<absent>'"
	value := func(v, key string) string {
		return v + ` == null ? ` + absent + ` : ` + v + `.metadata.?annotations[?'` + key + `'].orValue(` + absent + `)`
	}
	var same, cordoned []string
	for _, key := range providerCordonAnnotations {
		same = append(same, "("+value("object", key)+") == ("+value("oldObject", key)+")")
		cordoned = append(cordoned, `!(oldObject.metadata.?annotations[?'`+key+`'].orValue('false') in ['false', 'False', '0'])`)
	}
	held := func(v string) string {
		return `(` + v + ` != null && ` + v + `.metadata.?finalizers.orValue([]).exists(f, f == '` + consts.ProviderCordonFinalizer + `'))`
	}
	writes := `!variables.consumer || request.operation == 'DELETE' || `
	return []admissionregistrationv1.Validation{{
		Expression: writes + strings.Join(same, " && "),
		Message: "a peered consumer may not set, change or lift the provider's cordon of a ResourceSlice (annotations " +
			strings.Join(providerCordonAnnotations, ", ") + " on the provider's copy): the provider lifts it " +
			"(liqoctl uncordon resourceslice, its Tenant made Active, or the slice's contract renewed); the consumer cordons its own slice instead",
		Reason: ptr.To(metav1.StatusReasonForbidden),
	}, {
		Expression: writes + held("object") + " == " + held("oldObject"),
		Message: "a peered consumer may not add or remove the finalizer " + consts.ProviderCordonFinalizer +
			" of a ResourceSlice: the provider holds its cordoned copies with it until it lifts the cordon",
		Reason: ptr.To(metav1.StatusReasonForbidden),
	}, {
		Expression: writes + `object.metadata.?labels[?'` + consts.ReplicationLabel + `'].orValue('') != 'true'`,
		Message: "a peered consumer may not label a ResourceSlice " + consts.ReplicationLabel + "=true on the provider: " +
			"that marks the provider's own requests to other clusters; the replicated copy of a consumer's slice does not carry it",
		Reason: ptr.To(metav1.StatusReasonForbidden),
	}, {
		// The grant webhook counts status.resources, and negotiation keeps a status that grants
		// what the spec asks: a consumer writing it would grant itself anything.
		Expression: `!variables.consumer || request.?subResource.orValue('') != 'status'`,
		Message: "a peered consumer may not write the status of a ResourceSlice on the provider: the provider's negotiation " +
			"decides it (replication copies it back to the consumer's own slice)",
		Reason: ptr.To(metav1.StatusReasonForbidden),
	}, {
		Expression: `!variables.consumer || request.operation != 'DELETE' || variables.namespaceGoing || ` + held("oldObject") +
			` || !(` + strings.Join(cordoned, " || ") + `)`,
		MessageExpression: `'ResourceSlice ' + oldObject.metadata.namespace + '/' + oldObject.metadata.name + ' is cordoned by this cluster ` +
			`(annotation ` + strings.Join(providerCordonAnnotations, " or ") + `), and its consumer may not delete it before this cluster\'s ` +
			`controller manager holds it with the finalizer ` + consts.ProviderCordonFinalizer + ` (retry in a moment; if this lasts, that ` +
			`controller manager is not running): a deleted copy stays, cordoned, until this cluster lifts the cordon (liqoctl uncordon ` +
			`resourceslice ' + oldObject.metadata.name + ' --remote-cluster-id ' + variables.owner + ', or the Tenant made Active) ` +
			`or the peering is removed'`,
		Message: "a peered consumer may not delete a ResourceSlice cordoned by the provider before the provider holds it",
		Reason:  ptr.To(metav1.StatusReasonForbidden),
	}}
}

// ensureSlicePolicy installs the policy on consumers' ResourceSlice writes, and its binding.
func ensureSlicePolicy(ctx context.Context, c client.Client) error {
	return ensurePolicy(ctx, c, consts.SliceCordonPolicy, admissionregistrationv1.Rule{APIGroups: []string{authv1beta1.GroupVersion.Group},
		APIVersions: []string{authv1beta1.GroupVersion.Version}, Resources: []string{"resourceslices", "resourceslices/status"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		slicePolicyVariables, slicePolicyValidations())
}
