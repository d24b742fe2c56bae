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

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// Organization and CommonNamePrefix are the subject of kubelet serving certificates, which the
// kubernetes.io/kubelet-serving signer requires.
const (
	Organization     = "system:nodes"
	CommonNamePrefix = "system:node:"
)

// certificateWait bounds the wait for one request to be approved and signed.
const certificateWait = 15 * time.Minute

// servingCertificates keeps a virtual node's serving certificate: requested through the
// consumer's CSR API, renewed once two thirds of the issued certificate's own lifetime have
// passed (pki.RenewAt), and never requested again sooner than minInterval after the previous
// request (pki.NextRenewal), whatever the signer returns. (client-go's certificate manager,
// which this replaces, asks again every second while the certificate it holds is due: a
// signer issuing short-lived certificates made that a storm of CSRs.) A failed request is
// retried after 2 s, doubling up to minInterval.
type servingCertificates struct {
	env         *vnode.Env
	tmpl        *x509.CertificateRequest
	lifetime    *time.Duration
	minInterval time.Duration
	log         logr.Logger
	cancel      context.CancelFunc

	mu   sync.Mutex
	cert *tls.Certificate
}

// startCertificates starts requesting and renewing the node's serving certificate through the
// consumer's CSR API, until ctx ends or Stop; Current is nil until the first one is issued.
func startCertificates(ctx context.Context, env *vnode.Env, lifetime, minInterval time.Duration) *servingCertificates {
	tmpl := &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: CommonNamePrefix + env.NodeName, Organization: []string{Organization}},
		DNSNames: []string{env.NodeName},
	}
	if ip := net.ParseIP(env.Kubelet.IP); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	if minInterval <= 0 {
		minInterval = pki.DefaultMinRenewalInterval
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &servingCertificates{env: env, tmpl: tmpl, minInterval: minInterval, log: env.Log.WithValues("certificate", "kubelet-serving"), cancel: cancel}
	if lifetime > 0 {
		s.lifetime = &lifetime
	}
	go s.run(ctx)
	return s
}

// Current returns the serving certificate, nil while none was issued.
func (s *servingCertificates) Current() *tls.Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cert
}

// Stop ends the renewals.
func (s *servingCertificates) Stop() { s.cancel() }

// run requests a certificate, then each renewal, until ctx ends.
func (s *servingCertificates) run(ctx context.Context) {
	retry := 2 * time.Second
	for ctx.Err() == nil {
		requested := time.Now()
		leaf, err := s.request(ctx)
		next := requested.Add(retry)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Error(err, "requesting the serving certificate failed; asking again", "after", retry)
			retry = min(2*retry, s.minInterval)
		} else {
			retry = 2 * time.Second
			next = pki.NextRenewal(pki.RenewAt(leaf), requested, s.minInterval)
			s.log.Info("serving certificate issued", "notBefore", leaf.NotBefore, "notAfter", leaf.NotAfter, "renewal", next)
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// request asks for a certificate for a new key, waits until it is signed and keeps it.
func (s *servingCertificates) request(ctx context.Context) (*x509.Certificate, error) {
	key, err := pki.NewKey()
	if err != nil {
		return nil, fmt.Errorf("virtual node %s: serving certificate key: %w", s.env.NodeName, err)
	}
	req, err := cert.MakeCSRFromTemplate(key, s.tmpl)
	if err != nil {
		return nil, fmt.Errorf("virtual node %s: serving certificate request: %w", s.env.NodeName, err)
	}
	// ECDSA keys: no key encipherment (the signer accepts exactly these two then).
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	name, uid, err := csr.RequestCertificateWithContext(ctx, s.env.Local, req, "", certificatesv1.KubeletServingSignerName, s.lifetime, usages, key)
	if err != nil {
		return nil, fmt.Errorf("virtual node %s: %w", s.env.NodeName, err)
	}
	wctx, cancel := context.WithTimeout(ctx, certificateWait)
	defer cancel()
	certPEM, err := csr.WaitForCertificate(wctx, s.env.Local, name, uid)
	if err != nil {
		return nil, fmt.Errorf("virtual node %s: waiting for CSR %s: %w", s.env.NodeName, name, err)
	}
	keyPEM, err := pki.EncodeKeyPEM(key)
	if err != nil {
		return nil, fmt.Errorf("virtual node %s: serving certificate key: %w", s.env.NodeName, err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("virtual node %s: issued serving certificate (CSR %s): %w", s.env.NodeName, name, err)
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("virtual node %s: issued serving certificate (CSR %s): %w", s.env.NodeName, name, err)
		}
	}
	s.mu.Lock()
	s.cert = &c
	s.mu.Unlock()
	return c.Leaf, nil
}
