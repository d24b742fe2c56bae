// Package tenant reconciles Tenants on the provider: it verifies the consumer's signed nonce
// (unless the tenant's authzPolicy is TolerateNoHandshake), issues the consumer's control-plane
// certificate through the CSR API (signer kubernetes.io/kube-apiserver-client) for verified,
// Active tenants only, binds the consumer in the tenant namespace to the remote control-plane
// ClusterRole and nothing else, and revokes the consumer's access when the Tenant is deleted.
//
// Revocation (a finalizer keeps the Tenant until it is done) deletes the consumer's binding in
// the tenant namespace, its workload bindings (liqo-binding-liqo-remote-workload, labelled
// liqo.io/remote-cluster-id=<consumer>) in all its remote namespaces, and its CSRs: a request
// with the consumer's certificate is then forbidden everywhere, though the certificate itself
// stays valid until it expires. The remote namespaces stay (they go with the NamespaceMap);
// the namespacemap controller does not bind the consumer there again while it has no Tenant.
// Cordoning or draining a Tenant revokes nothing: a Cordoned tenant keeps its workloads and a
// Drained one needs its access to withdraw them; only deleting the Tenant does.
//
// Check is the one place that decides whether a Tenant is refused; a refusal is a Warning
// Event on the Tenant, and the foreigncluster controller shows it in the ForeignCluster's
// AuthTenantStatus condition (Liqo's TenantStatus has no field for it).
package tenant

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/clientcert"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/finalizers"
	"github.com/peerkit/terraform-provider-liqo/controllers/namespacemap"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

const (
	// finalizer revokes the consumer's access before the Tenant goes.
	finalizer = "liqo.io/tenant-access"
	// RoleBindingName is the binding of the consumer's user in the tenant namespace (seed 003's name).
	RoleBindingName = "liqo-binding-liqo-remote-controlplane"
	// DefaultCertificateValidity is what the consumer's certificate is requested for.
	DefaultCertificateValidity = clientcert.DefaultValidity
	reasonIssued               = "IdentityIssued"
)

// Reasons a Tenant is refused: no identity is issued for it. Each is the reason of a Warning
// Event on the Tenant and of the ForeignCluster's AuthTenantStatus condition.
const (
	// ReasonSignatureInvalid: spec.signature is not spec.publicKey's signature of the nonce.
	ReasonSignatureInvalid = "SignatureInvalid"
	// ReasonCSRInvalid: spec.csr is not a request the consumer may be issued.
	ReasonCSRInvalid = "CSRInvalid"
	// ReasonNotActive: the tenant is Cordoned or Drained.
	ReasonNotActive = "NotActive"
	// ReasonWrongNamespace: the Tenant is not in its consumer's tenant namespace.
	ReasonWrongNamespace = "WrongNamespace"
)

// Refusal is why a Tenant gets no identity.
type Refusal struct {
	// Reason is one of the Reason constants.
	Reason string
	// Message names the field at fault and what it should be.
	Message string
}

// verdict is what checking a Tenant found: a refusal, or the public key the consumer proved
// it holds (nil under TolerateNoHandshake).
type verdict struct {
	refusal *Refusal
	key     ed25519.PublicKey
}

func refuse(reason, format string, args ...any) verdict {
	return verdict{refusal: &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}}
}

// Check reports why a Tenant is refused, or nil when an identity may be issued for it. The
// Tenant reconciler refuses what Check refuses; the ForeignCluster reconciler shows it.
func Check(ctx context.Context, c client.Reader, t *authv1beta1.Tenant) (*Refusal, error) {
	v, err := check(ctx, c, t)
	return v.refusal, err
}

func check(ctx context.Context, c client.Reader, t *authv1beta1.Tenant) (verdict, error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: t.Namespace}, ns); err != nil {
		return verdict{}, fmt.Errorf("reading namespace of tenant %s/%s: %w", t.Namespace, t.Name, err)
	}
	if ns.Labels[consts.RemoteClusterIDLabel] != string(t.Spec.ClusterID) || ns.Labels[consts.TenantNamespaceLabel] != "true" {
		return refuse(ReasonWrongNamespace, "namespace %s is not the tenant namespace of cluster %s (labels %s=%s, %s=true)",
			t.Namespace, t.Spec.ClusterID, consts.RemoteClusterIDLabel, t.Spec.ClusterID, consts.TenantNamespaceLabel), nil
	}
	var v verdict
	if t.Spec.AuthzPolicy != authv1beta1.AuthzPolicy("TolerateNoHandshake") {
		var err error
		if v, err = verify(ctx, c, t); err != nil || v.refusal != nil {
			return v, err
		}
	}
	if len(t.Spec.CSR) == 0 {
		return v, nil // declarative peering: credentials made elsewhere
	}
	if t.Spec.TenantCondition != authv1beta1.TenantConditionActive && t.Spec.TenantCondition != "" {
		return refuse(ReasonNotActive, "tenant is %s: no identity is issued until it is Active", t.Spec.TenantCondition), nil
	}
	if _, err := signing.CheckCSR(t.Spec.CSR, string(t.Spec.ClusterID), []string{consts.ConsumerGroup}, v.key); err != nil {
		return refuse(ReasonCSRInvalid, "spec.csr refused: %v", err), nil
	}
	return v, nil
}

