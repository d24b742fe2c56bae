package testenv

import (
	"crypto/x509/pkix"
	"fmt"
	"path/filepath"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
)

// kubernetesServiceIP is the `kubernetes` Service's ClusterIP: the first address of envtest's
// service range, 10.0.0.0/24. Pods reach the API server there (in-cluster configuration).
const kubernetesServiceIP = "10.0.0.1"

// Lifetimes of the real node's API server certificates.
const (
	servingCALifetime = 10 * 365 * 24 * time.Hour
	apiserverLifetime = 365 * 24 * time.Hour
	saSignerLifetime  = 10 * 365 * 24 * time.Hour
)

// writeServingCerts writes what envtest would generate in certDir, but with a serving
// certificate that pods can verify too: a serving CA, the API server's certificate
// (apiserver.crt, for localhost, 127.0.0.1, hostIP, the `kubernetes` Service's ClusterIP and
// names) and the ServiceAccount signing key pair (sa-signer.crt and .key). envtest keeps
// existing files; it returns the serving CA's PEM for envtest's SecureServing.CA.
func writeServingCerts(certDir, hostIP string) ([]byte, error) {
	now := time.Now()
	ca, err := pki.NewCA("testenv-serving-ca", servingCALifetime, now)
	if err != nil {
		return nil, fmt.Errorf("making the serving CA: %w", err)
	}
	serving, err := ca.Issue(pki.Template{
		Subject: pkix.Name{CommonName: "kube-apiserver"}, Usage: pki.Serving, Lifetime: apiserverLifetime, Now: now,
		Hosts: []string{"127.0.0.1", hostIP, kubernetesServiceIP,
			"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		return nil, fmt.Errorf("issuing the API server's serving certificate: %w", err)
	}
	if err := writePKCS8Pair(certDir, "apiserver", serving); err != nil {
		return nil, err
	}
	sa, err := pki.SelfSign(pki.Template{
		Subject: pkix.Name{CommonName: "testenv-service-accounts"}, Usage: pki.Signing, Lifetime: saSignerLifetime, Now: now,
	})
	if err != nil {
		return nil, fmt.Errorf("making the ServiceAccount signing key pair: %w", err)
	}
	if err := writePKCS8Pair(certDir, "sa-signer", sa); err != nil {
		return nil, err
	}
	return ca.CertPEM(), nil
}

// writePKCS8Pair writes pair as name.crt and name.key in dir, the key in PKCS #8 as envtest
// writes its own.
func writePKCS8Pair(dir, name string, pair *pki.KeyPair) error {
	keyPEM, err := pki.EncodePKCS8KeyPEM(pair.Key)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := writeKeyPair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"), pair.CertPEM(), keyPEM); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
