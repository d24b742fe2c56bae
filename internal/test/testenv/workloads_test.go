package testenv_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// TestDeploymentRunsOnKWOKNode: with scheduler, controller manager and a KWOK node, a
// 3-replica Deployment becomes Available and its pods are bound to the KWOK node.
func TestDeploymentRunsOnKWOKNode(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{
		Name: "provider", Scheduler: true, ControllerManager: true,
		Nodes: []testenv.NodeOptions{{Name: "kwok-node-1", CPU: "4", Memory: "8Gi"}},
	})
	c := env.Cluster("provider")
	ctx := t.Context()

	node := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "kwok-node-1"}, node); err != nil {
		t.Fatal(err)
	}
	if got := node.Status.Allocatable.Cpu().String(); got != "4" {
		t.Errorf("KWOK node allocatable cpu = %s, want 4", got)
	}

	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	if err := c.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return false, err
		}
		return dep.Status.AvailableReplicas == 3, nil
	})
	if err != nil {
		t.Fatalf("deployment not Available: %v (status %+v)", err, dep.Status)
	}
	t.Logf("3-replica Deployment Available %v after creation", time.Since(start).Round(time.Millisecond))

	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("got %d pods, want 3", len(pods.Items))
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "kwok-node-1" || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			t.Errorf("pod %s: node %q phase %s IP %q; want on kwok-node-1, Running, with an IP", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP)
		}
	}

	// The node lifecycle controller marks a node's pods NotReady when its lease lapses; a
	// kubelet (here kwok's pod-ready-again stage) makes them Ready again.
	p := pods.Items[0]
	for i, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason = corev1.ConditionFalse, "NodeNotReady"
		}
	}
	if err := c.Client.Status().Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(&p), &p); err != nil {
			return false, err
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("pod %s marked NotReady is not Ready again: %v (conditions %+v)", p.Name, err, p.Status.Conditions)
	}
}

// TestControllerManagerSignsClientCertificates: a CSR for the kube-apiserver-client signer,
// once approved, is signed by the controller manager, and the certificate authenticates to the
// API server as the requested user. Later issues issue peer identities this way.
func TestControllerManagerSignsClientCertificates(t *testing.T) {
	env := testenv.New(t, testenv.ClusterOptions{Name: "provider", ControllerManager: true})
	c := env.Cluster("provider")
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(c.Config)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "cl-consumer", Organization: []string{"liqo.io"}},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "consumer-identity"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature},
		},
	}
	if csr, err = cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by test",
	})
	if _, err = cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var certPEM []byte
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		certPEM = got.Status.Certificate
		return len(certPEM) > 0, nil
	})
	if err != nil {
		t.Fatalf("CSR not signed: %v", err)
	}

	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	userCfg := rest.AnonymousClientConfig(c.Config)
	userCfg.CertData = certPEM
	userCfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	review, err := kubernetes.NewForConfigOrDie(userCfg).AuthenticationV1().SelfSubjectReviews().
		Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("authenticating with the signed certificate: %v", err)
	}
	if got := review.Status.UserInfo.Username; got != "cl-consumer" {
		t.Errorf("authenticated as %q, want cl-consumer", got)
	}
}
