// Package replication copies objects of the consumer (ResourceSlices, NamespaceMaps, Contracts) from its
// tenant namespace to the provider's tenant namespace through the control-plane identity the
// provider issued, and copies their status back (for ResourceSlices, also each side's cordon,
// under annotations of its own: Kind.ToCopy and Kind.ToLocal). It watches both sides (a namespace-scoped
// cache per provider, added to the running controller), so every change reaches the other side
// without polling, and, being level-triggered, it resumes after a restart of either side.
//
// One generic Reconciler does the work; a Kind says how to read the provider of an object, its
// spec and its status. ResourceSlices, NamespaceMaps and Contracts are the kinds replicated.
package replication

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/finalizers"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	marketv1alpha1 "github.com/peerkit/terraform-provider-liqo/internal/api/market/v1alpha1"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/contract"
)

const (
	// finalizer keeps a local object until its remote copy is deleted.
	finalizer = "liqo.io/replication"
	// syncTimeout bounds the first listing of a provider's objects.
	syncTimeout = 30 * time.Second
)

// Kind says how the generic Reconciler handles one replicated kind T.
type Kind[T client.Object] struct {
	// Name names the controller ("replication-<Name>") and the kind in messages.
	Name string
	// New returns an empty T.
	New func() T
	// NewList returns an empty list of T.
	NewList func() client.ObjectList
	// Provider is the cluster an object is replicated to; "" when it names none (the object is
	// then left alone).
	Provider func(T) corev1beta1.ClusterID
	// Spec and Status return pointers to the object's spec and status structs: they are
	// compared and copied whole.
	Spec, Status func(T) any
	// Prepare, if set, completes the spec of a fresh copy for the provider (e.g. the
	// consumer's cluster ID).
	Prepare func(copy T, consumer corev1beta1.ClusterID)
	// ToCopy, if set, gives annotations of the copy computed from the local object, and
	// ToLocal annotations of the local object computed from the copy: the replicator alone
	// writes these keys on that side (a key given "" is removed) and leaves every other
	// annotation to whoever wrote it. Neither may depend on the keys the other writes, or
	// each side's write would bring the other's back.
	ToCopy, ToLocal func(T) map[string]string
	// Ready, if set, tells whether the local object's spec is ready to go to the provider: a
	// spec not ready is not sent (a copy made before keeps the spec it had) until it is.
	Ready func(T) bool
}

// ResourceSlices replicates ResourceSlices to spec.providerClusterID, recording the consumer
// in the copy's spec.consumerClusterID.
var ResourceSlices = Kind[*authv1beta1.ResourceSlice]{
	Name:    "resourceslice",
	New:     func() *authv1beta1.ResourceSlice { return &authv1beta1.ResourceSlice{} },
	NewList: func() client.ObjectList { return &authv1beta1.ResourceSliceList{} },
	Provider: func(s *authv1beta1.ResourceSlice) corev1beta1.ClusterID {
		if s.Spec.ProviderClusterID == nil {
			return ""
		}
		return *s.Spec.ProviderClusterID
	},
	Spec:   func(s *authv1beta1.ResourceSlice) any { return &s.Spec },
	Status: func(s *authv1beta1.ResourceSlice) any { return &s.Status },
	Prepare: func(s *authv1beta1.ResourceSlice, consumer corev1beta1.ClusterID) {
		s.Spec.ConsumerClusterID = &consumer
	},
	// Each side's own cordon reaches the other under a key of its own (consts'
	// resourceslice.go): the consumer's liqo.io/cordon as liqo.io/cordon-consumer on the copy,
	// the provider's liqo.io/cordon or liqo.io/cordon-tenant on the copy as
	// liqo.io/cordon-provider here. The copy's liqo.io/cordon is the provider's (liqoctl
	// cordon/uncordon resourceslice): never written here, so neither side undoes the other's.
	// The contract the consumer names for the slice (consts.ContractAnnotation) goes with it, so
	// that the provider's negotiation decides the slice by its own copy of that contract.
	ToCopy: func(s *authv1beta1.ResourceSlice) map[string]string {
		return map[string]string{consts.ConsumerCordonAnnotation: flag(consts.CordonSet(s.Annotations, consts.CordonAnnotation)),
			consts.ContractAnnotation: s.Annotations[consts.ContractAnnotation]}
	},
	// What the provider says of its nodes (no Ready one for the slice) comes back under the
	// same key, which only the provider writes on the copy and only this controller here.
	ToLocal: func(s *authv1beta1.ResourceSlice) map[string]string {
		return map[string]string{consts.ProviderCordonAnnotation: flag(consts.ProviderCordoned(s.Annotations)),
			consts.ProviderNodesNotReadyAnnotation: s.Annotations[consts.ProviderNodesNotReadyAnnotation]}
	},
}

