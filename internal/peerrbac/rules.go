// Package peerrbac holds what a peer may do in a provider cluster: the least-privilege rules of
// a consumer's control plane in its tenant namespace and of its virtual kubelet in its remote
// namespaces. The controller manager's ClusterRoles and liqo_consumer_identity's Role both grant
// exactly these.
package peerrbac

import rbacv1 "k8s.io/api/rbac/v1"

// readWrite is every verb on a resource but deletecollection.
var readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// ControlPlaneRules are what a consumer's control plane may do in its tenant namespace on the
// provider: its ResourceSlices, NamespaceMaps and Renews and their status, and read its own Tenant
// (the renewed certificate is picked up from its status, or from a Renew's), read the Offers
// published to it (seed 004's advertisement, market.peerkit.io), and write its Contracts (the
// terms it proposes and signs) but not their status, which is the provider's answer (its
// countersignature). Nothing else.
func ControlPlaneRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.liqo.io"}, Resources: []string{"resourceslices", "resourceslices/status"}, Verbs: readWrite},
		{APIGroups: []string{"offloading.liqo.io"}, Resources: []string{"namespacemaps", "namespacemaps/status"}, Verbs: readWrite},
		{APIGroups: []string{"authentication.liqo.io"}, Resources: []string{"renews", "renews/status"}, Verbs: readWrite},
		{APIGroups: []string{"authentication.liqo.io"}, Resources: []string{"tenants"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"market.peerkit.io"}, Resources: []string{"offers"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"market.peerkit.io"}, Resources: []string{"contracts"}, Verbs: readWrite},
	}
}

// WorkloadRules are what a consumer's virtual kubelet may do in one of its remote namespaces on
// the provider: pods only through ShadowPods (which the provider turns into pods it owns, within
// the grant), the objects those pods need (ConfigMaps, Secrets, Services, Ingresses, the
// PersistentVolumeClaims of the virtual storage class; EndpointSlices only through
// ShadowEndpointSlices, which the provider turns into EndpointSlices it owns, as upstream Liqo's
// role allows), and reading what the pods do. No service accounts: as upstream's, our virtual
// kubelet creates none on the provider (a pod runs there with none, with the consumer's tokens
// or none, or as a service account the provider's administrator made).
//
// Secrets are written and never read, not even through the answer to a write: no get, list or
// watch; no patch (a JSON patch that copies /data/<key> to /metadata/name is refused with an
// error that quotes the value, before any admission, and "test" operations probe values); no
// deletecollection (it answers with what it deleted). The ValidatingAdmissionPolicy
// consts.ReflectedSecretsPolicy keeps creates, updates and deletes to the consumer's own copies,
// which it cannot check itself.
func WorkloadRules() []rbacv1.PolicyRule {
	all := append(append([]string{}, readWrite...), "deletecollection")
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"offloading.liqo.io"}, Resources: []string{"shadowpods"}, Verbs: all},
		{APIGroups: []string{"offloading.liqo.io"}, Resources: []string{"shadowpods/status"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps", "services", "persistentvolumeclaims"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "update", "delete"}},
		{APIGroups: []string{"offloading.liqo.io"}, Resources: []string{"shadowendpointslices"}, Verbs: readWrite},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/status", "events"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec", "pods/attach"}, Verbs: []string{"create", "get"}},
	}
}

// SliceWorkloadRules are what the holder of one of a consumer's ResourceSlice certificates
// (organization: the consumer's cluster ID, as upstream Liqo v1.2 issues them; bound as a group)
// may do in the consumer's remote namespaces: WorkloadRules and what upstream's virtual kubelet
// needs beyond them, as its liqo-virtual-kubelet-remote role grants it: Events, port
// forwarding, pod metrics, and reading and patching
// (server-side apply) the Secrets it reflects. So a virtual kubelet with a slice identity
// (upstream's, and ours once the slice is signed) may read the Secrets of its own remote
// namespaces, which one with the control-plane identity, bound as a user to WorkloadRules, may not;
// its writes stay limited to its own labelled copies by consts.ReflectedSecretsPolicy, and the
// ShadowPod controller runs no pod that mounts a Secret its consumer did not reflect.
func SliceWorkloadRules() []rbacv1.PolicyRule {
	return append(WorkloadRules(),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets", "events"}, Verbs: readWrite},
		rbacv1.PolicyRule{APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"list"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"create", "get"}},
	)
}
