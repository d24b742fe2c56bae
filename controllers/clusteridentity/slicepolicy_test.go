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
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/testenv"
)

// TestConsumerCannotLiftProviderCordon: a consumer, with its identity as the provider binds it
// in its tenant namespace, writes the provider's copies of its slices but may not lift, change
// or set the provider's cordon (liqo.io/cordon, liqo.io/cordon-tenant), whether by update or by
// creating a slice with it; its own cordon key and other changes pass; the provider lifts its
// cordon itself.
func TestConsumerCannotLiftProviderCordon(t *testing.T) {
	const consumer, tenantNS = "cl-b", "liqo-tenant-cl-b"
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider"})
	cl := env.Cluster("provider")
	ctx := t.Context()
	if _, err := clusteridentity.Ensure(ctx, cl.Client, cfg); err != nil {
		t.Fatal(err)
	}
	admin := cl.Client
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS,
		Labels: map[string]string{consts.RemoteClusterIDLabel: consumer, consts.TenantNamespaceLabel: "true"}}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "cp"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusteridentity.RemoteControlPlaneClusterRole},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: consumer}}}); err != nil {
		t.Fatal(err)
	}
	kc, err := cl.UserKubeconfig(consumer, consts.ConsumerGroup)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	as, err := client.New(rc, client.Options{Scheme: admin.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	provider := corev1beta1.ClusterID("cl-a")
	slice := func(name string, annotations map[string]string) *authv1beta1.ResourceSlice {
		return &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name, Annotations: annotations,
			Labels: map[string]string{consts.RemoteClusterIDLabel: consumer}}, Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &provider}}
	}
	refused := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), consts.SliceCordonPolicy) ||
			!strings.Contains(err.Error(), "may not set, change or lift the provider's cordon") {
			t.Errorf("%s: %v, want a denial by %s", what, err, consts.SliceCordonPolicy)
		}
	}
	if err := admin.Create(ctx, slice("cordoned", map[string]string{consts.CordonAnnotation: "true"})); err != nil {
		t.Fatal(err)
	}
	// The API server applies a new policy a moment after it is written: wait until a dry-run
	// lift is denied.
	testenv.Poll(t, "the policy "+consts.SliceCordonPolicy+" in effect", 30*time.Second, func(ctx context.Context) (bool, error) {
		s := &authv1beta1.ResourceSlice{}
		if err := as.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "cordoned"}, s); err != nil {
			return false, err
		}
		delete(s.Annotations, consts.CordonAnnotation)
		return apierrors.IsForbidden(as.Update(ctx, s, client.DryRunAll)), nil
	})

	// Lifting or changing the provider's cordon, or adding the tenant's: refused.
	for what, mutate := range map[string]func(*authv1beta1.ResourceSlice){
		"lifting liqo.io/cordon":   func(s *authv1beta1.ResourceSlice) { delete(s.Annotations, consts.CordonAnnotation) },
		"changing liqo.io/cordon":  func(s *authv1beta1.ResourceSlice) { s.Annotations[consts.CordonAnnotation] = "false" },
		"setting the tenant's one": func(s *authv1beta1.ResourceSlice) { s.Annotations[consts.CordonTenantAnnotation] = "true" },
	} {
		s := &authv1beta1.ResourceSlice{}
		if err := as.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "cordoned"}, s); err != nil {
			t.Fatalf("the consumer reads its slice: %v", err)
		}
		mutate(s)
		refused(what, as.Update(ctx, s))
	}
	refused("creating a slice cordoned by the provider", as.Create(ctx, slice("new", map[string]string{consts.CordonTenantAnnotation: "true"})))

	// Its own cordon key, its labels and a new slice without the provider's keys: allowed.
	s := &authv1beta1.ResourceSlice{}
	if err := as.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "cordoned"}, s); err != nil {
		t.Fatal(err)
	}
	s.Annotations[consts.ConsumerCordonAnnotation] = "true"
	s.Labels["team"] = "a"
	if err := as.Update(ctx, s); err != nil {
		t.Errorf("the consumer updates its slice, the provider's cordon kept: %v", err)
	}
	if err := as.Create(ctx, slice("new", nil)); err != nil {
		t.Errorf("the consumer creates a slice: %v", err)
	}
	// The provider lifts its own cordon.
	if err := admin.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "cordoned"}, s); err != nil {
		t.Fatal(err)
	}
	delete(s.Annotations, consts.CordonAnnotation)
	if err := admin.Update(ctx, s); err != nil {
		t.Errorf("the provider lifts its cordon: %v", err)
	}
}
