package consts

// Tethered mode (seed 004): a cluster peered with exactly one foreign cluster that runs its
// workloads and uses its nodes. Ours, not upstream's: upstream's tools ignore these names.
const (
	// TetheringConfigMap is the ConfigMap, in the Liqo namespace, whose presence makes the
	// cluster tethered to the foreign cluster TetheredClusterIDKey names. liqo_peering (mode
	// "tethered") writes it; the controller manager's tethering controller acts on it.
	TetheringConfigMap = "liqo-tethering"
	// TetheredClusterIDKey is the TetheringConfigMap's key of the foreign cluster's ID.
	TetheredClusterIDKey = "foreignClusterID"
	// TetheredSliceClass is the class of the ResourceSlice a tethered cluster's foreign cluster
	// holds on it: the provider grants it everything it shares, whatever the slice asks.
	TetheredSliceClass = "tethered"
	// TetheringManagedBy is the value of LiqoManagedByLabel on the NamespaceOffloadings the
	// tethering controller makes (and removes when the tethering ends); a NamespaceOffloading
	// without it is the user's and is left alone.
	TetheringManagedBy = "tethering"
)
