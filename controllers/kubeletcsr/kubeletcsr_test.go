package kubeletcsr_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/kubeletcsr"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// request is the PEM of a CSR for cn/org with the SANs.
func request(t *testing.T, cn string, org []string, dns []string, ips ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: org}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// TestApprover: a virtual node's serving CSR from its virtual kubelet, for the node's name and
// address, is approved; one from someone else, or for another address, or with other usages,
// is denied; a real node's CSR is left alone.
func TestApprover(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "consumer"})
	c := env.Cluster("consumer")
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(c.Config)
	testenv.StartManager(t, c, func(mgr ctrl.Manager) error {
		return (&kubeletcsr.Approver{Client: mgr.GetClient(), Kube: admin, NodeWait: 10 * time.Minute, // the Node watch decides, not the requeue
			Requesters: func(vn *offv1beta1.VirtualNode) []string { return []string{"vk-" + vn.Name} }}).SetupWithManager(mgr)
	})

	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}},
		&offv1beta1.VirtualNode{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "vn"}, Spec: offv1beta1.VirtualNodeSpec{ClusterID: "p"}},
	} {
		if err := c.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The requests come before the Node: the approver decides them when it registers.
	clientOf := func(user string) kubernetes.Interface {
		kc, err := c.UserKubeconfig(user, "system:masters")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
		if err != nil {
			t.Fatal(err)
		}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	vk, mallory := clientOf("vk-vn"), clientOf("mallory")
	serving := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	nodes := []string{"system:nodes"}
	for _, tc := range []struct {
		name   string
		as     kubernetes.Interface
		req    []byte
		usages []certificatesv1.KeyUsage
		want   certificatesv1.RequestConditionType // "" : left alone
	}{
		{"good", vk, request(t, "system:node:vn", nodes, []string{"vn"}, "127.0.0.1"), serving, certificatesv1.CertificateApproved},
		{"someone-else", mallory, request(t, "system:node:vn", nodes, []string{"vn"}, "127.0.0.1"), serving, certificatesv1.CertificateDenied},
		{"other-ip", vk, request(t, "system:node:vn", nodes, nil, "10.1.2.3"), serving, certificatesv1.CertificateDenied},
		{"other-dns", vk, request(t, "system:node:vn", nodes, []string{"kubernetes.default"}, "127.0.0.1"), serving, certificatesv1.CertificateDenied},
		{"real-node", mallory, request(t, "system:node:worker-1", nodes, []string{"worker-1"}, "10.0.0.1"), serving, ""},
	} {
		csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: tc.name},
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: tc.req, SignerName: certificatesv1.KubeletServingSignerName, Usages: tc.usages}}
		if _, err := tc.as.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	time.Sleep(time.Second)
	if err := c.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vn", Labels: map[string]string{consts.TypeLabel: consts.VirtualNodeType}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}}}); err != nil {
		t.Fatal(err)
	}
	decision := func(ctx context.Context, name string) certificatesv1.RequestConditionType {
		csr, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		for _, cond := range csr.Status.Conditions {
			if cond.Type == certificatesv1.CertificateApproved || cond.Type == certificatesv1.CertificateDenied {
				return cond.Type
			}
		}
		return ""
	}
	for name, want := range map[string]certificatesv1.RequestConditionType{
		"good": certificatesv1.CertificateApproved, "someone-else": certificatesv1.CertificateDenied,
		"other-ip": certificatesv1.CertificateDenied, "other-dns": certificatesv1.CertificateDenied,
	} {
		var got certificatesv1.RequestConditionType
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got = decision(ctx, name)
			return got != "", nil
		})
		if err != nil || got != want {
			t.Errorf("CSR %s: %q (%v), want %s", name, got, err, want)
		}
	}
	time.Sleep(time.Second) // a decision on the real node's request would be there by now
	if got := decision(ctx, "real-node"); got != "" {
		t.Errorf("a real node's CSR was %s, want it left alone", got)
	}
}
