// Package storage is the virtual kubelet's provisioner of the virtual storage class: a
// PersistentVolumeClaim of that class (consts.DefaultVirtualStorageClass, "liqo", provisioner
// consts.StorageProvisioner, volumeBindingMode WaitForFirstConsumer) whose pod the consumer's
// scheduler places on the virtual node gets its volume on the provider, as upstream Liqo's
// virtual kubelet gives it:
//
//   - The scheduler annotates the claim with the node it chose (volume.kubernetes.io/selected-node)
//     and the consumer's PersistentVolume controller with the class's provisioner
//     (volume.kubernetes.io/storage-provisioner). When the node is this virtual node, the
//     reflector creates the claim's copy in the mapped remote namespace, under the same name
//     (which the offloaded pod's volume names): the claim's labels and annotations (not those
//     the local controllers set), labelled as a reflected copy; its resources and volume mode;
//     the access modes of consts.RemoteAccessModesAnnotation (comma-separated), else the
//     claim's; the storage class of consts.RemoteStorageClassAnnotation, else
//     Reflector.RemoteClass, else none (the provider's default class).
//   - Then it creates the local PersistentVolume pvc-<claim UID> standing for the copy: of the
//     virtual class, with the claim's access modes and requested capacity, the class's reclaim
//     policy, node affinity to the provider's virtual nodes (liqo.io/remote-cluster-id), and a
//     claimRef to the claim, which the PersistentVolume controller then binds; the scheduler,
//     which waited for that, binds the pod.
//   - The claim gone: its copy is deleted, and its local volume too unless the class's reclaim
//     policy is Retain. A copy deleted on the provider (its data with it) is not made again:
//     a Warning Event on the claim says so.
//
// A bad consts.RemoteAccessModesAnnotation, or a claim of the same name on the provider that is
// not a copy (never touched), leaves the claim unprovisioned with a Warning Event saying why. Later changes of a claim's labels and
// annotations follow to its copy; its spec does not (a copy's spec cannot change, but for
// expansion, which is not reflected).
package storage

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/reflection"
)

// DefaultWorkers is how many claims a Reflector reconciles in parallel unless told otherwise.
const DefaultWorkers = 2

// Annotations of the Kubernetes volume machinery the reflector reads, and that copies do not get.
const (
	// AnnSelectedNode is where the scheduler records the node of a claim's first pod.
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// AnnStorageProvisioner (and its beta form) is where the PersistentVolume controller records
	// the provisioner expected to provision a claim.
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	// AnnProvisionedBy names, on a PersistentVolume, the provisioner that made it.
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"
)

// controllerAnnotations are set on a claim by the local cluster's controllers: its copy does
// not get them (the provider's own controllers set theirs).
var controllerAnnotations = []string{
	"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
	AnnStorageProvisioner, AnnBetaStorageProvisioner, AnnSelectedNode, "volume.alpha.kubernetes.io/selected-node",
	corev1.BetaStorageClassAnnotation,
}

// Reasons of the Events on local claims.
const (
	// ReasonProvisioned: the claim's copy and local volume were made.
	ReasonProvisioned = "ProvisionedOnProvider"
	// ReasonBadAnnotation: an annotation of the claim cannot be read.
	ReasonBadAnnotation = "InvalidRemoteStorageAnnotation"
	// ReasonRemoteDeleted: the claim's copy was deleted on the provider.
	ReasonRemoteDeleted = "ProviderClaimDeleted"
	// ReasonNameTaken: the provider has a claim of the same name that is not a copy.
	ReasonNameTaken = "ProviderClaimNameTaken"
)

// claims is the informers' name in a reflection.Namespace.
const claims = "persistentvolumeclaims"

// Reflector provisions the claims of the virtual storage class placed on one virtual node on
// its provider. It implements vnode.Reflector.
type Reflector struct {
	// Workers reconcile claims in parallel. Default DefaultWorkers.
	Workers int
	// QPS and Burst limit the reflector's requests to each cluster. Default
	// reflection.DefaultQPS and reflection.DefaultBurst.
	QPS   float32
	Burst int
	// VirtualClass is the virtual storage class's name. Default consts.DefaultVirtualStorageClass.
	VirtualClass string
	// RemoteClass is the storage class of the copies whose claim has no
	// consts.RemoteStorageClassAnnotation; "": the provider's default class.
	RemoteClass string
}

