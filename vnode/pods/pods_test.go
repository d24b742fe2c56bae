package pods_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/api"
	netv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/networking/v1beta1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/podsecurity/podsecuritytest"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/pods"
)

func mustScheme() *runtime.Scheme {
	s, err := api.NewScheme()
	if err != nil {
		panic(err)
	}
	return s
}

// deployment is a Deployment of the offloaded namespace placed on the virtual node, with
// references the reflection rewrites or keeps.
func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "worker",
					NodeSelector:       map[string]string{consts.TypeLabel: consts.VirtualNodeType},
					// Placement on the consumer, which the remote pod must not carry.
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
						NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
							Key: consts.TypeLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{consts.VirtualNodeType}}}}}}}},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
						WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
					Tolerations: []corev1.Toleration{{Key: vnode.Taint.Key, Operator: corev1.TolerationOpEqual, Value: vnode.Taint.Value, Effect: vnode.Taint.Effect},
						{Key: "keep-me", Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27",
						Env: []corev1.EnvVar{{Name: "CA", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: consts.RootCAConfigMap}, Key: "ca.crt"}}}}}},
					Volumes: []corev1.Volume{
						{Name: "ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: consts.RootCAConfigMap}}}},
						{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
						{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
							{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
							{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: consts.RootCAConfigMap},
								Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
						}}}},
					},
				},
			},
		},
	}
}

func (b *bed) localPods(ctx context.Context, app string) ([]corev1.Pod, error) {
	l := &corev1.PodList{}
	err := b.cons.Client.List(ctx, l, client.InNamespace(localNs), client.MatchingLabels{"app": app})
	return l.Items, err
}

func (b *bed) remotePod(ctx context.Context, name string) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	return p, b.prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: name}, p)
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// inSync reports, for every local pod, whether its status is its remote pod's: Running, Ready,
// same IPs and start time; the error says which differs.
func (b *bed) inSync(ctx context.Context, locals []corev1.Pod) error {
	for _, p := range locals {
		r, err := b.remotePod(ctx, p.Name)
		if err != nil {
			return fmt.Errorf("remote pod %s: %w", p.Name, err)
		}
		switch {
		case p.Status.Phase != corev1.PodRunning || !isReady(&p):
			return fmt.Errorf("local pod %s is %s, ready %v", p.Name, p.Status.Phase, isReady(&p))
		case r.Status.PodIP == "" || p.Status.PodIP != r.Status.PodIP || !slices.Equal(p.Status.PodIPs, r.Status.PodIPs):
			return fmt.Errorf("local pod %s has IP %q %v, remote %q %v", p.Name, p.Status.PodIP, p.Status.PodIPs, r.Status.PodIP, r.Status.PodIPs)
		case !p.Status.StartTime.Equal(r.Status.StartTime) || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount != r.Status.ContainerStatuses[0].RestartCount:
			return fmt.Errorf("local pod %s: start time or container statuses differ from the remote pod's", p.Name)
		}
	}
	return nil
}

// TestOffloading runs the pod reflector and the provider's ShadowPod controller on two real
// clusters (KWOK nodes make the provider's pods Running), through one scenario.
// deployAvailable creates Deployment name with replicas pods in the offloaded namespace, waits
// until it is Available and returns it with its local pods.
func (b *bed) deployAvailable(t *testing.T, name string, replicas int32) (*appsv1.Deployment, []corev1.Pod) {
	t.Helper()
	dep := deployment(name, replicas)
	create(t, b.cons.Client, dep)
	testenv.Eventually(t, fmt.Sprintf("the Deployment Available with %d replicas", replicas), time.Minute, func(ctx context.Context) bool {
		return b.cons.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep) == nil && dep.Status.AvailableReplicas == replicas
	})
	locals, err := b.localPods(t.Context(), name)
	if err != nil || len(locals) != int(replicas) {
		t.Fatalf("local pods: %d, %v", len(locals), err)
	}
	return dep, locals
}

