package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/peerkit/terraform-provider-liqo/internal/images"
)

// testImages are the real nodes' local images: the programs under internal/test/testenv/realnode
// and their references.
var testImages = []struct{ pkg, name, ref string }{
	{"pause", "pause", PauseImage},
	{"testhttp", "test-http", TestHTTPImage},
}

// buildTestImages builds the real nodes' local images into dir (static linux/amd64 binaries
// with the go command, on an empty base with internal/images) and returns their archives.
func buildTestImages(ctx context.Context, dir string) ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir := filepath.Join(dir, "bin")
	if err := os.MkdirAll(binDir, 0o750); err != nil {
		return nil, fmt.Errorf("test images: %w", err)
	}
	var archives []string
	for _, ti := range testImages {
		bin := filepath.Join(binDir, ti.name)
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./internal/test/testenv/realnode/"+ti.pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("test images: building %s: %w: %s", ti.pkg, err, out)
		}
		img, err := images.Build(ctx, images.Component{Name: ti.name, NonRoot: ti.name != "pause"}, bin, images.Options{})
		if err != nil {
			return nil, fmt.Errorf("test images: %w", err)
		}
		archive := filepath.Join(dir, ti.name+".tar")
		if err := images.WriteArchive(ctx, archive, ti.ref, img); err != nil {
			return nil, fmt.Errorf("test images: %w", err)
		}
		archives = append(archives, archive)
	}
	return archives, nil
}
