package sandbox

// More KWOK configuration for a cluster's nodes (-kwok-config <cluster>=<file>): KWOK's
// ClusterLogs, ClusterExec, ... objects, so that pods on the cluster's KWOK nodes have logs and
// run exec commands (KWOK nodes only; real nodes run real containers). None by default.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// KWOKConfigFlag is the name of the sandbox command's flag (and of the supervisor's) that gives
// a cluster's KWOK more configuration, as cluster=file; KWOKConfigArgs writes it back.
const KWOKConfigFlag = "kwok-config"

// ParseKWOKConfig reads one use of KWOKConfigFlag, cluster=file (e.g.
// provider=/tmp/kwok-logs.yaml), into into, the file made absolute (the supervisor runs
// elsewhere).
func ParseKWOKConfig(into map[string][]string, v string) error {
	cluster, file, ok := strings.Cut(v, "=")
	if !ok || cluster == "" || file == "" {
		return fmt.Errorf("-%s %q: want cluster=file, e.g. provider=/tmp/kwok-logs.yaml", KWOKConfigFlag, v)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return fmt.Errorf("-%s %s: %w", KWOKConfigFlag, v, err)
	}
	into[cluster] = append(into[cluster], abs)
	return nil
}

// KWOKConfigArgs are the flags that give the supervisor the clusters' further KWOK configuration.
func (s *Sandbox) KWOKConfigArgs() []string { return perClusterArgs(KWOKConfigFlag, s.KWOKConfigs) }

// ValidateKWOKConfigs checks the further KWOK configuration: each for a running cluster, a file
// that exists; only with KWOK nodes.
func (s *Sandbox) ValidateKWOKConfigs(nodes string) error {
	if len(s.KWOKConfigs) == 0 {
		return nil
	}
	if nodes == NodesReal {
		return fmt.Errorf("-%s works with KWOK nodes only (-nodes %s), not real ones", KWOKConfigFlag, NodesKWOK)
	}
	for cluster, files := range s.KWOKConfigs {
		if !slices.Contains(s.names(), cluster) {
			return fmt.Errorf("-%s %s=...: no such cluster in this sandbox (%s)", KWOKConfigFlag, cluster, strings.Join(s.names(), ", "))
		}
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil {
				return fmt.Errorf("-%s %s=%s: not a readable file: give a KWOK configuration file, e.g. a ClusterLogs object: %w", KWOKConfigFlag, cluster, f, err)
			}
			if st.IsDir() {
				return fmt.Errorf("-%s %s=%s: not a readable file but a folder: give a KWOK configuration file, e.g. a ClusterLogs object", KWOKConfigFlag, cluster, f)
			}
		}
	}
	return nil
}

// withKWOKConfigs adds each cluster's further KWOK configuration to its options.
func (s *Sandbox) withKWOKConfigs(opts []testenv.ClusterOptions) []testenv.ClusterOptions {
	for i := range opts {
		opts[i].KWOKConfigs = append(opts[i].KWOKConfigs, s.KWOKConfigs[opts[i].Name]...)
	}
	return opts
}