var _ vnode.Reflector = (*Reflector)(nil)

// Name names the reflector in logs.
func (r *Reflector) Name() string { return "storage" }

// run is one Run of a Reflector.
type run struct {
	env          *vnode.Env
	log          logr.Logger
	recorder     record.EventRecorder
	virtualClass string
	remoteClass  string
	selector     string // the reflected copies of this consumer
}

// Run provisions until ctx ends.
func (r *Reflector) Run(ctx context.Context, env *vnode.Env) error {
	env, err := reflection.Tuned(r.Name(), env, r.QPS, r.Burst)
	if err != nil {
		return err
	}
	rn := &run{env: env, log: env.Log.WithValues("reflector", r.Name()), virtualClass: r.VirtualClass, remoteClass: r.RemoteClass,
		selector: labels.SelectorFromSet(labels.Set{consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: string(env.ConsumerID)}).String()}
	if rn.virtualClass == "" {
		rn.virtualClass = consts.DefaultVirtualStorageClass
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: env.Local.CoreV1().Events("")})
	rn.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "liqo-virtual-kubelet", Host: env.NodeName})
	workers := r.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	loop := &reflection.Loop{Name: r.Name(), Workers: workers, Setup: rn.setup, Resync: rn.resync,
		Reconcile: func(ctx context.Context, ns *reflection.Namespace, k reflection.Key) error {
			return rn.reconcile(ctx, ns, k.Name)
		}}
	return loop.Run(ctx, env)
}

// setup watches the namespace's claims and their copies; both enqueue the claim's name.
func (rn *run) setup(ns *reflection.Namespace, enqueue func(reflection.Key)) error {
	ns.LocalInf[claims] = coreinformers.NewPersistentVolumeClaimInformer(rn.env.Local, ns.Local, 0, cache.Indexers{})
	ns.RemoteInf[claims] = coreinformers.NewFilteredPersistentVolumeClaimInformer(rn.env.Remote, ns.Remote, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = rn.selector })
	keys := func(obj any) []reflection.Key {
		if m := reflection.Meta(obj); m != nil {
			return []reflection.Key{{Namespace: ns.Local, Name: m.GetName()}}
		}
		return nil
	}
	for side, inf := range map[string]cache.SharedIndexInformer{"local": ns.LocalInf[claims], "remote": ns.RemoteInf[claims]} {
		if _, err := inf.AddEventHandler(reflection.Handler(enqueue, keys)); err != nil {
			return fmt.Errorf("watching %s claims: %w", side, err)
		}
	}
	return nil
}

// resync enqueues every claim and copy.
func (rn *run) resync(ns *reflection.Namespace, enqueue func(reflection.Key)) {
	for _, inf := range []cache.SharedIndexInformer{ns.LocalInf[claims], ns.RemoteInf[claims]} {
		for _, name := range reflection.Names(inf) {
			enqueue(reflection.Key{Namespace: ns.Local, Name: name})
		}
	}
}

// VolumeName is the name of the local PersistentVolume standing for the copy of the claim
// whose UID is uid (the name Kubernetes' provisioners give).
func VolumeName(uid types.UID) string { return "pvc-" + string(uid) }

// reconcile provisions, keeps or releases the copy of the claim name.
func (rn *run) reconcile(ctx context.Context, ns *reflection.Namespace, name string) error {
	local, hasLocal := reflection.Cached[*corev1.PersistentVolumeClaim](ns.LocalInf[claims], ns.Local, name)
	remote, hasRemote := reflection.Cached[*corev1.PersistentVolumeClaim](ns.RemoteInf[claims], ns.Remote, name)
	if hasRemote && remote.DeletionTimestamp != nil {
		return nil // its deletion is watched
	}
	switch {
	case !hasLocal:
		if hasRemote {
			return rn.release(ctx, remote)
		}
		return nil
	case hasRemote && remote.Annotations[consts.OriginClaimUIDAnnotation] != string(local.UID):
		// The copy of an earlier claim of that name: it goes first.
		return rn.release(ctx, remote)
	case local.DeletionTimestamp != nil:
		return nil // its pods still use the copy
	case hasRemote:
		return rn.keep(ctx, ns, local, remote)
	case local.Spec.VolumeName == VolumeName(local.UID):
		return rn.lost(ctx, ns, local) // bound to the volume standing for a copy not in the cache
	case !rn.placedHere(local):
		return nil
	}
	return rn.provision(ctx, ns, local)
}

