package images_test

import (
	"bytes"
	"debug/elf"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/peerkit/terraform-provider-liqo/internal/images"
)

var (
	linuxAMD64 = v1.Platform{OS: "linux", Architecture: "amd64"}
	linuxARM64 = v1.Platform{OS: "linux", Architecture: "arm64"}
)

// TestParsePlatforms: a comma-separated list of the supported platforms, sorted and without
// duplicates; anything else is an error naming it and what is supported.
func TestParsePlatforms(t *testing.T) {
	got, err := images.ParsePlatforms("linux/arm64, linux/amd64,linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].String() != "linux/amd64" || got[1].String() != "linux/arm64" {
		t.Errorf("parsed %v, want [linux/amd64 linux/arm64]", got)
	}
	for _, bad := range []string{"", "linux/386", "darwin/arm64", "amd64", "linux/amd64,"} {
		if _, err := images.ParsePlatforms(bad); err == nil || !strings.Contains(err.Error(), "linux/amd64, linux/arm64") {
			t.Errorf("ParsePlatforms(%q): error %v, want one listing the supported platforms", bad, err)
		}
	}
	if h := images.HostPlatform(); h.OS != "linux" || h.Architecture != runtime.GOARCH {
		t.Errorf("host platform %s, want linux/%s", h, runtime.GOARCH)
	}
	if d := images.PlatformDir(linuxARM64); d != "linux_arm64" {
		t.Errorf("PlatformDir(linux/arm64) = %q", d)
	}
}

// TestIndex: an image index of a component's linux/amd64 and linux/arm64 images (in either
// order) lists them sorted by platform, each descriptor naming the platform its image's config
// names; the arm64 image's binary is an ARM64 ELF, the amd64 one's an x86-64 ELF.
func TestIndex(t *testing.T) {
	_, amd, arm := twoPlatforms(t)
	idx, err := images.Index(arm, amd)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", mt, types.OCIImageIndex)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		p       v1.Platform
		machine elf.Machine
	}{{linuxAMD64, elf.EM_X86_64}, {linuxARM64, elf.EM_AARCH64}}
	if len(m.Manifests) != len(want) {
		t.Fatalf("%d manifests, want %d", len(m.Manifests), len(want))
	}
	for i, w := range want {
		d := m.Manifests[i]
		if d.Platform == nil || d.Platform.String() != w.p.String() || d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("manifest %d: platform %v, media type %s; want %s, %s", i, d.Platform, d.MediaType, w.p, types.OCIManifestSchema1)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkPlatform(t, img, w.p, w.machine)
	}

	if _, err := images.Index(amd, amd); err == nil || !strings.Contains(err.Error(), "two images for linux/amd64") {
		t.Errorf("two amd64 images: error %v", err)
	}
	if _, err := images.Index(); err == nil {
		t.Error("an empty index was built")
	}
}

// checkPlatform checks that img's config names p and that its binary, /liqo-test, is an ELF
// executable for machine.
func checkPlatform(t *testing.T, img v1.Image, p v1.Platform, machine elf.Machine) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != p.OS || cfg.Architecture != p.Architecture {
		t.Errorf("config names %s/%s, want %s", cfg.OS, cfg.Architecture, p)
	}
	f, err := elf.NewFile(bytes.NewReader(filesystem(t, img)["liqo-test"].data))
	if err != nil {
		t.Fatalf("%s: the binary is not ELF: %v", p, err)
	}
	if f.Machine != machine {
		t.Errorf("%s: the binary is for %s, want %s", p, f.Machine, machine)
	}
}
