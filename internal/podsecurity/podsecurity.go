// Package podsecurity decides what an offloaded pod may do on a provider: the Pod Security level
// of each consumer's remote namespaces, the namespace labels with which the provider's API server
// enforces it, and the refusal of a pod spec the level refuses, with Pod Security admission's
// own checks and messages (k8s.io/pod-security-admission), so that a ShadowPod is refused before
// a pod is made of it.
//
// A consumer's level is its Tenant's consts.TenantPodSecurityAnnotation, else the provider's
// default (Policy.Default; baseline unless the provider sets another). Whatever the level, an
// offloaded pod may not share its node's network, PID or IPC namespaces (HostNamespace): it
// stands for a pod of another cluster, whose network reaches it through the tunnel only.
package podsecurity

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// Flag is the controller manager's flag that sets the provider's default level, and ChartValue
// the chart's value that sets the flag; messages name them.
const (
	Flag       = "--remote-namespace-pod-security"
	ChartValue = "remoteNamespaces.podSecurity"
)

// Refusal reasons, for Events.
const (
	// ReasonHostNamespaces: the pod asks to share a node's network, PID or IPC namespace.
	ReasonHostNamespaces = "HostNamespaces"
	// ReasonPodSecurity: the pod violates its consumer's Pod Security level.
	ReasonPodSecurity = "PodSecurity"
)

// ParseLevel returns the level named s, or an error saying which levels there are.
func ParseLevel(s string) (api.Level, error) {
	l := api.Level(s)
	if !l.Valid() {
		return "", fmt.Errorf("%q is not a Pod Security level: use one of %s", s, strings.Join(consts.PodSecurityLevels, ", "))
	}
	return l, nil
}

// Labels are the Pod Security admission labels of a remote namespace at level: enforced (at the
// API server's own version of the checks, as this package evaluates them), audited and warned.
func Labels(level api.Level) map[string]string {
	return map[string]string{
		consts.PodSecurityEnforceLabel:        string(level),
		consts.PodSecurityEnforceVersionLabel: consts.PodSecurityLatest,
		consts.PodSecurityAuditLabel:          string(level),
		consts.PodSecurityWarnLabel:           string(level),
	}
}

// SetLabels sets Labels(level) on obj, keeping its other labels, and tells whether that
// changed them.
func SetLabels(obj metav1.Object, level api.Level) bool {
	labels, changed := obj.GetLabels(), false
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range Labels(level) {
		if labels[k] != v {
			labels[k], changed = v, true
		}
	}
	obj.SetLabels(labels)
	return changed
}

// Policy is a provider's Pod Security policy for its consumers' remote namespaces.
type Policy struct {
	// Default is the level of a consumer whose Tenant names none; "" is baseline.
	Default api.Level
}

// Decision is a consumer's level and where it comes from.
type Decision struct {
	// Consumer is the consumer's cluster ID ("" when unknown).
	Consumer string
	// Level is the level its pods must meet.
	Level api.Level
	// Source says where the level comes from, for messages.
	Source string
	// Ignored says why the Tenant's annotation was ignored (not a level), or "".
	Ignored string
}

// defaultLevel is p.Default, or baseline.
func (p Policy) defaultLevel() api.Level {
	if p.Default == "" {
		return api.LevelBaseline
	}
	return p.Default
}

// ForTenant is the decision for the consumer of Tenant t (nil: a consumer without a Tenant).
func (p Policy) ForTenant(consumer string, t *authv1beta1.Tenant) Decision {
	d := Decision{Consumer: consumer, Level: p.defaultLevel(), Source: "the provider's default"}
	if t == nil {
		return d
	}
	v, ok := t.Annotations[consts.TenantPodSecurityAnnotation]
	if !ok {
		return d
	}
	l, err := ParseLevel(v)
	if err != nil {
		d.Ignored = fmt.Sprintf("annotation %s of Tenant %s/%s: %v; the provider's default %s applies", consts.TenantPodSecurityAnnotation,
			t.Namespace, t.Name, err, d.Level)
		return d
	}
	d.Level, d.Source = l, fmt.Sprintf("annotation %s of its Tenant %s/%s", consts.TenantPodSecurityAnnotation, t.Namespace, t.Name)
	return d
}

