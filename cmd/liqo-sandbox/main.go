// Command liqo-sandbox runs local Kubernetes clusters, consumer and provider (and up to 14 more,
// -clusters), on the test bed's binaries: `up` starts them in the background and prints how to reach them, `down` stops
// them and removes their files, `serve` is the background supervisor itself, and
// `request <cluster> <address>` pings and sends an HTTP GET to a pod address from the named
// cluster's pod network (with the sandbox's networking, as root). With -nodes real (or auto,
// which `make sandbox` and `make demo` use, as root on Linux), each cluster has one real node
// (a kubelet with containerd; -real-nodes N gives each cluster N, joined by flannel) and our
// chart installed by helm instead of KWOK nodes and the components as processes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/peerkit/terraform-provider-liqo/internal/cli"
	"github.com/peerkit/terraform-provider-liqo/internal/test/sandbox"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

func main() {
	cli.Exit("liqo-sandbox", run(context.Background(), os.Args[1:]))
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("liqo-sandbox", flag.ContinueOnError)
	root, _ := testenv.RepoRoot()
	state := fs.String("state", filepath.Join(root, ".sandbox"), "folder for kubeconfigs, Terraform CLI config and supervisor files")
	providerBin := fs.String("provider-bin", filepath.Join(root, "bin"), "folder holding terraform-provider-liqo (for dev_overrides)")
	count := fs.Int("clusters", 2, fmt.Sprintf("how many clusters to run: 2 (consumer, provider) to %d (and provider-2, provider-3, ...: the fleet example takes 3, the fleet benchmark up to %d); KWOK nodes only beyond 2", sandbox.MaxClusters, sandbox.MaxClusters))
	managerBin := fs.String("manager-bin", filepath.Join(root, "bin", "liqo-controller-manager"), "the liqo-controller-manager binary run for each cluster")
	gatewayBin := fs.String("gateway-bin", filepath.Join(root, "bin", "liqo-gateway"), "the liqo-gateway binary run for each gateway (as root; otherwise networking is disabled)")
	nodes := fs.String("nodes", sandbox.NodesKWOK, "the clusters' nodes: kwok (the components as processes), real (a kubelet with containerd per cluster, the chart installed by helm; root on Linux) or auto (real where possible)")
	realNodes := fs.Int(sandbox.RealNodesFlag, 1, fmt.Sprintf("real nodes per cluster with real nodes: 1 to %d; more than one are joined by flannel (make flannel, $%s)", sandbox.MaxRealNodes, testenv.FlannelBinDirEnv))
	imagesDir := fs.String("images", filepath.Join(root, "bin", "images"), "the component image archives (make images), for real nodes")
	helm := fs.String("helm", filepath.Join(root, "bin", "helm-v4.3.1"), "the helm binary (make helm4; Helm 3.22 works too), for real nodes")
	chartDir := fs.String("chart", filepath.Join(root, "deploy", "liqo"), "the chart, for real nodes")
	extraPodCIDRs := map[string][]string{}
	fs.Func(sandbox.ExtraPodCIDRFlag, "a further pod CIDR of a cluster, as cluster=cidr (repeatable; e.g. provider=10.70.0.0/16): its "+
		"controller manager records it besides the cluster's own, and with networking its stand-in pod also answers at the "+
		"CIDR's .10 address (KWOK nodes only)", func(v string) error { return sandbox.ParseExtraPodCIDR(extraPodCIDRs, v) })
	kwokConfigs := map[string][]string{}
	fs.Func(sandbox.KWOKConfigFlag, "a further KWOK configuration file of a cluster, as cluster=file (repeatable; e.g. provider=logs.yaml): "+
		"KWOK ClusterLogs, ClusterExec, ... objects, so that pods on its KWOK nodes have logs and run exec (KWOK nodes only)",
		func(v string) error { return sandbox.ParseKWOKConfig(kwokConfigs, v) })
	var isolate []string
	fs.Func(sandbox.IsolateFlag, "a cluster whose controller manager runs in the cluster's stand-in pod network namespace (repeatable; e.g. consumer): "+
		"it reaches its own API server but no other cluster's except through the tunnel and the peer's API-server proxy, to try in-band "+
		"peering (KWOK nodes and networking, as root, only)", func(v string) error { return sandbox.ParseIsolate(&isolate, v) })
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: liqo-sandbox [flags] up|down|serve|request <from-cluster> <pod-address>\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parsing arguments: %w", err)
	}
	if *count < 2 || *count > sandbox.MaxClusters {
		return fmt.Errorf("-clusters is %d: the sandbox runs 2 to %d clusters", *count, sandbox.MaxClusters)
	}
	abs, err := filepath.Abs(*state)
	if err != nil {
		return fmt.Errorf("resolving -state: %w", err)
	}
	sb := &sandbox.Sandbox{StateDir: abs, ProviderBinDir: *providerBin, ManagerBin: *managerBin, GatewayBin: *gatewayBin, Clusters: *count,
		Nodes: *nodes, RealNodes: *realNodes, Images: *imagesDir, Helm: *helm, Chart: *chartDir, ExtraPodCIDRs: extraPodCIDRs, KWOKConfigs: kwokConfigs, Isolate: isolate, Out: os.Stdout}
	switch fs.Arg(0) {
	case "up":
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding own executable: %w", err)
		}
		if err := sb.ValidateRealNodes(*nodes); err != nil {
			return err
		}
		mode, line, err := sb.ResolveNodes(*nodes)
		if err != nil {
			return err
		}
		fmt.Println(line)
		if err := sb.ValidateExtraPodCIDRs(mode); err != nil {
			return err
		}
		if err := sb.ValidateIsolate(mode); err != nil {
			return err
		}
		if err := sb.ValidateKWOKConfigs(mode); err != nil {
			return err
		}
		args := append([]string{"-state", abs, "-provider-bin", *providerBin, "-manager-bin", *managerBin, "-gateway-bin", *gatewayBin,
			"-clusters", fmt.Sprint(*count), "-nodes", mode, "-" + sandbox.RealNodesFlag, fmt.Sprint(*realNodes), "-images", *imagesDir, "-helm", *helm, "-chart", *chartDir}, sb.ExtraPodCIDRArgs()...)
		args = append(append(args, sb.IsolateArgs()...), sb.KWOKConfigArgs()...)
		return sb.Up(ctx, self, append(args, "serve")...)
	case "down":
		return sb.Down(ctx)
	case "serve":
		return sb.Serve(ctx)
	case "request":
		if fs.NArg() != 3 {
			fs.Usage()
			return fmt.Errorf("request takes a cluster and a pod address, e.g. request consumer 10.201.1.1")
		}
		out, err := sandbox.PodRequest(ctx, fs.Arg(1), fs.Arg(2))
		fmt.Print(out)
		return err
	default:
		fs.Usage()
		return fmt.Errorf("unknown command %q", fs.Arg(0))
	}
}
