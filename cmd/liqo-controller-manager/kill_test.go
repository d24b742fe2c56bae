package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/identity"
	"github.com/peerkit/terraform-provider-liqo/internal/api"
	authv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/authentication/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/peering"
	"github.com/peerkit/terraform-provider-liqo/internal/signing"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// managerArgsEnv carries, JSON-encoded, the command line of a controller manager that the test
// binary runs as a child process (TestManagerProcess).
const managerArgsEnv = "LIQO_CONTROLLER_MANAGER_TEST_ARGS"

// TestManagerProcess is not a test of its own: the kill test runs the test binary again with
// managerArgsEnv set, and this runs the controller manager's entry point in that child process
// until it is killed.
func TestManagerProcess(t *testing.T) {
	raw := os.Getenv(managerArgsEnv)
	if raw == "" {
		t.Skip("helper process of TestKilledMidHandshakeConverges")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatalf("%s: %v", managerArgsEnv, err)
	}
	if err := run(context.Background(), args, os.Stderr); err != nil {
		t.Fatal(err)
	}
	t.Fatal("the controller manager returned; it should run until it is killed")
}

// managerProcess is the controller manager running in a child process, which the test kills
// with SIGKILL: no context is cancelled, no deferred function or finalizer runs, a request
// half sent stays half sent.
type managerProcess struct {
	name  string
	args  []string
	cmd   *exec.Cmd
	log   *testenv.SyncBuffer
	done  chan struct{} // closed when the process has exited and is reaped
	runs  int
	alive bool
}

// startManagerProcess starts the controller manager against cl in a child process and waits
// until it is ready and runs the workers of the given controllers.
func startManagerProcess(t *testing.T, name string, cl *testenv.Cluster, controllers []string, args ...string) *managerProcess {
	t.Helper()
	p := &managerProcess{name: name, args: append([]string{"--kubeconfig", cl.KubeconfigPath, "--metrics-bind-address", "0"}, args...)}
	t.Cleanup(func() {
		if p.alive {
			p.kill(t)
		}
	})
	p.start(t, controllers...)
	return p
}

// start runs a new manager process and waits until its caches are synced (/readyz) and the
// given controllers run their workers.
func (p *managerProcess) start(t *testing.T, controllers ...string) {
	t.Helper()
	probe := freeAddr(t)
	args, err := json.Marshal(append(append([]string{}, p.args...), "--health-probe-bind-address", probe))
	if err != nil {
		t.Fatal(err)
	}
	p.runs++
	p.log = &testenv.SyncBuffer{}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestManagerProcess$", "-test.count=1") //nolint:noctx // the test binary itself; killed explicitly
	p.cmd.Env = append(os.Environ(), managerArgsEnv+"="+string(args))
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	// If this process dies first, the child goes with it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting the %s manager: %v", p.name, err)
	}
	p.alive = true
	p.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(p.cmd, p.done)
	started := time.Now()
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("the process exited: %v", p.cmd.ProcessState)
		default:
		}
		return testenv.ProbeOK(ctx, probe, "/readyz") && p.workersStarted(controllers...), nil
	})
	if err != nil {
		t.Fatalf("%s manager (run %d) not ready: %v\n%s", p.name, p.runs, err, p.log.String())
	}
	t.Logf("%s manager: run %d (pid %d) ready in %v", p.name, p.runs, p.cmd.Process.Pid, time.Since(started).Round(time.Millisecond))
}

