package storage_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode/namespaces"
	rt "github.com/peerkit/terraform-provider-liqo/vnode/reflection/reflectiontest"
	"github.com/peerkit/terraform-provider-liqo/vnode/storage"
)

const (
	localNS  = "app"
	remoteNS = "app-cl-consumer"
	timeout  = 20 * time.Second
)

// claim is a claim of class, for 1Gi, annotated as the scheduler and the PersistentVolume
// controller annotate a claim whose pod was placed on node, plus ann.
func claim(name, class, node string, ann map[string]string) *corev1.PersistentVolumeClaim {
	a := map[string]string{storage.AnnSelectedNode: node, storage.AnnStorageProvisioner: consts.StorageProvisioner}
	for k, v := range ann {
		a[k] = v
	}
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "db"}, Annotations: a},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

// TestProvisioning runs the storage reflector as the consumer's user on the provider and plays
// the scheduler by hand (the end-to-end flow, with it, is vnode/pods' TestOffloadedPodVolume).
func TestProvisioning(t *testing.T) {
	// Controller managers: claims are protected by a finalizer that theirs remove, and the
	// consumer's binds claims to the volumes the reflector makes.
	b := rt.New(t, testenv.ClusterOptions{ControllerManager: true}, testenv.ClusterOptions{ControllerManager: true})
	b.Namespaces(t, localNS, remoteNS)
	ctx := t.Context()
	top := t
	if _, err := b.Local.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "liqo"},
		Provisioner: consts.StorageProvisioner, VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mapper := namespaces.Static(map[string]string{localNS: remoteNS})
	stop := rt.Start(top, &storage.Reflector{RemoteClass: "standard"}, b.Env(top, mapper))
	lc, rc := b.Local.CoreV1().PersistentVolumeClaims(localNS), b.Admin.CoreV1().PersistentVolumeClaims(remoteNS)
	pvs := b.Local.CoreV1().PersistentVolumes()

	t.Run("a claim placed on the virtual node gets its copy, with the remote class and access modes asked for, and its local volume", func(t *testing.T) {
		c, err := lc.Create(ctx, claim("data", "liqo", rt.NodeName, map[string]string{
			consts.RemoteStorageClassAnnotation: "fast", consts.RemoteAccessModesAnnotation: " ReadWriteMany, ReadOnlyMany", "note": "kept"}),
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := waitClaim(t, b, "data", func(*corev1.PersistentVolumeClaim) bool { return true })
		if r.Spec.StorageClassName == nil || *r.Spec.StorageClassName != "fast" {
			t.Errorf("remote class %v, want fast (the annotation's)", r.Spec.StorageClassName)
		}
		if !slices.Equal(r.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadOnlyMany}) {
			t.Errorf("remote access modes %v, want the annotation's", r.Spec.AccessModes)
		}
		if q := r.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("1Gi")) != 0 {
			t.Errorf("remote request %v", r.Spec.Resources.Requests)
		}
		if r.Labels["app"] != "db" || r.Labels[consts.ReflectedLabel] != "true" || r.Labels[consts.OriginClusterIDLabel] != string(rt.ConsumerID) ||
			r.Annotations["note"] != "kept" || r.Annotations[consts.OriginClaimUIDAnnotation] != string(c.UID) {
			t.Errorf("remote labels %v, annotations %v", r.Labels, r.Annotations)
		}
		for _, k := range []string{storage.AnnSelectedNode, storage.AnnStorageProvisioner} {
			if _, ok := r.Annotations[k]; ok {
				t.Errorf("remote annotations keep the local controllers' %s: %v", k, r.Annotations)
			}
		}
		pv := waitVolume(t, b, storage.VolumeName(c.UID))
		ref := pv.Spec.ClaimRef
		if ref == nil || ref.Namespace != localNS || ref.Name != "data" || ref.UID != c.UID {
			t.Errorf("local volume's claimRef %+v, want the claim", ref)
		}
		if pv.Spec.StorageClassName != "liqo" || !slices.Equal(pv.Spec.AccessModes, c.Spec.AccessModes) ||
			pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Annotations[storage.AnnProvisionedBy] != consts.StorageProvisioner {
			t.Errorf("local volume %+v %v", pv.Spec, pv.Annotations)
		}
		if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.Cmp(resource.MustParse("1Gi")) != 0 {
			t.Errorf("local volume capacity %v", pv.Spec.Capacity)
		}
		terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
		if len(terms) != 1 || terms[0].MatchExpressions[0].Key != consts.RemoteClusterIDLabel || terms[0].MatchExpressions[0].Values[0] != string(rt.ProviderID) {
			t.Errorf("local volume node affinity %+v, want the provider's virtual nodes", terms)
		}
		waitEvent(t, b, "data", storage.ReasonProvisioned)
		rt.Eventually(t, "the claim bound to its local volume", timeout, func(ctx context.Context) (bool, error) {
			c, err := lc.Get(ctx, "data", metav1.GetOptions{})
			return err == nil && c.Status.Phase == corev1.ClaimBound && c.Spec.VolumeName == storage.VolumeName(c.UID), err
		})
		// Labels and annotations follow.
		update(t, b, "data", func(c *corev1.PersistentVolumeClaim) { c.Labels["tier"] = "gold" })
		waitClaim(t, b, "data", func(r *corev1.PersistentVolumeClaim) bool { return r.Labels["tier"] == "gold" })
	})

	t.Run("without annotations: the reflector's remote class and the claim's access modes", func(t *testing.T) {
		if _, err := lc.Create(ctx, claim("plain", "liqo", rt.NodeName, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r := waitClaim(t, b, "plain", func(*corev1.PersistentVolumeClaim) bool { return true })
		if r.Spec.StorageClassName == nil || *r.Spec.StorageClassName != "standard" ||
			!slices.Equal(r.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
			t.Errorf("remote class %v, access modes %v; want standard, ReadWriteOnce", r.Spec.StorageClassName, r.Spec.AccessModes)
		}
	})

	t.Run("claims placed on another node, not placed yet, or of another class are left alone", func(t *testing.T) {
		other := claim("elsewhere", "liqo", "worker-1", nil)
		fast := claim("other-class", "fast", rt.NodeName, nil)
		waiting := claim("waiting", "liqo", "", nil)
		waiting.Annotations = nil
		for _, c := range []*corev1.PersistentVolumeClaim{other, fast, waiting} {
			if _, err := lc.Create(ctx, c, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// A claim created after them is provisioned: the reflector saw them.
		if _, err := lc.Create(ctx, claim("witness", "liqo", rt.NodeName, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitClaim(t, b, "witness", func(*corev1.PersistentVolumeClaim) bool { return true })
		rt.Never(t, "a claim not placed on the virtual node provisioned", time.Second, func(ctx context.Context) bool {
			for _, n := range []string{"elsewhere", "other-class", "waiting"} {
				if _, err := rc.Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return true
				}
			}
			return false
		})
	})

	t.Run("a bad access-modes annotation: not provisioned, a Warning Event says why; fixed, provisioned", func(t *testing.T) {
		if _, err := lc.Create(ctx, claim("bad", "liqo", rt.NodeName, map[string]string{consts.RemoteAccessModesAnnotation: "ReadWriteSometimes"}),
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ev := waitEvent(t, b, "bad", storage.ReasonBadAnnotation)
		for _, want := range []string{consts.RemoteAccessModesAnnotation, `"ReadWriteSometimes"`, "ReadWriteOnce"} {
			if !strings.Contains(ev.Message, want) {
				t.Errorf("Event message %q does not contain %q", ev.Message, want)
			}
		}
		if ev.Type != corev1.EventTypeWarning {
			t.Errorf("Event type %s", ev.Type)
		}
		if _, err := rc.Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the claim with a bad annotation has a copy: %v", err)
		}
		update(t, b, "bad", func(c *corev1.PersistentVolumeClaim) {
			c.Annotations[consts.RemoteAccessModesAnnotation] = "ReadOnlyMany"
		})
		waitClaim(t, b, "bad", func(r *corev1.PersistentVolumeClaim) bool {
			return slices.Equal(r.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany})
		})
	})

	t.Run("a claim deleted: its copy and local volume go; deleted while the reflector was down too", func(t *testing.T) {
		data, err := lc.Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := lc.Get(ctx, "plain", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitVolume(t, b, storage.VolumeName(plain.UID))
		if err := lc.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "the deleted claim's copy", func(ctx context.Context) error {
			_, err := rc.Get(ctx, "data", metav1.GetOptions{})
			return err
		})
		waitGone(t, "the deleted claim's local volume", func(ctx context.Context) error {
			_, err := pvs.Get(ctx, storage.VolumeName(data.UID), metav1.GetOptions{})
			return err
		})
		stop()
		if err := lc.Delete(ctx, "plain", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		stop = rt.Start(top, &storage.Reflector{}, b.Env(top, mapper))
		waitGone(t, "the copy of a claim deleted while the reflector was down", func(ctx context.Context) error {
			_, err := rc.Get(ctx, "plain", metav1.GetOptions{})
			return err
		})
		waitGone(t, "the local volume of a claim deleted while the reflector was down", func(ctx context.Context) error {
			_, err := pvs.Get(ctx, storage.VolumeName(plain.UID), metav1.GetOptions{})
			return err
		})
	})

	t.Run("a copy deleted on the provider is not made again; the claim says so", func(t *testing.T) {
		waitClaim(t, b, "witness", func(*corev1.PersistentVolumeClaim) bool { return true })
		if err := rc.Delete(ctx, "witness", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, b, "witness", storage.ReasonRemoteDeleted)
		if _, err := rc.Get(ctx, "witness", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the copy deleted on the provider was made again: %v", err)
		}
	})

	t.Run("the provider's own claim of that name is left alone", func(t *testing.T) {
		if _, err := rc.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "theirs"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}}}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c, err := lc.Create(ctx, claim("theirs", "liqo", rt.NodeName, nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitEvent(t, b, "theirs", storage.ReasonNameTaken)
		if err := lc.Delete(ctx, "theirs", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		rt.Never(t, "the provider's claim touched, or a local volume made for it", 2*time.Second, func(ctx context.Context) bool {
			r, err := rc.Get(ctx, "theirs", metav1.GetOptions{})
			_, perr := pvs.Get(ctx, storage.VolumeName(c.UID), metav1.GetOptions{})
			return err != nil || r.Labels[consts.ReflectedLabel] != "" || !apierrors.IsNotFound(perr)
		})
	})
}

func TestParseAccessModes(t *testing.T) {
	got, err := storage.ParseAccessModes("ReadWriteOnce, ReadWriteOncePod,ReadWriteOnce,")
	if err != nil || !slices.Equal(got, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteOncePod}) {
		t.Errorf("ParseAccessModes = %v, %v", got, err)
	}
	for _, bad := range []string{"readwriteonce", "RWO", " , "} {
		if _, err := storage.ParseAccessModes(bad); err == nil {
			t.Errorf("ParseAccessModes(%q) accepted", bad)
		}
	}
}

// update changes a local claim, again on conflicts (the PersistentVolume controller writes
// claims too).
func update(t *testing.T, b *rt.Bed, name string, change func(*corev1.PersistentVolumeClaim)) {
	t.Helper()
	lc := b.Local.CoreV1().PersistentVolumeClaims(localNS)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := lc.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(c)
		_, err = lc.Update(t.Context(), c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitClaim waits until the remote copy of a claim satisfies ok, and returns it.
func waitClaim(t *testing.T, b *rt.Bed, name string, ok func(*corev1.PersistentVolumeClaim) bool) *corev1.PersistentVolumeClaim {
	t.Helper()
	var got *corev1.PersistentVolumeClaim
	rt.Eventually(t, "remote claim "+name, timeout, func(ctx context.Context) (bool, error) {
		var err error
		got, err = b.Admin.CoreV1().PersistentVolumeClaims(remoteNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil && ok(got), err
	})
	return got
}

// waitVolume waits for a local PersistentVolume.
func waitVolume(t *testing.T, b *rt.Bed, name string) *corev1.PersistentVolume {
	t.Helper()
	var got *corev1.PersistentVolume
	rt.Eventually(t, "local volume "+name, timeout, func(ctx context.Context) (bool, error) {
		var err error
		got, err = b.Local.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		return err == nil, err
	})
	return got
}

// waitEvent waits for an Event of that reason on the local claim name.
func waitEvent(t *testing.T, b *rt.Bed, name, reason string) *corev1.Event {
	t.Helper()
	var got *corev1.Event
	rt.Eventually(t, "Event "+reason+" on claim "+name, timeout, func(ctx context.Context) (bool, error) {
		evs, err := b.Local.CoreV1().Events(localNS).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.kind": "PersistentVolumeClaim", "involvedObject.name": name, "reason": reason}.String()})
		if err != nil || len(evs.Items) == 0 {
			return false, err
		}
		got = &evs.Items[0]
		return true, nil
	})
	return got
}

// waitGone waits until get reports NotFound.
func waitGone(t *testing.T, what string, get func(ctx context.Context) error) {
	t.Helper()
	rt.Eventually(t, what, timeout, func(ctx context.Context) (bool, error) {
		err := get(ctx)
		return apierrors.IsNotFound(err), err
	})
}