// lost reports, on a claim whose local volume was made, that its copy is gone from the
// provider, if it is (and not only missing from the cache yet).
func (rn *run) lost(ctx context.Context, ns *reflection.Namespace, local *corev1.PersistentVolumeClaim) error {
	_, err := rn.env.Remote.CoreV1().PersistentVolumeClaims(ns.Remote).Get(ctx, local.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		rn.recorder.Eventf(local, corev1.EventTypeWarning, ReasonRemoteDeleted,
			"the claim's copy %s/%s on provider %s was deleted there, with its data; it is not made again: delete and re-create the claim for a new volume",
			ns.Remote, local.Name, rn.env.ProviderID)
		return nil
	case err != nil:
		return fmt.Errorf("reading the copy %s/%s of claim %s/%s on provider %s: %w", ns.Remote, local.Name, ns.Local, local.Name, rn.env.ProviderID, err)
	}
	return nil // in the cache soon
}

// placedHere says whether a claim without a copy is of the virtual class, unbound, and waits
// for its volume on this virtual node.
func (rn *run) placedHere(pvc *corev1.PersistentVolumeClaim) bool {
	provisioner := pvc.Annotations[AnnStorageProvisioner]
	if provisioner == "" {
		provisioner = pvc.Annotations[AnnBetaStorageProvisioner]
	}
	return claimClass(pvc) == rn.virtualClass && pvc.Spec.VolumeName == "" &&
		pvc.Annotations[AnnSelectedNode] == rn.env.NodeName && provisioner == consts.StorageProvisioner
}

// claimClass is a claim's storage class, from its spec or its beta annotation.
func claimClass(pvc *corev1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return pvc.Annotations[corev1.BetaStorageClassAnnotation]
}

// provision makes the copy of a claim placed here, then its local volume. A claim whose local
// volume exists already lost its copy on the provider: that is reported, not repaired.
func (rn *run) provision(ctx context.Context, ns *reflection.Namespace, local *corev1.PersistentVolumeClaim) error {
	pvName := VolumeName(local.UID)
	pvs := rn.env.Local.CoreV1().PersistentVolumes()
	if _, err := pvs.Get(ctx, pvName, metav1.GetOptions{}); err == nil {
		return rn.lost(ctx, ns, local) // made before, and not bound yet
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading local PersistentVolume %s of claim %s/%s: %w", pvName, ns.Local, local.Name, err)
	}
	class, err := rn.env.Local.StorageV1().StorageClasses().Get(ctx, rn.virtualClass, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the virtual storage class %s of claim %s/%s: %w", rn.virtualClass, ns.Local, local.Name, err)
	}
	want, err := rn.remoteClaim(ns, local)
	if err != nil {
		rn.recorder.Event(local, corev1.EventTypeWarning, ReasonBadAnnotation, err.Error())
		rn.log.Info("claim not provisioned", "namespace", ns.Local, "name", local.Name, "reason", err.Error())
		return nil // a change of the annotation enqueues the claim again
	}
	_, err = rn.env.Remote.CoreV1().PersistentVolumeClaims(ns.Remote).Create(ctx, want, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		cur, gerr := rn.env.Remote.CoreV1().PersistentVolumeClaims(ns.Remote).Get(ctx, local.Name, metav1.GetOptions{})
		if gerr == nil && (cur.Labels[consts.ReflectedLabel] != "true" || cur.Labels[consts.OriginClusterIDLabel] != string(rn.env.ConsumerID)) {
			rn.recorder.Eventf(local, corev1.EventTypeWarning, ReasonNameTaken,
				"provider %s has a claim %s/%s of its own: the claim is not provisioned there; rename it", rn.env.ProviderID, ns.Remote, local.Name)
			return nil
		}
		return fmt.Errorf("creating the copy %s/%s of claim %s/%s on provider %s: %w (a copy not in the cache yet)",
			ns.Remote, local.Name, ns.Local, local.Name, rn.env.ProviderID, err)
	case err != nil:
		return fmt.Errorf("creating the copy %s/%s of claim %s/%s on provider %s: %w", ns.Remote, local.Name, ns.Local, local.Name, rn.env.ProviderID, err)
	}
	if _, err := pvs.Create(ctx, rn.localVolume(local, class), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating local PersistentVolume %s for claim %s/%s: %w", pvName, ns.Local, local.Name, err)
	}
	rn.recorder.Eventf(local, corev1.EventTypeNormal, ReasonProvisioned, "volume %s provisioned on provider %s as claim %s/%s",
		pvName, rn.env.ProviderID, ns.Remote, local.Name)
	rn.log.V(1).Info("provisioned claim", "namespace", ns.Local, "name", local.Name, "volume", pvName, "remoteNamespace", ns.Remote)
	return nil
}

