package consts

// Names of the reflection of offloaded namespaces to providers (virtual kubelet), upstream Liqo
// v1.2's. SkipReflectionAnnotation is in labels.go.
const (
	// AllowReflectionAnnotation opts an object in when its kind's reflection policy is AllowList:
	// only objects carrying it (with any value but "false") are reflected. Under the default
	// DenyList policy it changes nothing; SkipReflectionAnnotation wins over it.
	AllowReflectionAnnotation = "liqo.io/allow-reflection"
	// RemoteStorageClassAnnotation, on a PersistentVolumeClaim of the virtual storage class,
	// names the storage class of its copy on the provider (default: the virtual kubelet's
	// --remote-real-storage-class-name, else the provider's default class).
	RemoteStorageClassAnnotation = "liqo.io/remote-storage-class"
	// RemoteAccessModesAnnotation, on a PersistentVolumeClaim of the virtual storage class, gives
	// the access modes of its copy on the provider, comma-separated (e.g.
	// "ReadWriteOnce,ReadOnlyMany"); default: the claim's own.
	RemoteAccessModesAnnotation = "liqo.io/remote-access-modes"
	// StorageProvisioner is the provisioner of the virtual storage class: the virtual kubelet of
	// the node a claim's pod is scheduled on provisions its volume on that node's provider.
	StorageProvisioner = "liqo.io/storage"
	// DefaultVirtualStorageClass is the virtual storage class's default name.
	DefaultVirtualStorageClass = "liqo"
	// OriginClaimUIDAnnotation gives, on a claim's copy on the provider, the UID of the
	// consumer's claim (whose local PersistentVolume is pvc-<UID>). Ours, not upstream's.
	OriginClaimUIDAnnotation = "offloading.liqo.io/origin-claim-uid"
)
