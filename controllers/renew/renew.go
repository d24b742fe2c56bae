// Package renew answers, on the provider, the Renews of consumer clusters: requests for a new
// client certificate of a consumer's control-plane identity or of the identity of one of its
// ResourceSlices, which upstream Liqo's consumers write (through their CRD replicator) in their
// tenant namespace on the provider, and read back from the status.
//
// A Renew is answered only in the tenant namespace of the consumer it names, which must have a
// Tenant there; for the control plane the Tenant must not be refused (tenant.Check), for a slice
// spec.resourceSliceRef must name a slice of the consumer that the provider authenticated.
//
// Upstream Liqo v1.2's consumers write a Renew with no spec.csr (one per control-plane Identity,
// kept for good): the identity's certificate is renewed by the provider's tenant controller, and
// the Renew's status.authParams get a copy of what the Tenant's (the slice's) status holds, kept
// current. A Renew with a spec.csr has it checked as the first request of the same identity is
// (the Tenant's spec.csr by the tenant controller, the slice's by the negotiation controller) and
// signed through the CSR API as theirs are (clientcert, with the same holders: one renewal rate
// per identity); status.authParams then get the certificate with this cluster's CA and API
// server and the Tenant's proxy URL. A refused Renew has no status.authParams and gets a Warning
// Event naming the field at fault.
package renew

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/clientcert"
	"github.com/peerkit/terraform-provider-liqo/controllers/internal/enqueue"
	"github.com/peerkit/terraform-provider-liqo/controllers/negotiation"
	"github.com/peerkit/terraform-provider-liqo/controllers/tenant"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/forge"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
)

// Reasons a Renew is refused: each is the reason of a Warning Event on the Renew.
const (
	// ReasonWrongNamespace: the Renew is not in the tenant namespace of spec.consumerClusterID.
	ReasonWrongNamespace = "WrongNamespace"
	// ReasonNoTenant: the consumer has no Tenant in the namespace.
	ReasonNoTenant = "NoTenant"
	// ReasonTenantRefused: the consumer's Tenant is refused (tenant.Check).
	ReasonTenantRefused = "TenantRefused"
	// ReasonPublicKeyMismatch: spec.publicKey is not the key of the consumer's Tenant.
	ReasonPublicKeyMismatch = "PublicKeyMismatch"
	// ReasonIdentityTypeUnknown: spec.identityType is neither ControlPlane nor ResourceSlice.
	ReasonIdentityTypeUnknown = "IdentityTypeUnknown"
	// ReasonResourceSliceInvalid: spec.resourceSliceRef names no authenticated slice of the consumer.
	ReasonResourceSliceInvalid = "ResourceSliceInvalid"
	// ReasonCSRInvalid: spec.csr is not a request the consumer may be issued.
	ReasonCSRInvalid = "CSRInvalid"
)

// reasonIssued is the reason of the Normal Event of a Renew answered with a new certificate.
const reasonIssued = "Renewed"

// Reconciler answers Renews.
type Reconciler struct {
	// Client reads and writes the provider cluster.
	Client client.Client
	// Recorder records why a Renew is refused, as Events on it.
	Recorder events.EventRecorder
	// APIServerURL is the provider's API server as consumers reach it, and CAData the CA bundle
	// that signed its certificate: both go into the Renews' status.authParams.
	APIServerURL string
	// CAData is the CA bundle of the API server (see APIServerURL).
	CAData []byte
	// CertificateValidity, RenewBefore and MinRenewalInterval are how the certificates are
	// requested and renewed, as the tenant controller's (clientcert.Issuer).
	CertificateValidity, RenewBefore, MinRenewalInterval time.Duration
}

// answer is what checking a Renew found: the Tenant of its consumer and either the holder to
// issue spec.csr's certificate to or (no spec.csr) the identity's authParams in force to copy;
// or why it is refused.
type answer struct {
	holder  clientcert.Holder
	current *authv1beta1.AuthParams
	tenant  *authv1beta1.Tenant
	refusal *tenant.Refusal
}

func refuse(reason, format string, args ...any) answer {
	return answer{refusal: &tenant.Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}}
}

