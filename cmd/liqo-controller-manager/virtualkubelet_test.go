package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestVirtualKubeletFlags: a wrong runner, or the Deployment runner without an image, is refused.
func TestVirtualKubeletFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--virtual-kubelet", "sidecar"}, `--virtual-kubelet "sidecar" is neither`},
		{[]string{"--virtual-kubelet", "deployment"}, "needs --virtual-kubelet-image"},
		{[]string{"--secret-reflection-type", "Sometimes"}, "secret-reflection-type"},
	} {
		_, err := parse(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%v) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	o, err := parse([]string{"--virtual-kubelet", "deployment", "--virtual-kubelet-image", "example.com/vk:1"}, io.Discard)
	if err != nil || o.vk.mode != deployment || o.vk.image != "example.com/vk:1" {
		t.Errorf("parse deployment runner = %+v, %v", o, err)
	}
	// Reflection options reach the in-process reflectors and, as flags, the Deployments.
	o, err = parse([]string{"--configmap-reflection-type", "AllowList", "--remote-real-ingress-class-name", "nginx"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := o.vk.reflection.Args(), []string{"--configmap-reflection-type=AllowList", "--remote-real-ingress-class-name=nginx"}; !slices.Equal(got, want) {
		t.Errorf("flags passed on to virtual kubelets: %v, want %v", got, want)
	}
}

// TestInProcessKubeletEndpoint: the running manager hosts a VirtualNode's node in-process; the
// Node advertises its kubelet endpoint on 127.0.0.1, whose serving certificate the manager
// requested through the CSR API and approved itself (kube-controller-manager signed it).
func TestInProcessKubeletEndpoint(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "consumer", ControllerManager: true}, testenv.ClusterOptions{Name: "provider"})
	cons, prov := env.Cluster("consumer"), env.Cluster("provider")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig", cons.KubeconfigPath, "--cluster-id", "cl-consumer",
			"--health-probe-bind-address", "0", "--metrics-bind-address", "0"}, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
	})

	const ns = "liqo-tenant-cl-provider"
	kc, err := prov.UserKubeconfig("cl-consumer")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig"}, Data: map[string][]byte{consts.KubeconfigSecretKey: kc}},
		&offv1beta1.VirtualNode{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cl-provider"},
			Spec: offv1beta1.VirtualNodeSpec{ClusterID: "cl-provider", KubeconfigSecretRef: &corev1.LocalObjectReference{Name: "kubeconfig"},
				ResourceQuota: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}},
	} {
		// The manager installs the CRDs at start: retry until VirtualNodes are known.
		err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return cons.Client.Create(ctx, o) == nil, nil
		})
		if err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}

	ca, err := cons.ClientCA()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	admin, err := tls.X509KeyPair(cons.Config.CertData, cons.Config.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	var leaf *x509.Certificate
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := cons.Client.Get(ctx, client.ObjectKey{Name: "cl-provider"}, node); err != nil || node.Status.DaemonEndpoints.KubeletEndpoint.Port == 0 {
			return false, nil //nolint:nilerr // not registered yet
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)))
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
			&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
		if err != nil {
			return false, nil //nolint:nilerr // no certificate yet
		}
		leaf = conn.ConnectionState().PeerCertificates[0]
		_ = conn.Close()
		return true, nil
	})
	if err != nil {
		t.Fatalf("the node's kubelet endpoint with a certificate of the cluster's signer: %v (node status %+v)", err, node.Status)
	}
	if leaf.Subject.CommonName != "system:node:cl-provider" {
		t.Errorf("serving certificate CN %q, want system:node:cl-provider", leaf.Subject.CommonName)
	}
	if a := node.Status.Addresses; len(a) != 1 || a[0].Address != "127.0.0.1" {
		t.Errorf("node addresses %v, want InternalIP 127.0.0.1", a)
	}
	csrs := &certificatesv1.CertificateSigningRequestList{}
	if err := cons.Client.List(t.Context(), csrs); err != nil {
		t.Fatal(err)
	}
	for _, csr := range csrs.Items {
		if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
			continue
		}
		if csr.Spec.Username != "testenv-admin" {
			t.Errorf("kubelet-serving CSR %s requested by %s, want the manager's user", csr.Name, csr.Spec.Username)
		}
		approved := false
		for _, c := range csr.Status.Conditions {
			approved = approved || c.Type == certificatesv1.CertificateApproved && c.Reason == "LiqoVirtualNodeServingCertificate"
		}
		if !approved {
			t.Errorf("kubelet-serving CSR %s conditions %+v, want approved by the manager", csr.Name, csr.Status.Conditions)
		}
	}
}
