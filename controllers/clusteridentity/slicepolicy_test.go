package clusteridentity_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// consumerOnProvider takes the shared provider with the cluster identity (and so the policies)
// and makes the tenant namespace tenantNS of consumer and its control-plane binding there; it
// returns the provider's admin client and a client authenticated as the consumer.
func consumerOnProvider(t *testing.T, consumer, tenantNS string) (admin, as client.Client) {
	t.Helper()
	cl := identified.Env(t).Cluster("provider")
	ctx := t.Context()
	admin = cl.Client
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
	if as, err = client.New(rc, client.Options{Scheme: admin.Scheme()}); err != nil {
		t.Fatal(err)
	}
	return admin, as
}

// TestConsumerCannotLiftProviderCordon: a consumer, with its identity as the provider binds it
// in its tenant namespace, writes the provider's copies of its slices but may not lift, change
// or set the provider's cordon (liqo.io/cordon, liqo.io/cordon-tenant, the contract's expiry), whether by update or by
// creating a slice with it; its own cordon key and other changes pass; the provider lifts its
// cordon itself.
func TestConsumerCannotLiftProviderCordon(t *testing.T) {
	const consumer, tenantNS = "cl-d", "liqo-tenant-cl-d"
	ctx := t.Context()
	admin, as := consumerOnProvider(t, consumer, tenantNS)
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
	if err := admin.Create(ctx, slice("cordoned", map[string]string{consts.CordonAnnotation: "true", consts.ContractExpiredAnnotation: "true"})); err != nil {
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
		"lifting liqo.io/cordon":        func(s *authv1beta1.ResourceSlice) { delete(s.Annotations, consts.CordonAnnotation) },
		"changing liqo.io/cordon":       func(s *authv1beta1.ResourceSlice) { s.Annotations[consts.CordonAnnotation] = "false" },
		"setting the tenant's one":      func(s *authv1beta1.ResourceSlice) { s.Annotations[consts.CordonTenantAnnotation] = "true" },
		"lifting the contract's expiry": func(s *authv1beta1.ResourceSlice) { delete(s.Annotations, consts.ContractExpiredAnnotation) },
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

// TestConsumerCannotUndoCordonHold: what keeps a consumer from lifting the provider's cordon by
// deleting its copy (the copy, held by the provider with the finalizer liqo.io/provider-cordon,
// stays when deleted) is out of the consumer's reach: it may not remove or add that finalizer,
// nor label a slice as the provider's own request (liqo.io/replication=true, which the hold
// leaves alone); it may not delete a cordoned copy the provider does not hold yet, and is told
// which slice, which annotation and how the cordon is lifted; it may delete one the provider
// holds (which then stays), one that is not cordoned, and any in a namespace being deleted. Nor
// may it write a slice's status, the provider's grant.
func TestConsumerCannotUndoCordonHold(t *testing.T) {
	const consumer, tenantNS = "cl-e", "liqo-tenant-cl-e"
	ctx := t.Context()
	admin, as := consumerOnProvider(t, consumer, tenantNS)
	provider := corev1beta1.ClusterID("cl-a")
	create := func(name string, cordoned, held bool) client.ObjectKey {
		t.Helper()
		s := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name,
			Labels: map[string]string{consts.RemoteClusterIDLabel: consumer}}, Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &provider}}
		if cordoned {
			s.Annotations = map[string]string{consts.CordonAnnotation: "true"}
		}
		if held {
			s.Finalizers = []string{consts.ProviderCordonFinalizer}
		}
		if err := admin.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return client.ObjectKeyFromObject(s)
	}
	refused := func(what, message string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), consts.SliceCordonPolicy) || !strings.Contains(err.Error(), message) {
			t.Errorf("%s: %v, want a denial by %s saying %q", what, err, consts.SliceCordonPolicy, message)
		}
	}
	update := func(key client.ObjectKey, mutate func(*authv1beta1.ResourceSlice)) error {
		s := &authv1beta1.ResourceSlice{}
		if err := as.Get(ctx, key, s); err != nil {
			t.Fatalf("the consumer reads its slice: %v", err)
		}
		mutate(s)
		return as.Update(ctx, s)
	}
	held, unheld, free := create("held", true, true), create("unheld", true, false), create("free", false, false)
	testenv.Poll(t, "the policy "+consts.SliceCordonPolicy+" on deletes", 30*time.Second, func(ctx context.Context) (bool, error) {
		return apierrors.IsForbidden(as.Delete(ctx, &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: unheld.Namespace,
			Name: unheld.Name}}, client.DryRunAll)), nil
	})

	refused("removing the hold", "may not add or remove the finalizer", update(held, func(s *authv1beta1.ResourceSlice) { s.Finalizers = nil }))
	refused("adding the hold", "may not add or remove the finalizer", update(free, func(s *authv1beta1.ResourceSlice) {
		s.Finalizers = []string{consts.ProviderCordonFinalizer}
	}))
	refused("labelling a copy as the provider's own request", "may not label a ResourceSlice "+consts.ReplicationLabel,
		update(free, func(s *authv1beta1.ResourceSlice) { s.Labels[consts.ReplicationLabel] = "true" }))
	refused("creating a held slice", "may not add or remove the finalizer", as.Create(ctx, &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "new", Finalizers: []string{consts.ProviderCordonFinalizer}},
		Spec:       authv1beta1.ResourceSliceSpec{ProviderClusterID: &provider}}))

	// Its status is the provider's grant: the consumer may not write it.
	s := &authv1beta1.ResourceSlice{}
	if err := as.Get(ctx, free, s); err != nil {
		t.Fatal(err)
	}
	s.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}
	s.Status.Conditions = []authv1beta1.ResourceSliceCondition{{Type: authv1beta1.ResourceSliceConditionTypeResources,
		Status: authv1beta1.ResourceSliceConditionAccepted, LastTransitionTime: metav1.Now()}}
	refused("granting itself 1000 CPUs", "may not write the status of a ResourceSlice", as.Status().Update(ctx, s))

	err := as.Delete(ctx, &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: unheld.Namespace, Name: unheld.Name}})
	t.Logf("the consumer's delete of a cordoned copy not held yet: %v", err)
	for _, part := range []string{"ResourceSlice " + unheld.String() + " is cordoned by this cluster", consts.CordonAnnotation,
		consts.ProviderCordonFinalizer, "liqoctl uncordon resourceslice unheld --remote-cluster-id " + consumer} {
		refused("deleting a cordoned copy not held yet", part, err)
	}

	// A held copy: the delete passes, and the copy stays, still cordoned.
	if err := as.Delete(ctx, &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: held.Namespace, Name: held.Name}}); err != nil {
		t.Errorf("the consumer deletes a held copy: %v", err)
	}
	s = &authv1beta1.ResourceSlice{}
	if err := admin.Get(ctx, held, s); err != nil || s.DeletionTimestamp == nil || s.Annotations[consts.CordonAnnotation] != "true" {
		t.Errorf("the held copy after the consumer's delete: %v, deleted at %v, annotations %v; want it there, terminating, cordoned",
			err, s.DeletionTimestamp, s.Annotations)
	}
	if err := as.Delete(ctx, &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: free.Namespace, Name: free.Name}}); err != nil {
		t.Errorf("the consumer deletes a copy that is not cordoned: %v", err)
	}

	// Unpeering: in a tenant namespace being deleted, the consumer's delete passes.
	const goingNS = "liqo-tenant-cl-e-going"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: goingNS,
		Labels: map[string]string{consts.RemoteClusterIDLabel: consumer, consts.TenantNamespaceLabel: "true"}}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: goingNS, Name: "cp"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusteridentity.RemoteControlPlaneClusterRole},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: consumer}}}); err != nil {
		t.Fatal(err)
	}
	going := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: goingNS, Name: "going",
		Annotations: map[string]string{consts.CordonTenantAnnotation: "true"}}, Spec: authv1beta1.ResourceSliceSpec{ProviderClusterID: &provider}}
	if err := admin.Create(ctx, going); err != nil {
		t.Fatal(err)
	}
	// No namespace controller runs here: the namespace stays Terminating with what is in it.
	if err := admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: goingNS}}); err != nil {
		t.Fatal(err)
	}
	if err := as.Delete(ctx, going); err != nil {
		t.Errorf("the consumer deletes a cordoned copy in a namespace being deleted: %v", err)
	}
}
