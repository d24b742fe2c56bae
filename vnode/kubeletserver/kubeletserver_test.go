package kubeletserver_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/kubeletcsr"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
	"github.com/peerkit/terraform-provider-liqo/vnode/kubeletserver"
)

const (
	nodeName   = "vn-provider"
	localNs    = "demo"
	remoteNs   = "demo-consumer"
	tenantNs   = "liqo-tenant-provider"
	consumerID = "consumer"
	providerID = "provider"
)

// criLine is one line of a CRI container log, what KWOK's simulated logs read.
func criLine(msg string) string {
	return time.Now().UTC().Format(time.RFC3339Nano) + " stdout F " + msg + "\n"
}

// clientTLS is what a client of cons's kubelet endpoints needs: the cluster's client CA, which
// signs the endpoints' serving certificates, and the admin's client certificate.
func clientTLS(t *testing.T, cons *testenv.Cluster) (*x509.CertPool, tls.Certificate) {
	t.Helper()
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
	return roots, admin
}

// startVirtualKubelet runs, until the test ends, the approver of virtual nodes' serving
// certificates on the consumer (the controller manager's part) and the virtual kubelet of vn,
// with the kubelet endpoint (opts), reaching the provider with remoteCfg.
func startVirtualKubelet(t *testing.T, cons *testenv.Cluster, vn *offv1beta1.VirtualNode, remoteCfg *rest.Config, opts kubeletserver.Options) {
	t.Helper()
	consKube := kubernetes.NewForConfigOrDie(cons.Config)
	testenv.StartManager(t, cons, func(mgr ctrl.Manager) error {
		return (&kubeletcsr.Approver{Client: mgr.GetClient(), Kube: consKube,
			Requesters: func(*offv1beta1.VirtualNode) []string { return []string{"testenv-admin"} }}).SetupWithManager(mgr)
	})
	runner := vnode.NewRunner(consKube, vnode.Options{ProbeInterval: time.Second, ConsumerID: consumerID, LocalConfig: cons.Config,
		Reflectors: []vnode.Reflector{kubeletserver.New(opts)}, KubeletAddress: "127.0.0.1:0"}, ctrl.Log)
	if err := runner.Ensure(t.Context(), vn, remoteCfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runner.Stop(context.Background(), nodeName) })
}