// flag is "true" for true and "" (no annotation) for false.
func flag(b bool) string {
	if b {
		return "true"
	}
	return ""
}

// NamespaceMaps replicates NamespaceMaps to the cluster named by their liqo.io/remote-cluster-id label.
var NamespaceMaps = Kind[*offv1beta1.NamespaceMap]{
	Name:    "namespacemap",
	New:     func() *offv1beta1.NamespaceMap { return &offv1beta1.NamespaceMap{} },
	NewList: func() client.ObjectList { return &offv1beta1.NamespaceMapList{} },
	Provider: func(m *offv1beta1.NamespaceMap) corev1beta1.ClusterID {
		return corev1beta1.ClusterID(m.Labels[consts.RemoteClusterIDLabel])
	},
	Spec:   func(m *offv1beta1.NamespaceMap) any { return &m.Spec },
	Status: func(m *offv1beta1.NamespaceMap) any { return &m.Status },
}

// Contracts replicates the consumer's Contracts (seed 004's contract: the terms it proposes and
// its signature, in spec) to the cluster named by their liqo.io/remote-cluster-id label, the
// provider, and brings back the provider's answer (status: its phase, reason and
// countersignature), which only the provider writes.
var Contracts = Kind[*marketv1alpha1.Contract]{
	Name:    "contract",
	New:     func() *marketv1alpha1.Contract { return &marketv1alpha1.Contract{} },
	NewList: func() client.ObjectList { return &marketv1alpha1.ContractList{} },
	Provider: func(c *marketv1alpha1.Contract) corev1beta1.ClusterID {
		return corev1beta1.ClusterID(c.Labels[consts.RemoteClusterIDLabel])
	},
	Spec:   func(c *marketv1alpha1.Contract) any { return &c.Spec },
	Status: func(c *marketv1alpha1.Contract) any { return &c.Status },
	// Only terms the consumer signed go: the provider would refuse terms not yet signed (or
	// signed for the terms before a renewal), and the consumer would read that refusal back.
	Ready: contract.SignedByConsumer,
}

// Reconciler replicates the objects of one Kind labelled liqo.io/replication=true to their provider.
type Reconciler[T client.Object] struct {
	// Client reads and writes the local (consumer) cluster.
	Client client.Client
	// LocalClusterID is this cluster's ID, recorded on the remote copies.
	LocalClusterID corev1beta1.ClusterID
	// Kind is what is replicated.
	Kind Kind[T]

	ctrl  controller.Controller
	mu    sync.Mutex
	peers map[corev1beta1.ClusterID]*peer
}

// NewResourceSliceReconciler replicates ResourceSlices.
func NewResourceSliceReconciler(c client.Client, local corev1beta1.ClusterID) *Reconciler[*authv1beta1.ResourceSlice] {
	return &Reconciler[*authv1beta1.ResourceSlice]{Client: c, LocalClusterID: local, Kind: ResourceSlices}
}

// NewContractReconciler replicates Contracts.
func NewContractReconciler(c client.Client, local corev1beta1.ClusterID) *Reconciler[*marketv1alpha1.Contract] {
	return &Reconciler[*marketv1alpha1.Contract]{Client: c, LocalClusterID: local, Kind: Contracts}
}

// NewNamespaceMapReconciler replicates NamespaceMaps.
func NewNamespaceMapReconciler(c client.Client, local corev1beta1.ClusterID) *Reconciler[*offv1beta1.NamespaceMap] {
	return &Reconciler[*offv1beta1.NamespaceMap]{Client: c, LocalClusterID: local, Kind: NamespaceMaps}
}