// ForConsumer is the decision for consumer, from its Tenant in its tenant namespaces (a Tenant
// being deleted does not count; with several, the strictest level wins).
func (p Policy) ForConsumer(ctx context.Context, r client.Reader, consumer string) (Decision, error) {
	nss := &corev1.NamespaceList{}
	if err := r.List(ctx, nss, client.MatchingLabels{consts.TenantNamespaceLabel: "true", consts.RemoteClusterIDLabel: consumer}); err != nil {
		return Decision{}, fmt.Errorf("listing the tenant namespaces of cluster %s: %w", consumer, err)
	}
	d := p.ForTenant(consumer, nil)
	found := false
	for _, ns := range nss.Items {
		tenants := &authv1beta1.TenantList{}
		if err := r.List(ctx, tenants, client.InNamespace(ns.Name)); err != nil {
			return Decision{}, fmt.Errorf("listing the Tenants of cluster %s in %s: %w", consumer, ns.Name, err)
		}
		for i := range tenants.Items {
			t := &tenants.Items[i]
			if string(t.Spec.ClusterID) != consumer || t.DeletionTimestamp != nil {
				continue
			}
			if td := p.ForTenant(consumer, t); !found || rank(td.Level) > rank(d.Level) {
				d, found = td, true
			}
		}
	}
	return d, nil
}

// rank orders levels from the least restrictive.
func rank(l api.Level) int {
	for i, name := range consts.PodSecurityLevels {
		if string(l) == name {
			return i
		}
	}
	return len(consts.PodSecurityLevels) // unknown: as strict as can be
}

// Refusal says why an offloaded pod may not run.
type Refusal struct {
	// Reason is ReasonHostNamespaces or ReasonPodSecurity.
	Reason string
	// Message names the fields at fault and what to change.
	Message string
}

// HostNamespace names the first namespace of its node (network, PID, IPC) that spec asks to
// share: the spec field that asks for it (e.g. "hostNetwork") and the namespace (e.g.
// "network"); both "" when it asks for none. An offloaded pod may share none, whatever its
// consumer's level: the consumer's virtual kubelet does not offload it, and the provider
// refuses its ShadowPod.
func HostNamespace(spec *corev1.PodSpec) (field, namespace string) {
	switch {
	case spec.HostNetwork:
		return "hostNetwork", "network"
	case spec.HostPID:
		return "hostPID", "PID"
	case spec.HostIPC:
		return "hostIPC", "IPC"
	}
	return "", ""
}

// evaluator evaluates pods with Pod Security admission's default checks, as the API server does.
var evaluator = sync.OnceValues(func() (policy.Evaluator, error) {
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("the default checks of Pod Security admission: %w", err)
	}
	return ev, nil
})

// Violations lists what of a pod level refuses, in Pod Security admission's words, each with
// its details (e.g. `privileged (container "c" must not set securityContext.privileged=true)`);
// none when level allows it all.
func Violations(level api.Level, meta *metav1.ObjectMeta, spec *corev1.PodSpec) ([]string, error) {
	ev, err := evaluator()
	if err != nil {
		return nil, fmt.Errorf("setting up the checks: %w", err)
	}
	if meta == nil {
		meta = &metav1.ObjectMeta{}
	}
	res := policy.AggregateCheckResults(ev.EvaluatePod(api.LevelVersion{Level: level, Version: api.LatestVersion()}, meta, spec))
	out := make([]string, 0, len(res.ForbiddenReasons))
	for i, reason := range res.ForbiddenReasons {
		if d := res.ForbiddenDetails[i]; d != "" {
			reason += " (" + d + ")"
		}
		out = append(out, reason)
	}
	return out, nil
}

// Refuse says why a pod with this metadata and spec may not be offloaded at decision d's level
// (nil: only the host namespaces are checked), or returns nil.
func Refuse(d *Decision, meta *metav1.ObjectMeta, spec *corev1.PodSpec) *Refusal {
	if field, namespace := HostNamespace(spec); field != "" {
		return &Refusal{Reason: ReasonHostNamespaces, Message: fmt.Sprintf(
			"spec.%s is true: offloaded pods may not use the provider node's %s namespace; set it to false", field, namespace)}
	}
	if d == nil {
		return nil
	}
	violations, err := Violations(d.Level, meta, spec)
	if err != nil {
		return &Refusal{Reason: ReasonPodSecurity, Message: err.Error()} // fail closed
	}
	if len(violations) == 0 {
		return nil
	}
	return &Refusal{Reason: ReasonPodSecurity, Message: fmt.Sprintf(
		"the pod violates Pod Security level %q of cluster %s's remote namespaces (%s): %s. "+
			"Change the pod, or have the provider grant a higher level to this consumer (pod_security of its liqo_tenant or "+
			"liqo_peering: annotation %s on its Tenant) or to every consumer (%s, the chart's %s)",
		d.Level, d.Consumer, d.Source, strings.Join(violations, "; "), consts.TenantPodSecurityAnnotation, Flag, ChartValue)}
}
