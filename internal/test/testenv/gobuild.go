package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// builds are the folders BuildOnce made in this test process, by their packages.
var builds = struct {
	mu   sync.Mutex
	root string            // the folder of the folders, made on first use
	dirs map[string]string // by the packages, joined with spaces
}{dirs: map[string]string{}}

// BuildOnce returns a folder holding the binaries of the repository's main packages pkgs (paths
// relative to the repository's root: "." is the provider, "./cmd/liqo-sandbox" the sandbox),
// built by the first caller with the same pkgs in this test process: the tests of a package
// that each run the same binaries link them once (linking the provider, the sandbox, the
// controller manager and the gateway takes about 25 s of CPU). Callers must not write into the
// folder. The package's TestMain calls RemoveBuilds when its tests end.
func BuildOnce(tb testing.TB, pkgs ...string) string {
	tb.Helper()
	RequireLong(tb, "builds binaries")
	key := strings.Join(pkgs, " ")
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if dir, ok := builds.dirs[key]; ok {
		return dir
	}
	root, err := RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	if builds.root == "" {
		if builds.root, err = os.MkdirTemp("", "liqo-test-binaries-"); err != nil {
			tb.Fatalf("a folder for the test binaries: %v", err)
		}
	}
	dir, err := os.MkdirTemp(builds.root, "build-")
	if err != nil {
		tb.Fatalf("a folder for the test binaries: %v", err)
	}
	cmd := exec.Command("go", append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building %s: %v\n%s", key, err, out)
	}
	builds.dirs[key] = dir
	return dir
}

// RemoveBuilds removes the folders BuildOnce made; a package's TestMain calls it after its
// tests ran.
func RemoveBuilds() error {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.root == "" {
		return nil
	}
	if err := os.RemoveAll(builds.root); err != nil {
		return fmt.Errorf("removing the test binaries: %w", err)
	}
	builds.root, builds.dirs = "", map[string]string{}
	return nil
}