func TestOffloading(t *testing.T) {
	b := newBed(t, bedOptions{log: testr.NewWithOptions(t, testr.Options{Verbosity: 0})})
	ctx := t.Context()

	dep, locals := b.deployAvailable(t, "web", 3)
	if err := b.inSync(ctx, locals); err != nil {
		t.Fatal(err)
	}

	t.Run("remote objects", func(t *testing.T) {
		for _, p := range locals {
			if p.Spec.NodeName != nodeName {
				t.Errorf("local pod %s on node %q, want %s", p.Name, p.Spec.NodeName, nodeName)
			}
			if ip := p.Status.PodIP; len(ip) < 7 || ip[:7] != "10.200." {
				t.Errorf("local pod %s IP %q, want the provider's pod CIDR 10.200.0.0/16", p.Name, ip)
			}
			sp := &offv1beta1.ShadowPod{}
			if err := b.prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: p.Name}, sp); err != nil {
				t.Fatalf("ShadowPod of %s: %v", p.Name, err)
			}
			wantLabels := map[string]string{"app": "web", consts.OriginClusterIDLabel: consumerID, consts.OriginNodeLabel: nodeName, consts.ReflectedLabel: "true",
				consts.UpstreamOriginLabel: consumerID, consts.UpstreamDestinationLabel: providerID} // upstream's, for its ShadowPod webhook
			for k, v := range wantLabels {
				if sp.Labels[k] != v {
					t.Errorf("ShadowPod %s label %s=%q, want %q", sp.Name, k, sp.Labels[k], v)
				}
			}
			s := sp.Spec.Pod
			virtualToleration := slices.ContainsFunc(s.Tolerations, func(t corev1.Toleration) bool { return t.Key == vnode.Taint.Key })
			kept := slices.ContainsFunc(s.Tolerations, func(t corev1.Toleration) bool { return t.Key == "keep-me" })
			if s.NodeName != "" || s.NodeSelector != nil || s.Affinity != nil || s.TopologySpreadConstraints != nil || virtualToleration || !kept {
				t.Errorf("ShadowPod %s keeps local placement: nodeName %q nodeSelector %v affinity %v topology spread %v tolerations %v",
					sp.Name, s.NodeName, s.NodeSelector, s.Affinity, s.TopologySpreadConstraints, s.Tolerations)
			}
			if got := s.Volumes[0].ConfigMap.Name; got != consts.ReflectedRootCAConfigMap {
				t.Errorf("ShadowPod %s: root CA volume refers to %q, want %q", sp.Name, got, consts.ReflectedRootCAConfigMap)
			}
			if got := s.Containers[0].Env[0].ValueFrom.ConfigMapKeyRef.Name; got != consts.ReflectedRootCAConfigMap {
				t.Errorf("ShadowPod %s: root CA env refers to %q, want %q", sp.Name, got, consts.ReflectedRootCAConfigMap)
			}
			if got := s.Volumes[1].ConfigMap.Name; got != "settings" {
				t.Errorf("ShadowPod %s: ConfigMap volume refers to %q, want the same name, settings", sp.Name, got)
			}
			// As upstream's virtual kubelet without API server support: no service account, no
			// token; what is left of the token volume refers to the consumer's CA.
			proj := s.Volumes[2].Projected
			if len(proj.Sources) != 1 || proj.Sources[0].ConfigMap == nil || proj.Sources[0].ConfigMap.Name != consts.ReflectedRootCAConfigMap {
				t.Errorf("ShadowPod %s: token volume %+v, want the token source dropped and the consumer's CA", sp.Name, proj)
			}
			if s.ServiceAccountName != "" || s.DeprecatedServiceAccount != "" || s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
				t.Errorf("ShadowPod %s: service account %q/%q automount %v, want none and false", sp.Name, s.ServiceAccountName,
					s.DeprecatedServiceAccount, s.AutomountServiceAccountToken)
			}
			r, err := b.remotePod(ctx, p.Name)
			if err != nil {
				t.Fatal(err)
			}
			if !metav1.IsControlledBy(r, sp) || r.Labels[consts.OriginNodeLabel] != nodeName || r.Spec.NodeName != "provider-node" {
				t.Errorf("remote pod %s: owners %v labels %v node %q; want controlled by its ShadowPod, labelled, on provider-node", r.Name, r.OwnerReferences, r.Labels, r.Spec.NodeName)
			}
		}
		// No service account on the provider: the reflector creates none (upstream's role does
		// not allow it, nor does ours); the remote pods run as none (the provider's "default",
		// where ServiceAccount admission runs: the test bed's API servers run without it).
		if err := b.prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: "worker"}, &corev1.ServiceAccount{}); !apierrors.IsNotFound(err) {
			t.Errorf("service account worker on the provider: %v, want none", err)
		}
		rp, err := b.remotePod(ctx, locals[0].Name)
		if err != nil {
			t.Fatal(err)
		}
		if rp.Spec.ServiceAccountName != "" || slices.ContainsFunc(rp.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(p corev1.VolumeProjection) bool { return p.ServiceAccountToken != nil })
		}) {
			t.Errorf("remote pod %s: service account %q, volumes %+v; want none and no token", rp.Name, rp.Spec.ServiceAccountName, rp.Spec.Volumes)
		}
		sp := &offv1beta1.ShadowPod{}
		testenv.Eventually(t, "the ShadowPod's phase to follow its pod", 30*time.Second, func(ctx context.Context) bool {
			return b.prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: locals[0].Name}, sp) == nil && sp.Status.Phase == corev1.PodRunning
		})
	})

	t.Run("labels and annotations propagate", func(t *testing.T) {
		name := locals[0].Name
		patch := []byte(`{"metadata":{"labels":{"tier":"front"},"annotations":{"note":"hello"}}}`)
		if err := b.cons.Client.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: name}},
			client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the label and annotation on the remote pod", 30*time.Second, func(ctx context.Context) bool {
			r, err := b.remotePod(ctx, name)
			return err == nil && r.Labels["tier"] == "front" && r.Annotations["note"] == "hello"
		})
		patch = []byte(`{"metadata":{"labels":{"tier":null}}}`)
		if err := b.cons.Client.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: name}},
			client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the label removed from the remote pod", 30*time.Second, func(ctx context.Context) bool {
			r, err := b.remotePod(ctx, name)
			_, has := r.Labels["tier"]
			return err == nil && !has && r.Labels["app"] == "web"
		})
		// A container image is one of the few mutable fields of a pod's spec.
		patch = []byte(`{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}`)
		if err := b.cons.Client.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: name}},
			client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the new image on the remote pod", 30*time.Second, func(ctx context.Context) bool {
			r, err := b.remotePod(ctx, name)
			return err == nil && r.Spec.Containers[0].Image == "nginx:1.28"
		})
		// The reflector caches thin ShadowPods and patches their mutable parts alone: the rest
		// of the spec stays as it was made (the container's environment here).
		sp := &offv1beta1.ShadowPod{}
		if err := b.prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: name}, sp); err != nil {
			t.Fatal(err)
		}
		if c := sp.Spec.Pod.Containers; len(c) != 1 || c[0].Image != "nginx:1.28" || len(c[0].Env) != 1 || c[0].Env[0].Name != "CA" {
			t.Errorf("ShadowPod's containers after the image update: %+v, want nginx:1.28 with its CA variable", c)
		}
		patch = []byte(`{"metadata":{"annotations":{"note":null}},"spec":{"activeDeadlineSeconds":3600}}`)
		if err := b.cons.Client.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: name}},
			client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the annotation removed and activeDeadlineSeconds set on the ShadowPod", 30*time.Second, func(ctx context.Context) bool {
			err := b.prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: name}, sp)
			_, has := sp.Annotations["note"]
			return err == nil && !has && ptr.Deref(sp.Spec.Pod.ActiveDeadlineSeconds, 0) == 3600 && len(sp.Spec.Pod.Volumes) > 0
		})
	})

	t.Run("a ShadowPod deleted on the provider fails its started pod, which is replaced", func(t *testing.T) {
		name := locals[2].Name
		if err := b.prov.Client.Delete(ctx, &offv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNs, Name: name}}); err != nil {
			t.Fatal(err)
		}
		p := &corev1.Pod{}
		testenv.Eventually(t, "the local pod Failed with "+pods.ReasonRemoteDeleted, 30*time.Second, func(ctx context.Context) bool {
			err := b.cons.Client.Get(ctx, client.ObjectKey{Namespace: localNs, Name: name}, p)
			return apierrors.IsNotFound(err) || (err == nil && p.Status.Phase == corev1.PodFailed && p.Status.Reason == pods.ReasonRemoteDeleted)
		})
		testenv.Eventually(t, "the Deployment Available with 3 replicas again, on new pods", time.Minute, func(ctx context.Context) bool {
			ps, err := b.localPods(ctx, "web")
			running := 0
			for _, q := range ps {
				if q.Name != name && q.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			return err == nil && running == 3 && b.cons.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep) == nil && dep.Status.AvailableReplicas == 3
		})
		if err := b.cons.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: name}}); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the failed pod removed", 30*time.Second, func(ctx context.Context) bool {
			return apierrors.IsNotFound(b.cons.Client.Get(ctx, client.ObjectKey{Namespace: localNs, Name: name}, &corev1.Pod{}))
		})
		ps, err := b.localPods(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		locals = ps
	})

	t.Run("a pod deleted on the provider comes back", func(t *testing.T) {
		name := locals[1].Name
		old, err := b.remotePod(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.prov.Client.Delete(ctx, old); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "a new remote pod, reflected on the same local pod", time.Minute, func(ctx context.Context) bool {
			r, err := b.remotePod(ctx, name)
			if err != nil || r.UID == old.UID || r.Status.Phase != corev1.PodRunning {
				return false
			}
			p := &corev1.Pod{}
			if b.cons.Client.Get(ctx, client.ObjectKey{Namespace: localNs, Name: name}, p) != nil || p.UID != locals[1].UID {
				return false
			}
			return b.inSync(ctx, []corev1.Pod{*p}) == nil
		})
	})

	t.Run("host namespaces refused", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			set  func(*corev1.PodSpec)
		}{
			{"hostnet", func(s *corev1.PodSpec) { s.HostNetwork = true }},
			{"hostpid", func(s *corev1.PodSpec) { s.HostPID = true }},
			{"hostipc", func(s *corev1.PodSpec) { s.HostIPC = true }},
		} {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: tc.name},
				Spec: corev1.PodSpec{NodeName: nodeName, Tolerations: deployment("x", 1).Spec.Template.Spec.Tolerations,
					Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
			tc.set(&p.Spec)
			create(t, b.cons.Client, p)
			testenv.Eventually(t, tc.name+": the pod Failed", 30*time.Second, func(ctx context.Context) bool {
				return b.cons.Client.Get(ctx, client.ObjectKeyFromObject(p), p) == nil && p.Status.Phase == corev1.PodFailed
			})
			if p.Status.Reason != pods.ReasonRefused {
				t.Errorf("%s: reason %q, want %s", tc.name, p.Status.Reason, pods.ReasonRefused)
			}
			testenv.Eventually(t, tc.name+": a Warning Event on the pod", 30*time.Second, func(ctx context.Context) bool {
				evs := &corev1.EventList{}
				if b.cons.Client.List(ctx, evs, client.InNamespace(localNs)) != nil {
					return false
				}
				return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
					return e.InvolvedObject.Name == tc.name && e.Reason == pods.ReasonRefused && e.Type == corev1.EventTypeWarning
				})
			})
			err := b.prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: tc.name}, &offv1beta1.ShadowPod{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("%s: ShadowPod of the refused pod: %v, want not found", tc.name, err)
			}
		}
	})

	t.Run("a ShadowPod the provider fails before its pod runs fails the pod, saying why", func(t *testing.T) {
		// No grant webhook here: the provider's ShadowPod controller refuses what the consumer's
		// Pod Security level (the provider's default, baseline) refuses.
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: "attack"},
			Spec: corev1.PodSpec{NodeName: nodeName, Tolerations: deployment("x", 1).Spec.Template.Spec.Tolerations,
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		podsecuritytest.Attack(&p.ObjectMeta, &p.Spec)
		create(t, b.cons.Client, p)
		testenv.Eventually(t, "the pod Failed", 30*time.Second, func(ctx context.Context) bool {
			return b.cons.Client.Get(ctx, client.ObjectKeyFromObject(p), p) == nil && p.Status.Phase == corev1.PodFailed
		})
		if p.Status.Reason != pods.ReasonRefused {
			t.Errorf("reason %q, want %s", p.Status.Reason, pods.ReasonRefused)
		}
		for _, want := range append([]string{"provider " + providerID + " did not run the pod", "(PodSecurity)", `level "baseline"`},
			podsecuritytest.AttackWant...) {
			if !strings.Contains(p.Status.Message, want) {
				t.Errorf("message %q does not say %q", p.Status.Message, want)
			}
		}
		if err := b.prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: "attack"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
			t.Errorf("the remote pod: %v, want none", err)
		}
	})

	t.Run("provider API server down and back", func(t *testing.T) {
		before, err := b.localPods(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.prov.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		b.waitNodeReady(t, corev1.ConditionFalse)
		// While the provider is away: one replica fewer (its pod must wait for its remote copy
		// to go) and a label on another pod.
		if err := b.cons.Client.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: "web"}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`))); err != nil {
			t.Fatal(err)
		}
		var terminating string
		testenv.Eventually(t, "a local pod terminating", 30*time.Second, func(ctx context.Context) bool {
			ps, err := b.localPods(ctx, "web")
			for _, p := range ps {
				if p.DeletionTimestamp != nil {
					terminating = p.Name
				}
			}
			return err == nil && terminating != ""
		})
		var labelled string
		for _, p := range before {
			if p.Name != terminating {
				labelled = p.Name
			}
		}
		if err := b.cons.Client.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: labelled}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"during":"outage"}}}`))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second) // the outage lasts: nothing local may be lost meanwhile
		after, err := b.localPods(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Fatalf("%d local pods during the outage, want all %d kept (the terminating one waits for its remote copy)", len(after), len(before))
		}
		for _, p := range after {
			if p.Status.Phase != corev1.PodRunning {
				t.Errorf("local pod %s turned %s during the outage", p.Name, p.Status.Phase)
			}
		}

		restart := time.Now()
		if err := b.prov.StartAPIServer(); err != nil {
			t.Fatal(err)
		}
		t.Logf("provider API server restarted in %v", time.Since(restart).Round(time.Millisecond))
		b.waitNodeReady(t, corev1.ConditionTrue)
		defer func() { t.Logf("state re-synced %v after the restart", time.Since(restart).Round(time.Millisecond)) }()
		testenv.Eventually(t, "the consumer's side re-synced: the terminating pod's ShadowPod gone, the label on the other's", time.Minute, func(ctx context.Context) bool {
			gone := apierrors.IsNotFound(b.prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: terminating}, &offv1beta1.ShadowPod{}))
			sp := &offv1beta1.ShadowPod{}
			return gone && b.prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: labelled}, sp) == nil && sp.Labels["during"] == "outage"
		})
		t.Logf("ShadowPods re-synced %v after the restart", time.Since(restart).Round(time.Millisecond))
		testenv.Eventually(t, "the terminating pod gone with its remote copy", time.Minute, func(ctx context.Context) bool {
			err := b.cons.Client.Get(ctx, client.ObjectKey{Namespace: localNs, Name: terminating}, &corev1.Pod{})
			_, rerr := b.remotePod(ctx, terminating)
			return apierrors.IsNotFound(err) && apierrors.IsNotFound(rerr)
		})
		t.Logf("terminating pod gone %v after the restart", time.Since(restart).Round(time.Millisecond))
		testenv.Eventually(t, "the label set during the outage on the remote pod", time.Minute, func(ctx context.Context) bool {
			r, err := b.remotePod(ctx, labelled)
			return err == nil && r.Labels["during"] == "outage"
		})
		t.Logf("label on the remote pod %v after the restart", time.Since(restart).Round(time.Millisecond))
		var last error
		defer func() {
			if t.Failed() {
				t.Logf("last difference: %v", last)
			}
		}()
		// The test's context, not the poll's: a request cut by the poll's deadline would hide
		// the last real difference.
		testenv.Eventually(t, "2 local pods in sync with their remote pods", time.Minute, func(context.Context) bool {
			ps, err := b.localPods(ctx, "web")
			if err == nil && len(ps) != 2 {
				err = fmt.Errorf("%d local pods", len(ps))
			}
			if err == nil {
				err = b.inSync(ctx, ps)
			}
			last = err
			return err == nil
		})
		testenv.Eventually(t, "the Deployment Available with 2 replicas", time.Minute, func(ctx context.Context) bool {
			return b.cons.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep) == nil && dep.Status.AvailableReplicas == 2
		})
	})

	t.Run("remapped provider pod CIDR: the consumer sees the remapped addresses", func(t *testing.T) {
		// The provider's pod CIDR overlaps one of the consumer's: the Configuration controller
		// remapped it to 10.81.0.0/16, and the consumer reaches the pods there.
		conf := &netv1beta1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNs, Name: providerID}}
		conf.Spec.Remote.CIDR.Pod = []netv1beta1.CIDR{"10.200.0.0/16"}
		conf.Spec.Remote.CIDR.External = []netv1beta1.CIDR{"10.70.0.0/16"}
		create(t, b.cons.Client, conf)
		conf.Status.Remote = &netv1beta1.ClusterConfig{CIDR: netv1beta1.ClusterConfigCIDR{Pod: []netv1beta1.CIDR{"10.81.0.0/16"}}}
		if err := b.cons.Client.Status().Update(ctx, conf); err != nil {
			t.Fatal(err)
		}
		addressesAre := func(ctx context.Context, remapped bool) bool {
			ls, err := b.localPods(ctx, "web")
			if err != nil || len(ls) == 0 {
				return false
			}
			for _, p := range ls {
				r, err := b.remotePod(ctx, p.Name)
				if err != nil || r.Status.PodIP == "" {
					return false
				}
				want := r.Status.PodIP
				if remapped {
					want = "10.81." + strings.SplitN(want, ".", 3)[2]
				}
				if p.Status.PodIP != want || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != want {
					return false
				}
			}
			return true
		}
		testenv.Eventually(t, "the local pods' IPs under the remapped CIDR 10.81.0.0/16, host part kept", 30*time.Second, func(ctx context.Context) bool {
			return addressesAre(ctx, true)
		})
		if err := b.cons.Client.Delete(ctx, conf); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the local pods' IPs back to the provider's own once the remap is gone", 30*time.Second, func(ctx context.Context) bool {
			return addressesAre(ctx, false)
		})
	})

	t.Run("deleting the Deployment removes the remote pods", func(t *testing.T) {
		if err := b.cons.Client.Delete(ctx, dep, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "no local pod, ShadowPod or remote pod of the Deployment", time.Minute, func(ctx context.Context) bool {
			ls, err1 := b.localPods(ctx, "web")
			rs := &corev1.PodList{}
			err2 := b.prov.Client.List(ctx, rs, client.InNamespace(remoteNs), client.MatchingLabels{"app": "web"})
			sps := &offv1beta1.ShadowPodList{}
			err3 := b.prov.Client.List(ctx, sps, client.InNamespace(remoteNs), client.MatchingLabels{"app": "web"})
			return err1 == nil && err2 == nil && err3 == nil && len(ls) == 0 && len(rs.Items) == 0 && len(sps.Items) == 0
		})
	})
}

