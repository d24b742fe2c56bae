// Package setup tests the dependency step of the README's commands (hack/deps.sh, run by
// `make deps` before `make demo`, `make sandbox` and `make test`) with PATHs made for the
// purpose: a machine without iptables, without apt-get, without terraform or with an old one,
// as root and as another user. A stubbed apt-get records what it was asked to install, so
// nothing is installed on or removed from this machine.
package setup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// machine is a PATH made of one folder: links to the real commands it should have, and stubs.
type machine struct {
	bin    string // the folder on PATH
	cni    string // the CNI plugins' folder (DEPS_CNI_DIR), empty unless "cni" is had
	record string // what the stubs were asked to do, one line per call
	root   string // the repository
	asUser bool   // run the script as nobody (setpriv), not as root
}

func newMachine(t *testing.T, have ...string) *machine {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Readable by nobody, for the runs as another user (the test's own temporary folder too).
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m := &machine{bin: filepath.Join(dir, "bin"), cni: filepath.Join(dir, "cni"), record: filepath.Join(dir, "record"), root: root}
	for _, d := range []string{m.bin, m.cni} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(m.record, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(m.record, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range have {
		if cmd == "cni" { // the CNI plugins: a file in their folder, not a command
			if err := os.WriteFile(filepath.Join(m.cni, "bridge"), []byte("#!/bin/bash\nexit 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		m.fake(t, cmd, "exit 0")
	}
	return m
}

// realNode are what the real-node test bed needs: containerd, runc and the CNI plugins.
var realNode = []string{"containerd", "runc", "cni"}

// with is have plus the real node's requirements.
func with(have ...string) []string { return append(have, realNode...) }

// fake puts a command on the machine's PATH that records its call and runs body (bash).
func (m *machine) fake(t *testing.T, name, body string) {
	t.Helper()
	script := "#!/bin/bash\necho \"" + name + " $*\" >> " + m.record + "\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(m.bin, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// aptGet is a stubbed apt-get: `install` puts each named package's command on PATH, unless
// installs is false.
func (m *machine) aptGet(t *testing.T, installs bool) {
	t.Helper()
	body := "exit 0"
	if installs {
		body = `[[ $1 == install ]] || exit 0
for p in "$@"; do
  case $p in
    iptables|iperf3|containerd|runc) cmd=` + m.bin + `/$p ;;
    iproute2) cmd=` + m.bin + `/ip ;;
    util-linux) cmd=` + m.bin + `/setpriv ;;
    containernetworking-plugins) cmd=` + m.cni + `/bridge ;;
    *) continue ;;
  esac
  printf '#!/bin/bash\nexit 0\n' > "$cmd"; /bin/chmod 755 "$cmd"
done`
	}
	m.fake(t, "apt-get", body)
}

// run runs hack/deps.sh on the machine and returns its output and exit code.
func (m *machine) run(t *testing.T, env ...string) (string, int) {
	t.Helper()
	args := []string{filepath.Join(m.root, "hack", "deps.sh")}
	name := "/bin/bash"
	if m.asUser {
		args = append([]string{"--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", "/bin/bash"}, args...)
		name = "/usr/bin/setpriv"
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append([]string{"PATH=" + m.bin, "DEPS_CNI_DIR=" + m.cni, "TERRAFORM_DIR=" + filepath.Join(filepath.Dir(m.bin), "terraform-cli")}, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running hack/deps.sh: %v", err)
	}
	return string(out), code
}

// calls are the stubs' recorded calls.
func (m *machine) calls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(m.record)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(data))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the dependency step installs packages only as root")
	}
}

func expectContains(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// As root on a Debian-like machine without iptables and iperf3, both are installed (one
// apt-get update, one install of exactly the missing packages) and the run succeeds.
func TestInstallsWhatIsMissingAsRoot(t *testing.T) {
	needRoot(t)
	m := newMachine(t, with("setpriv", "ip")...)
	m.aptGet(t, true)
	out, code := m.run(t, "DEPS_SKIP_TERRAFORM=1")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	calls := m.calls(t)
	want := []string{"apt-get update -qq", "apt-get install -y -qq --no-install-recommends iptables iperf3"}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("apt-get calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	expectContains(t, out, "iptables is not on PATH: the sandbox sends its stand-in node ports to the gateways with iptables rules",
		"installing iptables iperf3")

	// A second run finds everything and installs nothing.
	out, code = m.run(t, "DEPS_SKIP_TERRAFORM=1")
	if code != 0 || len(m.calls(t)) != 2 {
		t.Errorf("second run: exit %d, calls %q, want 0 and no new call:\n%s", code, m.calls(t), out)
	}
	expectContains(t, out, "system packages present")
}

// A package that installs but does not put its command on PATH fails the run, naming it.
func TestFailsWhenTheInstallDoesNotProvideTheCommand(t *testing.T) {
	needRoot(t)
	m := newMachine(t, with("setpriv", "ip", "iperf3")...)
	m.aptGet(t, false)
	out, code := m.run(t, "DEPS_SKIP_TERRAFORM=1")
	if code == 0 {
		t.Fatalf("exit 0, want a failure:\n%s", out)
	}
	expectContains(t, out, "iptables is installed but iptables is still not on PATH")
}

// The real-node test bed's requirements are root-only: as root, containerd, runc and the CNI
// plugins are installed when missing, the plugins found as a file in their folder (Debian puts
// them in /usr/lib/cni, not on PATH); a plugins package that leaves the file out fails the run;
// as another user the run prints the command and succeeds.
func TestRealNodeRequirements(t *testing.T) {
	needRoot(t)
	m := newMachine(t, "setpriv", "ip", "iptables", "iperf3")
	m.aptGet(t, true)
	out, code := m.run(t, "DEPS_SKIP_TERRAFORM=1")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	want := []string{"apt-get update -qq", "apt-get install -y -qq --no-install-recommends containerd runc containernetworking-plugins"}
	if calls := m.calls(t); strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("apt-get calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	expectContains(t, out, "containerd is not on PATH: the real-node test bed runs its pods' containers with containerd",
		filepath.Join(m.cni, "bridge")+" is missing: the real node's pods are networked by the bridge and host-local CNI plugins (Debian package containernetworking-plugins)")
	out, code = m.run(t, "DEPS_SKIP_TERRAFORM=1")
	if code != 0 || len(m.calls(t)) != 2 {
		t.Errorf("second run: exit %d, calls %q, want 0 and no new call:\n%s", code, m.calls(t), out)
	}
	expectContains(t, out, "system packages present")

	// A plugins package that does not provide the file.
	m = newMachine(t, "setpriv", "ip", "iptables", "iperf3", "containerd", "runc")
	m.aptGet(t, false)
	out, code = m.run(t, "DEPS_SKIP_TERRAFORM=1")
	if code == 0 {
		t.Errorf("plugins not installed: exit 0, want a failure:\n%s", out)
	}
	expectContains(t, out, "containernetworking-plugins is installed but "+filepath.Join(m.cni, "bridge")+" is still missing")

	// As another user: nothing installed, the command printed.
	m = newMachine(t, "setpriv", "ip", "iptables", "iperf3")
	m.aptGet(t, true)
	m.asUser = true
	out, code = m.run(t, "DEPS_SKIP_TERRAFORM=1")
	if code != 0 {
		t.Errorf("as another user: exit %d, want 0:\n%s", code, out)
	}
	if calls := m.calls(t); len(calls) != 0 {
		t.Errorf("apt-get called as another user: %q", calls)
	}
	expectContains(t, out, "As root: apt-get install -y containerd", "As root: apt-get install -y runc",
		filepath.Join(m.cni, "bridge")+" is missing; the real node's pods are networked by the bridge and host-local CNI plugins (only as root). As root: apt-get install -y containernetworking-plugins")
}

// As root without apt-get, the run names the packages to install and fails only when every run
// needs one of them.
func TestWithoutAptGet(t *testing.T) {
	needRoot(t)
	m := newMachine(t, with("setpriv", "ip")...)
	out, code := m.run(t, "DEPS_SKIP_TERRAFORM=1")
	if code != 0 {
		t.Errorf("only root's packages missing: exit %d, want 0:\n%s", code, out)
	}
	expectContains(t, out, "no apt-get here: install the packages that provide iptables iperf3")

	m = newMachine(t, with("ip", "iptables", "iperf3")...)
	out, code = m.run(t, "DEPS_SKIP_TERRAFORM=1")
	if code == 0 {
		t.Errorf("setpriv missing: exit 0, want a failure:\n%s", out)
	}
	expectContains(t, out, "setpriv is not on PATH", "util-linux")
}

// As another user nothing is installed: the run prints the command to run as root and why,
// succeeds when only root's packages are missing (the gateways do not run without root) and
// fails when a package every run needs is missing.
func TestAsAnotherUser(t *testing.T) {
	needRoot(t) // to become nobody
	m := newMachine(t, with("setpriv", "ip")...)
	m.aptGet(t, true)
	m.asUser = true
	out, code := m.run(t, "DEPS_SKIP_TERRAFORM=1")
	if code != 0 {
		t.Errorf("exit %d, want 0:\n%s", code, out)
	}
	if calls := m.calls(t); len(calls) != 0 {
		t.Errorf("apt-get called as another user: %q", calls)
	}
	expectContains(t, out, "iptables is not on PATH; the sandbox sends its stand-in node ports to the gateways with iptables rules (only as root). As root: apt-get install -y iptables",
		"As root: apt-get install -y iperf3")

	m = newMachine(t, with("ip", "iptables", "iperf3")...)
	m.aptGet(t, true)
	m.asUser = true
	out, code = m.run(t, "DEPS_SKIP_TERRAFORM=1")
	if code == 0 {
		t.Errorf("setpriv missing: exit 0, want a failure:\n%s", out)
	}
	expectContains(t, out, "run as root: apt-get install -y util-linux")
	if calls := m.calls(t); len(calls) != 0 {
		t.Errorf("apt-get called as another user: %q", calls)
	}
}

// Terraform: one on PATH that is recent enough is used; a missing or older one is built into
// TERRAFORM_DIR (the builder is stubbed here; tools/terraform/build.sh is the real one).
func TestTerraform(t *testing.T) {
	for _, tc := range []struct {
		name, version string // version: what `terraform version` prints first; "" for no terraform
		build         bool
	}{
		{"missing", "", true},
		{"older", "Terraform v1.5.7", true},
		{"older minor with a larger patch", "Terraform v1.13.12", true},
		{"the one these machines have", "Terraform v1.11.4", true},
		{"the minimum", "Terraform v1.14.0", false},
		{"newer", "Terraform v1.16.0", false},
		{"a newer major", "Terraform v2.0.0", false},
		{"a pre-release of the minimum's next", "Terraform v1.15.0-alpha20260101", false},
		{"unreadable", "something else", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, with("setpriv", "ip", "iptables", "iperf3")...)
			if tc.version != "" {
				m.fake(t, "terraform", "echo '"+tc.version+"'; echo 'on linux_amd64'")
			}
			builder := filepath.Join(filepath.Dir(m.bin), "build.sh")
			if err := os.WriteFile(builder, []byte("echo \"build $1\" >> "+m.record+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			out, code := m.run(t, "TERRAFORM_BUILD="+builder)
			if code != 0 {
				t.Fatalf("exit %d, want 0:\n%s", code, out)
			}
			built := false
			for _, c := range m.calls(t) {
				if c == "build "+filepath.Join(filepath.Dir(m.bin), "terraform-cli", "terraform") {
					built = true
				}
			}
			if built != tc.build {
				t.Errorf("built terraform: %t, want %t (calls %q):\n%s", built, tc.build, m.calls(t), out)
			}
		})
	}
}