// Reconciler reconciles Tenants.
type Reconciler struct {
	// Client reads and writes the provider cluster.
	Client client.Client
	// Recorder records the reasons a tenant is refused, as Events on the Tenant.
	Recorder events.EventRecorder
	// APIServerURL is the provider's API server as consumers reach it.
	APIServerURL string
	// CAData is the CA bundle that signed the API server's certificate, for consumers.
	CAData []byte
	// CertificateValidity is what certificates are requested for (DefaultCertificateValidity
	// when zero; the CSR API's minimum is 10 minutes, and the signer may cap it).
	CertificateValidity time.Duration
	// RenewBefore, when set, renews a certificate that long before it expires; zero: once two
	// thirds of the issued certificate's own lifetime have passed (pki.RenewAt, upstream's
	// rule), whatever was requested.
	RenewBefore time.Duration
	// MinRenewalInterval is the least time between two certificate requests of one Tenant,
	// whatever the signer returns (pki.DefaultMinRenewalInterval when zero): a signer that
	// issues certificates already due, or expired, gets one request per interval, not a storm.
	MinRenewalInterval time.Duration
}

// issuer issues the tenant's certificate as the Reconciler's fields say.
func (r *Reconciler) issuer() *clientcert.Issuer {
	return &clientcert.Issuer{Client: r.Client, Validity: r.CertificateValidity, RenewBefore: r.RenewBefore,
		MinRenewalInterval: r.MinRenewalInterval}
}

// holder is the tenant's consumer as the holder of its control-plane certificate.
func holder(t *authv1beta1.Tenant) clientcert.Holder {
	var current []byte
	if t.Status.AuthParams != nil {
		current = t.Status.AuthParams.SignedCRT
	}
	return clientcert.ControlPlaneHolder(string(t.Spec.ClusterID), t.Spec.CSR, current, fmt.Sprintf("tenant %s/%s", t.Namespace, t.Name))
}

// Reconcile verifies one Tenant and issues or revokes the consumer's access.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	t := &authv1beta1.Tenant{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if t.DeletionTimestamp != nil {
		if wait, err := r.replicasLeft(ctx, t); err != nil || wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, err
		}
		return reconcile.Result{}, r.revoke(ctx, t)
	}
	if err := finalizers.Add(ctx, r.Client, t, finalizer, "tenant"); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.cordonSlices(ctx, t); err != nil {
		return reconcile.Result{}, err
	}

	v, err := check(ctx, r.Client, t)
	if err != nil {
		return reconcile.Result{}, err
	}
	if f := v.refusal; f != nil {
		// A tenant cordoned after its identity was issued keeps it: nothing to warn about.
		if f.Reason != ReasonNotActive || t.Status.AuthParams == nil || len(t.Status.AuthParams.SignedCRT) == 0 {
			r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, f.Reason, "Verify", "%s", f.Message)
		}
		return reconcile.Result{}, nil
	}
	if len(t.Spec.CSR) == 0 {
		return reconcile.Result{}, r.setStatus(ctx, t, nil, time.Time{}) // declarative peering: credentials made elsewhere
	}
	cert, due, err := r.issuer().Ensure(ctx, holder(t))
	if err != nil || cert == nil {
		return reconcile.Result{RequeueAfter: time.Second}, err // nil: not signed yet
	}
	if err := r.bind(ctx, t); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: max(time.Until(due), time.Second)}, r.setStatus(ctx, t, cert, due)
}

