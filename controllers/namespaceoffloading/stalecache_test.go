package namespaceoffloading_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/namespaceoffloading"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// staleNodes is a client whose lists of Nodes still show a virtual node the API server no
// longer has, as the manager's cache does for a moment after the node is deleted.
type staleNodes struct {
	client.Client
	node *corev1.Node
}

func (s staleNodes) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := s.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if l, ok := list.(*metav1.PartialObjectMetadataList); ok && l.GroupVersionKind().Kind == "NodeList" {
		l.Items = append(l.Items, metav1.PartialObjectMetadata{ObjectMeta: s.node.ObjectMeta})
	}
	return nil
}

// TestNoMapFromAStaleCache: an unpeering deletes a provider's NamespaceMap once the provider's
// virtual node is gone; a reconcile on a cache that still shows the node does not create the
// map again (the unpeering would wait for it forever), and creates it once the node is there.
func TestNoMapFromAStaleCache(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env := testenv.New(t, testenv.ClusterOptions{Name: "consumer"})
	c := env.Cluster("consumer").Client
	node := virtualNode("liqo-cl-provider", providerID, "eu")
	create(t, c,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consNS, Labels: map[string]string{consts.RemoteClusterIDLabel: providerID, consts.TenantNamespaceLabel: "true"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "work"}},
		offloading("work", offv1beta1.DefaultNameMappingStrategyType, "", nil))
	r := &namespaceoffloading.Reconciler{Client: staleNodes{Client: c, node: node}, APIReader: c, LocalClusterID: consumerID}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "work", Name: consts.NamespaceOffloadingName}}
	mapKey := client.ObjectKey{Namespace: consNS, Name: providerID}

	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatalf("reconcile with the node only in the cache: %v", err)
	}
	if err := c.Get(t.Context(), mapKey, &offv1beta1.NamespaceMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("NamespaceMap %s after a reconcile on a stale cache: %v, want it not created", mapKey, err)
	}

	create(t, c, node)
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatalf("reconcile with the node: %v", err)
	}
	m := &offv1beta1.NamespaceMap{}
	if err := c.Get(t.Context(), mapKey, m); err != nil {
		t.Fatalf("NamespaceMap %s with the provider's virtual node there: %v", mapKey, err)
	}
	if m.Spec.DesiredMapping["work"] != "work-"+consumerID {
		t.Errorf("desiredMapping %v, want work -> work-%s", m.Spec.DesiredMapping, consumerID)
	}
}