// Reconcile answers one Renew.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rn := &authv1beta1.Renew{}
	if err := r.Client.Get(ctx, req.NamespacedName, rn); err != nil || rn.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if rn.Labels[consts.ReplicationLabel] == "true" {
		return reconcile.Result{}, nil // this cluster's own request to a provider, not a consumer's
	}
	a, err := r.check(ctx, rn)
	if err != nil {
		return reconcile.Result{}, err
	}
	if f := a.refusal; f != nil {
		r.Recorder.Eventf(rn, nil, corev1.EventTypeWarning, f.Reason, "Verify", "%s", f.Message)
		if f.Reason == ReasonWrongNamespace {
			return reconcile.Result{}, nil // not a Renew of a tenant namespace's consumer: left alone
		}
		return reconcile.Result{}, r.setStatus(ctx, rn, nil)
	}
	if len(rn.Spec.CSR) == 0 {
		if a.current == nil || len(a.current.SignedCRT) == 0 {
			return reconcile.Result{}, nil // nothing issued yet: the Tenant's (slice's) update brings it back
		}
		return reconcile.Result{}, r.setStatus(ctx, rn, a.current.DeepCopy())
	}
	issuer := &clientcert.Issuer{Client: r.Client, Validity: r.CertificateValidity, RenewBefore: r.RenewBefore,
		MinRenewalInterval: r.MinRenewalInterval}
	cert, due, err := issuer.Ensure(ctx, a.holder)
	if err != nil || cert == nil {
		return reconcile.Result{RequeueAfter: time.Second}, err // nil: not signed yet
	}
	params := &authv1beta1.AuthParams{SignedCRT: cert, CA: r.CAData, APIServer: r.APIServerURL, ProxyURL: a.tenant.Spec.ProxyURL}
	if rn.Status.AuthParams == nil || string(rn.Status.AuthParams.SignedCRT) != string(cert) {
		r.Recorder.Eventf(rn, nil, corev1.EventTypeNormal, reasonIssued, "Issue", "signed spec.csr for the %s identity of %s",
			rn.Spec.IdentityType, rn.Spec.ConsumerClusterID)
	}
	return reconcile.Result{RequeueAfter: max(time.Until(due), time.Second)}, r.setStatus(ctx, rn, params)
}

// check finds the consumer's Tenant and checks the Renew against it and its identity.
func (r *Reconciler) check(ctx context.Context, rn *authv1beta1.Renew) (answer, error) {
	consumer := string(rn.Spec.ConsumerClusterID)
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: rn.Namespace}, ns); err != nil {
		return answer{}, fmt.Errorf("reading namespace of Renew %s/%s: %w", rn.Namespace, rn.Name, err)
	}
	if consumer == "" || !forge.IsTenantNamespaceOf(ns, consumer) {
		return refuse(ReasonWrongNamespace, "spec.consumerClusterID %q: namespace %s is not the tenant namespace of that cluster "+
			"(labels %s=%s, %s=true): the Renew is not answered", consumer, rn.Namespace, consts.RemoteClusterIDLabel, consumer,
			consts.TenantNamespaceLabel), nil
	}
	t, err := clientcert.TenantOf(ctx, r.Client, rn.Namespace, consumer)
	if err != nil || t == nil {
		return refuse(ReasonNoTenant, "spec.consumerClusterID %q: no Tenant of that cluster in namespace %s", consumer, rn.Namespace), err
	}
	if len(rn.Spec.PublicKey) > 0 {
		want, err := clientcert.TenantKey(t)
		if got, perr := signing.ParseTenantKey(rn.Spec.PublicKey); err == nil && want != nil && (perr != nil || !got.Equal(want)) {
			return refuse(ReasonPublicKeyMismatch, "spec.publicKey is not the key of Tenant %s/%s (its spec.publicKey)", t.Namespace, t.Name), nil
		}
	}
	var current []byte
	if rn.Status.AuthParams != nil {
		current = rn.Status.AuthParams.SignedCRT
	}
	describe := fmt.Sprintf("Renew %s/%s", rn.Namespace, rn.Name)
	var a answer
	switch rn.Spec.IdentityType {
	case authv1beta1.ControlPlaneIdentityType:
		a, err = r.checkControlPlane(ctx, rn, t)
		a.holder = clientcert.ControlPlaneHolder(consumer, rn.Spec.CSR, current, describe)
	case authv1beta1.ResourceSliceIdentityType:
		a, err = r.checkSlice(ctx, rn, t)
		if rn.Spec.ResourceSliceRef != nil {
			a.holder = clientcert.ResourceSliceHolder(consumer, rn.Spec.ResourceSliceRef.Name, rn.Spec.CSR, current, describe)
		}
	default:
		return refuse(ReasonIdentityTypeUnknown, "spec.identityType %q: want %s or %s", rn.Spec.IdentityType,
			authv1beta1.ControlPlaneIdentityType, authv1beta1.ResourceSliceIdentityType), nil
	}
	a.tenant = t
	return a, err
}