// workersStarted tells whether each of the named controllers logged that its workers started.
func (p *managerProcess) workersStarted(controllers ...string) bool {
	lines := strings.Split(p.log.String(), "\n")
	for _, c := range controllers {
		found := false
		for _, l := range lines {
			if strings.Contains(l, `"Starting workers"`) && strings.Contains(l, `"controller":"`+c+`"`) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// freeze stops the manager process (SIGSTOP) without ending it: whatever reaches it from now
// on, it does not act on; kill ends it.
func (p *managerProcess) freeze(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("stopping the %s manager: %v", p.name, err)
	}
}

// kill sends SIGKILL to the manager process and checks that the signal, not a graceful exit,
// ended it.
func (p *managerProcess) kill(t *testing.T) {
	t.Helper()
	if !p.alive {
		t.Fatalf("%s manager is not running", p.name)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing the %s manager: %v", p.name, err)
	}
	<-p.done
	p.alive = false
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("%s manager (run %d) ended with %v, not by SIGKILL:\n%s", p.name, p.runs, p.cmd.ProcessState, p.log.String())
	}
}

// TestKilledMidHandshakeConverges: the controller managers of both clusters run as separate
// processes; the provider's is killed with SIGKILL right after its tenant namespace is created
// (frozen first, so that it dies before the nonce exists) and again right after the Tenant is
// created, as soon as its CSR appears (before the certificate reaches the Tenant's status); the
// consumer's is killed, frozen likewise, right after the signed-nonce request is created,
// before it answers. Each is started again,
// and the handshake converges: the nonce the consumer signed is the one the provider keeps,
// the Tenant's status has the certificate, the consumer has its Identity's kubeconfig, and the
// provider holds exactly one approved CSR and one RoleBinding for the consumer: the killed
// runs left nothing twice. The issued kubeconfig works for what the consumer may do.
func TestKilledMidHandshakeConverges(t *testing.T) {
	env := testenv.New(t,
		testenv.ClusterOptions{Name: "consumer"},
		testenv.ClusterOptions{Name: "provider", ControllerManager: true}, // the CSR signer
	)
	consCl, provCl := env.Cluster("consumer"), env.Cluster("provider")
	ctx := t.Context()
	cons := startManagerProcess(t, "consumer", consCl, []string{"signednonce", "identity"},
		"--cluster-id", "cl-consumer", "--pod-cidr", "10.200.0.0/16")
	prov := startManagerProcess(t, "provider", provCl, []string{"nonce", "tenant"},
		"--cluster-id", "cl-provider", "--pod-cidr", "10.100.0.0/16")

	// Tenant namespaces. The provider's is created while its manager is frozen, which is then
	// killed: the namespace and the nonce request reached its watch, the nonce was never made.
	const consNS, provNS = "liqo-tenant-cl-provider", "liqo-tenant-cl-consumer"
	if err := consCl.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consNS,
		Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-provider", consts.TenantNamespaceLabel: "true"}}}); err != nil {
		t.Fatal(err)
	}
	prov.freeze(t)
	if err := provCl.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: provNS,
		Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-consumer", consts.TenantNamespaceLabel: "true"}}}); err != nil {
		t.Fatal(err)
	}
	if err := peering.AskNonce(ctx, provCl.Client, provNS, "cl-consumer"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the watch event is on its way to the frozen process
	prov.kill(t)
	nonceKey := client.ObjectKey{Namespace: provNS, Name: consts.NonceSecret}
	if n := (&corev1.Secret{}); provCl.Client.Get(ctx, nonceKey, n) != nil || len(n.Data[consts.NonceKey]) > 0 {
		t.Fatalf("the nonce request is gone or was answered by a frozen manager: %v", n.Data)
	}
	prov.start(t, "nonce", "tenant")
	n := &corev1.Secret{}
	testenv.Poll(t, "the provider's nonce after the restart", 90*time.Second, func(ctx context.Context) (bool, error) {
		return provCl.Client.Get(ctx, nonceKey, n) == nil && len(n.Data[consts.NonceKey]) > 0, nil
	})
	signedNonce := n.Data[consts.NonceKey]

	// The signed-nonce request, created while the consumer's manager is frozen: the request
	// reaches its watch, but the manager is killed before it can answer.
	signed := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: consts.SignedNonceSecret},
		Data: map[string][]byte{consts.NonceKey: signedNonce}}
	cons.freeze(t)
	if err := consCl.Client.Create(ctx, signed); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the watch event is on its way to the frozen process
	cons.kill(t)
	if err := consCl.Client.Get(ctx, client.ObjectKeyFromObject(signed), signed); err != nil {
		t.Fatal(err)
	}
	if len(signed.Data[consts.SignedNonceKey]) > 0 {
		t.Fatal("the signed-nonce request was answered by a frozen manager")
	}
	cons.start(t, "signednonce", "identity")
	testenv.Poll(t, "the consumer's signature after the restart", 90*time.Second, func(ctx context.Context) (bool, error) {
		err := consCl.Client.Get(ctx, client.ObjectKeyFromObject(signed), signed)
		return err == nil && len(signed.Data[consts.SignedNonceKey]) > 0, nil
	})
	pub, err := signing.ParseTenantKey(signed.Data[consts.PublicKeySecretKey])
	if err != nil {
		t.Fatalf("the consumer's public key: %v", err)
	}
	if !signing.Verify(pub, signedNonce, signed.Data[consts.SignedNonceKey]) {
		t.Fatal("the consumer's signature does not verify against its public key and the provider's nonce")
	}

	// The Tenant; the provider's manager is killed as soon as the tenant's CSR appears.
	tn := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: provNS, Name: "cl-consumer"}, Spec: authv1beta1.TenantSpec{
		ClusterID: "cl-consumer", AuthzPolicy: "KeysExchange", TenantCondition: authv1beta1.TenantConditionActive,
		PublicKey: signed.Data[consts.PublicKeySecretKey], Signature: signed.Data[consts.SignedNonceKey], CSR: signed.Data[consts.CSRKey]}}
	if err := provCl.Client.Create(ctx, tn); err != nil {
		t.Fatal(err)
	}
	csrs := &certificatesv1.CertificateSigningRequestList{}
	_ = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 3*time.Second, true, func(ctx context.Context) (bool, error) {
		return provCl.Client.List(ctx, csrs) == nil && len(clientCSRs(csrs)) > 0, nil
	})
	prov.kill(t)
	if err := provCl.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn); err != nil {
		t.Fatal(err)
	}
	if err := provCl.Client.List(ctx, csrs); err != nil {
		t.Fatal(err)
	}
	t.Logf("provider manager killed after the Tenant was created: finalizers %v, CSRs %v, certificate in status: %v",
		tn.Finalizers, describeCSRs(clientCSRs(csrs)), tn.Status.AuthParams != nil && len(tn.Status.AuthParams.SignedCRT) > 0)
	prov.start(t, "nonce", "tenant")
	testenv.Poll(t, "the tenant's certificate after the restart", 90*time.Second, func(ctx context.Context) (bool, error) {
		err := provCl.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn)
		return err == nil && tn.Status.AuthParams != nil && len(tn.Status.AuthParams.SignedCRT) > 0, nil
	})

	// The consumer's Identity and its kubeconfig.
	id := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Namespace: consNS, Name: "controlplane"}, Spec: authv1beta1.IdentitySpec{
		ClusterID: "cl-provider", Type: authv1beta1.ControlPlaneIdentityType, Namespace: provNS, AuthParams: *tn.Status.AuthParams}}
	if err := consCl.Client.Create(ctx, id); err != nil {
		t.Fatal(err)
	}
	kc := &corev1.Secret{}
	testenv.Poll(t, "the identity's kubeconfig", 90*time.Second, func(ctx context.Context) (bool, error) {
		return consCl.Client.Get(ctx, client.ObjectKey{Namespace: consNS, Name: identity.SecretName(id.Name)}, kc) == nil, nil
	})

	// The provider kept the nonce the consumer signed.
	if err := provCl.Client.Get(ctx, nonceKey, n); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(n.Data[consts.NonceKey], signedNonce) {
		t.Error("the provider's nonce changed after the consumer signed it")
	}
	// Exactly one CSR, approved and issued, whose certificate is the Tenant's.
	if err := provCl.Client.List(ctx, csrs); err != nil {
		t.Fatal(err)
	}
	if got := clientCSRs(csrs); len(got) != 1 {
		t.Errorf("%d CSRs for signer %s, want exactly 1: %v", len(got), certificatesv1.KubeAPIServerClientSignerName, describeCSRs(got))
	} else {
		c := got[0]
		approvals := 0
		for _, cond := range c.Status.Conditions {
			if cond.Type == certificatesv1.CertificateApproved && cond.Status == corev1.ConditionTrue {
				approvals++
			}
		}
		if approvals != 1 || !bytes.Equal(c.Status.Certificate, tn.Status.AuthParams.SignedCRT) {
			t.Errorf("CSR %s: %d Approved conditions (want 1), its certificate is the Tenant's: %v",
				c.Name, approvals, bytes.Equal(c.Status.Certificate, tn.Status.AuthParams.SignedCRT))
		}
	}
	// Exactly one binding of the consumer's user, in its tenant namespace, and one finalizer.
	rbs := &rbacv1.RoleBindingList{}
	if err := provCl.Client.List(ctx, rbs); err != nil {
		t.Fatal(err)
	}
	var bound []string
	for _, rb := range rbs.Items {
		for _, s := range rb.Subjects {
			if s.Kind == rbacv1.UserKind && s.Name == "cl-consumer" {
				bound = append(bound, rb.Namespace+"/"+rb.Name)
			}
		}
	}
	if len(bound) != 1 || bound[0] != provNS+"/liqo-binding-liqo-remote-controlplane" {
		t.Errorf("RoleBindings of user cl-consumer: %v, want exactly %s/liqo-binding-liqo-remote-controlplane", bound, provNS)
	}
	crbs := &rbacv1.ClusterRoleBindingList{}
	if err := provCl.Client.List(ctx, crbs); err != nil {
		t.Fatal(err)
	}
	for _, crb := range crbs.Items {
		for _, s := range crb.Subjects {
			if s.Kind == rbacv1.UserKind && s.Name == "cl-consumer" {
				t.Errorf("ClusterRoleBinding %s binds the consumer", crb.Name)
			}
		}
	}
	if err := provCl.Client.Get(ctx, client.ObjectKeyFromObject(tn), tn); err != nil {
		t.Fatal(err)
	}
	if len(tn.Finalizers) != 1 {
		t.Errorf("Tenant finalizers %v, want exactly one", tn.Finalizers)
	}

	// The issued kubeconfig authenticates on the provider, with the consumer's rights.
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc.Data[consts.KubeconfigSecretKey])
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := api.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	remote, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.List(ctx, &authv1beta1.ResourceSliceList{}, client.InNamespace(provNS)); err != nil {
		t.Errorf("listing resource slices in %s with the issued identity: %v", provNS, err)
	}
}

// clientCSRs are the CSRs for the kube-apiserver-client signer: consumers' identities.
func clientCSRs(l *certificatesv1.CertificateSigningRequestList) []certificatesv1.CertificateSigningRequest {
	var out []certificatesv1.CertificateSigningRequest
	for _, c := range l.Items {
		if c.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName {
			out = append(out, c)
		}
	}
	return out
}

func describeCSRs(csrs []certificatesv1.CertificateSigningRequest) []string {
	out := []string{}
	for _, c := range csrs {
		var conds []string
		for _, cond := range c.Status.Conditions {
			conds = append(conds, string(cond.Type))
		}
		out = append(out, fmt.Sprintf("%s(conditions %v, certificate %v)", c.Name, conds, len(c.Status.Certificate) > 0))
	}
	return out
}
