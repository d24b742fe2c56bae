// Package identity reconciles Identities on the consumer: an Identity holding the credentials a
// provider issued (certificate, CA, API server) becomes a kubeconfig Secret (data key
// kubeconfig, labels liqo.io/identity-type and liqo.io/remote-cluster-id, annotation
// liqo.io/remote-tenant-namespace) whose client key is the cluster's signing key, the key the
// certificate request was made with. An Identity whose author wrote its kubeconfig Secret
// itself (annotation liqo.io/kubeconfig-secret) only gets its status pointed at that Secret.
// SliceReconciler fills the certificate request of this cluster's ResourceSlices and makes
// their Identities (type ResourceSlice) from what the provider signed.
package identity

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// SecretName is the kubeconfig Secret of an Identity.
func SecretName(identity string) string { return "kubeconfig-" + identity }

// Reconciler reconciles Identities.
type Reconciler struct {
	// Client reads and writes the consumer cluster.
	Client client.Client
	// RenewalCheck is how often a control-plane identity's Tenant on the provider is read for
	// a renewed certificate; zero: a twentieth of the certificate's remaining life, between 10
	// seconds and an hour.
	RenewalCheck time.Duration
	// LiqoNamespace is the namespace Liqo is installed in, where the signing key is ("":
	// consts.LiqoNamespace).
	LiqoNamespace string
}

// Reconcile writes the kubeconfig Secret of one Identity and points its status at it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	id := &authv1beta1.Identity{}
	if err := r.Client.Get(ctx, req.NamespacedName, id); err != nil || id.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if name := id.Annotations[consts.KubeconfigSecretAnnotation]; name != "" {
		// Its author wrote the kubeconfig (with a key of its own, not the cluster's signing key,
		// so a Secret written here would not authenticate): point at it, and leave renewals to
		// the author too.
		return reconcile.Result{}, r.pointAt(ctx, id, name)
	}
	p := id.Spec.AuthParams
	if len(p.SignedCRT) == 0 || p.APIServer == "" {
		return reconcile.Result{}, nil // credentials not there yet
	}
	keySecret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespaceOr(r.LiqoNamespace), Name: consts.SigningKeySecret}, keySecret); err != nil {
		return reconcile.Result{}, fmt.Errorf("reading the cluster's signing key for identity %s: %w", req, err)
	}
	kubeconfig, err := kubeconfigFor(string(id.Spec.ClusterID), p, keySecret.Data[consts.PrivateKeySecretKey], id.Spec.Namespace)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("identity %s: %w", req, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: id.Namespace, Name: SecretName(id.Name)}}
	_, err = controllerutil.CreateOrUpdate(ctx, r.Client, secret, func() error {
		if secret.Labels == nil {
			secret.Labels = map[string]string{}
		}
		secret.Labels[consts.IdentityTypeLabel] = string(id.Spec.Type)
		secret.Labels[consts.RemoteClusterIDLabel] = string(id.Spec.ClusterID)
		if id.Spec.Namespace != "" {
			if secret.Annotations == nil {
				secret.Annotations = map[string]string{}
			}
			secret.Annotations[consts.RemoteTenantNamespaceAnnotation] = id.Spec.Namespace
		}
		secret.Data = map[string][]byte{consts.KubeconfigSecretKey: kubeconfig}
		return controllerutil.SetControllerReference(id, secret, r.Client.Scheme())
	})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("writing kubeconfig Secret of identity %s: %w", req, err)
	}
	if err := r.pointAt(ctx, id, secret.Name); err != nil {
		return reconcile.Result{}, err
	}
	if id.Spec.Type != authv1beta1.ControlPlaneIdentityType || id.Spec.Namespace == "" {
		return reconcile.Result{}, nil
	}
	return r.pickUpRenewal(ctx, id, kubeconfig, keySecret.Data[consts.PublicKeySecretKey])
}