// TestLogsAndExecReachTheProvider: a pod on a virtual node, in an offloaded namespace, is
// served by the node's kubelet endpoint: `kubectl logs` (whole, --tail, --follow) and `kubectl
// exec` (output, stdin, exit code) on the consumer reach the remote pod on the provider, where
// KWOK simulates them from a log file and by running the command in a folder of its own. The
// endpoint's certificate is issued by the consumer's CSR API for the node; callers without a
// certificate of the cluster's client CA, or not allowed nodes/proxy, are refused; pods not on
// the node or not offloaded are not found.
func TestLogsAndExecReachTheProvider(t *testing.T) {
	dir := t.TempDir()
	logFile, workDir := filepath.Join(dir, "app.log"), filepath.Join(dir, "container-root")
	if err := os.Mkdir(workDir, 0o700); err != nil {
		t.Fatal(err)
	}
	token := fmt.Sprintf("marker-%d", time.Now().UnixNano())
	if err := os.WriteFile(filepath.Join(workDir, "marker"), []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logFile, []byte(criLine("line one")+criLine("line two")+criLine("line three")), 0o600); err != nil {
		t.Fatal(err)
	}
	kwokConfig := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(kwokConfig, fmt.Appendf(nil, `apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: app-logs
spec:
  selector:
    matchNamespaces: [%[1]s]
  logs:
  - containers: [app]
    logsFile: %[2]s
    follow: true
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: app-exec
spec:
  selector:
    matchNamespaces: [%[1]s]
  execs:
  - containers: [app]
    local:
      workDir: %[3]s
`, remoteNs, logFile, workDir), 0o600); err != nil {
		t.Fatal(err)
	}

	env := testenv.New(t,
		testenv.ClusterOptions{Name: "consumer", ControllerManager: true, KubeletAPI: true}, // CSR signing
		testenv.ClusterOptions{Name: "provider", KubeletAPI: true, KWOKConfigs: []string{kwokConfig},
			Nodes: []testenv.NodeOptions{{Name: "kwok-node"}}},
	)
	cons, prov := env.Cluster("consumer"), env.Cluster("provider")
	ctx := t.Context()

	// Provider: the peer roles, the remote namespace with the consumer's workload role, the pod.
	if _, err := clusteridentity.Ensure(ctx, prov.Client, clusteridentity.Config{ClusterID: providerID}); err != nil {
		t.Fatal(err)
	}
	app := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}},
		// Offloaded pods tolerate the virtual node's taint (kube-controller-manager evicts the others).
		Tolerations: []corev1.Toleration{{Key: vnode.Taint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: remoteNs}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNs, Name: "liqo-remote-workload"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusteridentity.RemoteWorkloadClusterRole},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: consumerID}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNs, Name: "web"}, Spec: withNode(app, "kwok-node")},
	} {
		if err := prov.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	kc, err := prov.UserKubeconfig(consumerID)
	if err != nil {
		t.Fatal(err)
	}
	remoteCfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}

	// Consumer: the offloaded namespace and its accepted mapping, the VirtualNode, the pods.
	nm := &offv1beta1.NamespaceMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNs, Name: providerID,
		Labels: map[string]string{consts.RemoteClusterIDLabel: providerID}},
		Spec: offv1beta1.NamespaceMapSpec{DesiredMapping: map[string]string{localNs: remoteNs}}}
	vn := &offv1beta1.VirtualNode{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNs, Name: nodeName},
		Spec: offv1beta1.VirtualNodeSpec{ClusterID: providerID, ResourceQuota: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("10")}}}}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNs}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: localNs}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-offloaded"}},
		nm, vn,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: "web"}, Spec: withNode(app, nodeName)},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: "elsewhere"}, Spec: withNode(app, "another-node")},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "not-offloaded", Name: "web"}, Spec: withNode(app, nodeName)},
	} {
		if err := cons.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	nm.Status.CurrentMapping = map[string]offv1beta1.RemoteNamespaceStatus{localNs: {RemoteNamespace: remoteNs, Phase: offv1beta1.MappingAccepted}}
	if err := cons.Client.Status().Update(ctx, nm); err != nil {
		t.Fatal(err)
	}

	startVirtualKubelet(t, cons, vn, remoteCfg, kubeletserver.Options{})

	// The Node says where its kubelet endpoint is.
	node := &corev1.Node{}
	testenv.Poll(t, "the node advertising its kubelet endpoint", 30*time.Second, func(ctx context.Context) (bool, error) {
		if err := cons.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return false, err
		}
		return node.Status.DaemonEndpoints.KubeletEndpoint.Port != 0 && len(node.Status.Addresses) > 0, nil
	})
	if a := node.Status.Addresses; len(a) != 1 || a[0].Type != corev1.NodeInternalIP || a[0].Address != "127.0.0.1" {
		t.Errorf("node addresses %v, want InternalIP 127.0.0.1 only", a)
	}
	endpoint := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)))

	kubectl := func(stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(binDir(t), "kubectl"), append([]string{"--kubeconfig", cons.KubeconfigPath}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("kubectl %v: %w: %s", args, err, errOut.String())
		}
		return out.String(), err
	}

	// kubectl logs: the provider's log (first once the serving certificate is issued).
	var logs string
	testenv.Poll(t, "kubectl logs to answer", 60*time.Second, func(context.Context) (bool, error) {
		out, err := kubectl("", "logs", "-n", localNs, "web", "-c", "app")
		logs = out
		return err == nil, err
	})
	if logs != "line one\nline two\nline three\n" {
		t.Errorf("kubectl logs = %q, want the provider's three lines", logs)
	}
	if out, err := kubectl("", "logs", "-n", localNs, "web", "-c", "app", "--tail=1"); err != nil || out != "line three\n" {
		t.Errorf("kubectl logs --tail=1 = %q, %v; want the last line", out, err)
	}
	if out, err := kubectl("", "logs", "-n", localNs, "web", "-c", "app", "--timestamps", "--limit-bytes=4"); err != nil || len(out) != 4 {
		t.Errorf("kubectl logs --limit-bytes=4 = %q, %v; want 4 bytes", out, err)
	}
	testFollow(t, cons.KubeconfigPath, logFile)

	// kubectl exec: runs where the provider runs the container (KWOK: in its folder).
	if out, err := kubectl("", "exec", "-n", localNs, "web", "-c", "app", "--", "cat", "marker"); err != nil || out != token {
		t.Errorf("kubectl exec cat marker = %q, %v; want %q from the provider's container", out, err, token)
	}
	// KWOK's simulated exec never closes the command's stdin: read a fixed length.
	if out, err := kubectl("ping through stdin", "exec", "-i", "-n", localNs, "web", "-c", "app", "--", "head", "-c", "18"); err != nil || out != "ping through stdin" {
		t.Errorf("kubectl exec -i cat = %q, %v; want stdin echoed", out, err)
	}
	// A failing command: KWOK reports it as an error, not an exit code (its exec wraps the exit
	// error); the consumer's caller gets the provider's answer.
	if _, err := kubectl("", "exec", "-n", localNs, "web", "-c", "app", "--", "sh", "-c", "exit 3"); err == nil ||
		!strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "on cluster "+providerID) {
		t.Errorf("kubectl exec of a failing command = %v, want the provider's error", err)
	}

	// The endpoint's certificate: issued by the cluster's CSR signer for the node.
	roots, admin := clientTLS(t, cons)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", endpoint, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS to the kubelet endpoint, verified against the cluster's signer: %v", err)
	}
	leaf := conn.ConnectionState().PeerCertificates[0]
	_ = conn.Close()
	if leaf.Subject.CommonName != "system:node:"+nodeName || len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != "system:nodes" {
		t.Errorf("serving certificate subject %v, want system:node:%s in system:nodes", leaf.Subject, nodeName)
	}

	// Callers: a certificate of the client CA and the right to nodes/proxy are needed.
	get := func(cert *tls.Certificate, path string) (int, string, error) {
		tc := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
		if cert != nil {
			tc.Certificates = []tls.Certificate{*cert}
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
		resp, err := c.Get("https://" + endpoint + path)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	if code, body, err := get(&admin, "/containerLogs/"+localNs+"/web/app?tailLines=1"); err != nil || code != http.StatusOK ||
		body != "line four, written while following\n" {
		t.Errorf("admin GET containerLogs = %d %q %v, want 200 and the last line", code, body, err)
	}
	if _, _, err := get(nil, "/containerLogs/"+localNs+"/web/app"); err == nil {
		t.Error("a caller without a client certificate was served")
	}
	foreign := selfSigned(t, "testenv-admin", "system:masters")
	if _, _, err := get(&foreign, "/containerLogs/"+localNs+"/web/app"); err == nil {
		t.Error("a caller with a certificate of another CA was served")
	}
	nobodyKC, err := cons.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	nobodyCfg, err := clientcmd.RESTConfigFromKubeConfig(nobodyKC)
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := tls.X509KeyPair(nobodyCfg.CertData, nobodyCfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, err := get(&nobody, "/containerLogs/"+localNs+"/web/app"); err != nil || code != http.StatusForbidden {
		t.Errorf("a user without nodes/proxy: %d %v, want 403", code, err)
	}
	for _, path := range []string{"/containerLogs/" + localNs + "/elsewhere/app", "/containerLogs/not-offloaded/web/app", "/containerLogs/" + localNs + "/missing/app"} {
		if code, body, err := get(&admin, path); err != nil || code != http.StatusNotFound {
			t.Errorf("GET %s = %d %q %v, want 404", path, code, body, err)
		}
	}
}

// testFollow: kubectl logs --follow --tail=1 prints the last line, then a line written to the
// provider's log afterwards.
func testFollow(t *testing.T, kubeconfig, logFile string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir(t), "kubectl"), "--kubeconfig", kubeconfig,
		"logs", "-f", "--tail=1", "-n", localNs, "web", "-c", "app")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "line three" {
		t.Fatalf("kubectl logs -f --tail=1: first line %q (%v), want %q; stderr %s", lines.Text(), lines.Err(), "line three", errOut.String())
	}
	f, err := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(criLine("line four, written while following")); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if !lines.Scan() || lines.Text() != "line four, written while following" {
		t.Fatalf("kubectl logs -f: next line %q (%v), want the one written afterwards; stderr %s", lines.Text(), lines.Err(), errOut.String())
	}
}

