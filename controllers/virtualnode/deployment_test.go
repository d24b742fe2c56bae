package virtualnode_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/controllers/clusteridentity"
	"github.com/peerkit/terraform-provider-liqo/controllers/kubeletcsr"
	"github.com/peerkit/terraform-provider-liqo/controllers/virtualnode"
	offv1beta1 "github.com/peerkit/terraform-provider-liqo/internal/api/offloading/v1beta1"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
	"github.com/peerkit/terraform-provider-liqo/vnode"
)

// TestDeploymentRunner: with the Deployment runner, a VirtualNode gets a Deployment of
// liqo-virtual-kubelet, a ServiceAccount and a ClusterRoleBinding to the virtual kubelet's
// ClusterRole, with the right spec; changing the VirtualNode changes them and drift is undone;
// the binary, run as a local process with the Deployment's arguments and its ServiceAccount's
// token, brings the Node Ready and gets its serving certificate (the RBAC is enough); deleting
// the VirtualNode removes the Deployment, the ServiceAccount, the binding and the Node.
func TestDeploymentRunner(t *testing.T) {
	env := peered.Env(t)
	bin := buildVirtualKubelet(t)
	cons, prov := env.Cluster("consumer"), env.Cluster("provider")
	ctx := t.Context()
	consKube := kubernetes.NewForConfigOrDie(cons.Config)

	const image = "example.com/liqo-virtual-kubelet:test"
	testenv.StartManager(t, cons, func(mgr ctrl.Manager) error {
		if err := (&virtualnode.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Deployments: &virtualnode.Deployments{Image: image, ConsumerID: "cl-consumer"}}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&kubeletcsr.Approver{Client: mgr.GetClient(), Kube: consKube,
			Requesters: func(vn *offv1beta1.VirtualNode) []string { return []string{virtualnode.ServiceAccountUser(vn)} }}).SetupWithManager(mgr)
	})

	const ns = "liqo-tenant-cl-provider"
	kc, err := prov.UserKubeconfig("cl-consumer")
	if err != nil {
		t.Fatal(err)
	}
	vn := &offv1beta1.VirtualNode{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cl-provider"},
		Spec: offv1beta1.VirtualNodeSpec{ClusterID: "cl-provider", KubeconfigSecretRef: &corev1.LocalObjectReference{Name: "kubeconfig-controlplane"},
			ResourceQuota: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("20")}}}}
	// An offloaded namespace with a ConfigMap and a pod on the node, so that the reflectors
	// exercise the virtual kubelet's rights too.
	const localNs, remoteNs = "demo", "demo-cl-consumer"
	nm := &offv1beta1.NamespaceMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cl-provider",
		Labels: map[string]string{consts.RemoteClusterIDLabel: "cl-provider"}},
		Spec: offv1beta1.NamespaceMapSpec{DesiredMapping: map[string]string{localNs: remoteNs}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: "web"},
		Spec: corev1.PodSpec{NodeName: vn.Name, Containers: []corev1.Container{{Name: "app", Image: "app"}},
			// Offloaded pods tolerate the node's taint (kube-controller-manager evicts the others).
			Tolerations: []corev1.Toleration{{Key: vnode.Taint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}}}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: localNs}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig-controlplane"}, Data: map[string][]byte{consts.KubeconfigSecretKey: kc}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig-renewed"}, Data: map[string][]byte{consts.KubeconfigSecretKey: kc}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: localNs, Name: "settings"}, Data: map[string]string{"k": "v"}},
		nm, vn,
	} {
		if err := cons.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// TestVirtualNodeFromAcceptedSlice makes a peering with cl-provider in the same tenant
	// namespace of the shared consumer: its Secrets and NamespaceMap go at the end.
	t.Cleanup(func() {
		for _, o := range []client.Object{nm,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig-controlplane"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig-renewed"}}} {
			if err := cons.Client.Delete(context.Background(), o); err != nil {
				t.Errorf("deleting %T %s/%s: %v", o, ns, o.GetName(), err)
			}
		}
	})
	nm.Status.CurrentMapping = map[string]offv1beta1.RemoteNamespaceStatus{localNs: {RemoteNamespace: remoteNs, Phase: offv1beta1.MappingAccepted}}
	if err := cons.Client.Status().Update(ctx, nm); err != nil {
		t.Fatal(err)
	}
	if _, err := clusteridentity.Ensure(ctx, prov.Client, clusteridentity.Config{ClusterID: "cl-provider"}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: remoteNs}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNs, Name: "liqo-remote-workload"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusteridentity.RemoteWorkloadClusterRole},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "cl-consumer"}}},
	} {
		if err := prov.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	// The Deployment, its ServiceAccount and binding, with the right spec.
	name := virtualnode.DeploymentName(vn)
	dep := &appsv1.Deployment{}
	testenv.Eventually(t, "the virtual kubelet's Deployment", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep) == nil
	})
	if err := cons.Client.Get(ctx, client.ObjectKeyFromObject(vn), vn); err != nil {
		t.Fatal(err)
	}
	ownedByVN := func(what string, o metav1.Object) {
		t.Helper()
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.UID != vn.UID || ref.Kind != "VirtualNode" {
			t.Errorf("%s controller %v, want the VirtualNode", what, ref)
		}
	}
	ownedByVN("Deployment", dep)
	spec := dep.Spec.Template.Spec
	if *dep.Spec.Replicas != 1 || dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("Deployment replicas %d strategy %s, want 1 Recreate", *dep.Spec.Replicas, dep.Spec.Strategy.Type)
	}
	if spec.ServiceAccountName != name || len(spec.Containers) != 1 || spec.Containers[0].Image != image {
		t.Fatalf("pod spec: ServiceAccount %q, containers %+v; want %s running %s", spec.ServiceAccountName, spec.Containers, name, image)
	}
	c := spec.Containers[0]
	for _, want := range []string{"--virtual-node=" + ns + "/cl-provider", "--consumer-cluster-id=cl-consumer", "--listen=0.0.0.0:10250", "--node-ip=$(POD_IP)"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("container args %v lack %s", c.Args, want)
		}
	}
	if len(c.Env) != 1 || c.Env[0].Name != "POD_IP" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("container env %+v, want POD_IP from status.podIP", c.Env)
	}
	if got := dep.Spec.Template.Annotations[consts.KubeconfigSecretAnnotation]; got != "kubeconfig-controlplane" {
		t.Errorf("template annotation %s = %q, want the identity Secret", consts.KubeconfigSecretAnnotation, got)
	}
	sa := &corev1.ServiceAccount{}
	if err := cons.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sa); err != nil {
		t.Fatal(err)
	}
	ownedByVN("ServiceAccount", sa)
	crb := &rbacv1.ClusterRoleBinding{}
	if err := cons.Client.Get(ctx, client.ObjectKey{Name: virtualnode.ClusterRoleBindingName(vn)}, crb); err != nil {
		t.Fatal(err)
	}
	if crb.RoleRef.Name != virtualnode.KubeletClusterRole || len(crb.Subjects) != 1 || crb.Subjects[0].Kind != rbacv1.ServiceAccountKind ||
		crb.Subjects[0].Namespace != ns || crb.Subjects[0].Name != name {
		t.Errorf("ClusterRoleBinding %+v %+v, want %s bound to ServiceAccount %s/%s", crb.RoleRef, crb.Subjects, virtualnode.KubeletClusterRole, ns, name)
	}
	role := &rbacv1.ClusterRole{}
	if err := cons.Client.Get(ctx, client.ObjectKey{Name: virtualnode.KubeletClusterRole}, role); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(role.Rules, virtualnode.KubeletClusterRoleRules) {
		t.Errorf("ClusterRole rules %+v, want %+v", role.Rules, virtualnode.KubeletClusterRoleRules)
	}
	testenv.Eventually(t, "the VirtualNode's status: Deployment not available yet", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKeyFromObject(vn), vn) == nil && len(vn.Status.Conditions) > 0 &&
			vn.Status.Conditions[0].Status == offv1beta1.CreatingConditionStatusType
	})

	// An update of the VirtualNode reaches the Deployment; drift is undone.
	before := vn.DeepCopy()
	vn.Spec.KubeconfigSecretRef.Name = "kubeconfig-renewed"
	if err := cons.Client.Patch(ctx, vn, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the Deployment following the VirtualNode's new Secret", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep) == nil &&
			dep.Spec.Template.Annotations[consts.KubeconfigSecretAnnotation] == "kubeconfig-renewed"
	})
	drift := dep.DeepCopy()
	drift.Spec.Replicas = ptr.To[int32](3)
	drift.Spec.Template.Spec.Containers[0].Image = "someone/else:latest"
	if err := cons.Client.Patch(ctx, drift, client.MergeFrom(dep)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the Deployment's drift undone", 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep) == nil &&
			*dep.Spec.Replicas == 1 && dep.Spec.Template.Spec.Containers[0].Image == image
	})

	// The binary, as the Deployment runs it, with the ServiceAccount's token.
	tok, err := consKube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kcPath := filepath.Join(t.TempDir(), "vk.kubeconfig")
	saKC := clientcmdapi.NewConfig()
	saKC.Clusters["c"] = &clientcmdapi.Cluster{Server: cons.Config.Host, CertificateAuthorityData: cons.Config.CAData}
	saKC.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	saKC.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	saKC.CurrentContext = "c"
	if err := clientcmd.WriteToFile(*saKC, kcPath); err != nil {
		t.Fatal(err)
	}
	probe := freeAddr(t)
	args := []string{}
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		args = append(args, strings.ReplaceAll(a, "$(POD_IP)", "127.0.0.1"))
	}
	args = append(args, "--kubeconfig="+kcPath, "--listen=127.0.0.1:0", "--metrics-bind-address=0", "--health-probe-bind-address="+probe, "--probe-interval=1s",
		"--zap-log-level=debug")
	out := &testenv.SyncBuffer{}
	cmd := exec.Command(bin, args...) // stopped by stop(): one SIGTERM
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			t.Errorf("liqo-virtual-kubelet after SIGTERM: %v\n%s", err, out.String())
		}
	}
	t.Cleanup(stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("liqo-virtual-kubelet output:\n%s", out.String())
		}
	})

	node := &corev1.Node{}
	testenv.Eventually(t, "the Node Ready, run by the binary", 60*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Name: vn.Name}, node) == nil && nodeReady(node) == corev1.ConditionTrue
	})
	if node.Status.Capacity.Cpu().String() != "4" || len(node.Status.Addresses) != 1 || node.Status.Addresses[0].Address != "127.0.0.1" {
		t.Errorf("node capacity %v addresses %v, want the grant and 127.0.0.1", node.Status.Capacity, node.Status.Addresses)
	}
	testenv.Eventually(t, "the binary's readiness probe", 30*time.Second, func(ctx context.Context) bool {
		return testenv.ProbeOK(ctx, probe, "/readyz")
	})
	// Its serving certificate: requested as the ServiceAccount, approved, issued, served.
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
	endpoint := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)))
	testenv.Eventually(t, "the kubelet endpoint serving a certificate of the cluster's signer", 60*time.Second, func(context.Context) bool {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", endpoint, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	})
	csrs := &certificatesv1.CertificateSigningRequestList{}
	if err := cons.Client.List(ctx, csrs); err != nil {
		t.Fatal(err)
	}
	issued := 0
	for _, csr := range csrs.Items {
		if csr.Spec.SignerName == certificatesv1.KubeletServingSignerName && csr.Spec.Username == virtualnode.ServiceAccountUser(vn) && len(csr.Status.Certificate) > 0 {
			issued++
		}
	}
	if issued != 1 {
		t.Errorf("%d issued kubelet-serving CSRs of the ServiceAccount, want 1", issued)
	}
	if strings.Contains(strings.ToLower(out.String()), "forbidden") || strings.Contains(out.String(), `"level":"error"`) {
		t.Errorf("the virtual kubelet was refused something with its ServiceAccount's rights:\n%s", out.String())
	}
	// The reflectors at work with the ServiceAccount's rights: a pod bound to the node (once it
	// exists: kube-controller-manager removes pods of missing nodes) and the ConfigMap reach the
	// provider; deleting the pod removes its remote copy, then the local pod.
	testenv.Eventually(t, "the default ServiceAccount of "+localNs, 30*time.Second, func(ctx context.Context) bool {
		return cons.Client.Get(ctx, client.ObjectKey{Namespace: localNs, Name: "default"}, &corev1.ServiceAccount{}) == nil
	})
	if err := cons.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the pod's ShadowPod and the ConfigMap on the provider", 60*time.Second, func(ctx context.Context) bool {
		return prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: "web"}, &offv1beta1.ShadowPod{}) == nil &&
			prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: "settings"}, &corev1.ConfigMap{}) == nil
	})
	if err := cons.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the pod gone on both sides", 60*time.Second, func(ctx context.Context) bool {
		return apierrors.IsNotFound(cons.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})) &&
			apierrors.IsNotFound(prov.Client.Get(ctx, client.ObjectKey{Namespace: remoteNs, Name: "web"}, &offv1beta1.ShadowPod{}))
	})
	// Stopping the binary leaves the Node (a new replica takes it over).
	stop()
	if err := cons.Client.Get(ctx, client.ObjectKey{Name: vn.Name}, node); err != nil {
		t.Errorf("node after the virtual kubelet stopped: %v, want it kept", err)
	}

	// Deleting the VirtualNode removes everything, the Node last.
	if err := cons.Client.Delete(ctx, vn); err != nil {
		t.Fatal(err)
	}
	for what, obj := range map[string]client.Object{
		"Deployment":         &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		"ServiceAccount":     &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		"ClusterRoleBinding": &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: virtualnode.ClusterRoleBindingName(vn)}},
		"Node":               &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: vn.Name}},
		"VirtualNode":        &offv1beta1.VirtualNode{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vn.Name}},
	} {
		testenv.Eventually(t, what+" gone with the VirtualNode", 60*time.Second, func(ctx context.Context) bool {
			return apierrors.IsNotFound(cons.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		})
	}
}

// buildVirtualKubelet builds cmd/liqo-virtual-kubelet into a temp folder.
func buildVirtualKubelet(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "liqo-virtual-kubelet")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/liqo-virtual-kubelet")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building liqo-virtual-kubelet: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string { return testenv.FreeAddr(t) }
