package pods_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/storage"
)

// TestOffloadedPodVolume: a pod of the offloaded namespace with a claim of the virtual storage
// class, placed on the virtual node by the consumer's scheduler, runs on the provider with the
// claim's copy there (of the storage class and access modes its annotations ask for, bound by
// the provider to a volume of that class), and the local claim is bound; the real schedulers and
// PersistentVolume controllers of both clusters take part.
func TestOffloadedPodVolume(t *testing.T) {
	b := newBed(t, bedOptions{log: testr.NewWithOptions(t, testr.Options{Verbosity: 1}), more: []vnode.Reflector{&storage.Reflector{}}})
	ctx := t.Context()
	create(t, b.cons.Client, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: consts.DefaultVirtualStorageClass},
		Provisioner: consts.StorageProvisioner, VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)})
	// The provider's volume, of a class with no provisioner: bound as soon as a claim fits.
	create(t, b.prov.Client, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "provider-disk"},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: "manual", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/provider-disk"}}}})
	create(t, b.cons.Client, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: "data",
		Annotations: map[string]string{consts.RemoteStorageClassAnnotation: "manual", consts.RemoteAccessModesAnnotation: "ReadWriteMany"}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(consts.DefaultVirtualStorageClass),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})
	create(t, b.cons.Client, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: "db"},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false),
			NodeSelector: map[string]string{consts.TypeLabel: consts.VirtualNodeType},
			Tolerations:  []corev1.Toleration{{Key: vnode.Taint.Key, Operator: corev1.TolerationOpEqual, Value: vnode.Taint.Value, Effect: vnode.Taint.Effect}},
			Containers: []corev1.Container{{Name: "db", Image: "postgres:17",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/postgresql/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}})

	testenv.Eventually(t, "the pod Running on the virtual node", 2*time.Minute, func(ctx context.Context) bool {
		p := &corev1.Pod{}
		return b.cons.Client.Get(ctx, key(localNs, "db"), p) == nil && p.Spec.NodeName == nodeName && p.Status.Phase == corev1.PodRunning
	})
	local := &corev1.PersistentVolumeClaim{}
	if err := b.cons.Client.Get(ctx, key(localNs, "data"), local); err != nil {
		t.Fatal(err)
	}
	if local.Status.Phase != corev1.ClaimBound || local.Spec.VolumeName != storage.VolumeName(local.UID) {
		t.Errorf("local claim %s bound to %q, want Bound to %s", local.Status.Phase, local.Spec.VolumeName, storage.VolumeName(local.UID))
	}
	remote := &corev1.PersistentVolumeClaim{}
	if err := b.prov.Client.Get(ctx, key(remoteNs, "data"), remote); err != nil {
		t.Fatal(err)
	}
	if remote.Status.Phase != corev1.ClaimBound || remote.Spec.VolumeName != "provider-disk" || ptr.Deref(remote.Spec.StorageClassName, "") != "manual" ||
		!slices.Equal(remote.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) {
		t.Errorf("remote claim: %s, volume %q, class %v, access modes %v; want Bound to provider-disk, manual, ReadWriteMany",
			remote.Status.Phase, remote.Spec.VolumeName, remote.Spec.StorageClassName, remote.Spec.AccessModes)
	}
	rpod, err := b.remotePod(ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	if v := rpod.Spec.Volumes[0].PersistentVolumeClaim; v == nil || v.ClaimName != "data" || rpod.Spec.NodeName != "provider-node" {
		t.Errorf("remote pod on %q with volumes %+v, want on provider-node with claim data", rpod.Spec.NodeName, rpod.Spec.Volumes)
	}

	// The pod and the claim deleted: the copy and the local volume go.
	if err := b.consKube.CoreV1().Pods(localNs).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.consKube.CoreV1().PersistentVolumeClaims(localNs).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the claim's copy and local volume deleted", 2*time.Minute, func(ctx context.Context) bool {
		err1 := b.prov.Client.Get(ctx, key(remoteNs, "data"), &corev1.PersistentVolumeClaim{})
		err2 := b.cons.Client.Get(ctx, key("", storage.VolumeName(local.UID)), &corev1.PersistentVolume{})
		return isNotFound(err1) && isNotFound(err2)
	})
}

func key(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