func withNode(spec corev1.PodSpec, node string) corev1.PodSpec {
	s := *spec.DeepCopy()
	s.NodeName = node
	return s
}

func binDir(t *testing.T) string {
	t.Helper()
	d, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// selfSigned is a client certificate of a CA the cluster does not know.
func selfSigned(t *testing.T, user, group string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: user, Organization: []string{group}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// underShortSigner starts a consumer whose kube-controller-manager signs certificates for at
// most signing (--cluster-signing-duration) and a provider, and runs a virtual node of the
// provider with its kubelet endpoint (opts) on the consumer; it returns the consumer.
func underShortSigner(t *testing.T, signing string, opts kubeletserver.Options) *testenv.Cluster {
	t.Helper()
	env := testenv.New(t,
		testenv.ClusterOptions{Name: "consumer", ControllerManager: true, ControllerManagerArgs: []string{"--cluster-signing-duration=" + signing}},
		testenv.ClusterOptions{Name: "provider"})
	cons, prov := env.Cluster("consumer"), env.Cluster("provider")
	kc, err := prov.UserKubeconfig(consumerID)
	if err != nil {
		t.Fatal(err)
	}
	remoteCfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	vn := &offv1beta1.VirtualNode{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNs, Name: nodeName},
		Spec: offv1beta1.VirtualNodeSpec{ClusterID: providerID, ResourceQuota: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNs}}, vn} {
		if err := cons.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	startVirtualKubelet(t, cons, vn, remoteCfg, opts)
	return cons
}

// TestServingCertificateRenewed: with a signer issuing 3-minute certificates (5 minutes
// backdated), the kubelet endpoint serves a new certificate before the first one expires.
// About 3 minutes; skipped with -short.
func TestServingCertificateRenewed(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a certificate renewal (about 3 minutes)")
	}
	cons := underShortSigner(t, "3m", kubeletserver.Options{})
	roots, admin := clientTLS(t, cons)
	served := func(ctx context.Context) (*x509.Certificate, error) {
		node := &corev1.Node{}
		if err := cons.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return nil, err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)))
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
			&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
		if err != nil {
			return nil, err
		}
		defer func() { _ = conn.Close() }()
		return conn.ConnectionState().PeerCertificates[0], nil
	}
	var first *x509.Certificate
	testenv.Poll(t, "a first serving certificate", 60*time.Second, func(ctx context.Context) (bool, error) {
		c, err := served(ctx)
		first = c
		return err == nil, err
	})
	if life := time.Until(first.NotAfter); life > 4*time.Minute {
		t.Fatalf("first certificate valid for %v more: the signer did not shorten it", life)
	}
	var next *x509.Certificate
	testenv.Poll(t, "a renewed serving certificate", time.Until(first.NotAfter)+time.Minute, func(ctx context.Context) (bool, error) {
		c, err := served(ctx)
		next = c
		return err == nil && c.SerialNumber.Cmp(first.SerialNumber) != 0, err
	})
	if !time.Now().Before(first.NotAfter) {
		t.Errorf("renewed at %v, after the first certificate expired (%v)", time.Now(), first.NotAfter)
	}
	if !next.NotAfter.After(first.NotAfter) {
		t.Errorf("renewed certificate expires %v, not after the first (%v)", next.NotAfter, first.NotAfter)
	}
	t.Logf("first certificate %v-%v, renewed one served %v before it expired", first.NotBefore, first.NotAfter, time.Until(first.NotAfter).Round(time.Second))
}

