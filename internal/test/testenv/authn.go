package testenv

import (
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
)

// Files of the client CA in a cluster's certificate folder.
const (
	clientCACertFile = "client-ca.crt"
	clientCAKeyFile  = "client-ca.key"
)

// Lifetimes of the client CA and of the certificates it signs here.
const (
	// clientCALifetime is long, as a real cluster CA's is: the CSR signer caps the certificates
	// it issues at the CA's expiry.
	clientCALifetime = 10 * 365 * 24 * time.Hour
	issuedLifetime   = 7 * 24 * time.Hour
)

// diskCertAuthn authenticates users with client certificates signed by a CA whose key it keeps
// on disk, so that kube-controller-manager's CSR signer can sign with the same CA and the
// certificates it issues (signer kubernetes.io/kube-apiserver-client) are trusted by the API
// server. envtest's own authenticator keeps its CA key in memory only.
type diskCertAuthn struct {
	dir string
	ca  *pki.CA
}

var _ envtest.Authn = (*diskCertAuthn)(nil)

func newDiskCertAuthn(dir string) (*diskCertAuthn, error) {
	ca, err := pki.NewCA("testenv-client-ca", clientCALifetime, time.Now())
	if err != nil {
		return nil, fmt.Errorf("making the client CA: %w", err)
	}
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	if err := writeKeyPair(filepath.Join(dir, clientCACertFile), filepath.Join(dir, clientCAKeyFile), ca.CertPEM(), keyPEM); err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	return &diskCertAuthn{dir: dir, ca: ca}, nil
}

// sign issues a certificate of the client CA from t, valid from now for issuedLifetime.
func (a *diskCertAuthn) sign(t pki.Template) (*pki.KeyPair, error) {
	t.Lifetime, t.Now = issuedLifetime, time.Now()
	pair, err := a.ca.Issue(t)
	if err != nil {
		return nil, fmt.Errorf("issuing with the client CA: %w", err)
	}
	return pair, nil
}

// writeKeyPair writes a certificate and its key, both PEM, readable by their owner only.
func writeKeyPair(certPath, keyPath string, certPEM, keyPEM []byte) error {
	if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
		return fmt.Errorf("writing the certificate: %w", err)
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return fmt.Errorf("writing the key of %s: %w", filepath.Base(certPath), err)
	}
	return nil
}

// Configure points the API server at the client CA.
func (a *diskCertAuthn) Configure(_ string, args *envtest.Arguments) error {
	args.Set("client-ca-file", filepath.Join(a.dir, clientCACertFile))
	return nil
}

// Start does nothing: the CA is written when the authenticator is made.
func (a *diskCertAuthn) Start() error { return nil }

// Stop does nothing: the cluster's folder, CA included, is removed with the cluster.
func (a *diskCertAuthn) Stop() error { return nil }

// AddUser issues a client certificate for user and returns baseCfg authenticating with it.
func (a *diskCertAuthn) AddUser(user envtest.User, baseCfg *rest.Config) (*rest.Config, error) {
	pair, err := a.sign(pki.Template{Subject: pkix.Name{CommonName: user.Name, Organization: user.Groups}, Usage: pki.Client})
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", user.Name, err)
	}
	keyPEM, err := pair.KeyPEM()
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", user.Name, err)
	}
	cfg := rest.CopyConfig(baseCfg)
	cfg.CertData = pair.CertPEM()
	cfg.KeyData = keyPEM
	return cfg, nil
}
