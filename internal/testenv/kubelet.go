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
	"net"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// KubeletClientUser is the user the API server authenticates as to kubelets when
// ClusterOptions.KubeletAPI is set (group system:masters, as kubeadm's
// apiserver-kubelet-client used to be).
const KubeletClientUser = "kube-apiserver-kubelet-client"

// Files of the kubelet API set-up in a cluster's certificate folder.
const (
	kubeletClientCertFile = "apiserver-kubelet-client.crt"
	kubeletClientKeyFile  = "apiserver-kubelet-client.key"
	kwokServingCertFile   = "kwok-serving.crt"
	kwokServingKeyFile    = "kwok-serving.key"
)

// issue signs a certificate made from tmpl with the client CA and writes it and its key as
// name.crt and name.key in the CA's folder; it returns both paths.
func (a *diskCertAuthn) issue(certFile, keyFile string, tmpl *x509.Certificate) (string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("generating key for %s: %w", certFile, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return "", "", fmt.Errorf("generating serial for %s: %w", certFile, err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(7 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.caCert, &key.PublicKey, a.caKey)
	if err != nil {
		return "", "", fmt.Errorf("signing %s: %w", certFile, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", fmt.Errorf("encoding key of %s: %w", certFile, err)
	}
	certPath, keyPath := filepath.Join(a.dir, certFile), filepath.Join(a.dir, keyFile)
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", certPath, err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", keyPath, err)
	}
	return certPath, keyPath, nil
}

// configureKubeletAPI makes the API server reach kubelets as a real cluster's does: it prefers
// the nodes' InternalIP, authenticates with a client certificate of the client CA and verifies
// the kubelets' serving certificates against the CA kube-controller-manager signs CSRs with
// (the client CA here, for every signer, kubernetes.io/kubelet-serving included).
func configureKubeletAPI(authn *diskCertAuthn, args *envtest.Arguments) error {
	cert, key, err := authn.issue(kubeletClientCertFile, kubeletClientKeyFile, &x509.Certificate{
		Subject:     pkix.Name{CommonName: KubeletClientUser, Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return err
	}
	args.Set("kubelet-client-certificate", cert)
	args.Set("kubelet-client-key", key)
	args.Set("kubelet-certificate-authority", filepath.Join(authn.dir, clientCACertFile))
	args.Set("kubelet-preferred-address-types", "InternalIP")
	return nil
}

// kwokServingArgs are kwok's flags to serve its nodes' kubelet endpoint over HTTPS on
// 127.0.0.1, with a certificate the API server trusts when KubeletAPI is set.
func kwokServingArgs(authn *diskCertAuthn) ([]string, error) {
	cert, key, err := authn.issue(kwokServingCertFile, kwokServingKeyFile, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:kwok", Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	if err != nil {
		return nil, err
	}
	return []string{"--tls-cert-file=" + cert, "--tls-private-key-file=" + key}, nil
}

// ClientCA returns the PEM of the cluster's client CA: it signs user certificates (those of
// UserKubeconfig), the API server's kubelet client certificate and, through
// kube-controller-manager, every CSR (kubelet-serving ones included).
func (c *Cluster) ClientCA() ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(c.Dir, "certs", clientCACertFile))
	if err != nil {
		return nil, fmt.Errorf("cluster %s: reading the client CA: %w", c.Name, err)
	}
	return data, nil
}