// peer is the connection to one provider, made from its identity Secret.
type peer struct {
	secretVersion string
	namespace     string
	client        client.Client
	cancel        context.CancelFunc
}

// Reconcile brings one local object's remote copy in line, and its status back.
func (r *Reconciler[T]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	local := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, local); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	providerID := r.Kind.Provider(local)
	if local.GetLabels()[consts.ReplicationLabel] != "true" || providerID == "" {
		return reconcile.Result{}, nil
	}
	p, err := r.peerOf(ctx, local, providerID)
	if err != nil || p == nil {
		return reconcile.Result{}, err
	}
	if local.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, r.deleteCopy(ctx, p, local, providerID)
	}
	if r.Kind.Ready != nil && !r.Kind.Ready(local) {
		log.FromContext(ctx).V(1).Info("not ready to replicate", "kind", r.Kind.Name, "object", req)
		return reconcile.Result{}, nil // the change that makes it ready brings it back
	}
	if err := r.claim(ctx, local, providerID); err != nil {
		return reconcile.Result{}, err
	}
	remote, err := r.syncCopy(ctx, p, local, providerID)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.syncStatusBack(ctx, local, remote); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.syncAnnotationsBack(ctx, local, remote)
}

// peerOf returns the connection to the provider of local; nil when there is none to reach: the
// provider is gone for good, or there is no identity for it (yet). Then a local object being
// deleted is released when its copy cannot be deleted any more and goes with the provider: the
// provider is gone, or there is no identity and none can come back in a namespace being deleted
// (liqoctl unpeer deletes the Identity, then the tenant namespace), the copy going with the
// provider's own tenant namespace.
func (r *Reconciler[T]) peerOf(ctx context.Context, local T, providerID corev1beta1.ClusterID) (*peer, error) {
	gone, err := peerGone(ctx, r.Client, providerID)
	if err != nil {
		return nil, err
	}
	if gone {
		if releasing(local) {
			log.FromContext(ctx).Info("provider gone for good: releasing without deleting the copy", "provider", providerID)
			return nil, r.release(ctx, local)
		}
		return nil, nil
	}
	p, err := r.peerFor(ctx, providerID)
	if err != nil || p != nil {
		return p, err
	}
	if releasing(local) {
		going, err := r.namespaceGoing(ctx, local.GetNamespace())
		if err != nil {
			return nil, err
		}
		if going {
			log.FromContext(ctx).Info("no identity and the namespace is being deleted: releasing without deleting the copy",
				"provider", providerID)
			return nil, r.release(ctx, local)
		}
	}
	log.FromContext(ctx).V(1).Info("no identity for the provider yet", "provider", providerID)
	return nil, nil // the identity Secret's watch brings the object back
}

// releasing tells whether local is being deleted and still held by the finalizer.
func releasing(local client.Object) bool {
	return local.GetDeletionTimestamp() != nil && controllerutil.ContainsFinalizer(local, finalizer)
}

// namespaceGoing tells whether the namespace name is gone or being deleted.
func (r *Reconciler[T]) namespaceGoing(ctx context.Context, name string) (bool, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	return ns.DeletionTimestamp != nil || ns.Name == "", nil
}

// deleteCopy deletes the remote copy of local, which is being deleted, and then releases it.
func (r *Reconciler[T]) deleteCopy(ctx context.Context, p *peer, local T, providerID corev1beta1.ClusterID) error {
	if !controllerutil.ContainsFinalizer(local, finalizer) {
		return nil
	}
	stale := r.Kind.New()
	stale.SetNamespace(p.namespace)
	stale.SetName(local.GetName())
	if err := p.client.Delete(ctx, stale); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the copy of %s %s on %s: %w", r.Kind.Name, client.ObjectKeyFromObject(local), providerID, err)
	}
	return r.release(ctx, local)
}

