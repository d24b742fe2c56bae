package clusteridentity

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// A consumer's virtual kubelet writes the Secrets it reflects into its remote namespaces, but
// liqo-remote-workload does not let it read Secrets there (nor anywhere): so it cannot check
// that a Secret it is about to overwrite or delete is one of its copies. The provider checks
// for it, with a ValidatingAdmissionPolicy.
//
// Who is a consumer: the namespace's owner (the remote cluster ID every remote namespace is
// labelled with) as a user (the control-plane certificate, which our virtual kubelets use) or as
// a group (the organization of its ResourceSlice certificates, which upstream Liqo's virtual
// kubelets use), or any user in the consumers' group. Users whose name starts with "system:"
// (service accounts, nodes, the control plane) are never matched: a cluster ID, a DNS label, has
// no colon. The requester's cluster ID is the owner's when it is the owner, else its user name.
//
// What a consumer may do with a Secret: create one labelled as its copy (ReflectedLabel "true"
// and OriginClusterIDLabel its cluster ID, or upstream's UpstreamOriginLabel its cluster ID, as
// consts.ReflectionOrigin reads them), update or delete one that is so labelled (and stays so),
// and never create a service-account token Secret, which the provider's token controller would
// fill with a token of one of its service accounts.
var (
	// consumerVariables say who asks: owner, groups, isOwner, consumer and who (its cluster ID).
	consumerVariables = []admissionregistrationv1.Variable{
		{Name: "owner", Expression: `namespaceObject == null ? '' : ` +
			`namespaceObject.metadata.?labels[?'` + consts.RemoteClusterIDLabel + `'].orValue('')`},
		{Name: "groups", Expression: `request.userInfo.?groups.orValue([])`},
		{Name: "isOwner", Expression: `variables.owner != '' && (variables.owner == request.userInfo.username || variables.owner in variables.groups)`},
		{Name: "consumer", Expression: `variables.isOwner || '` + consts.ConsumerGroup + `' in variables.groups`},
		{Name: "who", Expression: `variables.isOwner ? variables.owner : request.userInfo.username`},
	}
	secretPolicyVariables = append(append([]admissionregistrationv1.Variable{}, consumerVariables...),
		admissionregistrationv1.Variable{Name: "newOurs", Expression: ours("object")},
		admissionregistrationv1.Variable{Name: "oldOurs", Expression: ours("oldObject")},
	)
	secretPolicyValidations = []admissionregistrationv1.Validation{
		{
			Expression: `!variables.consumer || (variables.oldOurs && variables.newOurs)`,
			Message: "a peered consumer may only create, change and delete the Secrets it reflects: labelled " +
				consts.ReflectedLabel + "=true and " + consts.OriginClusterIDLabel + "=<its cluster ID> (or upstream Liqo's " +
				consts.UpstreamOriginLabel + "=<its cluster ID>), before and after",
			Reason: ptr.To(metav1.StatusReasonForbidden),
		},
		{
			Expression: `!variables.consumer || object == null || object.?type.orValue('') != '` + string(corev1.SecretTypeServiceAccountToken) + `'`,
			Message:    "a peered consumer may not write service-account token Secrets",
			Reason:     ptr.To(metav1.StatusReasonForbidden),
		},
	}
)

// ours is a CEL expression: the object of that variable is absent (the old object of a create,
// the new one of a delete) or labelled as a copy reflected by the requesting consumer, its
// origin read as consts.ReflectionOrigin reads it (ours, upstream's, or both when they agree).
func ours(v string) string {
	label := func(key string) string { return v + `.metadata.?labels[?'` + key + `'].orValue('')` }
	our := `(` + label(consts.ReflectedLabel) + ` == 'true' ? ` + label(consts.OriginClusterIDLabel) + ` : '')`
	theirs := label(consts.UpstreamOriginLabel)
	origin := `(` + our + ` == '' ? ` + theirs + ` : ((` + theirs + ` == '' || ` + theirs + ` == ` + our + `) ? ` + our + ` : ''))`
	return v + ` == null || ` + origin + ` == variables.who`
}

// ensureSecretPolicy installs the policy on consumers' Secret writes, and its binding.
func ensureSecretPolicy(ctx context.Context, c client.Client) error {
	return ensurePolicy(ctx, c, consts.ReflectedSecretsPolicy, admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
		Resources: []string{"secrets"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		secretPolicyVariables, secretPolicyValidations)
}

// ensurePolicy installs a ValidatingAdmissionPolicy named name on the operations ops of rule's
// resources, for users that are not system users, and its binding (Deny).
func ensurePolicy(ctx context.Context, c client.Client, name string, rule admissionregistrationv1.Rule, ops []admissionregistrationv1.OperationType,
	variables []admissionregistrationv1.Variable, validations []admissionregistrationv1.Validation) error {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := controllerutil.CreateOrPatch(ctx, c, policy, func() error {
		setManaged(&policy.ObjectMeta)
		policy.Spec = admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{},
				ObjectSelector:    &metav1.LabelSelector{},
				MatchPolicy:       ptr.To(admissionregistrationv1.Equivalent),
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: ops, Rule: rule,
				}}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "not-a-system-user",
				Expression: `!request.userInfo.username.startsWith('system:')`}},
			Variables:   variables,
			Validations: validations,
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ensuring ValidatingAdmissionPolicy %s: %w", name, err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err = controllerutil.CreateOrPatch(ctx, c, binding, func() error {
		setManaged(&binding.ObjectMeta)
		binding.Spec = admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{},
				ObjectSelector:    &metav1.LabelSelector{},
				MatchPolicy:       ptr.To(admissionregistrationv1.Equivalent),
			},
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ensuring ValidatingAdmissionPolicyBinding %s: %w", name, err)
	}
	return nil
}

// setManaged labels an object as kept by this package.
func setManaged(m *metav1.ObjectMeta) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[managedByLabel] = managedBy
}
