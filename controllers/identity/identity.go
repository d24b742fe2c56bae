// Package identity reconciles Identities on the consumer: an Identity holding the credentials a
// provider issued (certificate, CA, API server) becomes a kubeconfig Secret (data key
// kubeconfig, labels liqo.io/identity-type and liqo.io/remote-cluster-id, annotation
// liqo.io/remote-tenant-namespace) whose client key is the cluster's signing key, the key the
// certificate request was made with.
package identity

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// SecretName is the kubeconfig Secret of an Identity.
func SecretName(identity string) string { return "kubeconfig-" + identity }

// Reconciler reconciles Identities.
type Reconciler struct {
	// Client reads and writes the consumer cluster.
	Client client.Client
}

// Reconcile writes the kubeconfig Secret of one Identity and points its status at it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	id := &authv1beta1.Identity{}
	if err := r.Client.Get(ctx, req.NamespacedName, id); err != nil || id.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	p := id.Spec.AuthParams
	if len(p.SignedCRT) == 0 || p.APIServer == "" {
		return reconcile.Result{}, nil // credentials not there yet
	}
	keySecret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: clusteridentity.SigningKeySecret}, keySecret); err != nil {
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
	if id.Status.KubeconfigSecretRef == nil || id.Status.KubeconfigSecretRef.Name != secret.Name {
		before := id.DeepCopy()
		id.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: secret.Name}
		if err := r.Client.Status().Patch(ctx, id, client.MergeFrom(before)); err != nil {
			return reconcile.Result{}, fmt.Errorf("updating status of identity %s: %w", req, err)
		}
	}
	return reconcile.Result{}, nil
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
