// Package replication copies the consumer's ResourceSlices to the provider's tenant namespace
// through the control-plane identity the provider issued, and copies their status back. It
// watches both sides (a namespace-scoped cache per provider, added to the running controller),
// so every change reaches the other side without polling, and, being level-triggered, it
// resumes after a restart of either side.
package replication

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	corev1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/core/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

const (
	// finalizer keeps a local slice until its remote copy is deleted.
	finalizer = "liqo.io/replication"
	// OriginClusterIDLabel marks a remote copy with the cluster it was replicated from.
	OriginClusterIDLabel = "liqo.io/origin-cluster-id"
	// OriginNamespaceAnnotation names the namespace of the original on the origin cluster.
	OriginNamespaceAnnotation = "liqo.io/origin-namespace"
	// syncTimeout bounds the first listing of a provider's objects.
	syncTimeout = 30 * time.Second
)

// Reconciler replicates ResourceSlices labelled liqo.io/replication=true to their provider.
type Reconciler struct {
	// Client reads and writes the local (consumer) cluster.
	Client client.Client
	// LocalClusterID is this cluster's ID, recorded on the remote copies.
	LocalClusterID corev1beta1.ClusterID

	ctrl  controller.Controller
	mu    sync.Mutex
	peers map[corev1beta1.ClusterID]*peer
}

// peer is the connection to one provider, made from its identity Secret.
type peer struct {
	secretVersion string
	namespace     string
	client        client.Client
	cancel        context.CancelFunc
}

// Reconcile brings one local slice's remote copy in line, and its status back.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	local := &authv1beta1.ResourceSlice{}
	if err := r.Client.Get(ctx, req.NamespacedName, local); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if local.Labels[consts.ReplicationLabel] != "true" || local.Spec.ProviderClusterID == nil {
		return reconcile.Result{}, nil
	}
	providerID := *local.Spec.ProviderClusterID
	p, err := r.peerFor(ctx, providerID)
	if err != nil {
		return reconcile.Result{}, err
	}
	if p == nil {
		log.FromContext(ctx).V(1).Info("no identity for the provider yet", "provider", providerID)
		return reconcile.Result{}, nil // the identity Secret's watch brings the slice back
	}
	key := client.ObjectKey{Namespace: p.namespace, Name: local.Name}

	if local.DeletionTimestamp != nil {
		if !controllerutil.ContainsFinalizer(local, finalizer) {
			return reconcile.Result{}, nil
		}
		err := p.client.Delete(ctx, &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
		if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting the copy of %s on %s: %w", req, providerID, err)
		}
		controllerutil.RemoveFinalizer(local, finalizer)
		if err := r.Client.Update(ctx, local); err != nil {
			return reconcile.Result{}, fmt.Errorf("releasing %s: %w", req, err)
		}
		return reconcile.Result{}, nil
	}
	if controllerutil.AddFinalizer(local, finalizer) {
		if err := r.Client.Update(ctx, local); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding finalizer to %s: %w", req, err)
		}
	}

	remote := &authv1beta1.ResourceSlice{}
	err = p.client.Get(ctx, key, remote)
	switch {
	case apierrors.IsNotFound(err):
		remote = r.copyOf(local, p.namespace)
		if err := p.client.Create(ctx, remote); err != nil {
			return reconcile.Result{}, fmt.Errorf("replicating %s to %s: %w", req, providerID, err)
		}
		log.FromContext(ctx).Info("replicated", "provider", providerID, "remote", key)
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("reading the copy of %s on %s: %w", req, providerID, err)
	default:
		want := r.copyOf(local, p.namespace)
		if !equality.Semantic.DeepEqual(want.Spec, remote.Spec) || !equality.Semantic.DeepEqual(want.Labels, remote.Labels) {
			remote.Spec, remote.Labels = want.Spec, want.Labels
			if err := p.client.Update(ctx, remote); err != nil {
				return reconcile.Result{}, fmt.Errorf("updating the copy of %s on %s: %w", req, providerID, err)
			}
		}
	}

	if !equality.Semantic.DeepEqual(local.Status, remote.Status) {
		before := local.DeepCopy()
		local.Status = remote.Status
		if err := r.Client.Status().Patch(ctx, local, client.MergeFrom(before)); err != nil {
			return reconcile.Result{}, fmt.Errorf("copying the status of %s back: %w", req, err)
		}
	}
	return reconcile.Result{}, nil
}

