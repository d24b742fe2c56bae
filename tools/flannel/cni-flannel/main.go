// Command cni-flannel is a CNI plugin of type "flannel" for the real-node test bed, reading the
// same network configuration as flannel's own CNI plugin (github.com/flannel-io/cni-plugin, which
// the module proxy does not serve) and doing what it does: it reads the subnet file flanneld
// writes (FLANNEL_NETWORK, FLANNEL_SUBNET, FLANNEL_MTU, FLANNEL_IPMASQ), fills in the delegate
// plugin's configuration (default: bridge, the node's gateway, flanneld's MTU, masquerade unless
// flanneld does it, addresses from the node's subnet by host-local with a route to the whole
// flannel network), saves it under dataDir by container ID and calls the delegate; DEL calls the
// delegate with the saved configuration and removes it.
//
// Its configuration (the conflist's plugin entry):
//
//	{"type": "flannel", "name": "...", "subnetFile": "/run/flannel/subnet.env",
//	 "dataDir": "/var/lib/cni/flannel", "delegate": {...}, "ipam": {...}}
//
// "ipam" is the base of the delegate's IPAM configuration (e.g. host-local's dataDir).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// Flannel's CNI plugin's defaults.
const (
	defaultSubnetFile = "/run/flannel/subnet.env"
	defaultDataDir    = "/var/lib/cni/flannel"
)

// netConf is the plugin's configuration.
type netConf struct {
	types.NetConf
	SubnetFile string         `json:"subnetFile"`
	DataDir    string         `json:"dataDir"`
	Delegate   map[string]any `json:"delegate"`
	// IPAM is the delegate's IPAM base (it shadows types.NetConf's to keep every field).
	IPAM map[string]any `json:"ipam,omitempty"`
	// RuntimeConfig is passed on to the delegate (e.g. portMappings).
	RuntimeConfig map[string]any `json:"runtimeConfig,omitempty"`
}

// subnetEnv is what flanneld writes into its subnet file.
type subnetEnv struct {
	network, subnet *net.IPNet
	mtu             int
	ipMasq          bool
}

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: cmdAdd, Del: cmdDel, Check: cmdCheck},
		version.All, "cni-flannel: flannel's CNI configuration, delegating to bridge and host-local")
}

// loadConf parses the configuration and fills in flannel's defaults.
func loadConf(data []byte) (*netConf, error) {
	n := &netConf{SubnetFile: defaultSubnetFile, DataDir: defaultDataDir}
	if err := json.Unmarshal(data, n); err != nil {
		return nil, fmt.Errorf("flannel CNI: parsing the network configuration: %w", err)
	}
	return n, nil
}

// loadSubnetEnv reads flanneld's subnet file: KEY=VALUE lines.
func loadSubnetEnv(path string) (*subnetEnv, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("flannel CNI: reading flanneld's subnet file (is flanneld running?): %w", err)
	}
	defer func() { _ = f.Close() }()
	env := &subnetEnv{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(s.Text()), "=")
		if !ok {
			continue
		}
		switch key {
		case "FLANNEL_NETWORK":
			_, env.network, err = net.ParseCIDR(value)
		case "FLANNEL_SUBNET":
			var ip net.IP
			ip, env.subnet, err = net.ParseCIDR(value)
			if err == nil {
				env.subnet.IP = ip // the node's gateway address on the bridge
			}
		case "FLANNEL_MTU":
			env.mtu, err = strconv.Atoi(value)
		case "FLANNEL_IPMASQ":
			env.ipMasq, err = strconv.ParseBool(value)
		}
		if err != nil {
			return nil, fmt.Errorf("flannel CNI: %s in %s: %w", key, path, err)
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("flannel CNI: reading %s: %w", path, err)
	}
	if env.network == nil || env.subnet == nil || env.mtu == 0 {
		return nil, fmt.Errorf("flannel CNI: %s lacks FLANNEL_NETWORK, FLANNEL_SUBNET or FLANNEL_MTU", path)
	}
	return env, nil
}

