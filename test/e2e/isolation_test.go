package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
)

// restConfig reads the named sandbox cluster's kubeconfig.
func (r *sandboxRun) restConfig(t *testing.T, cluster string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", r.state+"/"+cluster+".kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// hostPort is a rest.Config's API server as host:port.
func hostPort(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// readyz asks the API server of cfg for /readyz, dialling with dial (and through proxy, if any).
func readyz(ctx context.Context, cfg *rest.Config, dial func(ctx context.Context, network, address string) (net.Conn, error), proxy string) (string, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Dial = dial
	cfg.Timeout = 10 * time.Second
	if proxy != "" {
		cfg.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: proxy})
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("client: %w", err)
	}
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return string(body), err
}

// netnsInode is the inode of a network namespace file (/proc/<pid>/ns/net, /var/run/netns/<name>).
func netnsInode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// managerPID is the pid of the named cluster's controller manager, from the annotation of the
// Deployment the sandbox records.
func (r *sandboxRun) managerPID(t *testing.T, cluster string) int {
	t.Helper()
	dep := &appsv1.Deployment{}
	if err := r.clients[cluster].Get(t.Context(), client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.ControllerManagerDeployment}, dep); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`process (\d+)`).FindStringSubmatch(dep.Annotations["liqo-sandbox/process"])
	if m == nil {
		t.Fatalf("the controller manager's Deployment on %s does not name its process: %v", cluster, dep.Annotations)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// TestIsolatedManager (root only): a sandbox with -isolate consumer runs the consumer's
// controller manager in the consumer's pod network namespace. There the consumer's API server
// answers at its usual address (the supervisor's forward) and the provider's is refused; the
// manager became ready (its probe forwarded out) and the API server calls its webhooks (forwarded
// in). Every cluster has its API-server proxy: the Service liqo/liqo-proxy, served at its cluster
// IP, port 8118, in the cluster's gateway host, where a CONNECT reaches the cluster's own API
// server (TLS end to end, client-go with a proxy URL) and no other.
func TestIsolatedManager(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("isolating a controller manager needs the sandbox's networking (root)")
	}
	r := startSandbox(t, 2, "-"+sandbox.IsolateFlag, "consumer")
	if !r.networking {
		t.Fatal("the sandbox runs without networking as root")
	}
	ctx := t.Context()
	consumer, provider := r.restConfig(t, "consumer"), r.restConfig(t, "provider")
	podNs := netns.Named(sandbox.PodNetns("consumer"))
	fromPod, err := netns.Dialer(podNs)
	if err != nil {
		t.Fatal(err)
	}

	// The manager's process is in the pod namespace; the provider's is not.
	if got, want := netnsInode(t, fmt.Sprintf("/proc/%d/ns/net", r.managerPID(t, "consumer"))), netnsInode(t, podNs); got != want {
		t.Errorf("the consumer's controller manager is not in %s", podNs)
	}
	if netnsInode(t, fmt.Sprintf("/proc/%d/ns/net", r.managerPID(t, "provider"))) == netnsInode(t, podNs) {
		t.Errorf("the provider's controller manager is in %s too", podNs)
	}

	// From the pod namespace: the own API server answers at its address, the provider's is refused.
	if body, err := readyz(ctx, consumer, fromPod, ""); err != nil || body != "ok" {
		t.Errorf("the consumer's /readyz from its pod namespace: %q, %v", body, err)
	}
	if conn, err := fromPod(ctx, "tcp", hostPort(t, provider)); err == nil {
		_ = conn.Close()
		t.Errorf("the provider's API server (%s) is reachable from the consumer's pod namespace", hostPort(t, provider))
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dialling the provider's API server from the consumer's pod namespace: %v, want connection refused", err)
	}

	// The API server reaches the isolated manager's webhook: a pod in a namespace the pod
	// placement webhook (failurePolicy Fail) covers is admitted (dry run).
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "isolation-webhook", Labels: map[string]string{consts.SchedulingEnabledLabel: "true"}}}
	if err := r.clients["consumer"].Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	if err := r.clients["consumer"].Create(ctx, pod, client.DryRunAll); err != nil {
		t.Errorf("creating a pod through the isolated manager's webhook: %v", err)
	}

	// The API-server proxies.
	for _, tc := range []struct{ cluster, other string }{{"provider", "consumer"}, {"consumer", "provider"}} {
		svc := &corev1.Service{}
		if err := r.clients[tc.cluster].Get(ctx, client.ObjectKey{Namespace: consts.LiqoNamespace, Name: consts.APIServerProxyService}, svc); err != nil {
			t.Fatalf("the API-server proxy Service of %s: %v", tc.cluster, err)
		}
		if svc.Labels[consts.AppNameLabel] != consts.APIServerProxyApp || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != consts.APIServerProxyPort {
			t.Errorf("the API-server proxy Service of %s: labels %v, ports %+v", tc.cluster, svc.Labels, svc.Spec.Ports)
		}
		proxy := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(consts.APIServerProxyPort))
		fromHost, err := netns.Dialer(netns.Named(sandbox.HostNetns(tc.cluster)))
		if err != nil {
			t.Fatal(err)
		}
		own, other := r.restConfig(t, tc.cluster), r.restConfig(t, tc.other)
		if body, err := readyz(ctx, own, fromHost, proxy); err != nil || body != "ok" {
			t.Errorf("/readyz of %s through its proxy %s in %s: %q, %v", tc.cluster, proxy, sandbox.HostNetns(tc.cluster), body, err)
		}
		if _, err := readyz(ctx, other, fromHost, proxy); err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("/readyz of %s through the proxy of %s: %v, want the proxy's refusal (403 Forbidden)", tc.other, tc.cluster, err)
		}
	}
}