// TestServingCertificateNoRenewalStorm: with a signer issuing 10-second certificates (5
// minutes backdated, so each is due for renewal as soon as it is issued), the virtual kubelet
// asks for its serving certificate at most once per MinRenewalInterval (here 4 s), each
// request at least that long after the previous one, and keeps serving a renewed certificate.
// (client-go's certificate manager, used before, asked again every second or so.)
func TestServingCertificateNoRenewalStorm(t *testing.T) {
	const minInterval = 4 * time.Second
	cons := underShortSigner(t, "10s", kubeletserver.Options{MinRenewalInterval: minInterval})
	ctx := t.Context()
	requests := func(ctx context.Context) ([]time.Time, error) {
		list := &certificatesv1.CertificateSigningRequestList{}
		if err := cons.Client.List(ctx, list); err != nil {
			return nil, err
		}
		var out []time.Time
		for _, c := range list.Items {
			if c.Spec.SignerName == certificatesv1.KubeletServingSignerName {
				out = append(out, c.CreationTimestamp.Time)
			}
		}
		slices.SortFunc(out, time.Time.Compare)
		return out, nil
	}
	testenv.Poll(t, "a first serving-certificate request", 30*time.Second, func(ctx context.Context) (bool, error) {
		ts, err := requests(ctx)
		return len(ts) > 0, err
	})
	// Long enough for two renewals after the first request (at 4 and 8 s), with a margin for a
	// loaded machine: what shows that renewals go on, one interval apart at least.
	const window = 13 * time.Second
	time.Sleep(window)
	ts, err := requests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d kubelet-serving CSRs in about %s under --cluster-signing-duration=10s", len(ts), window)
	if maxN := 2 + int(window/minInterval); len(ts) > maxN || len(ts) < 3 {
		t.Errorf("%d CSRs in about %s with a minimum interval of %s, want 3 to %d", len(ts), window, minInterval, maxN)
	}
	for i := 1; i < len(ts); i++ {
		if gap := ts[i].Sub(ts[i-1]); gap < minInterval-time.Second { // creation times have a resolution of a second
			t.Errorf("CSR %d made %s after the previous one, want at least %s", i, gap, minInterval)
		}
	}
}