// keep brings a copy's labels and annotations current, and makes the claim's local volume if
// it is missing (the reflector stopped between the two).
func (rn *run) keep(ctx context.Context, ns *reflection.Namespace, local, remote *corev1.PersistentVolumeClaim) error {
	if local.Spec.VolumeName == "" {
		pvName := VolumeName(local.UID)
		pvs := rn.env.Local.CoreV1().PersistentVolumes()
		if _, err := pvs.Get(ctx, pvName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			class, err := rn.env.Local.StorageV1().StorageClasses().Get(ctx, rn.virtualClass, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("reading the virtual storage class %s of claim %s/%s: %w", rn.virtualClass, ns.Local, local.Name, err)
			}
			if _, err := pvs.Create(ctx, rn.localVolume(local, class), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating local PersistentVolume %s for claim %s/%s: %w", pvName, ns.Local, local.Name, err)
			}
		} else if err != nil {
			return fmt.Errorf("reading local PersistentVolume %s of claim %s/%s: %w", pvName, ns.Local, local.Name, err)
		}
	}
	lbl, ann := rn.remoteMeta(ns, local)
	if maps.Equal(remote.Labels, lbl) && maps.Equal(remote.Annotations, ann) {
		return nil
	}
	next := remote.DeepCopy()
	next.Labels, next.Annotations = lbl, ann
	if _, err := rn.env.Remote.CoreV1().PersistentVolumeClaims(ns.Remote).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the copy %s/%s of claim %s/%s on provider %s: %w", ns.Remote, local.Name, ns.Local, local.Name, rn.env.ProviderID, err)
	}
	return nil
}

// release deletes the local volume of a copy whose claim is gone (unless retained), then the
// copy.
func (rn *run) release(ctx context.Context, remote *corev1.PersistentVolumeClaim) error {
	if uid := types.UID(remote.Annotations[consts.OriginClaimUIDAnnotation]); uid != "" {
		pvs := rn.env.Local.CoreV1().PersistentVolumes()
		pv, err := pvs.Get(ctx, VolumeName(uid), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("reading local PersistentVolume %s: %w", VolumeName(uid), err)
		case pv.Annotations[AnnProvisionedBy] == consts.StorageProvisioner && pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain:
			err := pvs.Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("deleting local PersistentVolume %s, whose claim is gone: %w", pv.Name, err)
			}
		}
	}
	err := rn.env.Remote.CoreV1().PersistentVolumeClaims(remote.Namespace).Delete(ctx, remote.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &remote.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting claim %s/%s on provider %s, whose local claim is gone: %w", remote.Namespace, remote.Name, rn.env.ProviderID, err)
	}
	rn.log.V(1).Info("released claim", "remoteNamespace", remote.Namespace, "name", remote.Name)
	return nil
}