// pickUpRenewal reads the consumer's Tenant on the provider, with the identity itself, and
// takes the certificate there when the provider renewed it (same key, later expiry). It
// returns when to look again.
func (r *Reconciler) pickUpRenewal(ctx context.Context, id *authv1beta1.Identity, kubeconfig, publicKeyPEM []byte) (reconcile.Result, error) {
	current, err := signing.ParseCertificate(id.Spec.AuthParams.SignedCRT)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("identity %s/%s: spec.authParams.signedCRT: %w", id.Namespace, id.Name, err)
	}
	again := r.RenewalCheck
	if again == 0 {
		again = min(max(time.Until(current.NotAfter)/20, 10*time.Second), time.Hour)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("identity %s/%s: %w", id.Namespace, id.Name, err)
	}
	remote, err := client.New(cfg, client.Options{Scheme: r.Client.Scheme()})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("identity %s/%s: client of %s: %w", id.Namespace, id.Name, id.Spec.ClusterID, err)
	}
	tenants := &authv1beta1.TenantList{}
	if err := remote.List(ctx, tenants, client.InNamespace(id.Spec.Namespace)); err != nil {
		// The provider may be down, or the access revoked: keep the credentials, look again later.
		log.FromContext(ctx).Info("cannot read the tenant on the provider to renew the identity",
			"provider", id.Spec.ClusterID, "error", err.Error())
		return reconcile.Result{RequeueAfter: again}, nil
	}
	pub, err := signing.ParsePublic(publicKeyPEM)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("the cluster's public signing key: %w", err)
	}
	for _, t := range tenants.Items {
		if t.Status.AuthParams == nil || len(t.Status.AuthParams.SignedCRT) == 0 ||
			string(t.Status.AuthParams.SignedCRT) == string(id.Spec.AuthParams.SignedCRT) {
			continue
		}
		renewed, err := signing.ParseCertificate(t.Status.AuthParams.SignedCRT)
		if err != nil || !pub.Equal(renewed.PublicKey) || !renewed.NotAfter.After(current.NotAfter) {
			continue
		}
		before := id.DeepCopy()
		id.Spec.AuthParams.SignedCRT = t.Status.AuthParams.SignedCRT
		if err := r.Client.Patch(ctx, id, client.MergeFrom(before)); err != nil {
			return reconcile.Result{}, fmt.Errorf("taking the renewed certificate into identity %s/%s: %w", id.Namespace, id.Name, err)
		}
		log.FromContext(ctx).Info("took the renewed certificate", "provider", id.Spec.ClusterID, "notAfter", renewed.NotAfter)
		return reconcile.Result{}, nil // the update brings the identity back
	}
	return reconcile.Result{RequeueAfter: again}, nil
}

// kubeconfigFor builds the kubeconfig of an identity towards cluster remoteID.
func kubeconfigFor(remoteID string, p authv1beta1.AuthParams, keyPEM []byte, namespace string) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[remoteID] = &clientcmdapi.Cluster{Server: p.APIServer, CertificateAuthorityData: p.CA, ProxyURL: p.ProxyURL}
	kc.AuthInfos[remoteID] = &clientcmdapi.AuthInfo{ClientCertificateData: p.SignedCRT, ClientKeyData: keyPEM}
	kc.Contexts[remoteID] = &clientcmdapi.Context{Cluster: remoteID, AuthInfo: remoteID, Namespace: namespace}
	kc.CurrentContext = remoteID
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("encoding kubeconfig: %w", err)
	}
	return data, nil
}

// pointAt sets the Identity's status.kubeconfigSecretRef to the named Secret.
func (r *Reconciler) pointAt(ctx context.Context, id *authv1beta1.Identity, secret string) error {
	if id.Status.KubeconfigSecretRef != nil && id.Status.KubeconfigSecretRef.Name == secret {
		return nil
	}
	before := id.DeepCopy()
	id.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: secret}
	if err := r.Client.Status().Patch(ctx, id, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating status of identity %s/%s: %w", id.Namespace, id.Name, err)
	}
	return nil
}

// SetupWithManager watches Identities and the Secrets they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).Named("identity").
		For(&authv1beta1.Identity{}).
		Owns(&corev1.Secret{}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the identity controller: %w", err)
	}
	return nil
}