// claim adds to local the finalizer, and the label saying where the copy goes (upstream's), in
// one update.
func (r *Reconciler[T]) claim(ctx context.Context, local T, providerID corev1beta1.ClusterID) error {
	added := controllerutil.AddFinalizer(local, finalizer)
	if local.GetLabels()[consts.ReplicationDestinationLabel] != string(providerID) {
		labels := local.GetLabels()
		labels[consts.ReplicationDestinationLabel] = string(providerID)
		local.SetLabels(labels)
		added = true
	}
	if !added {
		return nil
	}
	if err := r.Client.Update(ctx, local); err != nil {
		return fmt.Errorf("adding finalizer and destination label to %s %s: %w", r.Kind.Name, client.ObjectKeyFromObject(local), err)
	}
	return nil
}

// syncCopy creates the remote copy of local, or brings its spec and labels in line, and
// returns it.
func (r *Reconciler[T]) syncCopy(ctx context.Context, p *peer, local T, providerID corev1beta1.ClusterID) (T, error) {
	key := client.ObjectKey{Namespace: p.namespace, Name: local.GetName()}
	req := client.ObjectKeyFromObject(local)
	remote := r.Kind.New()
	err := p.client.Get(ctx, key, remote)
	switch {
	case apierrors.IsNotFound(err):
		remote = r.copyOf(local, p.namespace)
		if err := p.client.Create(ctx, remote); err != nil {
			return remote, fmt.Errorf("replicating %s %s to %s: %w", r.Kind.Name, req, providerID, err)
		}
		log.FromContext(ctx).Info("replicated", "kind", r.Kind.Name, "provider", providerID, "remote", key)
	case err != nil:
		return remote, fmt.Errorf("reading the copy of %s %s on %s: %w", r.Kind.Name, req, providerID, err)
	default:
		want := r.copyOf(local, p.namespace)
		changed := false
		if !equality.Semantic.DeepEqual(r.Kind.Spec(want), r.Kind.Spec(remote)) || !equality.Semantic.DeepEqual(want.GetLabels(), remote.GetLabels()) {
			assign(r.Kind.Spec(remote), r.Kind.Spec(want))
			remote.SetLabels(want.GetLabels())
			changed = true
		}
		if r.Kind.ToCopy != nil && setAnnotations(remote, r.Kind.ToCopy(local)) {
			changed = true
		}
		if changed {
			// An update, not a patch: the copy's other annotations (the provider's) are kept
			// as read, and a change of them meanwhile fails it with a conflict, retried.
			if err := p.client.Update(ctx, remote); err != nil {
				return remote, fmt.Errorf("updating the copy of %s %s on %s: %w", r.Kind.Name, req, providerID, err)
			}
		}
	}
	return remote, nil
}

// setAnnotations sets on o the annotations of want, removing those given "", and tells
// whether that changed anything.
func setAnnotations(o client.Object, want map[string]string) bool {
	ann := o.GetAnnotations()
	changed := false
	for k, v := range want {
		cur, ok := ann[k]
		switch {
		case v == "" && ok:
			delete(ann, k)
			changed = true
		case v != "" && cur != v:
			if ann == nil {
				ann = map[string]string{}
			}
			ann[k] = v
			changed = true
		}
	}
	if changed {
		o.SetAnnotations(ann)
	}
	return changed
}

// syncAnnotationsBack sets on local the annotations the kind computes from the copy (ToLocal).
func (r *Reconciler[T]) syncAnnotationsBack(ctx context.Context, local, remote T) error {
	if r.Kind.ToLocal == nil {
		return nil
	}
	req := client.ObjectKeyFromObject(local)
	before, ok := local.DeepCopyObject().(T)
	if !ok {
		return fmt.Errorf("copying %s %s: unexpected type %T", r.Kind.Name, req, local.DeepCopyObject())
	}
	if !setAnnotations(local, r.Kind.ToLocal(remote)) {
		return nil
	}
	// A merge patch of these keys alone: the local object's other annotations are its owners'.
	if err := r.Client.Patch(ctx, local, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("copying the annotations of the copy of %s %s back: %w", r.Kind.Name, req, err)
	}
	return nil
}

