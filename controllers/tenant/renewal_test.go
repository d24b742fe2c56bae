package tenant_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/identity"
	"github.com/peerkit/terraform-provider-liqo/controllers/nonce"
	"github.com/peerkit/terraform-provider-liqo/controllers/tenant"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestCertificateRenewal: the provider renews the consumer's certificate before it expires
// (here: 10-minute certificates renewed 597 s before expiry, so a few seconds after issuance),
// the consumer's identity picks the renewed certificate up from its Tenant, and the new
// kubeconfig works against the provider.
func TestCertificateRenewal(t *testing.T) {
	cons, prov := peerClusters(t)
	ctx := t.Context()
	const validity = 10 * time.Minute
	testenv.StartManager(t, prov, func(mgr ctrl.Manager) error {
		if err := (&nonce.ProviderReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&tenant.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("tenant"),
			APIServerURL: prov.Config.Host, CAData: prov.Config.CAData,
			CertificateValidity: validity, RenewBefore: validity - 3*time.Second, MinRenewalInterval: 3 * time.Second}).SetupWithManager(mgr)
	})
	testenv.StartManager(t, cons, func(mgr ctrl.Manager) error {
		if err := (&nonce.ConsumerReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&identity.Reconciler{Client: mgr.GetClient(), RenewalCheck: time.Second}).SetupWithManager(mgr)
	})
	answer := handshakeInTenantNamespaces(t, prov, cons)
	tn := answeredTenant(answer, "t-cons", authv1beta1.TenantConditionActive)
	if err := prov.Client.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, "the first certificate", 45*time.Second, func(ctx context.Context) (bool, error) {
		err := prov.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn)
		return err == nil && tn.Status.AuthParams != nil && len(tn.Status.AuthParams.SignedCRT) > 0, nil
	})
	first := tn.Status.AuthParams.SignedCRT
	firstCert, err := signing.ParseCertificate(first)
	if err != nil {
		t.Fatal(err)
	}
	if life := time.Until(firstCert.NotAfter); life > validity+time.Minute || life < validity-time.Minute {
		t.Errorf("certificate valid for another %s, want about %s (the requested validity)", life, validity)
	}
	id := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: "t-prov", Name: "controlplane"}, Spec: authv1beta1.IdentitySpec{
		ClusterID: "cl-provider", Type: authv1beta1.ControlPlaneIdentityType, Namespace: "t-cons", AuthParams: *tn.Status.AuthParams,
	}}
	if err := cons.Client.Create(ctx, id); err != nil {
		t.Fatal(err)
	}

	// The provider renews: a new certificate, for the same key, expiring later.
	testenv.Poll(t, "a renewed certificate in the Tenant's status", 45*time.Second, func(ctx context.Context) (bool, error) {
		err := prov.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn)
		return err == nil && string(tn.Status.AuthParams.SignedCRT) != string(first), nil
	})
	renewed, err := signing.ParseCertificate(tn.Status.AuthParams.SignedCRT)
	if err != nil {
		t.Fatal(err)
	}
	if !renewed.NotAfter.After(firstCert.NotAfter) || renewed.Subject.CommonName != "cl-consumer" {
		t.Errorf("renewed certificate: CN %q, expires %s (first: %s)", renewed.Subject.CommonName, renewed.NotAfter, firstCert.NotAfter)
	}
	if !signing.CertificateMatchesCSR(renewed, tn.Spec.CSR) {
		t.Error("the renewed certificate is not for the tenant's key")
	}

	// The consumer picks it up; its kubeconfig carries a certificate other than the first one, and works.
	secret := &corev1.Secret{}
	testenv.Poll(t, "the consumer's kubeconfig with a renewed certificate", 45*time.Second, func(ctx context.Context) (bool, error) {
		if err := cons.Client.Get(ctx, client.ObjectKey{Namespace: "t-prov", Name: identity.SecretName(id.Name)}, secret); err != nil {
			return false, nil
		}
		kc, err := clientcmd.Load(secret.Data[consts.KubeconfigSecretKey])
		if err != nil {
			return false, err
		}
		for _, u := range kc.AuthInfos {
			return len(u.ClientCertificateData) > 0 && string(u.ClientCertificateData) != string(first), nil
		}
		return false, nil
	})
	peer := identityClient(t, secret, prov.Client.Scheme())
	if err := peer.List(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace("t-cons")); err != nil {
		t.Errorf("the renewed identity cannot list slices in its tenant namespace: %v", err)
	}
}