// verify checks the signed nonce; the verdict holds the verified key or why it is refused.
func verify(ctx context.Context, c client.Reader, t *authv1beta1.Tenant) (verdict, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: consts.NonceSecret}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return refuse(ReasonSignatureInvalid, "no nonce in %s yet to verify the signature against", t.Namespace), nil
		}
		return verdict{}, fmt.Errorf("reading the nonce of tenant %s/%s: %w", t.Namespace, t.Name, err)
	}
	pub, err := signing.ParseTenantKey(t.Spec.PublicKey)
	if err != nil {
		return refuse(ReasonSignatureInvalid, "spec.publicKey: %v", err), nil
	}
	if !signing.Verify(pub, secret.Data[consts.NonceKey], t.Spec.Signature) {
		return refuse(ReasonSignatureInvalid, "spec.signature is not spec.publicKey's signature of the nonce in %s/%s",
			t.Namespace, consts.NonceSecret), nil
	}
	return verdict{key: pub}, nil
}

// bind gives the consumer's user the remote control-plane role in the tenant namespace.
func (r *Reconciler) bind(ctx context.Context, t *authv1beta1.Tenant) error {
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: RoleBindingName}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, rb, func() error {
		rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusteridentity.RemoteControlPlaneClusterRole}
		rb.Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: string(t.Spec.ClusterID)}}
		return nil
	})
	if err != nil {
		return fmt.Errorf("binding consumer %s in %s: %w", t.Spec.ClusterID, t.Namespace, err)
	}
	return nil
}

// setStatus records the tenant's namespace and its certificate (nil: none issued here), and
// an Event when the certificate is new, saying when it expires and when it will be renewed.
func (r *Reconciler) setStatus(ctx context.Context, t *authv1beta1.Tenant, cert []byte, due time.Time) error {
	before := t.DeepCopy()
	t.Status.TenantNamespace = t.Namespace
	if cert != nil {
		issued := t.Status.AuthParams == nil || string(t.Status.AuthParams.SignedCRT) != string(cert)
		// The consumer's proxy URL (in-band peering: this cluster's API-server proxy as the
		// consumer reaches it through the tunnel) goes into the identity it receives.
		t.Status.AuthParams = &authv1beta1.AuthParams{SignedCRT: cert, CA: r.CAData, APIServer: r.APIServerURL, ProxyURL: t.Spec.ProxyURL}
		if issued {
			r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, reasonIssued, "Issue", "issued the control-plane identity of %s: %s",
				t.Spec.ClusterID, validity(cert, due))
		}
	}
	if err := r.Client.Status().Patch(ctx, t, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating status of tenant %s/%s: %w", t.Namespace, t.Name, err)
	}
	return nil
}

// validity says when a certificate (PEM) is valid and when it is due for renewal.
func validity(cert []byte, due time.Time) string {
	c, err := signing.ParseCertificate(cert)
	if err != nil {
		return "certificate unreadable: " + err.Error()
	}
	return fmt.Sprintf("certificate valid from %s to %s, renewal due at %s", c.NotBefore.UTC().Format(time.RFC3339),
		c.NotAfter.UTC().Format(time.RFC3339), due.UTC().Format(time.RFC3339))
}

// ReplicaGrace is how long, at most, a deleted Tenant keeps its consumer's access in the tenant
// namespace while Renews the consumer replicated there (labelled with its ID as
// liqo.io/originID) remain: upstream Liqo's CRD replicator deletes its copies on the provider
// before it lets the consumer's originals go (a finalizer), and `liqoctl unpeer` deletes the
// consumer's Identity (whose Renew follows it) just before the Tenant, while its slices and
// NamespaceMaps went before. Revoked at once, the replicator's delete is Forbidden, and the
// consumer's Renew and tenant namespace never go.
// Upstream's provider keeps the tenant-namespace binding until the namespace goes; we keep it
// only until the copies go, or this long.
const ReplicaGrace = 30 * time.Second

// replicaPoll is how often a deleted Tenant looks again for its consumer's copies.
const replicaPoll = time.Second

// replicasLeft tells how long to wait before revoking a deleted Tenant: 0 once no Renew its
// consumer replicated remains in the tenant namespace, or ReplicaGrace after the deletion.
func (r *Reconciler) replicasLeft(ctx context.Context, t *authv1beta1.Tenant) (time.Duration, error) {
	if !controllerutil.ContainsFinalizer(t, finalizer) || t.Spec.ClusterID == "" || time.Since(t.DeletionTimestamp.Time) > ReplicaGrace {
		return 0, nil
	}
	renews := &authv1beta1.RenewList{}
	if err := r.Client.List(ctx, renews, client.InNamespace(t.Namespace),
		client.MatchingLabels{consts.ReplicationOriginLabel: string(t.Spec.ClusterID)}); err != nil {
		return 0, fmt.Errorf("listing the Renews %s replicated into %s: %w", t.Spec.ClusterID, t.Namespace, err)
	}
	if len(renews.Items) > 0 {
		return replicaPoll, nil
	}
	return 0, nil
}