// copyOf is the remote copy of a local slice.
func (r *Reconciler) copyOf(local *authv1beta1.ResourceSlice, namespace string) *authv1beta1.ResourceSlice {
	labels := map[string]string{}
	for k, v := range local.Labels {
		labels[k] = v
	}
	delete(labels, consts.ReplicationLabel) // the copy is not to be replicated again
	labels[OriginClusterIDLabel] = string(r.LocalClusterID)
	labels[consts.RemoteClusterIDLabel] = string(r.LocalClusterID)
	spec := *local.Spec.DeepCopy()
	consumer := r.LocalClusterID
	spec.ConsumerClusterID = &consumer
	return &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: local.Name, Labels: labels,
			Annotations: map[string]string{OriginNamespaceAnnotation: local.Namespace}},
		Spec: spec,
	}
}

// peerFor returns the connection to a provider, (re)made when its identity Secret changes; nil
// when there is no identity yet.
func (r *Reconciler) peerFor(ctx context.Context, id corev1beta1.ClusterID) (*peer, error) {
	secrets := &corev1.SecretList{}
	if err := r.Client.List(ctx, secrets, client.MatchingLabels{consts.IdentityTypeLabel: "ControlPlane", consts.RemoteClusterIDLabel: string(id)}); err != nil {
		return nil, fmt.Errorf("listing identities of %s: %w", id, err)
	}
	if len(secrets.Items) == 0 {
		return nil, nil
	}
	secret := secrets.Items[0]
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.peers[id]; ok && p.secretVersion == secret.ResourceVersion {
		return p, nil
	}
	if old, ok := r.peers[id]; ok {
		old.cancel()
		delete(r.peers, id)
	}
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
		if o.GetLabels()[OriginClusterIDLabel] != string(r.LocalClusterID) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetAnnotations()[OriginNamespaceAnnotation], Name: o.GetName()}}}
	})
	if err := r.ctrl.Watch(source.Kind[client.Object](remoteCache, &authv1beta1.ResourceSlice{}, toLocal)); err != nil {
		cancel()
		return nil, fmt.Errorf("watching the slices on %s: %w", id, err)
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
		return nil, fmt.Errorf("listing the slices of namespace %s on %s (%s) did not finish within %s", namespace, id, cfg.Host, syncTimeout)
	}
	p := &peer{secretVersion: secret.ResourceVersion, namespace: namespace, client: remoteClient, cancel: cancel}
	r.peers[id] = p
	return p, nil
}

// SetupWithManager watches local slices, and identity Secrets (a new or renewed identity
// brings its provider's slices back).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.peers = map[corev1beta1.ClusterID]*peer{}
	identities := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[consts.IdentityTypeLabel] == "ControlPlane"
	}))
	slicesOfProvider := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		id := o.GetLabels()[consts.RemoteClusterIDLabel]
		slices := &authv1beta1.ResourceSliceList{}
		if err := mgr.GetClient().List(ctx, slices); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, s := range slices.Items {
			if s.Spec.ProviderClusterID != nil && string(*s.Spec.ProviderClusterID) == id {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
			}
		}
		return out
	})
	c, err := ctrl.NewControllerManagedBy(mgr).Named("replication").
		For(&authv1beta1.ResourceSlice{}).
		Watches(&corev1.Secret{}, slicesOfProvider, identities, builder.OnlyMetadata).
		Build(r)
	if err != nil {
		return fmt.Errorf("building the replication controller: %w", err)
	}
	r.ctrl = c
	return nil
}
