package pods_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/pods"
)

// TestOriginTokens: with API server support, an offloaded pod's projected service-account token
// is one of the consumer (valid there, for the pod's service account, audience and pod), read
// from a Secret on the provider that the reflector writes, owns to the ShadowPod and refreshes;
// the pod trusts the consumer's CA and is pointed at the consumer's API server.
func TestOriginTokens(t *testing.T) {
	// Refreshed every 8s: longer than the pod takes to settle, so that the refresh is the
	// reflector's own doing, not a side effect of other events.
	t.Cleanup(pods.SetTokenRefresh(8 * time.Second)) // restored after the reflector stops
	b := newBed(t, bedOptions{log: testr.NewWithOptions(t, testr.Options{Verbosity: 1}),
		reflector: &pods.Reflector{APIServer: &pods.APIServerSupport{Host: "api.consumer.example", Port: "6443"}}})
	ctx := t.Context()
	create(t, b.cons.Client, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: "robot"}})
	create(t, b.cons.Client, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: "client"},
		Spec: corev1.PodSpec{ServiceAccountName: "robot", AutomountServiceAccountToken: ptr.To(false),
			NodeSelector: map[string]string{consts.TypeLabel: consts.VirtualNodeType},
			Tolerations:  []corev1.Toleration{{Key: vnode.Taint.Key, Operator: corev1.TolerationOpEqual, Value: vnode.Taint.Value, Effect: vnode.Taint.Effect}},
			Containers: []corev1.Container{{Name: "c", Image: "busybox", Env: []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "overridden"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "api", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}}},
			Volumes: []corev1.Volume{{Name: "api", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: ptr.To[int64](600)}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: consts.RootCAConfigMap},
					Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			}}}}}}})
	testenv.Eventually(t, "the pod Running on the virtual node", 2*time.Minute, func(ctx context.Context) bool {
		p := &corev1.Pod{}
		return b.cons.Client.Get(ctx, key(localNs, "client"), p) == nil && p.Spec.NodeName == nodeName && p.Status.Phase == corev1.PodRunning
	})
	local := &corev1.Pod{}
	if err := b.cons.Client.Get(ctx, key(localNs, "client"), local); err != nil {
		t.Fatal(err)
	}

	// The remote pod reads the token from the Secret and trusts the consumer's CA.
	rpod, err := b.remotePod(ctx, "client")
	if err != nil {
		t.Fatal(err)
	}
	tokenKey := pods.TokenKey("api", "token")
	srcs := rpod.Spec.Volumes[0].Projected.Sources
	if s := srcs[0].Secret; s == nil || srcs[0].ServiceAccountToken != nil || s.Name != pods.TokenSecretName("client") ||
		!slices.Equal(s.Items, []corev1.KeyToPath{{Key: tokenKey, Path: "token"}}) {
		t.Errorf("remote token source %+v, want the Secret %s's key %s at path token", srcs[0], pods.TokenSecretName("client"), tokenKey)
	}
	if cm := srcs[1].ConfigMap; cm == nil || cm.Name != consts.ReflectedRootCAConfigMap {
		t.Errorf("remote CA source %+v, want the consumer's (%s)", srcs[1], consts.ReflectedRootCAConfigMap)
	}
	env := rpod.Spec.Containers[0].Env
	if !slices.Contains(env, corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: "api.consumer.example"}) ||
		!slices.Contains(env, corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: "6443"}) ||
		slices.Contains(env, corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: "overridden"}) {
		t.Errorf("remote env %v, want the consumer's API server", env)
	}

	// The Secret: a token of the consumer, for the pod's service account, audience and pod.
	secret := &corev1.Secret{}
	if err := b.prov.Client.Get(ctx, key(remoteNs, pods.TokenSecretName("client")), secret); err != nil {
		t.Fatal(err)
	}
	sp := &offv1beta1.ShadowPod{}
	if err := b.prov.Client.Get(ctx, key(remoteNs, "client"), sp); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the tokens Secret owned by the ShadowPod", 30*time.Second, func(ctx context.Context) bool {
		return b.prov.Client.Get(ctx, key(remoteNs, pods.TokenSecretName("client")), secret) == nil &&
			len(secret.OwnerReferences) == 1 && secret.OwnerReferences[0].UID == sp.UID
	})
	if secret.Labels[consts.ReflectedLabel] != "true" || secret.Labels[consts.OriginClusterIDLabel] != consumerID {
		t.Errorf("tokens Secret labels %v, want those of a reflected copy", secret.Labels)
	}
	first := string(secret.Data[tokenKey])
	review := func(token string) *authenticationv1.TokenReviewStatus {
		t.Helper()
		r, err := b.consKube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{"vault"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return &r.Status
	}
	st := review(first)
	if !st.Authenticated || st.User.Username != "system:serviceaccount:"+localNs+":robot" ||
		!slices.Equal(st.User.Extra["authentication.kubernetes.io/pod-uid"], authenticationv1.ExtraValue{string(local.UID)}) {
		t.Errorf("the consumer's review of the token: %+v, want the pod's service account robot, bound to pod %s", st, local.UID)
	}

	// Refreshed: a new token in the Secret.
	testenv.Eventually(t, "the token refreshed", 30*time.Second, func(ctx context.Context) bool {
		s := &corev1.Secret{}
		return b.prov.Client.Get(ctx, key(remoteNs, pods.TokenSecretName("client")), s) == nil && len(s.Data[tokenKey]) > 0 &&
			string(s.Data[tokenKey]) != first
	})

	// The pod deleted: the Secret goes; the token it held no longer authenticates on the consumer.
	if err := b.consKube.CoreV1().Pods(localNs).Delete(ctx, "client", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the tokens Secret deleted", time.Minute, func(ctx context.Context) bool {
		return isNotFound(b.prov.Client.Get(ctx, key(remoteNs, pods.TokenSecretName("client")), &corev1.Secret{}))
	})
	testenv.Eventually(t, "the local pod gone", time.Minute, func(ctx context.Context) bool {
		return isNotFound(b.cons.Client.Get(ctx, key(localNs, "client"), &corev1.Pod{}))
	})
	// (The API server caches a successful review for 10s.)
	testenv.Eventually(t, "the deleted pod's token refused by the consumer", time.Minute, func(context.Context) bool {
		return !review(first).Authenticated
	})
}
