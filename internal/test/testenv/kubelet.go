package testenv

import (
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
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

// issue signs a certificate made from t with the client CA and writes it and its key (SEC 1)
// as certFile and keyFile in the CA's folder; it returns both paths.
func (a *diskCertAuthn) issue(certFile, keyFile string, t pki.Template) (string, string, error) {
	pair, err := a.sign(t)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", certFile, err)
	}
	keyPEM, err := pair.KeyPEM()
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", certFile, err)
	}
	certPath, keyPath := filepath.Join(a.dir, certFile), filepath.Join(a.dir, keyFile)
	if err := writeKeyPair(certPath, keyPath, pair.CertPEM(), keyPEM); err != nil {
		return "", "", fmt.Errorf("%s: %w", certPath, err)
	}
	return certPath, keyPath, nil
}

// configureKubeletAPI makes the API server reach kubelets as a real cluster's does: it prefers
// the nodes' InternalIP, authenticates with a client certificate of the client CA and verifies
// the kubelets' serving certificates against the CA kube-controller-manager signs CSRs with
// (the client CA here, for every signer, kubernetes.io/kubelet-serving included).
func configureKubeletAPI(authn *diskCertAuthn, args *envtest.Arguments) error {
	cert, key, err := authn.issue(kubeletClientCertFile, kubeletClientKeyFile, pki.Template{
		Subject: pkix.Name{CommonName: KubeletClientUser, Organization: []string{"system:masters"}},
		Usage:   pki.Client,
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
	cert, key, err := authn.issue(kwokServingCertFile, kwokServingKeyFile, pki.Template{
		Subject: pkix.Name{CommonName: "system:node:kwok", Organization: []string{"system:nodes"}},
		Usage:   pki.Serving,
		Hosts:   []string{"127.0.0.1"},
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
