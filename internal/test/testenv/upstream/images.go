package upstream

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/peerkit/terraform-provider-liqo/internal/images"
)

// Version is the upstream Liqo version BinDir's binaries and chart are built from.
const Version = "v1.2.0"

// imageRepository is where upstream's chart (and its controller manager, for the virtual
// kubelet) takes its images from, tagged Version.
const imageRepository = "ghcr.io/liqotech/"

// ImageComponents are the binaries of BinDir that upstream's chart runs as containers with
// networking disabled and the metric agent and telemetry off (those two need images built from
// more than upstream's Go source: openssl's, for the metric agent's init container), each the
// image of the same name.
var ImageComponents = []string{ControllerManager, Webhook, CRDReplicator, VirtualKubelet, Proxy, Uninstaller}

// Proxy and Uninstaller are the chart's API-server proxy and its pre-delete hook's binary.
const (
	Proxy       = "proxy"
	Uninstaller = "uninstaller"
)

// ImageReference is the image upstream's chart runs component as.
func ImageReference(component string) string { return imageRepository + component + ":" + Version }

// Images returns image archives (images.WriteArchive) of ImageComponents built from BinDir's
// binaries by our image builder: each binary at /usr/bin/<name>, where the chart's commands
// name it, as upstream's Dockerfile puts it (on Alpine there; on our empty base here: the
// components need nothing else with networking disabled), tagged ImageReference. They are kept
// in BinDir/images and rebuilt when their binary is newer.
func Images(tb testing.TB) []string {
	tb.Helper()
	dir := BinDir(tb)
	out := filepath.Join(dir, "images")
	archives := make([]string, 0, len(ImageComponents))
	for _, name := range ImageComponents {
		bin := filepath.Join(dir, name)
		archive := filepath.Join(out, name+"-"+Version+".tar")
		archives = append(archives, archive)
		binInfo, err := os.Stat(bin)
		if err != nil {
			tb.Fatalf("upstream image %s: %v (rebuild with `make liqo-upstream`)", name, err)
		}
		if a, err := os.Stat(archive); err == nil && a.ModTime().After(binInfo.ModTime()) {
			continue
		}
		c := images.Component{Name: name, Path: "/usr/bin/" + name, NonRoot: true, Version: Version, Source: "https://github.com/liqotech/liqo"}
		img, err := images.Build(tb.Context(), c, bin, images.Options{})
		if err != nil {
			tb.Fatalf("upstream image %s: %v", name, err)
		}
		if err := images.WriteArchive(tb.Context(), archive, ImageReference(name), img); err != nil {
			tb.Fatalf("upstream image %s: %v", name, err)
		}
	}
	return archives
}