// TestNamespaceReleased: when a namespace stops being offloaded (liqoctl unoffload, or the
// provider releases it), its pods that ran on the provider do not stay Running on the virtual
// node: they turn Failed with reason NamespaceNotOffloaded as soon as the reflector hears of it.
func TestNamespaceReleased(t *testing.T) {
	b := newBed(t, bedOptions{log: testr.NewWithOptions(t, testr.Options{Verbosity: 0})})
	ctx := t.Context()
	_, locals := b.deployAvailable(t, "web", 2)

	// The provider released the namespace: the mapping is gone from the NamespaceMap's status.
	nm := &offv1beta1.NamespaceMap{}
	if err := b.cons.Client.Get(ctx, client.ObjectKey{Namespace: tenantNs, Name: providerID}, nm); err != nil {
		t.Fatal(err)
	}
	delete(nm.Status.CurrentMapping, localNs)
	if err := b.cons.Client.Status().Update(ctx, nm); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the started pods Failed, reason "+pods.ReasonNamespaceReleased, 30*time.Second, func(ctx context.Context) bool {
		for _, p := range locals {
			got := &corev1.Pod{}
			if err := b.cons.Client.Get(ctx, client.ObjectKeyFromObject(&p), got); err != nil ||
				got.Status.Phase != corev1.PodFailed || got.Status.Reason != pods.ReasonNamespaceReleased {
				return false
			}
			for _, cs := range got.Status.ContainerStatuses {
				if cs.Ready || cs.State.Terminated == nil {
					return false
				}
			}
		}
		return true
	})
}
