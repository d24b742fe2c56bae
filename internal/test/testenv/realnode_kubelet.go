package testenv

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
)

// kubeletConfig is the node's KubeletConfiguration: cgroupfs under a cgroup root of its own
// (two kubelets on one machine do not share kubepods), cgroup v1 and swap accepted, containerd
// at the node's socket, the serving certificate the API server verifies, clients authenticated
// by the client CA, and folders of its own. %[1]s is the node's folder, %[2]s the node IP,
// %[3]s the cgroup root, %[4]s the client CA, %[5]s and %[6]s the serving certificate and key.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[2]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
cgroupDriver: cgroupfs
cgroupRoot: %[3]s
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%[1]s/containerd/c.sock
podLogsDir: %[1]s/pod-logs
staticPodPath: ""
tlsCertFile: %[5]s
tlsPrivateKeyFile: %[6]s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: %[4]s
authorization:
  mode: AlwaysAllow
rotateCertificates: false
serverTLSBootstrap: false
resolvConf: /etc/resolv.conf
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%%
  imagefs.available: 1%%
  nodefs.inodesFree: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
fileCheckFrequency: 10s
oomScoreAdj: 0
localStorageCapacityIsolation: true
`

// kubeProxyConfig is the node's KubeProxyConfiguration: iptables mode with the pod CIDR as
// the cluster CIDR; it leaves the machine-wide conntrack settings and its OOM score alone.
// %[1]s is the kubeconfig, %[2]s the node name, %[3]s the pod CIDR, %[4]s the node IP.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %[1]s
hostnameOverride: %[2]s
mode: iptables
clusterCIDR: %[3]s
bindAddress: %[4]s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  syncPeriod: 10s
  minSyncPeriod: 0s
detectLocalMode: ClusterCIDR
`

// kubeProxyUser is kube-proxy's user: the bootstrap policy binds system:node-proxier to it.
const kubeProxyUser = "system:kube-proxy"

// writeNodeCredentials issues the node's certificates with the cluster's client CA (which the
// API server trusts for clients and verifies kubelets with, ClusterOptions.KubeletAPI) and
// writes the kubeconfigs of kubelet (system:node:<name>, group system:nodes), kube-proxy and,
// with flannel, flanneld.
func (n *RealNode) writeNodeCredentials(authn *diskCertAuthn, admin *rest.Config) error {
	prefix := "realnode-" + n.Name
	if _, _, err := authn.issue(prefix+"-serving.crt", prefix+"-serving.key", pki.Template{
		Subject: pkix.Name{CommonName: "system:node:" + n.Name, Organization: []string{"system:nodes"}},
		Usage:   pki.Serving,
		Hosts:   []string{n.IP, n.Name},
	}); err != nil {
		return fmt.Errorf("real node %s: %w", n.Name, err)
	}
	users := []struct{ file, user, group string }{
		{"kubelet", "system:node:" + n.Name, "system:nodes"},
		{"kube-proxy", kubeProxyUser, ""},
	}
	if n.flannelBin != "" {
		users = append(users, struct{ file, user, group string }{"flannel", flannelUser, ""})
	}
	for _, u := range users {
		subject := pkix.Name{CommonName: u.user}
		if u.group != "" {
			subject.Organization = []string{u.group}
		}
		certPath, keyPath, err := authn.issue(prefix+"-"+u.file+".crt", prefix+"-"+u.file+".key", pki.Template{
			Subject: subject, Usage: pki.Client,
		})
		if err != nil {
			return fmt.Errorf("real node %s: %w", n.Name, err)
		}
		cfg := &rest.Config{Host: admin.Host, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}}
		if cfg.CertData, err = os.ReadFile(certPath); err != nil {
			return fmt.Errorf("real node %s: %w", n.Name, err)
		}
		if cfg.KeyData, err = os.ReadFile(keyPath); err != nil {
			return fmt.Errorf("real node %s: %w", n.Name, err)
		}
		if _, err := writeKubeconfig(filepath.Join(n.Dir, u.file+".kubeconfig"), n.Name, cfg); err != nil {
			return fmt.Errorf("real node %s: %w", n.Name, err)
		}
	}
	return nil
}

// startKubelet runs kubelet in the node's network namespace, sharing the host's mount
// namespace with containerd (volumes it mounts are what containers see).
func (n *RealNode) startKubelet(certDir string, labels map[string]string) error {
	prefix := filepath.Join(certDir, "realnode-"+n.Name)
	cfg := filepath.Join(n.Dir, "kubelet.yaml")
	data := fmt.Sprintf(kubeletConfig, n.Dir, n.IP, n.cgroupRoot(), filepath.Join(certDir, clientCACertFile), prefix+"-serving.crt", prefix+"-serving.key")
	if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
		return fmt.Errorf("real node %s: writing kubelet's config: %w", n.Name, err)
	}
	args := []string{
		"--config=" + cfg,
		"--kubeconfig=" + filepath.Join(n.Dir, "kubelet.kubeconfig"),
		"--root-dir=" + filepath.Join(n.Dir, "k"),
		"--cert-dir=" + filepath.Join(n.Dir, "k", "pki"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.IP,
		"--v=2",
	}
	if len(labels) > 0 {
		kv := make([]string, 0, len(labels))
		for k, v := range labels {
			kv = append(kv, k+"="+v)
		}
		sort.Strings(kv)
		args = append(args, "--node-labels="+strings.Join(kv, ","))
	}
	return n.startInNetns("kubelet", filepath.Join(n.binDir, "kubelet"), args...)
}

// startKubeProxy runs kube-proxy (iptables mode) in the node's network namespace: it makes
// the cluster's Services, the API server's `kubernetes` one included, reachable from pods.
func (n *RealNode) startKubeProxy(_ context.Context) error {
	cfg := filepath.Join(n.Dir, "kube-proxy.yaml")
	data := fmt.Sprintf(kubeProxyConfig, filepath.Join(n.Dir, "kube-proxy.kubeconfig"), n.Name, n.clusterCIDR, n.IP)
	if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
		return fmt.Errorf("real node %s: writing kube-proxy's config: %w", n.Name, err)
	}
	return n.startInNetns("kube-proxy", filepath.Join(n.binDir, "kube-proxy"), "--config="+cfg, "--v=2")
}
