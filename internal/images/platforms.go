package images

import (
	"debug/elf"
	"fmt"
	"runtime"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// machines are the platforms images are built for, with the ELF machine of their binaries.
var machines = map[string]elf.Machine{
	"linux/amd64": elf.EM_X86_64,
	"linux/arm64": elf.EM_AARCH64,
}

// Platforms are the platforms images are built for, sorted: linux/amd64 and linux/arm64.
func Platforms() []v1.Platform {
	out := make([]v1.Platform, 0, len(machines))
	for p := range machines {
		goos, arch, _ := strings.Cut(p, "/")
		out = append(out, v1.Platform{OS: goos, Architecture: arch})
	}
	sortPlatforms(out)
	return out
}

func supported() string {
	var names []string
	for _, p := range Platforms() {
		names = append(names, p.String())
	}
	return strings.Join(names, ", ")
}

func sortPlatforms(ps []v1.Platform) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].String() < ps[j].String() })
}

// HostPlatform is the Linux platform of the host's architecture (linux/amd64 on an amd64 host,
// whatever its OS), the images a local cluster of this machine runs.
func HostPlatform() v1.Platform {
	return v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
}

// ParsePlatforms parses a comma-separated list of platforms ("linux/amd64,linux/arm64"), each
// one of Platforms, and returns them sorted without duplicates.
func ParsePlatforms(s string) ([]v1.Platform, error) {
	seen := map[string]bool{}
	var out []v1.Platform
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if _, known := machines[f]; !known {
			return nil, fmt.Errorf("platform %q: want a comma-separated list of %s", f, supported())
		}
		if !seen[f] {
			seen[f] = true
			goos, arch, _ := strings.Cut(f, "/")
			out = append(out, v1.Platform{OS: goos, Architecture: arch})
		}
	}
	sortPlatforms(out)
	return out, nil
}

// PlatformDir is the folder name of p's binaries, <os>_<arch> (as Go names its cross-compiled
// binaries' folders).
func PlatformDir(p v1.Platform) string {
	return p.OS + "_" + p.Architecture
}

// Index is the OCI image index of imgs, one component's images of different platforms: each
// manifest's descriptor names its image's platform (from its config). The manifests are sorted
// by platform, so the index's digest depends on the images only, not on their order.
func Index(imgs ...v1.Image) (v1.ImageIndex, error) {
	type platformImage struct {
		p   v1.Platform
		img v1.Image
	}
	var all []platformImage
	seen := map[string]bool{}
	for _, img := range imgs {
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("image index: reading a config: %w", err)
		}
		p := v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture}
		if seen[p.String()] {
			return nil, fmt.Errorf("image index: two images for %s", p)
		}
		seen[p.String()] = true
		all = append(all, platformImage{p, img})
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("image index: no images")
	}
	sort.Slice(all, func(i, j int) bool { return all[i].p.String() < all[j].p.String() })
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, pi := range all {
		p := pi.p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        pi.img,
			Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &p},
		})
	}
	if _, err := idx.Digest(); err != nil {
		return nil, fmt.Errorf("image index: %w", err)
	}
	return idx, nil
}
