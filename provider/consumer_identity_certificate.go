package provider

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
)

// consumerIdentityRequest makes the consumer's private key and a PEM certificate request for
// the user (common name) in organization.
func consumerIdentityRequest(user, organization string) (*ecdsa.PrivateKey, []byte, error) {
	key, err := pki.NewKey()
	if err != nil {
		return nil, nil, fmt.Errorf("making the private key: %w", err)
	}
	csrPEM, err := pki.NewCSR(key, pkix.Name{CommonName: user, Organization: []string{organization}})
	if err != nil {
		return nil, nil, fmt.Errorf("making the certificate request: %w", err)
	}
	return key, csrPEM, nil
}

// consumerIdentitySubmit creates the CertificateSigningRequest for the kube-apiserver client
// signer, valid for the plan's validity_hours.
func consumerIdentitySubmit(ctx context.Context, c *clusterClient, plan *consumerIdentityModel, csrPEM []byte,
) (*certificatesv1.CertificateSigningRequest, error) {
	ns, name := plan.Namespace.ValueString(), plan.Name.ValueString()
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-" + ns + "-", Labels: plan.labels()},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           csrPEM,
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			ExpirationSeconds: ptr.To(consumerIdentityExpirationSeconds(plan.ValidityHours.ValueInt64())),
		},
	}
	csr, err := c.kube.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating a CertificateSigningRequest in %s: %w; the Terraform user needs "+
			"`create` on certificatesigningrequests", c.describe(), err)
	}
	return csr, nil
}

// consumerIdentityApproveAndWait approves the request and waits until the signer issued the
// certificate; it returns the PEM certificate.
func consumerIdentityApproveAndWait(ctx context.Context, c *clusterClient, plan *consumerIdentityModel,
	csr *certificatesv1.CertificateSigningRequest, timeout time.Duration, timeoutName string,
) ([]byte, error) {
	csrs := c.kube.CertificatesV1().CertificateSigningRequests()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "TerraformApproved",
		Message: fmt.Sprintf("approved by %s for consumer %s in namespace %s", consumerIdentityTypeName,
			plan.ConsumerClusterID.ValueString(), plan.Namespace.ValueString()),
	})
	if _, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("approving CertificateSigningRequest %s in %s: %w; the Terraform user needs "+
			"`update` on certificatesigningrequests/approval and `approve` on signers/%s", csr.Name, c.describe(), err,
			certificatesv1.KubeAPIServerClientSignerName)
	}
	var certPEM []byte
	last, seen := "not signed yet", false
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		cur, err := csrs.Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			// A read error (near the deadline, the client's own rate limiter refuses) does not
			// hide what was last seen of the request.
			if !seen {
				last = err.Error()
			}
			return false, nil
		}
		seen = true
		if len(cur.Status.Certificate) > 0 {
			certPEM = cur.Status.Certificate
			return true, nil
		}
		var failed error
		last, failed = csrProgress(cur)
		return false, failed
	})
	if err != nil {
		return nil, fmt.Errorf("%s: waiting for CertificateSigningRequest %s in %s to be signed "+
			"(last seen: %s): %w; check that the cluster's kube-controller-manager signs for %s "+
			"(--cluster-signing-cert-file and --cluster-signing-key-file), or raise timeouts.%s",
			consumerIdentityTypeName, csr.Name, c.describe(), last, err, certificatesv1.KubeAPIServerClientSignerName, timeoutName)
	}
	return certPEM, nil
}

// csrProgress describes an unsigned request's conditions; failed is set when it was denied
// or failed.
func csrProgress(csr *certificatesv1.CertificateSigningRequest) (seen string, failed error) {
	conds := []string{}
	for _, cond := range csr.Status.Conditions {
		if (cond.Type == certificatesv1.CertificateDenied || cond.Type == certificatesv1.CertificateFailed) && cond.Status == corev1.ConditionTrue {
			return "", fmt.Errorf("%s: %s %s", cond.Type, cond.Reason, cond.Message)
		}
		conds = append(conds, fmt.Sprintf("%s=%s (%s)", cond.Type, cond.Status, cond.Reason))
	}
	return "no certificate yet, conditions: " + strings.Join(conds, ", "), nil
}

// consumerIdentityIssue issues new credentials for m in cluster c: a private key made in this
// process, a CertificateSigningRequest for m's user and organization, approved, and the
// certificate the signer issues, with which it sets m's csr_name, certificate, its expiry and
// kubeconfig. submitted is called once the request exists (m.CSRName set), before the wait for
// the signer: when it returns false, consumerIdentityIssue stops there, with no error.
// timeoutName names the `timeouts` attribute that bounds the wait, for the error.
func consumerIdentityIssue(ctx context.Context, c *clusterClient, m *consumerIdentityModel, timeout time.Duration,
	timeoutName string, submitted func() bool,
) error {
	ca, insecure, err := consumerIdentityCA(c)
	if err != nil {
		return err
	}
	key, csrPEM, err := consumerIdentityRequest(m.ConsumerClusterID.ValueString(), m.Organization.ValueString())
	if err != nil {
		return err
	}
	csr, err := consumerIdentitySubmit(ctx, c, m, csrPEM)
	if err != nil {
		return err
	}
	m.CSRName = types.StringValue(csr.Name)
	if !submitted() {
		return nil
	}
	certPEM, err := consumerIdentityApproveAndWait(ctx, c, m, csr, timeout, timeoutName)
	if err != nil {
		return err
	}
	return m.issue(c, ca, insecure, key, certPEM)
}

