package consts

// A ResourceSlice can be cordoned: its virtual node then takes no new pods and the provider
// admits no new ShadowPod for it, while the pods already running keep running. Each
// annotation below has one writer, so that nobody undoes another's cordon:
//
//   - CordonAnnotation on the provider's copy: the provider (`liqoctl cordon resourceslice
//     <name> --remote-cluster-id <consumer>` sets it, `liqoctl uncordon resourceslice` removes
//     it); on the consumer's own slice: the consumer.
//   - CordonTenantAnnotation on the provider's copy: the provider's tenant controller, on every
//     slice of a Cordoned Tenant's consumer, as upstream Liqo's does.
//   - ConsumerCordonAnnotation on the provider's copy and ProviderCordonAnnotation on the
//     consumer's slice: the consumer's replication controller, which mirrors each side's own
//     cordon to the other side under these keys (never under CordonAnnotation, which upstream's
//     provider forbids a consumer to change).
//   - SliceCordonNodeAnnotation on a virtual Node: the consumer's virtual-node controller.
//   - ProviderCordonFinalizer on the provider's copy: the provider's controller manager, while
//     the provider cordons the slice, so that a consumer's delete of its copy does not lift
//     the cordon (the copy stays, terminating and cordoned, until the provider uncordons it or
//     the peering goes).
const (
	// CordonAnnotation cordons a ResourceSlice (upstream Liqo's key); see CordonSet for its values.
	CordonAnnotation = "liqo.io/cordon"
	// CordonTenantAnnotation, on a provider's copy of a slice, says the slice's tenant is
	// cordoned (upstream Liqo's key).
	CordonTenantAnnotation = "liqo.io/cordon-tenant"
	// ConsumerCordonAnnotation ("true"), on a provider's copy of a slice, says the consumer
	// cordoned its own slice (CordonAnnotation there). Ours, not upstream Liqo's.
	ConsumerCordonAnnotation = "liqo.io/cordon-consumer"
	// ProviderCordonAnnotation ("true"), on a consumer's slice, says the provider cordoned its
	// copy (CordonAnnotation or CordonTenantAnnotation there). Ours, not upstream Liqo's.
	ProviderCordonAnnotation = "liqo.io/cordon-provider"
	// SliceCordonNodeAnnotation ("true"), on a virtual Node, says the virtual-node controller
	// made the node unschedulable because its slice is cordoned, and will make it schedulable
	// again when the slice is uncordoned. A node made unschedulable by anyone else (kubectl
	// cordon) does not carry it and is left as it is. Ours, not upstream Liqo's.
	SliceCordonNodeAnnotation = "liqo.io/cordoned-by-resourceslice"
	// ProviderCordonFinalizer holds the provider's copy of a consumer's slice while the provider
	// cordons it (CordonAnnotation or CordonTenantAnnotation there): a delete by the consumer
	// then leaves the copy, still cordoned, until the provider lifts the cordon, the consumer's
	// Tenant goes or the tenant namespace is deleted (unpeering). Ours, not upstream Liqo's.
	ProviderCordonFinalizer = "liqo.io/provider-cordon"
)

// ProviderNodesNotReadyAnnotation says that none of the provider's nodes that a slice's pods
// may run on is Ready (its value says how many there are: "0/3 nodes Ready"), so the
// consumer's virtual node of the slice is not Ready either. Ours, not upstream Liqo's. One
// writer per object: the provider's controller manager on its copy of a consumer's slice (the
// consumer may not read the provider's Nodes), the consumer's replication controller on the
// consumer's slice (from the copy), the consumer's virtual-node controller on the slice's
// VirtualNode, which the virtual kubelet reads. Absent when a node is Ready, or when the
// provider has no node of its own for the slice.
const ProviderNodesNotReadyAnnotation = "liqo.io/provider-nodes-not-ready"

// ProviderCordoned tells whether annotations of a provider's copy of a slice carry the
// provider's own cordon: CordonAnnotation, CordonTenantAnnotation or ContractExpiredAnnotation.
func ProviderCordoned(annotations map[string]string) bool {
	return CordonSet(annotations, CordonAnnotation) || CordonSet(annotations, CordonTenantAnnotation) ||
		CordonSet(annotations, ContractExpiredAnnotation)
}

// SliceCordonAnnotations are the annotations that cordon a ResourceSlice, on either side of a
// peering (each is written on one side only).
var SliceCordonAnnotations = []string{CordonAnnotation, CordonTenantAnnotation, ContractExpiredAnnotation, ConsumerCordonAnnotation, ProviderCordonAnnotation}

// CordonSet tells whether annotations cordon through key: the key is present with any value
// but "false", "False" or "0" (upstream Liqo's rule, so an empty value cordons).
func CordonSet(annotations map[string]string, key string) bool {
	v, ok := annotations[key]
	return ok && v != "false" && v != "False" && v != "0"
}

// SliceCordonedBy returns the annotations of SliceCordonAnnotations that cordon a slice with
// these annotations, in that order; none when it is not cordoned.
func SliceCordonedBy(annotations map[string]string) []string {
	var out []string
	for _, k := range SliceCordonAnnotations {
		if CordonSet(annotations, k) {
			out = append(out, k)
		}
	}
	return out
}

// ResourceSliceGrantKept is the reason of a ResourceSlice's Resources condition (Accepted) when
// the provider could not grant what the slice now asks for, and keeps the grant in force
// (status.resources) instead of withdrawing it: the slice's virtual node and its pods stay as
// they are. Its message says what was asked and why it is not granted. Ours, not upstream
// Liqo's (whose provider does not re-negotiate).
const ResourceSliceGrantKept = "GrantKept"
