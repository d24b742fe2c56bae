package negotiation

import (
	"context"
	"fmt"
	"time"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/clientcert"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
)

// ReasonCSRInvalid is the reason of the Authentication condition of a slice whose spec.csr is
// not a request its consumer may be issued a certificate for: nothing is granted from it.
const ReasonCSRInvalid = "CSRInvalid"

// sliceCertificate checks the spec.csr of a slice of the tenant's consumer as upstream Liqo's
// provider does and returns the slice's status.authParams (the certificate signed through the
// CSR API, this cluster's CA and API server, the tenant's proxy URL, as upstream's
// ForgeAuthParams gives them), when to look again (the certificate not signed yet, or due for
// renewal), or why the request is refused.
func (r *Reconciler) sliceCertificate(ctx context.Context, slice *authv1beta1.ResourceSlice, tenant *authv1beta1.Tenant) (
	params *authv1beta1.AuthParams, again time.Duration, refused string, err error) {
	if err := clientcert.CheckSliceRequest(slice.Spec.CSR, slice.Name, tenant); err != nil {
		return nil, 0, fmt.Sprintf("ResourceSlice %s/%s: spec.csr %v", slice.Namespace, slice.Name, err), nil
	}
	var current []byte
	if slice.Status.AuthParams != nil {
		current = slice.Status.AuthParams.SignedCRT
	}
	h := clientcert.ResourceSliceHolder(string(tenant.Spec.ClusterID), slice.Name, slice.Spec.CSR, current,
		fmt.Sprintf("ResourceSlice %s/%s", slice.Namespace, slice.Name))
	issuer := &clientcert.Issuer{Client: r.Client, Validity: r.CertificateValidity, RenewBefore: r.RenewBefore,
		MinRenewalInterval: r.MinRenewalInterval}
	cert, due, err := issuer.Ensure(ctx, h)
	if err != nil || cert == nil {
		return slice.Status.AuthParams, time.Second, "", err // not signed yet: what it has stays meanwhile
	}
	return &authv1beta1.AuthParams{CA: r.CAData, SignedCRT: cert, APIServer: r.APIServerURL, ProxyURL: tenant.Spec.ProxyURL},
		max(time.Until(due), time.Second), "", nil
}
