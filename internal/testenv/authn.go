package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Files of the client CA in a cluster's certificate folder.
const (
	clientCACertFile = "client-ca.crt"
	clientCAKeyFile  = "client-ca.key"
)

// diskCertAuthn authenticates users with client certificates signed by a CA whose key it keeps
// on disk, so that kube-controller-manager's CSR signer can sign with the same CA and the
// certificates it issues (signer kubernetes.io/kube-apiserver-client) are trusted by the API
// server. envtest's own authenticator keeps its CA key in memory only.
type diskCertAuthn struct {
	dir    string
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

var _ envtest.Authn = (*diskCertAuthn)(nil)

func newDiskCertAuthn(dir string) (*diskCertAuthn, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating client CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "testenv-client-ca"},
		NotBefore:    time.Now().Add(-time.Hour),
		// Long-lived, as a real cluster CA is: the CSR signer caps the certificates it issues at
		// the CA's expiry.
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing client CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing client CA: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding client CA key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, clientCACertFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("writing client CA: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, clientCAKeyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, fmt.Errorf("writing client CA key: %w", err)
	}
	return &diskCertAuthn{dir: dir, caCert: cert, caKey: key}, nil
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
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key of user %s: %w", user.Name, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("generating serial of user %s: %w", user.Name, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: user.Name, Organization: user.Groups},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.caCert, &key.PublicKey, a.caKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate of user %s: %w", user.Name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding key of user %s: %w", user.Name, err)
	}
	cfg := rest.CopyConfig(baseCfg)
	cfg.CertData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return cfg, nil
}
