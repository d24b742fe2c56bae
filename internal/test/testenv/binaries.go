package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// BinDirEnv names the environment variable that overrides where the test-bed binaries are.
const BinDirEnv = "LIQO_TESTBED_BIN"

// modulePath is this repository's Go module, used to find its root.
const modulePath = "module github.com/peerkit/terraform-provider-liqo\n"

// requiredBinaries are the files the test bed needs in its binary folder.
var requiredBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok"}

// ErrBinariesMissing is returned when the test-bed binaries have not been built.
var ErrBinariesMissing = errors.New("test-bed binaries missing: run `make tools` (builds them from source, about 6 min the first time)")

// RepoRoot returns the root folder of this repository, found by walking up from the working
// directory to the go.mod of this module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getting working directory: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte(modulePath)) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %q above the working directory", modulePath)
		}
		dir = parent
	}
}

// BinDir returns the folder of the test-bed binaries: $LIQO_TESTBED_BIN, or bin/testbed in the
// repository. It fails with ErrBinariesMissing when one of them is not there.
func BinDir() (string, error) {
	dir := os.Getenv(BinDirEnv)
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "testbed")
	}
	for _, name := range requiredBinaries {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("%s not found in %s: %w", name, dir, ErrBinariesMissing)
		}
	}
	return dir, nil
}
