package consts

// The Pod Security level of a consumer's remote namespaces on a provider: the namespaces where
// the pods it offloads run. The provider's controller manager labels each remote namespace with
// Pod Security admission's labels (PodSecurityEnforceLabel and the others) at the consumer's
// level, and refuses ShadowPods that the level refuses (package podsecurity).
//
// The level is the provider's default (the controller manager's --remote-namespace-pod-security,
// baseline unless set otherwise) unless the consumer's Tenant carries TenantPodSecurityAnnotation.
// Only the provider writes Tenants (a consumer's identity may only read its own), so a consumer
// cannot raise its own level.
const (
	// TenantPodSecurityAnnotation, on a provider's Tenant, is the Pod Security level
	// (PodSecurityPrivileged, PodSecurityBaseline or PodSecurityRestricted) of that consumer's
	// remote namespaces, instead of the provider's default. Ours, not upstream Liqo's, whose
	// Tenant has no field for it.
	TenantPodSecurityAnnotation = "liqo.io/pod-security"
	// PodSecurityEnforceVersionLabel is the version of Pod Security admission's enforce level.
	PodSecurityEnforceVersionLabel = "pod-security.kubernetes.io/enforce-version"
	// PodSecurityLatest is the version that means the API server's own checks.
	PodSecurityLatest = "latest"
	// PodSecurityBaseline is the baseline level: no known privilege escalation.
	PodSecurityBaseline = "baseline"
	// PodSecurityRestricted is the restricted level: pod hardening best practices.
	PodSecurityRestricted = "restricted"
)

// PodSecurityLevels are Pod Security's levels, from the least restrictive to the most.
var PodSecurityLevels = []string{PodSecurityPrivileged, PodSecurityBaseline, PodSecurityRestricted}