// revoke removes the consumer's bindings (in the tenant namespace and in its remote
// namespaces) and CSRs, then the finalizer.
func (r *Reconciler) revoke(ctx context.Context, t *authv1beta1.Tenant) error {
	if !controllerutil.ContainsFinalizer(t, finalizer) {
		return nil
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: RoleBindingName}}
	if err := r.Client.Delete(ctx, rb); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("revoking access of %s in %s: %w", t.Spec.ClusterID, t.Namespace, err)
	}
	workload := &rbacv1.RoleBindingList{}
	if err := r.Client.List(ctx, workload, client.MatchingLabels{consts.RemoteClusterIDLabel: string(t.Spec.ClusterID)}); err != nil {
		return fmt.Errorf("listing the workload bindings of %s: %w", t.Spec.ClusterID, err)
	}
	for i := range workload.Items {
		if b := &workload.Items[i]; namespacemap.IsWorkloadBinding(b.Name) {
			if err := r.Client.Delete(ctx, b); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("revoking access of %s in its remote namespace %s: %w", t.Spec.ClusterID, b.Namespace, err)
			}
		}
	}
	if err := r.Client.DeleteAllOf(ctx, &certificatesv1.CertificateSigningRequest{},
		client.MatchingLabels{consts.RemoteClusterIDLabel: string(t.Spec.ClusterID)}); err != nil {
		return fmt.Errorf("deleting CSRs of %s: %w", t.Spec.ClusterID, err)
	}
	return finalizers.Remove(ctx, r.Client, t, finalizer, "tenant")
}

// cordonSlices marks every ResourceSlice of the tenant's consumer on this cluster with
// liqo.io/cordon-tenant while the Tenant is Cordoned, and unmarks them otherwise, as upstream's
// tenant controller does: the slices' new ShadowPods are refused, and the consumer's virtual
// nodes take no new pods (the replication mirrors it to the consumer). The consumer's slices
// are the copies in the Tenant's namespace, where the consumer writes them: not found by their
// labels, which the consumer writes too (a copy stripped of liqo.io/remote-cluster-id would
// escape the cordon); this cluster's own requests there (a peering the other way, labelled
// liqo.io/replication=true, which a consumer may not write) are not its.
func (r *Reconciler) cordonSlices(ctx context.Context, t *authv1beta1.Tenant) error {
	if t.Spec.ClusterID == "" {
		return nil
	}
	slices := &authv1beta1.ResourceSliceList{}
	if err := r.Client.List(ctx, slices, client.InNamespace(t.Namespace)); err != nil {
		return fmt.Errorf("listing the ResourceSlices of tenant %s/%s: %w", t.Namespace, t.Name, err)
	}
	cordoned := t.Spec.TenantCondition == authv1beta1.TenantConditionCordoned
	for i := range slices.Items {
		s := &slices.Items[i]
		if _, marked := s.Annotations[consts.CordonTenantAnnotation]; marked == cordoned || s.Labels[consts.ReplicationLabel] == "true" {
			continue
		}
		before := s.DeepCopy()
		if cordoned {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[consts.CordonTenantAnnotation] = "true"
		} else {
			delete(s.Annotations, consts.CordonTenantAnnotation)
		}
		if err := r.Client.Patch(ctx, s, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("setting %s=%t on ResourceSlice %s/%s of tenant %s/%s: %w", consts.CordonTenantAnnotation, cordoned,
				s.Namespace, s.Name, t.Namespace, t.Name, err)
		}
		log.FromContext(ctx).Info("tenant cordon on its slice", "slice", client.ObjectKeyFromObject(s), "cordoned", cordoned)
	}
	return nil
}

// SetupWithManager watches Tenants, and the nonce Secrets and CSRs they depend on.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).Named("tenant").
		For(&authv1beta1.Tenant{}).
		Owns(&rbacv1.RoleBinding{}).
		Watches(&certificatesv1.CertificateSigningRequest{}, tenantsOfCluster(mgr.GetClient())).
		// A slice brings back the Tenants of its namespace (cordonSlices).
		Watches(&authv1beta1.ResourceSlice{}, enqueue.Listed[*authv1beta1.Tenant](mgr.GetClient(),
			func() client.ObjectList { return &authv1beta1.TenantList{} }, enqueue.InNamespaceOf(), nil)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the tenant controller: %w", err)
	}
	return nil
}
