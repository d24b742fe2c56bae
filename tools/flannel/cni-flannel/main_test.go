package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestDelegateConf: flanneld's subnet file becomes the bridge delegate's configuration as
// flannel's own CNI plugin makes it (gateway, MTU, masquerade unless flanneld does it, the
// node's subnet by host-local on the configured IPAM base, a route to the flannel network),
// keeping what the delegate sets itself.
func TestDelegateConf(t *testing.T) {
	dir := t.TempDir()
	subnetFile := filepath.Join(dir, "subnet.env")
	env := "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"
	if err := os.WriteFile(subnetFile, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := `{"cniVersion": "0.4.0", "name": "net", "type": "flannel", "subnetFile": "` + subnetFile + `",
	  "ipam": {"dataDir": "/x/ipam"}, "delegate": {"hairpinMode": true, "isDefaultGateway": true}}`
	n, err := loadConf([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	se, err := loadSubnetEnv(n.SubnetFile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(delegateConf(n, se))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cniVersion": "0.4.0", "name": "net", "type": "bridge", "hairpinMode": true, "isDefaultGateway": true,
	  "isGateway": true, "ipMasq": false, "mtu": 1450,
	  "ipam": {"type": "host-local", "dataDir": "/x/ipam", "ranges": [[{"subnet": "10.244.1.0/24"}]], "routes": [{"dst": "10.244.0.0/16"}]}}`
	var g, w map[string]any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("delegate configuration\n got %s\nwant %s", got, want)
	}
	if n.DataDir != defaultDataDir {
		t.Errorf("dataDir %q, want flannel's default %q", n.DataDir, defaultDataDir)
	}
}

// TestLoadSubnetEnvIncomplete: a subnet file without the subnet is refused by name.
func TestLoadSubnetEnvIncomplete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subnet.env")
	if err := os.WriteFile(path, []byte("FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_MTU=1450\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadSubnetEnv(path); err == nil {
		t.Fatal("no error for a subnet file without FLANNEL_SUBNET")
	}
}