// delegateConf is the delegate plugin's configuration, as flannel's plugin makes it.
func delegateConf(n *netConf, env *subnetEnv) map[string]any {
	d := map[string]any{}
	for k, v := range n.Delegate {
		d[k] = v
	}
	setDefault(d, "name", n.Name)
	setDefault(d, "type", "bridge")
	setDefault(d, "ipMasq", !env.ipMasq) // masquerade here only when flanneld does not
	setDefault(d, "mtu", env.mtu)
	if d["type"] == "bridge" {
		setDefault(d, "isGateway", true)
	}
	if n.CNIVersion != "" {
		d["cniVersion"] = n.CNIVersion
	}
	if n.RuntimeConfig != nil {
		d["runtimeConfig"] = n.RuntimeConfig
	}
	ipam := map[string]any{}
	for k, v := range n.IPAM {
		ipam[k] = v
	}
	setDefault(ipam, "type", "host-local")
	subnet := &net.IPNet{IP: env.subnet.IP.Mask(env.subnet.Mask), Mask: env.subnet.Mask}
	ipam["ranges"] = [][]map[string]string{{{"subnet": subnet.String()}}}
	ipam["routes"] = []map[string]string{{"dst": env.network.String()}}
	d["ipam"] = ipam
	return d
}

// setDefault sets m[key] unless it is set.
func setDefault(m map[string]any, key string, value any) {
	if _, ok := m[key]; !ok {
		m[key] = value
	}
}

// savedPath is where the delegate's configuration of a container is kept between ADD and DEL.
func savedPath(n *netConf, containerID string) string {
	return filepath.Join(n.DataDir, containerID)
}

// cmdAdd writes the delegate's configuration and calls the delegate.
func cmdAdd(args *skel.CmdArgs) error {
	n, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	env, err := loadSubnetEnv(n.SubnetFile)
	if err != nil {
		return err
	}
	d := delegateConf(n, env)
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("flannel CNI: encoding the delegate's configuration: %w", err)
	}
	if err := os.MkdirAll(n.DataDir, 0o700); err != nil {
		return fmt.Errorf("flannel CNI: %w", err)
	}
	if err := os.WriteFile(savedPath(n, args.ContainerID), data, 0o600); err != nil {
		return fmt.Errorf("flannel CNI: saving the delegate's configuration: %w", err)
	}
	typ, _ := d["type"].(string)
	result, err := invoke.DelegateAdd(context.TODO(), typ, data, nil)
	if err != nil {
		return fmt.Errorf("flannel CNI: delegate %s: %w", typ, err)
	}
	if err := types.PrintResult(result, n.CNIVersion); err != nil {
		return fmt.Errorf("flannel CNI: printing the result: %w", err)
	}
	return nil
}

// cmdDel calls the delegate with the configuration saved at ADD and removes it; without one
// (ADD failed early, or DEL is repeated) there is nothing to do.
func cmdDel(args *skel.CmdArgs) error {
	n, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	path := savedPath(n, args.ContainerID)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("flannel CNI: %w", err)
	}
	var d map[string]any
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("flannel CNI: parsing %s: %w", path, err)
	}
	typ, _ := d["type"].(string)
	if err := invoke.DelegateDel(context.TODO(), typ, data, nil); err != nil {
		return fmt.Errorf("flannel CNI: delegate %s: %w", typ, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("flannel CNI: %w", err)
	}
	return nil
}

// cmdCheck calls the delegate's CHECK with the saved configuration and the previous result.
func cmdCheck(args *skel.CmdArgs) error {
	n, err := loadConf(args.StdinData)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(savedPath(n, args.ContainerID))
	if err != nil {
		return fmt.Errorf("flannel CNI: %w", err)
	}
	var d map[string]any
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("flannel CNI: %w", err)
	}
	if n.RawPrevResult != nil {
		d["prevResult"] = n.RawPrevResult
	}
	if data, err = json.Marshal(d); err != nil {
		return fmt.Errorf("flannel CNI: %w", err)
	}
	typ, _ := d["type"].(string)
	if err := invoke.DelegateCheck(context.TODO(), typ, data, nil); err != nil {
		return fmt.Errorf("flannel CNI: delegate %s: %w", typ, err)
	}
	return nil
}
