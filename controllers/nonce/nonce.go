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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// Names and data keys of the handshake Secrets.
const (
	// NonceSecret holds the provider's nonce (data key NonceKey) in a tenant namespace.
	NonceSecret = "liqo-nonce"
	// SignedNonceSecret, on the consumer, holds a provider's nonce to sign (NonceKey) and, once
	// answered, SignatureKey, PublicKeyKey (raw Ed25519) and CSRKey (PEM).
	SignedNonceSecret = "liqo-signed-nonce" //nolint:gosec // a Secret's name, not a credential
	// NonceKey is the data key of the nonce.
	NonceKey = "nonce"
	// SignatureKey is the data key of the nonce's signature.
	SignatureKey = "signature"
	// PublicKeyKey is the data key of the consumer's raw Ed25519 public key.
	PublicKeyKey = "publicKey"
	// CSRKey is the data key of the consumer's certificate request (PEM).
	CSRKey = "csr"
	// nonceSize is the nonce's length in bytes.
	nonceSize = 32
)

// ControlPlaneOrganization is the organization of the certificates of consumers' control planes.
const ControlPlaneOrganization = "liqo.io"

// tenantNamespaces selects tenant namespaces.
var tenantNamespaces = predicate.NewPredicateFuncs(func(o client.Object) bool {
	return o.GetLabels()[consts.TenantNamespaceLabel] == "true" && o.GetLabels()[consts.RemoteClusterIDLabel] != ""
})

// ProviderReconciler keeps a nonce in every tenant namespace (provider side).
type ProviderReconciler struct {
	// Client reads and writes the cluster.
	Client client.Client
}

// Reconcile ensures the namespace's nonce Secret.
func (r *ProviderReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil || ns.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: NonceSecret}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err //nolint:wrapcheck // nil, or a read error controller-runtime logs with the request
	}
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return reconcile.Result{}, fmt.Errorf("generating nonce: %w", err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: NonceSecret,
			Labels: map[string]string{consts.RemoteClusterIDLabel: ns.Labels[consts.RemoteClusterIDLabel]}},
		Data: map[string][]byte{NonceKey: nonce},
	}
	if err := r.Client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, fmt.Errorf("creating nonce in %s: %w", ns.Name, err)
	}
	return reconcile.Result{}, nil
}

// SetupWithManager watches tenant namespaces and their nonce Secrets.
func (r *ProviderReconciler) SetupWithManager(mgr ctrl.Manager) error {
	toNamespace := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetNamespace()}}}
	})
	err := ctrl.NewControllerManagedBy(mgr).Named("nonce").
		For(&corev1.Namespace{}, builder.WithPredicates(tenantNamespaces)).
		Watches(&corev1.Secret{}, toNamespace, builder.OnlyMetadata, builder.WithPredicates(named(NonceSecret))).
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
}

// Reconcile signs the nonce of a liqo-signed-nonce Secret that has no signature yet.
func (r *ConsumerReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, req.NamespacedName, secret); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	nonce := secret.Data[NonceKey]
	if len(nonce) == 0 || len(secret.Data[SignatureKey]) > 0 {
		return reconcile.Result{}, nil
	}
	key, clusterID, err := localIdentity(ctx, r.Client)
	if err != nil {
		return reconcile.Result{}, err
	}
	csr, err := key.CSR(clusterID, ControlPlaneOrganization)
	if err != nil {
		return reconcile.Result{}, err
	}
	patch := client.MergeFrom(secret.DeepCopy())
	secret.Data[SignatureKey] = key.Sign(nonce)
	secret.Data[PublicKeyKey] = key.Public
	secret.Data[CSRKey] = csr
	if err := r.Client.Patch(ctx, secret, patch); err != nil {
		return reconcile.Result{}, fmt.Errorf("answering signed-nonce request %s: %w", req, err)
	}
	return reconcile.Result{}, nil
}

// SetupWithManager watches liqo-signed-nonce Secrets.
func (r *ConsumerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).Named("signednonce").
		For(&corev1.Secret{}, builder.WithPredicates(named(SignedNonceSecret))).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the signed-nonce controller: %w", err)
	}
	return nil
}

// localIdentity reads the cluster's signing key and ID.
func localIdentity(ctx context.Context, c client.Client) (*signing.KeyPair, string, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: clusteridentity.SigningKeySecret}, secret); err != nil {
		return nil, "", fmt.Errorf("reading the cluster's signing key: %w", err)
	}
	key, err := signing.ParsePrivate(secret.Data[consts.PrivateKeySecretKey])
	if err != nil {
		return nil, "", fmt.Errorf("the cluster's signing key: %w", err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ClusterIDConfigMap}, cm); err != nil {
		return nil, "", fmt.Errorf("reading the cluster ID: %w", err)
	}
	return key, cm.Data[consts.ClusterIDKey], nil
}

func named(name string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == name })
}
