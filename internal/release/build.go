package release

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Target is a platform the provider is built for.
type Target struct {
	// OS and Arch are Go's GOOS and GOARCH (the registry uses the same names).
	OS, Arch string
}

// String returns os/arch.
func (t Target) String() string { return t.OS + "/" + t.Arch }

// Targets are the platforms of a full release. The provider builds for each because the packages
// it links name the gateway's ends through internal/gateway/mode, not the gateway's Linux data plane.
var Targets = []Target{
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"freebsd", "amd64"},
	{"linux", "amd64"}, {"linux", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// zipTime is the modification time of every file in the zips, so that the same binary gives the
// same archive.
var zipTime = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// BinaryName is the name of the provider's binary for version on goos, as Terraform looks for
// it in an unpacked release.
func BinaryName(version, goos string) string {
	name := Name + "_v" + version
	if goos == "windows" {
		name += ".exe"
	}
	return name
}

// Build compiles the provider's main package in source for t, reproducibly (no cgo, no paths,
// no VCS stamp, no build ID, the version set in main.version), into a folder of its own under
// work, and returns the binary's path.
func Build(ctx context.Context, source, version string, t Target, work string) (string, error) {
	dir := filepath.Join(work, t.OS+"_"+t.Arch)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("build folder for %s: %w", t, err)
	}
	bin := filepath.Join(dir, BinaryName(version, t.OS))
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags=-s -w -buildid= -X main.version="+version, "-o", bin, ".")
	cmd.Dir = source
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.OS, "GOARCH="+t.Arch, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the provider for %s: %w\n%s", t, err, out)
	}
	return bin, nil
}

// WriteZip writes a zip at path holding the file bin, executable, under its base name, with a
// fixed modification time.
func WriteZip(path, bin string) (err error) {
	in, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("zip %s: %w", filepath.Base(path), err)
	}
	defer func() { _ = in.Close() }()
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("zip %s: %w", filepath.Base(path), err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("zip %s: %w", filepath.Base(path), cerr)
		}
	}()
	zw := zip.NewWriter(out)
	hdr := &zip.FileHeader{Name: filepath.Base(bin), Method: zip.Deflate, Modified: zipTime}
	hdr.SetMode(0o755)
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return fmt.Errorf("zip %s: %w", filepath.Base(path), err)
	}
	if _, err := io.Copy(w, in); err != nil {
		return fmt.Errorf("zip %s: %w", filepath.Base(path), err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("zip %s: %w", filepath.Base(path), err)
	}
	return nil
}

// Sums returns the SHA256SUMS file of the named files in dir: one line per file, sorted by
// name, the hexadecimal SHA-256, two spaces and the name (as sha256sum and goreleaser write it).
func Sums(dir string, names []string) ([]byte, error) {
	names = slices.Sorted(slices.Values(names))
	var b strings.Builder
	for _, name := range names {
		sum, err := FileSHA256(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, name)
	}
	return []byte(b.String()), nil
}

// FileSHA256 returns the hexadecimal SHA-256 of the file at path.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("checksum: %w", err)
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("checksum of %s: %w", filepath.Base(path), err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
