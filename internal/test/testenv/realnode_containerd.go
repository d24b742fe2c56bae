package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// containerdConfig is a private containerd's configuration (version 2, containerd 1.6): its
// own root, state, sockets and runc state, the CRI plugin with a local pause image, the bridge
// and host-local CNI plugins from the system with a private configuration folder, and
// restrict_oom_score_adj (this machine refuses to lower oom_score_adj, which runc needs
// otherwise). %[1]s is the node's folder, %[2]s the sandbox image, %[3]s the CNI plugins' folder.
const containerdConfig = `version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "%[1]s/containerd/c.sock"

[ttrpc]
  address = "%[1]s/containerd/c.sock.ttrpc"

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = "%[1]s/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[2]s"
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "%[1]s/containerd/runc"

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "%[3]s"
  conf_dir = "%[1]s/cni/net.d"
  max_conf_num = 1
`

// cniConfig is the node's pod network: a bridge with the pods' gateway, addresses from the
// node's pod CIDR (host-local, its state in the node's folder), a default route via the bridge.
// %[1]s is the network's name, %[2]s the pod CIDR, %[3]s the node's folder.
const cniConfig = `{
  "cniVersion": "0.4.0",
  "name": "%[1]s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "%[2]s"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "%[3]s/cni/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`

// cniBinDir is where Debian's containernetworking-plugins puts the CNI plugins.
const cniBinDir = "/usr/lib/cni"

// socket is the node's containerd socket.
func (n *RealNode) socket() string { return filepath.Join(n.Dir, "containerd", "c.sock") }

// startContainerd writes containerd's and the CNI's configuration and runs containerd in the
// node's network namespace (the CNI plugins it calls make the pods' bridge there), then waits
// until it answers.
func (n *RealNode) startContainerd(ctx context.Context) error {
	for _, d := range []string{"containerd", "cni/net.d", "cni/ipam"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o700); err != nil {
			return fmt.Errorf("real node %s: %w", n.Name, err)
		}
	}
	pluginDir, err := n.writeCNIConfig()
	if err != nil {
		return err
	}
	cfg := filepath.Join(n.Dir, "containerd", "config.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, containerdConfig, n.Dir, PauseImage, pluginDir), 0o600); err != nil {
		return fmt.Errorf("real node %s: writing containerd's config: %w", n.Name, err)
	}
	if err := n.startInNetns("containerd", "containerd", "--config", cfg); err != nil {
		return err
	}
	return n.waitFor(ctx, "containerd to answer", 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := n.ctr(ctx, "version")
		return err == nil, nil
	})
}

// cniNetwork is the name of the node's CNI network: libcni caches results as
// /var/lib/cni/results/<network>-<container>-<interface>, which Stop removes.
func (n *RealNode) cniNetwork() string { return n.net.hostLink }

// ctr runs containerd's ctr against the node's containerd, namespace k8s.io (the CRI's).
func (n *RealNode) ctr(ctx context.Context, args ...string) (string, error) {
	out, err := run(ctx, "ctr", append([]string{"--address", n.socket(), "--namespace", "k8s.io"}, args...)...)
	if err != nil {
		return out, fmt.Errorf("real node %s: %w", n.Name, err)
	}
	return out, nil
}

// ImportImages imports image archives (such as images.WriteArchive writes) into the node's
// containerd, where pods find them without a registry (imagePullPolicy IfNotPresent or Never).
func (n *RealNode) ImportImages(ctx context.Context, archives ...string) error {
	for _, a := range archives {
		if _, err := n.ctr(ctx, "images", "import", a); err != nil {
			return fmt.Errorf("importing %s: %w", a, err)
		}
	}
	return nil
}

// Images lists the references of the images in the node's containerd.
func (n *RealNode) Images(ctx context.Context) ([]string, error) {
	out, err := n.ctr(ctx, "images", "list", "--quiet")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}