// remoteMeta are the labels and annotations of a claim's copy.
func (rn *run) remoteMeta(ns *reflection.Namespace, local *corev1.PersistentVolumeClaim) (map[string]string, map[string]string) {
	lbl := make(map[string]string, len(local.Labels)+4)
	maps.Copy(lbl, local.Labels)
	maps.Copy(lbl, consts.ReflectionLabels(string(rn.env.ConsumerID), string(rn.env.ProviderID)))
	ann := make(map[string]string, len(local.Annotations)+2)
	maps.Copy(ann, local.Annotations)
	for _, k := range controllerAnnotations {
		delete(ann, k)
	}
	ann[consts.OriginNamespaceAnnotation] = ns.Local
	ann[consts.OriginClaimUIDAnnotation] = string(local.UID)
	return lbl, ann
}

// remoteClaim is the copy of a claim; its error says which annotation cannot be read.
func (rn *run) remoteClaim(ns *reflection.Namespace, local *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	modes := slices.Clone(local.Spec.AccessModes)
	if v := strings.TrimSpace(local.Annotations[consts.RemoteAccessModesAnnotation]); v != "" {
		var err error
		if modes, err = ParseAccessModes(v); err != nil {
			return nil, fmt.Errorf("claim %s/%s, annotation %s: %w", ns.Local, local.Name, consts.RemoteAccessModesAnnotation, err)
		}
	}
	var class *string
	switch {
	case local.Annotations[consts.RemoteStorageClassAnnotation] != "":
		class = ptr.To(local.Annotations[consts.RemoteStorageClassAnnotation])
	case rn.remoteClass != "":
		class = ptr.To(rn.remoteClass)
	}
	mode := corev1.PersistentVolumeFilesystem
	if local.Spec.VolumeMode != nil {
		mode = *local.Spec.VolumeMode
	}
	lbl, ann := rn.remoteMeta(ns, local)
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: local.Name, Namespace: ns.Remote, Labels: lbl, Annotations: ann},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: modes, VolumeMode: &mode, StorageClassName: class,
			Resources: *local.Spec.Resources.DeepCopy()},
	}, nil
}

// localVolume is the local PersistentVolume standing for a claim's copy, pre-bound to the
// claim.
func (rn *run) localVolume(local *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) *corev1.PersistentVolume {
	policy := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		policy = *class.ReclaimPolicy
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: VolumeName(local.UID), Annotations: map[string]string{AnnProvisionedBy: consts.StorageProvisioner},
			Labels: map[string]string{consts.RemoteClusterIDLabel: string(rn.env.ProviderID)}},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              class.Name,
			AccessModes:                   slices.Clone(local.Spec.AccessModes),
			VolumeMode:                    local.Spec.VolumeMode,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: local.Spec.Resources.Requests[corev1.ResourceStorage]},
			PersistentVolumeReclaimPolicy: policy,
			MountOptions:                  class.MountOptions,
			// Never mounted: pods on virtual nodes run on the provider, with the copy.
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/liqo-placeholder"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: consts.RemoteClusterIDLabel, Operator: corev1.NodeSelectorOpIn,
					Values: []string{string(rn.env.ProviderID)}}}}}}},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: local.Namespace, Name: local.Name,
				UID: local.UID},
		},
	}
}

// accessModes are the access modes there are.
var accessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod}

// ParseAccessModes reads comma-separated access modes (consts.RemoteAccessModesAnnotation);
// its error names the mode it does not know and those there are.
func ParseAccessModes(s string) ([]corev1.PersistentVolumeAccessMode, error) {
	var out []corev1.PersistentVolumeAccessMode
	for part := range strings.SplitSeq(s, ",") {
		m := corev1.PersistentVolumeAccessMode(strings.TrimSpace(part))
		if m == "" {
			continue
		}
		if !slices.Contains(accessModes, m) {
			names := make([]string, len(accessModes))
			for i, a := range accessModes {
				names[i] = string(a)
			}
			return nil, fmt.Errorf("%q is not an access mode: use a comma-separated list of %s", m, strings.Join(names, ", "))
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q names no access mode", s)
	}
	return out, nil
}
