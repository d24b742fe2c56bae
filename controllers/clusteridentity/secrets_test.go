package clusteridentity_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestConsumerSecrets uses a consumer's identity as the provider binds it (the control-plane
// ClusterRole in its tenant namespace, the workload one in its remote namespace; the user
// named after its cluster ID, in the consumers' group): it may not read Secrets anywhere, may
// write the Secrets it reflects in its remote namespace, and is refused writing any other.
func TestConsumerSecrets(t *testing.T) {
	const consumer, other = "cl-b", "cl-c"
	const tenantNS, remoteNS = "liqo-tenant-cl-b", "app-cl-b"
	cl := identified.Env(t).Cluster("provider")
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(cl.Config)
	// The tenant namespace and a remote namespace of the consumer, bound as the tenant and
	// namespacemap controllers bind them.
	for ns, role := range map[string]string{tenantNS: clusteridentity.RemoteControlPlaneClusterRole, remoteNS: clusteridentity.RemoteWorkloadClusterRole} {
		labels := map[string]string{consts.RemoteClusterIDLabel: consumer, consts.TenantNamespaceLabel: "true"}
		if ns == remoteNS {
			labels = map[string]string{consts.RemoteClusterIDLabel: consumer, consts.RemoteNamespaceLabel: "true"}
		}
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: consumer}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The provider's own Secret, and another consumer's copy.
		for name, lbl := range map[string]map[string]string{
			"provider-owned": nil,
			"others-copy":    {consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: other},
		} {
			if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl},
				Data: map[string][]byte{"key": []byte("provider's")}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	kc, err := cl.UserKubeconfig(consumer, consts.ConsumerGroup)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	as := kubernetes.NewForConfigOrDie(rc)
	ours := map[string]string{consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: consumer}

	t.Run("reading Secrets is forbidden everywhere", func(t *testing.T) {
		for _, ns := range []string{remoteNS, tenantNS, "default", ""} {
			s := as.CoreV1().Secrets(ns)
			if ns != "" {
				if _, err := s.Get(ctx, "provider-owned", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
					t.Errorf("get in %q: %v, want Forbidden", ns, err)
				}
			}
			if _, err := s.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("list in %q: %v, want Forbidden", ns, err)
			}
			if w, err := s.Watch(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				if w != nil {
					w.Stop()
				}
				t.Errorf("watch in %q: %v, want Forbidden", ns, err)
			}
		}
		// Nor through the answer of a write: no patch (this one is refused, before any admission,
		// with an error quoting the data as the object's wrong name), no deletecollection (it
		// answers with what it deleted).
		copyData := []byte(`[{"op":"copy","from":"/data/key","path":"/metadata/name"}]`)
		if _, err := as.CoreV1().Secrets(remoteNS).Patch(ctx, "provider-owned", types.JSONPatchType, copyData, metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("JSON patch in the remote namespace: %v, want Forbidden", err)
		}
		if err := as.CoreV1().Secrets(remoteNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("deletecollection in the remote namespace: %v, want Forbidden", err)
		}
	})

	t.Run("writing its own copies is allowed, blind", func(t *testing.T) {
		s := as.CoreV1().Secrets(remoteNS)
		mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine", Labels: ours}, Data: map[string][]byte{"k": []byte("1")}}
		waitPolicy(t, as, remoteNS) // before a create that the policy could refuse
		if _, err := s.Create(ctx, mine, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating its copy: %v", err)
		}
		mine.Data["k"] = []byte("2")
		if _, err := s.Update(ctx, mine, metav1.UpdateOptions{}); err != nil { // no resourceVersion: unconditional
			t.Fatalf("updating its copy: %v", err)
		}
		if got, err := admin.CoreV1().Secrets(remoteNS).Get(ctx, "mine", metav1.GetOptions{}); err != nil || string(got.Data["k"]) != "2" {
			t.Fatalf("its copy on the provider: %v %v", got.Data, err)
		}
		if err := s.Delete(ctx, "mine", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting its copy: %v", err)
		}
	})

	t.Run("writing a Secret it did not reflect is denied", func(t *testing.T) {
		waitPolicy(t, as, remoteNS)
		s := as.CoreV1().Secrets(remoteNS)
		for _, name := range []string{"provider-owned", "others-copy"} {
			// Even written whole with its own labels: the policy looks at what is stored.
			overwrite := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ours}, Data: map[string][]byte{"key": []byte("consumer's")}}
			if _, err := s.Update(ctx, overwrite, metav1.UpdateOptions{}); !deniedByPolicy(err) {
				t.Errorf("updating %s: %v, want a denial by %s", name, err, consts.ReflectedSecretsPolicy)
			}
			if err := s.Delete(ctx, name, metav1.DeleteOptions{}); !deniedByPolicy(err) {
				t.Errorf("deleting %s: %v, want a denial by %s", name, err, consts.ReflectedSecretsPolicy)
			}
			got, err := admin.CoreV1().Secrets(remoteNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil || string(got.Data["key"]) != "provider's" {
				t.Errorf("%s after the consumer's attempts: %v %v", name, got.Data, err)
			}
		}
		for what, secret := range map[string]*corev1.Secret{
			"without the labels of its copies": {ObjectMeta: metav1.ObjectMeta{Name: "unlabelled"}},
			"as another consumer's copy": {ObjectMeta: metav1.ObjectMeta{Name: "forged",
				Labels: map[string]string{consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: other}}},
			"of service-account token type": {ObjectMeta: metav1.ObjectMeta{Name: "token", Labels: ours,
				Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}}, Type: corev1.SecretTypeServiceAccountToken},
		} {
			if _, err := s.Create(ctx, secret, metav1.CreateOptions{}); !deniedByPolicy(err) {
				t.Errorf("creating a Secret %s: %v, want a denial by %s", what, err, consts.ReflectedSecretsPolicy)
			}
		}
	})

	// Upstream's virtual kubelet, with a slice certificate (organization: the consumer's ID),
	// bound as a group to upstream's role: it may read the Secrets of its remote namespace and
	// write its copies labelled upstream's way, and nothing else.
	t.Run("a slice certificate writes only its copies, labelled either way", func(t *testing.T) {
		if _, err := admin.RbacV1().RoleBindings(remoteNS).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "slice"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusteridentity.SliceWorkloadClusterRole},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: consumer}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		skc, err := cl.UserKubeconfig("myslice-0123456789ab", consumer)
		if err != nil {
			t.Fatal(err)
		}
		src, err := clientcmd.RESTConfigFromKubeConfig(skc)
		if err != nil {
			t.Fatal(err)
		}
		s := kubernetes.NewForConfigOrDie(src).CoreV1().Secrets(remoteNS)
		testenv.Eventually(t, "the slice certificate's role", 20*time.Second, func(ctx context.Context) bool {
			_, err := s.List(ctx, metav1.ListOptions{})
			return err == nil
		})
		upstreams := map[string]string{consts.UpstreamOriginLabel: consumer, consts.UpstreamDestinationLabel: "provider"}
		mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pod-token", Labels: upstreams}, Data: map[string][]byte{"k": []byte("1")}}
		if _, err := s.Create(ctx, mine, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating its copy labelled upstream's way: %v", err)
		}
		patch := []byte(`{"data":{"k":"Mg=="}}`)
		if _, err := s.Patch(ctx, "pod-token", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Errorf("patching its copy: %v", err)
		}
		for _, name := range []string{"provider-owned", "others-copy"} {
			if _, err := s.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); !deniedByPolicy(err) {
				t.Errorf("patching %s: %v, want a denial by %s", name, err, consts.ReflectedSecretsPolicy)
			}
		}
		for what, lbl := range map[string]map[string]string{
			"as another consumer's, upstream's way": {consts.UpstreamOriginLabel: other},
			"with our label and upstream's naming two clusters": {consts.ReflectedLabel: "true", consts.OriginClusterIDLabel: consumer,
				consts.UpstreamOriginLabel: other},
		} {
			forged := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "forged-upstream", Labels: lbl}}
			if _, err := s.Create(ctx, forged, metav1.CreateOptions{}); !deniedByPolicy(err) {
				t.Errorf("creating a Secret %s: %v, want a denial by %s", what, err, consts.ReflectedSecretsPolicy)
			}
		}
		if err := s.Delete(ctx, "pod-token", metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting its copy: %v", err)
		}
	})

	// The provider itself is not held back.
	if err := admin.CoreV1().Secrets(remoteNS).Delete(ctx, "others-copy", metav1.DeleteOptions{}); err != nil {
		t.Errorf("the provider's admin deleting a Secret: %v", err)
	}
}

// deniedByPolicy says whether err is the refusal of the consumers' Secret policy.
func deniedByPolicy(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), consts.ReflectedSecretsPolicy)
}

// waitPolicy waits until the API server enforces the policy (it loads policies asynchronously):
// a dry-run delete of a Secret the consumer did not reflect is denied.
func waitPolicy(t *testing.T, as kubernetes.Interface, ns string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		last = as.CoreV1().Secrets(ns).Delete(ctx, "provider-owned", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return deniedByPolicy(last), nil
	})
	if err != nil {
		t.Fatalf("the policy %s not enforced: %v (last answer: %v)", consts.ReflectedSecretsPolicy, err, last)
	}
}
