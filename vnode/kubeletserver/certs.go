package kubeletserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"

	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// Organization and CommonNamePrefix are the subject of kubelet serving certificates, which the
// kubernetes.io/kubelet-serving signer requires.
const (
	Organization     = "system:nodes"
	CommonNamePrefix = "system:node:"
)

// startCertificates starts requesting and renewing the node's serving certificate through the
// consumer's CSR API; Current is nil until the first one is issued.
func startCertificates(ctx context.Context, env *vnode.Env, lifetime time.Duration) (certificate.Manager, error) {
	tmpl := &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: CommonNamePrefix + env.NodeName, Organization: []string{Organization}},
		DNSNames: []string{env.NodeName},
	}
	if ip := net.ParseIP(env.Kubelet.IP); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	cfg := &certificate.Config{
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) { return env.Local, nil },
		Template:    tmpl,
		SignerName:  certificatesv1.KubeletServingSignerName,
		// ECDSA keys: no key encipherment (the signer accepts exactly these two then).
		Usages:           []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		CertificateStore: &memoryStore{},
		Name:             "kubelet-serving-" + env.NodeName,
		Ctx:              &ctx,
	}
	if lifetime > 0 {
		cfg.RequestedCertificateLifetime = &lifetime
	}
	m, err := certificate.NewManager(cfg)
	if err != nil {
		return nil, fmt.Errorf("virtual node %s: serving certificate manager: %w", env.NodeName, err)
	}
	m.Start()
	return m, nil
}

// memoryStore keeps the serving certificate in memory only: a restarted virtual kubelet asks
// for a new one (the CSR cleaner of kube-controller-manager removes the old requests).
type memoryStore struct {
	mu   sync.Mutex
	cert *tls.Certificate
}

// Current returns the certificate, or certificate.NoCertKeyError when there is none yet.
func (s *memoryStore) Current() (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert == nil {
		err := certificate.NoCertKeyError("no serving certificate yet")
		return nil, &err
	}
	return s.cert, nil
}

// Update keeps a newly issued certificate and its key.
func (s *memoryStore) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("issued serving certificate: %w", err)
	}
	if c.Leaf == nil && len(c.Certificate) > 0 {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("issued serving certificate: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cert = &c
	return &c, nil
}
