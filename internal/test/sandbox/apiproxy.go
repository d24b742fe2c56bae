package sandbox

// Each cluster's API-server proxy, when networking runs: the in-band control plane (upstream
// Liqo v1.2's liqo-proxy). No kubelet runs the proxy's pod, so the supervisor plays it: the
// Service liqo-proxy in the cluster's Liqo namespace gets a cluster IP, which the supervisor puts
// on the loopback of the cluster's gateway host (lqsb-<cluster>), where it serves an HTTP
// CONNECT proxy on port 8118 that reaches only the cluster's own API server (dialled from the
// supervisor's network namespace, where the API servers listen). The controller manager records
// the Service's cluster IP in the IP api-server-proxy; the gateways translate its address in the
// external CIDR to the cluster IP, so a peer reaches the API server through the tunnel.

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/peerkit/terraform-provider-liqo/internal/apiproxy"
	"github.com/peerkit/terraform-provider-liqo/internal/consts"
	"github.com/peerkit/terraform-provider-liqo/internal/netns"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// sandboxServesAnnotation marks the objects whose workload the supervisor plays.
const sandboxServesAnnotation = "liqo-sandbox/process"

// apiServerHostPort is the host:port of the cluster's API server (its rest.Config's Host).
func apiServerHostPort(c *testenv.Cluster) (string, error) {
	u, err := url.Parse(c.Config.Host)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("the API server address %q of %s is not a URL with a host", c.Config.Host, c.Name)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "443"), nil
	}
	return u.Host, nil
}

// proxyService is the cluster's liqo-proxy Service as the chart would install it, but served by
// the supervisor.
func proxyService() *corev1.Service {
	labels := map[string]string{consts.AppNameLabel: consts.APIServerProxyApp, "app.kubernetes.io/part-of": "liqo"}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: consts.LiqoNamespace, Name: consts.APIServerProxyService, Labels: labels,
			Annotations: map[string]string{sandboxServesAnnotation: fmt.Sprintf("the sandbox's supervisor serves the API-server proxy "+
				"at this Service's cluster IP, port %d, in network namespace %s<cluster>; no pod backs it", consts.APIServerProxyPort, NetPrefix)}},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: labels,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: consts.APIServerProxyPort,
				TargetPort: intstr.FromInt32(consts.APIServerProxyPort)}},
		},
	}
}

// ensureProxyService creates the cluster's Liqo namespace (if the manager has not yet) and its
// liqo-proxy Service, and returns the Service's cluster IP.
func ensureProxyService(ctx context.Context, c *testenv.Cluster) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: consts.LiqoNamespace}}
	if err := c.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating namespace %s in %s: %w", consts.LiqoNamespace, c.Name, err)
	}
	svc := proxyService()
	if err := c.Client.Create(ctx, svc); err != nil {
		return "", fmt.Errorf("creating Service %s/%s in %s: %w", svc.Namespace, svc.Name, c.Name, err)
	}
	if net.ParseIP(svc.Spec.ClusterIP).To4() == nil {
		return "", fmt.Errorf("the Service %s/%s in %s got no IPv4 cluster IP (%q)", svc.Namespace, svc.Name, c.Name, svc.Spec.ClusterIP)
	}
	return svc.Spec.ClusterIP, nil
}

// startProxies serves, for each cluster of env, its API-server proxy at its liqo-proxy
// Service's cluster IP in its gateway host (see the top of this file). stop ends them.
func (n *network) startProxies(ctx context.Context, env *testenv.Env) error {
	pctx, cancel := context.WithCancel(ctx)
	n.stopProxies = cancel
	for _, c := range env.Clusters {
		target, err := apiServerHostPort(c)
		if err != nil {
			return err
		}
		ip, err := ensureProxyService(ctx, c)
		if err != nil {
			return err
		}
		if err := ipCmd("-n", HostNetns(c.Name), "addr", "add", ip+"/32", "dev", "lo"); err != nil {
			return fmt.Errorf("the API-server proxy of %s: %w", c.Name, err)
		}
		addr := net.JoinHostPort(ip, strconv.Itoa(consts.APIServerProxyPort))
		ln, err := netns.Listen(netns.Named(HostNetns(c.Name)), "tcp4", addr)
		if err != nil {
			return fmt.Errorf("the API-server proxy of %s: %w", c.Name, err)
		}
		// The API servers listen in the supervisor's network namespace: a plain dial.
		p, err := apiproxy.New(apiproxy.Options{Allowed: []string{target}})
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("the API-server proxy of %s: %w", c.Name, err)
		}
		n.proxies.Add(1)
		go func() {
			defer n.proxies.Done()
			if err := apiproxy.Serve(pctx, ln, p); err != nil {
				fmt.Fprintf(n.out, "the API-server proxy of %s: %v\n", c.Name, err)
			}
		}()
		fmt.Fprintf(n.out, "API-server proxy of %s: Service %s/%s, serving %s in %s, reaching only %s\n",
			c.Name, consts.LiqoNamespace, consts.APIServerProxyService, addr, HostNetns(c.Name), target)
	}
	return nil
}

// stopProxiesAndWait ends the API-server proxies and their tunnels (Serve reports its own
// errors as they happen).
func (n *network) stopProxiesAndWait() {
	if n.stopProxies == nil {
		return
	}
	n.stopProxies()
	n.proxies.Wait()
}