// issue sets the certificate, its expiry and the kubeconfig (for the plan's API server URL, or
// the cluster's) from the signed certificate and the private key.
func (m *consumerIdentityModel) issue(c *clusterClient, ca []byte, insecure bool, key *ecdsa.PrivateKey, certPEM []byte) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the private key: %w", err)
	}
	kubeconfig, err := consumerIdentityKubeconfig(m.server(c), ca, insecure, m.ConsumerClusterID.ValueString(), certPEM,
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return err
	}
	return m.setCredentials(c, certPEM, kubeconfig)
}

// setCredentials sets the certificate (PEM, from m's CSR in cluster c), its expiry and the
// kubeconfig that holds it.
func (m *consumerIdentityModel) setCredentials(c *clusterClient, certPEM, kubeconfig []byte) error {
	cert, err := consumerIdentityParseCertificate(certPEM)
	if err != nil {
		return fmt.Errorf("CertificateSigningRequest %s in %s: %w", m.CSRName.ValueString(), c.describe(), err)
	}
	m.Certificate = types.StringValue(string(certPEM))
	m.CertificateExpiresAt = types.StringValue(cert.NotAfter.UTC().Format(time.RFC3339))
	m.Kubeconfig = types.StringValue(string(kubeconfig))
	// Just issued: not due (see consumerIdentityDue).
	m.ReadyForRenewal = types.BoolValue(false)
	return nil
}

// consumerIdentityParseCertificate parses a PEM certificate.
func consumerIdentityParseCertificate(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate: %w", err)
	}
	return cert, nil
}

// server is the API server URL the kubeconfig names: api_server_url, or the one the connection
// to cluster c uses.
func (m *consumerIdentityModel) server(c *clusterClient) string {
	if !m.APIServerURL.IsNull() {
		return m.APIServerURL.ValueString()
	}
	return c.host
}

// consumerIdentityWithServer returns the kubeconfig with its clusters' server set to server.
func consumerIdentityWithServer(kubeconfig, server string) (string, error) {
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		return "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	for _, cl := range cfg.Clusters {
		cl.Server = server
	}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return string(b), nil
}

// consumerIdentityExpirationSeconds converts the validated validity_hours to expirationSeconds.
func consumerIdentityExpirationSeconds(hours int64) int32 {
	hours = max(1, min(hours, consumerIdentityMaxValidityHours))
	return int32(hours) * 3600 // bounded above: 87600*3600 < 2^31
}

func consumerIdentityNow() time.Time {
	return time.Now().Add(time.Duration(consumerIdentityClockOffset.Load()))
}

// consumerIdentityDue tells whether a certificate (PEM) is due for renewal: whether it expires
// within renewBefore or, when renewBefore is at least half the certificate's lifetime (signers
// cap the validity), once two thirds of its lifetime have passed (pki.RenewAt, the rule of the
// tenant controller and the virtual kubelets), so that a fresh certificate is never due and a
// capped one is not re-issued at every plan.
func consumerIdentityDue(certPEM, renewBefore string) (bool, error) {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil {
		return true, nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false, fmt.Errorf("parsing the certificate in the state: %w", err)
	}
	d, err := time.ParseDuration(renewBefore)
	if err != nil {
		return false, fmt.Errorf("renew_before %q is not a duration: %w", renewBefore, err)
	}
	due := cert.NotAfter.Add(-d)
	if d >= cert.NotAfter.Sub(cert.NotBefore)/2 {
		due = pki.RenewAt(cert)
	}
	return consumerIdentityNow().After(due), nil
}

// consumerIdentityCA returns the CA of the connection (inline or from its file), nil when the
// connection trusts the system roots, and whether TLS verification is off.
func consumerIdentityCA(c *clusterClient) ([]byte, bool, error) {
	if c.config.Insecure {
		return nil, true, nil
	}
	if len(c.config.CAData) > 0 {
		return c.config.CAData, false, nil
	}
	if c.config.CAFile != "" {
		b, err := os.ReadFile(c.config.CAFile)
		if err != nil {
			return nil, false, fmt.Errorf("reading the CA file %s of %s: %w", c.config.CAFile, c.describe(), err)
		}
		return b, false, nil
	}
	return nil, false, nil
}

// consumerIdentityKubeconfig renders the consumer's kubeconfig.
func consumerIdentityKubeconfig(server string, ca []byte, insecure bool, user string, certPEM, keyPEM []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["provider"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca, InsecureSkipTLSVerify: insecure}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["provider"] = &clientcmdapi.Context{Cluster: "provider", AuthInfo: user}
	cfg.CurrentContext = "provider"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return b, nil
}
