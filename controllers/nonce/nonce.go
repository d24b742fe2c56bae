// Package nonce runs the two halves of the authentication handshake's challenge: on the
// provider, a random nonce in each tenant namespace (Secret liqo-nonce); on the consumer, the
// answer to a signed-nonce request (Secret liqo-signed-nonce holding the provider's nonce): the
// nonce signed with the cluster's key, the public key, and a certificate request for the
// consumer's control-plane identity. Whatever carries the nonce across (liqo_peering, or a
// person) then creates the Tenant on the provider from the answer.
package nonce

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/internal/clusterid"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// nonceSize is how many random bytes a nonce holds; it is stored base64-encoded, as text
// (upstream's form, which survives a Secret's stringData).
const nonceSize = 64

// tenantNamespaces selects tenant namespaces.
var tenantNamespaces = predicate.NewPredicateFuncs(func(o client.Object) bool {
	return o.GetLabels()[consts.TenantNamespaceLabel] == "true" && o.GetLabels()[consts.RemoteClusterIDLabel] != ""
})

// ProviderReconciler keeps a nonce in every tenant namespace (provider side).
type ProviderReconciler struct {
	// Client reads and writes the cluster.
	Client client.Client
}

// Reconcile fills in the namespace's nonce Secret when someone created it without a nonce
// (liqo_peering and upstream liqoctl do, then wait) and labels it as upstream's tools look it
// up. It creates none: liqoctl creates the Secret itself and fails if it is already there.
func (r *ProviderReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil || ns.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	labels := forge.NonceLabels(ns.Labels[consts.RemoteClusterIDLabel])
	secret := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: consts.NonceSecret}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, nil // nobody asked for one yet
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("reading the nonce of %s: %w", ns.Name, err)
	}
	changed := false
	if len(secret.Data[consts.NonceKey]) == 0 {
		nonce, err := newNonce()
		if err != nil {
			return reconcile.Result{}, err
		}
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		secret.Data[consts.NonceKey], changed = nonce, true
	}
	for k, v := range labels {
		if secret.Labels[k] != v {
			if secret.Labels == nil {
				secret.Labels = map[string]string{}
			}
			secret.Labels[k], changed = v, true
		}
	}
	if changed {
		if err := r.Client.Update(ctx, secret); err != nil {
			return reconcile.Result{}, fmt.Errorf("filling in the nonce of %s: %w", ns.Name, err)
		}
	}
	return reconcile.Result{}, nil
}

// newNonce returns a fresh nonce: nonceSize random bytes, base64-encoded.
func newNonce() ([]byte, error) {
	raw := make([]byte, nonceSize)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generating nonce: %w", err)
	}
	return []byte(base64.StdEncoding.EncodeToString(raw)), nil
}

// SetupWithManager watches tenant namespaces and their nonce Secrets (whole: a request's event
// must find the Secret in the cache Reconcile reads, which a metadata-only watch would not
// guarantee).
func (r *ProviderReconciler) SetupWithManager(mgr ctrl.Manager) error {
	toNamespace := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetNamespace()}}}
	})
	err := ctrl.NewControllerManagedBy(mgr).Named("nonce").
		For(&corev1.Namespace{}, builder.WithPredicates(tenantNamespaces)).
		Watches(&corev1.Secret{}, toNamespace, builder.WithPredicates(named(consts.NonceSecret))).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the nonce controller: %w", err)
	}
	return nil
}

// ConsumerReconciler answers signed-nonce requests (consumer side).
type ConsumerReconciler struct {
	// Client reads and writes the cluster.
	Client client.Client
	// LiqoNamespace is the namespace Liqo is installed in, where the cluster's signing key and
	// ID are ("": consts.LiqoNamespace).
	LiqoNamespace string
}

// Reconcile signs the nonce of a liqo-signed-nonce Secret that has no signature yet.
func (r *ConsumerReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, req.NamespacedName, secret); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	nonce := secret.Data[consts.NonceKey]
	if len(nonce) == 0 || len(secret.Data[consts.SignedNonceKey]) > 0 {
		return reconcile.Result{}, nil
	}
	key, clusterID, err := LocalIdentity(ctx, r.Client, consts.LiqoNamespaceOr(r.LiqoNamespace))
	if err != nil {
		return reconcile.Result{}, err
	}
	csr, err := key.CSR(clusterID, consts.ConsumerGroup)
	if err != nil {
		return reconcile.Result{}, err
	}
	public, err := key.EncodePublic()
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("encoding the cluster's public key: %w", err)
	}
	patch := client.MergeFrom(secret.DeepCopy())
	secret.Data[consts.SignedNonceKey] = key.Sign(nonce)
	secret.Data[consts.PublicKeySecretKey] = public
	secret.Data[consts.CSRKey] = csr
	if err := r.Client.Patch(ctx, secret, patch); err != nil {
		return reconcile.Result{}, fmt.Errorf("answering signed-nonce request %s: %w", req, err)
	}
	return reconcile.Result{}, nil
}

// SetupWithManager watches liqo-signed-nonce Secrets.
func (r *ConsumerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).Named("signednonce").
		For(&corev1.Secret{}, builder.WithPredicates(named(consts.SignedNonceSecret))).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the signed-nonce controller: %w", err)
	}
	return nil
}

// LocalIdentity reads the cluster's signing key and ID from the Liqo namespace liqoNS.
func LocalIdentity(ctx context.Context, c client.Client, liqoNS string) (*signing.KeyPair, string, error) {
	key, err := signing.ReadClusterKey(ctx, c, liqoNS)
	if err != nil {
		return nil, "", err
	}
	id, err := clusterid.Read(ctx, c, liqoNS)
	if err != nil {
		return nil, "", fmt.Errorf("reading the cluster ID: %w", err)
	}
	return key, string(id), nil
}

func named(name string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == name })
}
