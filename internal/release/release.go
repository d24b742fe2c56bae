// Package release writes the files of a provider release the way the Terraform provider
// registry protocol expects them (the layout HashiCorp's provider scaffolding makes with
// goreleaser): one zip per platform holding the binary terraform-provider-liqo_v<version>, the
// registry manifest, a SHA256SUMS file of the zips and the manifest, and a detached binary
// OpenPGP signature of that file. cmd/liqo-release (`make release`) runs it.
package release

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
)

// Name is the provider's program name, the prefix of every release file.
const Name = "terraform-provider-liqo"

// versionPattern is what a release version looks like: semantic, without a leading v.
var versionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// Options describes a release to make.
type Options struct {
	// Version of the release, semantic without a leading v (1.2.3, 1.2.3-rc.1).
	Version string
	// Source is the folder of the provider's main package (the module root).
	Source string
	// Out is the folder the release files are written to (created if missing).
	Out string
	// Targets are the platforms to build for; empty means Targets.
	Targets []Target
	// Manifest is the registry manifest file (terraform-registry-manifest.json).
	Manifest string
	// Key signs the SHA256SUMS file; it must hold a usable private signing key.
	Key *openpgp.Entity
}

// Files names the files of a release.
type Files struct {
	// Zips are the platforms' archives, one per target, in the order of the targets.
	Zips []string
	// Manifest, Sums and Signature are the registry manifest copy, the checksums file and its
	// signature.
	Manifest, Sums, Signature string
}

// FileNames returns the names of the release files of version for targets.
func FileNames(version string, targets []Target) Files {
	prefix := Name + "_" + version
	f := Files{
		Manifest:  prefix + "_manifest.json",
		Sums:      prefix + "_SHA256SUMS",
		Signature: prefix + "_SHA256SUMS.sig",
	}
	for _, t := range targets {
		f.Zips = append(f.Zips, prefix+"_"+t.OS+"_"+t.Arch+".zip")
	}
	return f
}

// Make builds the provider for every target and writes the release files into o.Out, replacing
// any earlier files of the same version there. It returns their names.
func Make(ctx context.Context, o Options) (Files, error) {
	if err := o.check(); err != nil {
		return Files{}, err
	}
	targets := o.Targets
	if len(targets) == 0 {
		targets = Targets
	}
	files := FileNames(o.Version, targets)
	if err := os.MkdirAll(o.Out, 0o750); err != nil {
		return Files{}, fmt.Errorf("release folder: %w", err)
	}
	old, err := filepath.Glob(filepath.Join(o.Out, Name+"_"+o.Version+"_*"))
	if err != nil {
		return Files{}, fmt.Errorf("release folder: %w", err)
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return Files{}, fmt.Errorf("removing the earlier release file: %w", err)
		}
	}
	work, err := os.MkdirTemp("", "liqo-release-")
	if err != nil {
		return Files{}, fmt.Errorf("build folder: %w", err)
	}
	defer func() { _ = os.RemoveAll(work) }()
	for i, t := range targets {
		bin, err := Build(ctx, o.Source, o.Version, t, work)
		if err != nil {
			return Files{}, err
		}
		if err := WriteZip(filepath.Join(o.Out, files.Zips[i]), bin); err != nil {
			return Files{}, err
		}
	}
	manifest, err := os.ReadFile(o.Manifest)
	if err != nil {
		return Files{}, fmt.Errorf("registry manifest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(o.Out, files.Manifest), manifest, 0o644); err != nil {
		return Files{}, fmt.Errorf("registry manifest: %w", err)
	}
	sums, err := Sums(o.Out, append(append([]string{}, files.Zips...), files.Manifest))
	if err != nil {
		return Files{}, err
	}
	if err := os.WriteFile(filepath.Join(o.Out, files.Sums), sums, 0o644); err != nil {
		return Files{}, fmt.Errorf("checksums file: %w", err)
	}
	sig, err := Sign(o.Key, sums)
	if err != nil {
		return Files{}, err
	}
	if err := os.WriteFile(filepath.Join(o.Out, files.Signature), sig, 0o644); err != nil {
		return Files{}, fmt.Errorf("signature file: %w", err)
	}
	return files, nil
}

// check reports what is missing or wrong in o.
func (o Options) check() error {
	var errs []error
	if !versionPattern.MatchString(o.Version) {
		errs = append(errs, fmt.Errorf("version %q is not a semantic version without a leading v (e.g. 1.2.3): set VERSION=x.y.z", o.Version))
	}
	if o.Source == "" || o.Out == "" || o.Manifest == "" {
		errs = append(errs, errors.New("the source folder, the output folder and the registry manifest must be given"))
	}
	if o.Key == nil {
		errs = append(errs, errors.New("no signing key: give an armored OpenPGP private key"))
	}
	return errors.Join(errs...)
}

// ParseTargets reads a comma-separated list of os/arch platforms (linux/amd64,darwin/arm64).
func ParseTargets(s string) ([]Target, error) {
	var out []Target
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		goos, arch, ok := strings.Cut(item, "/")
		if !ok || goos == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("target %q is not os/arch (e.g. linux/amd64)", item)
		}
		out = append(out, Target{OS: goos, Arch: arch})
	}
	if len(out) == 0 {
		return nil, errors.New("no target given: list os/arch pairs, e.g. linux/amd64,darwin/arm64")
	}
	return out, nil
}