// checkControlPlane checks a Renew of the consumer's control-plane identity: its Tenant is not
// refused, and spec.csr is a request for that identity.
func (r *Reconciler) checkControlPlane(ctx context.Context, rn *authv1beta1.Renew, t *authv1beta1.Tenant) (answer, error) {
	f, err := tenant.Check(ctx, r.Client, t)
	if err != nil {
		return answer{}, fmt.Errorf("checking Tenant %s/%s for Renew %s/%s: %w", t.Namespace, t.Name, rn.Namespace, rn.Name, err)
	}
	if f != nil {
		return refuse(ReasonTenantRefused, "spec.consumerClusterID %q: its Tenant %s/%s is refused (%s: %s)",
			rn.Spec.ConsumerClusterID, t.Namespace, t.Name, f.Reason, f.Message), nil
	}
	if len(rn.Spec.CSR) == 0 {
		return answer{current: t.Status.AuthParams}, nil
	}
	if err := clientcert.CheckControlPlaneRequest(rn.Spec.CSR, t); err != nil {
		return refuse(ReasonCSRInvalid, "spec.csr %v", err), nil
	}
	return answer{}, nil
}

// checkSlice checks a Renew of the identity of a ResourceSlice: spec.resourceSliceRef names a
// slice of the consumer in the namespace that the provider authenticated, and spec.csr is a
// request for that slice's identity.
func (r *Reconciler) checkSlice(ctx context.Context, rn *authv1beta1.Renew, t *authv1beta1.Tenant) (answer, error) {
	ref := rn.Spec.ResourceSliceRef
	if ref == nil || ref.Name == "" {
		return refuse(ReasonResourceSliceInvalid, "spec.resourceSliceRef: identityType %s names no ResourceSlice",
			authv1beta1.ResourceSliceIdentityType), nil
	}
	slice := &authv1beta1.ResourceSlice{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: rn.Namespace, Name: ref.Name}, slice)
	if apierrors.IsNotFound(err) {
		return refuse(ReasonResourceSliceInvalid, "spec.resourceSliceRef: no ResourceSlice %s in namespace %s", ref.Name, rn.Namespace), nil
	}
	if err != nil {
		return answer{}, fmt.Errorf("reading ResourceSlice %s/%s of Renew %s/%s: %w", rn.Namespace, ref.Name, rn.Namespace, rn.Name, err)
	}
	if slice.Spec.ConsumerClusterID == nil || *slice.Spec.ConsumerClusterID != rn.Spec.ConsumerClusterID ||
		slice.Labels[consts.ReplicationLabel] == "true" {
		return refuse(ReasonResourceSliceInvalid, "spec.resourceSliceRef: ResourceSlice %s/%s is not a request of consumer %s",
			slice.Namespace, slice.Name, rn.Spec.ConsumerClusterID), nil
	}
	if negotiation.Condition(slice, authv1beta1.ResourceSliceConditionTypeAuthentication) != authv1beta1.ResourceSliceConditionAccepted {
		return refuse(ReasonResourceSliceInvalid, "spec.resourceSliceRef: ResourceSlice %s/%s is not authenticated "+
			"(its Authentication condition is not Accepted)", slice.Namespace, slice.Name), nil
	}
	if len(rn.Spec.CSR) == 0 {
		return answer{current: slice.Status.AuthParams}, nil
	}
	if err := clientcert.CheckSliceRequest(rn.Spec.CSR, slice.Name, t); err != nil {
		return refuse(ReasonCSRInvalid, "spec.csr %v", err), nil
	}
	return answer{}, nil
}

// setStatus writes the Renew's status.authParams (nil: none), when they change.
func (r *Reconciler) setStatus(ctx context.Context, rn *authv1beta1.Renew, params *authv1beta1.AuthParams) error {
	if equality.Semantic.DeepEqual(rn.Status.AuthParams, params) {
		return nil
	}
	before := rn.DeepCopy()
	rn.Status.AuthParams = params
	if err := r.Client.Status().Patch(ctx, rn, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating status.authParams of Renew %s/%s: %w", rn.Namespace, rn.Name, err)
	}
	return nil
}

// SetupWithManager watches Renews, and the Tenants and ResourceSlices they are checked against.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	renews := func() client.ObjectList { return &authv1beta1.RenewList{} }
	err := ctrl.NewControllerManagedBy(mgr).Named("renew").
		For(&authv1beta1.Renew{}).
		Watches(&authv1beta1.Tenant{}, enqueue.Listed[*authv1beta1.Renew](mgr.GetClient(), renews, enqueue.InNamespaceOf(), nil)).
		Watches(&authv1beta1.ResourceSlice{}, enqueue.Listed[*authv1beta1.Renew](mgr.GetClient(), renews, enqueue.InNamespaceOf(), nil)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("building the renew controller: %w", err)
	}
	return nil
}