// syncStatusBack copies the status of the remote copy to local when they differ.
func (r *Reconciler[T]) syncStatusBack(ctx context.Context, local, remote T) error {
	if equality.Semantic.DeepEqual(r.Kind.Status(local), r.Kind.Status(remote)) {
		return nil
	}
	req := client.ObjectKeyFromObject(local)
	before, ok := local.DeepCopyObject().(T)
	if !ok {
		return fmt.Errorf("copying %s %s: unexpected type %T", r.Kind.Name, req, local.DeepCopyObject())
	}
	assign(r.Kind.Status(local), r.Kind.Status(remote))
	if err := r.Client.Status().Patch(ctx, local, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("copying the status of %s %s back: %w", r.Kind.Name, req, err)
	}
	return nil
}

// release removes the finalizer of a local object being deleted.
func (r *Reconciler[T]) release(ctx context.Context, local T) error {
	return finalizers.Remove(ctx, r.Client, local, finalizer, r.Kind.Name)
}

// assign copies *src into *dst; both are pointers to the same struct type (a Kind's Spec or
// Status), src being a copy nobody else holds.
func assign(dst, src any) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}

// copyOf is the remote copy of a local object.
func (r *Reconciler[T]) copyOf(local T, namespace string) T {
	labels := map[string]string{}
	for k, v := range local.GetLabels() {
		labels[k] = v
	}
	// The copy is not to be replicated again; it says where it comes from.
	delete(labels, consts.ReplicationLabel)
	delete(labels, consts.ReplicationDestinationLabel)
	labels[consts.ReplicatedLabel] = "true"
	labels[consts.ReplicationOriginLabel] = string(r.LocalClusterID)
	labels[consts.RemoteClusterIDLabel] = string(r.LocalClusterID)
	out := r.Kind.New()
	out.SetNamespace(namespace)
	out.SetName(local.GetName())
	out.SetLabels(labels)
	out.SetAnnotations(map[string]string{consts.ReplicationOriginNamespaceAnnotation: local.GetNamespace()})
	if r.Kind.ToCopy != nil {
		setAnnotations(out, r.Kind.ToCopy(local))
	}
	spec, ok := local.DeepCopyObject().(T)
	if ok {
		assign(r.Kind.Spec(out), r.Kind.Spec(spec))
	}
	if r.Kind.Prepare != nil {
		r.Kind.Prepare(out, r.LocalClusterID)
	}
	return out
}

// peerGone tells whether the ForeignCluster of id says the peer is gone for good.
func peerGone(ctx context.Context, c client.Reader, id corev1beta1.ClusterID) (bool, error) {
	fcs := &corev1beta1.ForeignClusterList{}
	if err := c.List(ctx, fcs); err != nil {
		return false, fmt.Errorf("listing ForeignClusters to find %s: %w", id, err)
	}
	for _, fc := range fcs.Items {
		if fc.Spec.ClusterID == id && consts.PeerGone(fc.Annotations) {
			return true, nil
		}
	}
	return false, nil
}

// peerFor returns the connection to a provider, (re)made when its identity Secret changes; nil
// when there is no identity yet.
func (r *Reconciler[T]) peerFor(ctx context.Context, id corev1beta1.ClusterID) (*peer, error) {
	secrets := &corev1.SecretList{}
	if err := r.Client.List(ctx, secrets, client.MatchingLabels{consts.IdentityTypeLabel: "ControlPlane", consts.RemoteClusterIDLabel: string(id)}); err != nil {
		return nil, fmt.Errorf("listing identities of %s: %w", id, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(secrets.Items) == 0 {
		r.dropPeer(id)
		return nil, nil
	}
	secret := secrets.Items[0]
	if p, ok := r.peers[id]; ok && p.secretVersion == secret.ResourceVersion {
		return p, nil
	}
	r.dropPeer(id)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[consts.KubeconfigSecretKey])
	if err != nil {
		return nil, fmt.Errorf("identity %s/%s of %s: %w", secret.Namespace, secret.Name, id, err)
	}
	namespace := secret.Annotations[consts.RemoteTenantNamespaceAnnotation]
	if namespace == "" {
		return nil, fmt.Errorf("identity %s/%s of %s has no %s annotation", secret.Namespace, secret.Name, id, consts.RemoteTenantNamespaceAnnotation)
	}
	remoteCache, err := cache.New(cfg, cache.Options{Scheme: r.Client.Scheme(), DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", id, err)
	}
	remoteClient, err := client.New(cfg, client.Options{Scheme: r.Client.Scheme(), Cache: &client.CacheOptions{Reader: remoteCache}})
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", id, err)
	}
	// The reconcile context is the controller's: the remote cache stops with the manager.
	pctx, cancel := context.WithCancel(ctx)
	toLocal := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if o.GetLabels()[consts.ReplicationOriginLabel] != string(r.LocalClusterID) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetAnnotations()[consts.ReplicationOriginNamespaceAnnotation], Name: o.GetName()}}}
	})
	if err := r.ctrl.Watch(source.Kind[client.Object](remoteCache, r.Kind.New(), toLocal)); err != nil {
		cancel()
		return nil, fmt.Errorf("watching the %ss on %s: %w", r.Kind.Name, id, err)
	}
	go func() {
		if err := remoteCache.Start(pctx); err != nil {
			log.FromContext(pctx).Error(err, "remote cache stopped", "provider", id)
		}
	}()
	syncCtx, done := context.WithTimeout(ctx, syncTimeout)
	defer done()
	if !remoteCache.WaitForCacheSync(syncCtx) {
		cancel()
		return nil, fmt.Errorf("listing the %ss of namespace %s on %s (%s) did not finish within %s", r.Kind.Name, namespace, id, cfg.Host, syncTimeout)
	}
	p := &peer{secretVersion: secret.ResourceVersion, namespace: namespace, client: remoteClient, cancel: cancel}
	r.peers[id] = p
	return p, nil
}

