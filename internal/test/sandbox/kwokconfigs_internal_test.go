package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestKWOKConfigs: the flag's cluster=file values, made absolute and written back for the
// supervisor in a stable order; each cluster's files added to its KWOK's and no other's (none
// by default); bad values refused, naming the flag and the fix.
func TestKWOKConfigs(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs.yaml")
	if err := os.WriteFile(logs, []byte("kind: ClusterLogs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	configs := map[string][]string{}
	for _, v := range []string{"provider=logs.yaml", "consumer=" + logs} {
		if err := ParseKWOKConfig(configs, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := ParseKWOKConfig(configs, "logs.yaml"); err == nil || !strings.Contains(err.Error(), "want cluster=file") {
		t.Errorf("a value without cluster: %v", err)
	}
	s := &Sandbox{KWOKConfigs: configs}
	if got, want := s.KWOKConfigArgs(), []string{"-kwok-config", "consumer=" + logs, "-kwok-config", "provider=" + logs}; !slices.Equal(got, want) {
		t.Errorf("KWOKConfigArgs = %q, want %q", got, want)
	}
	if err := s.ValidateKWOKConfigs(NodesKWOK); err != nil {
		t.Errorf("valid KWOK configurations refused: %v", err)
	}
	opts := s.withKWOKConfigs(clusters(2))
	if !slices.Equal(opts[1].KWOKConfigs, []string{logs}) || !slices.Equal(opts[0].KWOKConfigs, []string{logs}) {
		t.Errorf("KWOK configurations %q and %q, want %s each", opts[0].KWOKConfigs, opts[1].KWOKConfigs, logs)
	}
	if got := (&Sandbox{}).withKWOKConfigs(clusters(2)); len(got[0].KWOKConfigs)+len(got[1].KWOKConfigs) != 0 {
		t.Errorf("KWOK configurations by default: %q, %q; want none", got[0].KWOKConfigs, got[1].KWOKConfigs)
	}
	for _, tc := range []struct {
		configs map[string][]string
		nodes   string
		want    string
	}{
		{map[string][]string{"provider-9": {logs}}, NodesKWOK, "no such cluster"},
		{map[string][]string{"provider": {filepath.Join(dir, "missing.yaml")}}, NodesKWOK, "not a readable file"},
		{map[string][]string{"provider": {dir}}, NodesKWOK, "not a readable file"},
		{map[string][]string{"provider": {logs}}, NodesReal, "KWOK nodes only"},
	} {
		err := (&Sandbox{KWOKConfigs: tc.configs}).ValidateKWOKConfigs(tc.nodes)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "-"+KWOKConfigFlag) {
			t.Errorf("ValidateKWOKConfigs(%v, %s) = %v, want an error about -%s: %q", tc.configs, tc.nodes, err, KWOKConfigFlag, tc.want)
		}
	}
}
