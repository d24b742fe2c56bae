package pods_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode/pods"
)

// saPod is a pod bound to the virtual node running as service account sa, with annotations,
// and the token volume a consumer's ServiceAccount admission gives it (the test bed's API
// servers run without it).
func saPod(name, sa string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: nodeName, ServiceAccountName: sa, Tolerations: deployment("x", 1).Spec.Template.Spec.Tolerations,
			Containers: []corev1.Container{{Name: "c", Image: "busybox",
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-x", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: consts.RootCAConfigMap},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}}}}}}}
}

// tokenSources counts the serviceAccountToken sources of a pod spec.
func tokenSources(s *corev1.PodSpec) int {
	n := 0
	for _, v := range s.Volumes {
		if v.Projected != nil {
			n += len(slices.DeleteFunc(slices.Clone(v.Projected.Sources), func(p corev1.VolumeProjection) bool { return p.ServiceAccountToken == nil }))
		}
	}
	return n
}

// TestServiceAccounts: the virtual kubelet, with the consumer's identity bound to our
// liqo-remote-workload role on the provider (which grants nothing on service accounts), forges
// service accounts as upstream's does and creates none on the provider:
//   - by default (here API server support): no service account, automount false, the token
//     read from the reflected <pod>-token Secret;
//   - liqo.io/api-server-support=remote: the pod's service account name (or the one
//     liqo.io/remote-service-account-name gives), automount true, the provider's token;
//   - liqo.io/api-server-support=disabled: no service account, no token.
//
// Not here: a remote pod whose service account is missing (reportNotCreated), since the test
// bed's API servers run without ServiceAccount admission, which refuses such a pod.
func TestServiceAccounts(t *testing.T) {
	b := newBed(t, bedOptions{log: testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
		reflector: &pods.Reflector{APIServer: &pods.APIServerSupport{Host: "api.consumer.example", Port: "6443"}}})
	ctx := t.Context()
	create(t, b.cons.Client, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: "robot"}})

	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: consumerID,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: remoteNs, Verb: "create", Resource: "serviceaccounts"}}}
	if res, err := b.provKube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{}); err != nil || res.Status.Allowed {
		t.Fatalf("the virtual kubelet's identity may create service accounts on the provider: %v, %v; want not", res, err)
	}
	create(t, b.prov.Client, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNs, Name: "robot"}})
	for _, p := range []*corev1.Pod{saPod("origin", "robot", nil),
		saPod("remote", "robot", map[string]string{consts.APIServerSupportAnnotation: consts.APIServerSupportRemote}),
		saPod("disabled", "robot", map[string]string{consts.APIServerSupportAnnotation: consts.APIServerSupportDisabled}),
		saPod("named", "robot", map[string]string{consts.APIServerSupportAnnotation: consts.APIServerSupportRemote,
			consts.RemoteServiceAccountNameAnnotation: "operator"})} {
		create(t, b.cons.Client, p)
	}
	running := func(name string) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{}
		testenv.Eventually(t, "pod "+name+" Running", 2*time.Minute, func(ctx context.Context) bool {
			return b.cons.Client.Get(ctx, key(localNs, name), p) == nil && p.Status.Phase == corev1.PodRunning
		})
		r, err := b.remotePod(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	hasTokenSecret := func(name string) bool {
		return b.prov.Client.Get(ctx, key(remoteNs, pods.TokenSecretName(name)), &corev1.Secret{}) == nil
	}

	if r := running("origin"); r.Spec.ServiceAccountName != "" || ptr.Deref(r.Spec.AutomountServiceAccountToken, true) ||
		tokenSources(&r.Spec) != 0 || !hasTokenSecret("origin") {
		t.Errorf("origin pod: service account %q automount %v, %d token sources, tokens Secret %v; want none, false, "+
			"none (the token read from the reflected Secret), a Secret", r.Spec.ServiceAccountName, r.Spec.AutomountServiceAccountToken,
			tokenSources(&r.Spec), hasTokenSecret("origin"))
	}
	if r := running("remote"); r.Spec.ServiceAccountName != "robot" || !ptr.Deref(r.Spec.AutomountServiceAccountToken, false) ||
		tokenSources(&r.Spec) != 1 || hasTokenSecret("remote") || slices.ContainsFunc(r.Spec.Containers[0].Env,
		func(e corev1.EnvVar) bool { return e.Name == "KUBERNETES_SERVICE_HOST" }) {
		t.Errorf("remote pod: service account %q automount %v, %d token sources, tokens Secret %v, env %v; want robot, true, "+
			"the provider's token, no Secret, the provider's API server", r.Spec.ServiceAccountName, r.Spec.AutomountServiceAccountToken,
			tokenSources(&r.Spec), hasTokenSecret("remote"), r.Spec.Containers[0].Env)
	}
	if r := running("disabled"); r.Spec.ServiceAccountName != "" || ptr.Deref(r.Spec.AutomountServiceAccountToken, true) ||
		tokenSources(&r.Spec) != 0 || hasTokenSecret("disabled") {
		t.Errorf("disabled pod: service account %q automount %v, %d token sources, tokens Secret %v; want no token at all",
			r.Spec.ServiceAccountName, r.Spec.AutomountServiceAccountToken, tokenSources(&r.Spec), hasTokenSecret("disabled"))
	}
	if r := running("named"); r.Spec.ServiceAccountName != "operator" || !ptr.Deref(r.Spec.AutomountServiceAccountToken, false) {
		t.Errorf("pod naming its remote service account: runs as %q automount %v, want operator, true", r.Spec.ServiceAccountName, r.Spec.AutomountServiceAccountToken)
	}
	sas := &corev1.ServiceAccountList{}
	if err := b.prov.Client.List(ctx, sas, client.InNamespace(remoteNs)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sa := range sas.Items {
		names = append(names, sa.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"default", "robot"}) {
		t.Errorf("service accounts on the provider: %v, want only the provider's own (default, robot)", names)
	}
}