// dropPeer stops the connection to provider id (its remote cache's watches), if any; r.mu is held.
func (r *Reconciler[T]) dropPeer(id corev1beta1.ClusterID) {
	if old, ok := r.peers[id]; ok {
		old.cancel()
		delete(r.peers, id)
	}
}

// forgetGonePeer stops the connection to provider id once it has no identity Secret left (the
// peering's authentication removed): no watch is left open on its API server.
func (r *Reconciler[T]) forgetGonePeer(ctx context.Context, id corev1beta1.ClusterID) {
	secrets := &corev1.SecretList{}
	if err := r.Client.List(ctx, secrets, client.MatchingLabels{consts.IdentityTypeLabel: "ControlPlane", consts.RemoteClusterIDLabel: string(id)}); err != nil || len(secrets.Items) > 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.peers[id]; ok {
		log.FromContext(ctx).Info("no identity left for the provider: closing its connection", "provider", id, "kind", r.Kind.Name)
		r.dropPeer(id)
	}
}

// SetupWithManager watches local objects, identity Secrets (a new or renewed identity brings
// its provider's objects back) and ForeignClusters (a peer declared gone releases them).
func (r *Reconciler[T]) SetupWithManager(mgr ctrl.Manager) error {
	r.peers = map[corev1beta1.ClusterID]*peer{}
	identities := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[consts.IdentityTypeLabel] == "ControlPlane"
	}))
	ofProvider := func(ctx context.Context, id corev1beta1.ClusterID) []reconcile.Request {
		list := r.Kind.NewList()
		if err := mgr.GetClient().List(ctx, list, client.MatchingLabels{consts.ReplicationLabel: "true"}); err != nil {
			return nil
		}
		var out []reconcile.Request
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if t, ok := o.(T); ok && r.Kind.Provider(t) == id {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(t)})
			}
			return nil
		})
		return out
	}
	c, err := ctrl.NewControllerManagedBy(mgr).Named("replication-"+r.Kind.Name).
		For(r.Kind.New()).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			id := corev1beta1.ClusterID(o.GetLabels()[consts.RemoteClusterIDLabel])
			r.forgetGonePeer(ctx, id)
			return ofProvider(ctx, id)
		}), identities). // the informer peerFor reads them from: an event comes after its cache changed
		Watches(&corev1beta1.ForeignCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			fc, ok := o.(*corev1beta1.ForeignCluster)
			if !ok || !consts.PeerGone(fc.Annotations) {
				return nil
			}
			return ofProvider(ctx, fc.Spec.ClusterID)
		}), builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		Build(r)
	if err != nil {
		return fmt.Errorf("building the %s replication controller: %w", r.Kind.Name, err)
	}
	r.ctrl = c
	return nil
}
