package upstream

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// virtualNodeEnv is the environment variable upstream's virtual-kubelet Deployment names its
// VirtualNode with.
const virtualNodeEnv = "VIRTUALNODE_NAME"

// StartVirtualKubelet runs upstream's virtual kubelet of VirtualNode node (in namespace, the
// tenant namespace) as a process, as the Deployment upstream's controller manager makes for it
// would run it: it waits for that Deployment in cl and takes its container's arguments, with the
// pod's environment resolved (POD_IP 127.0.0.1, the virtual node's kubelet endpoint; POD_NAME
// the Deployment's name; POD_NAMESPACE namespace). The process authenticates as the
// Deployment's ServiceAccount (a client certificate for system:serviceaccount:<ns>:<name>, so the
// RBAC upstream binds to it applies, and upstream's controller manager approves its kubelet
// serving certificate's CSR, which it does for tenant namespaces' service accounts only), and
// serves its kubelet endpoint on a free port; metrics are off. extra is appended.
//
// The Deployment's own pod stays Pending or is only played (no node of cl runs containers), so
// the test runs its container here instead.
func StartVirtualKubelet(tb testing.TB, cl *testenv.Cluster, namespace, node string, extra ...string) *Process {
	tb.Helper()
	dep := waitVirtualKubeletDeployment(tb, cl, namespace, node)
	spec := dep.Spec.Template.Spec
	sa := spec.ServiceAccountName
	user := "system:serviceaccount:" + namespace + ":" + sa
	kubeconfig, err := cl.UserKubeconfig(user, "system:serviceaccounts", "system:serviceaccounts:"+namespace, "system:authenticated")
	if err != nil {
		tb.Fatalf("upstream virtual kubelet of %s: a kubeconfig for %s: %v", node, user, err)
	}
	path := filepath.Join(tb.TempDir(), "virtual-kubelet-"+node+".kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		tb.Fatal(err)
	}
	port, err := testenv.FreePort()
	if err != nil {
		tb.Fatalf("a kubelet port for upstream's virtual kubelet of %s: %v", node, err)
	}
	podEnv := map[string]string{"POD_IP": "127.0.0.1", "POD_NAME": dep.Name, "POD_NAMESPACE": namespace, virtualNodeEnv: node}
	args := resolveEnv(spec.Containers[0].Args, podEnv)
	args = append(args, "--home-kubeconfig="+path, "--listen-port="+strconv.Itoa(port), "--metrics-enabled=false")
	env := make([]string, 0, len(podEnv)+1)
	for k, v := range podEnv {
		env = append(env, k+"="+v)
	}
	// Its serving certificate goes to /tmp/certs (fixed in upstream's code): a folder of its own,
	// not another run's certificate signed by another cluster.
	p := start(tb, cl, VirtualKubelet, append(env, "KUBECONFIG="+path), []string{"/tmp/certs"}, append(args, extra...)...)
	p.waitUntil(tb, "registering node "+node, func(ctx context.Context) bool {
		return cl.Client.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{}) == nil
	})
	return p
}

// waitVirtualKubeletDeployment waits for the Deployment in namespace whose container names
// VirtualNode node in virtualNodeEnv.
func waitVirtualKubeletDeployment(tb testing.TB, cl *testenv.Cluster, namespace, node string) *appsv1.Deployment {
	tb.Helper()
	var found *appsv1.Deployment
	what := fmt.Sprintf("upstream's controller manager to make the virtual kubelet Deployment of VirtualNode %s/%s", namespace, node)
	testenv.Poll(tb, what, startTimeout, func(ctx context.Context) (bool, error) {
		var err error
		found, err = virtualKubeletDeployment(ctx, cl, namespace, node)
		return found != nil, err
	})
	return found
}

// virtualKubeletDeployment returns the Deployment in namespace whose container names VirtualNode
// node in virtualNodeEnv, or nil.
func virtualKubeletDeployment(ctx context.Context, cl *testenv.Cluster, namespace, node string) (*appsv1.Deployment, error) {
	deps := &appsv1.DeploymentList{}
	if err := cl.Client.List(ctx, deps, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the Deployments of %s in %s: %w", namespace, cl.Name, err)
	}
	for i := range deps.Items {
		for _, c := range deps.Items[i].Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == virtualNodeEnv && e.Value == node {
					return &deps.Items[i], nil
				}
			}
		}
	}
	return nil, nil
}

// resolveEnv replaces $(NAME) in args with env's values, as the kubelet expands a container's
// arguments.
func resolveEnv(args []string, env map[string]string) []string {
	pairs := make([]string, 0, 2*len(env))
	for k, v := range env {
		pairs = append(pairs, "$("+k+")", v)
	}
	r := strings.NewReplacer(pairs...)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}

// VirtualKubeletDeployed tells whether upstream's controller manager made the virtual kubelet
// Deployment of VirtualNode node in namespace of cl yet.
func VirtualKubeletDeployed(ctx context.Context, cl *testenv.Cluster, namespace, node string) bool {
	d, err := virtualKubeletDeployment(ctx, cl, namespace, node)
	return err == nil && d != nil
}
