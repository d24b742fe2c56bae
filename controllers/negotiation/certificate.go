package negotiation

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/peerkit/terraform-provider-liqo/controllers/internal/clientcert"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
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
	consumer := string(tenant.Spec.ClusterID)
	var pub ed25519.PublicKey
	if tenant.Spec.AuthzPolicy != authv1beta1.AuthzPolicy("TolerateNoHandshake") {
		if pub, err = signing.ParseTenantKey(tenant.Spec.PublicKey); err != nil {
			return nil, 0, fmt.Sprintf("ResourceSlice %s/%s: spec.csr cannot be checked: Tenant %s/%s spec.publicKey: %v",
				slice.Namespace, slice.Name, tenant.Namespace, tenant.Name, err), nil
		}
	}
	if _, err := signing.CheckResourceSliceCSR(slice.Spec.CSR, slice.Name, consumer, pub); err != nil {
		return nil, 0, fmt.Sprintf("ResourceSlice %s/%s: spec.csr refused: %v; it must be signed with the consumer's key "+
			"(Tenant %s/%s spec.publicKey), with common name %q and organization %q", slice.Namespace, slice.Name, err,
			tenant.Namespace, tenant.Name, signing.ResourceSliceCommonName(slice.Name, consumer), consumer), nil
	}
	h := clientcert.Holder{
		Prefix:   "liqo-resourceslice-" + consumer,
		Labels:   map[string]string{consts.RemoteClusterIDLabel: consumer, consts.ResourceSliceNameLabel: slice.Name},
		Selector: labels.SelectorFromSet(labels.Set{consts.RemoteClusterIDLabel: consumer, consts.ResourceSliceNameLabel: slice.Name}),
		Request:  slice.Spec.CSR, Describe: fmt.Sprintf("ResourceSlice %s/%s", slice.Namespace, slice.Name),
		Reason: "LiqoResourceSliceVerified",
	}
	if slice.Status.AuthParams != nil {
		h.Current = slice.Status.AuthParams.SignedCRT
	}
	issuer := &clientcert.Issuer{Client: r.Client, Validity: r.CertificateValidity, RenewBefore: r.RenewBefore,
		MinRenewalInterval: r.MinRenewalInterval}
	cert, due, err := issuer.Ensure(ctx, h)
	if err != nil || cert == nil {
		return slice.Status.AuthParams, time.Second, "", err // not signed yet: what it has stays meanwhile
	}
	return &authv1beta1.AuthParams{CA: r.CAData, SignedCRT: cert, APIServer: r.APIServerURL, ProxyURL: tenant.Spec.ProxyURL},
		max(time.Until(due), time.Second), "", nil
}
