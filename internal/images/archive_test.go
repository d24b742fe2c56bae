package images_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/peerkit/terraform-provider-liqo/internal/images"
)

// TestWriteArchive: the archive is an OCI image layout whose index names the image for
// containerd (full reference) and the layout (tag), with the image's own manifest (same digest
// as built), and a Docker manifest.json tagging the same config and layers; its tar entries are
// sorted, with fixed times and owners, and writing it again gives the same bytes.
func TestWriteArchive(t *testing.T) {
	bundle, _ := caBundle(t)
	c := images.Component{Name: "liqo-test", NonRoot: true}
	img := build(t, c, hello, images.Options{CABundle: bundle, Created: created})
	ref := c.Reference("registry.example:5000/peerkit")
	// The tar itself.
	path, data, layoutDir, names := writeAndExtract(t, ref, img, filepath.Join("out", "liqo-test.tar"))
	dir := filepath.Dir(filepath.Dir(path))
	if !slices.IsSorted(names) {
		t.Errorf("entries not sorted: %q", names)
	}
	for _, want := range []string{"oci-layout", "index.json", "manifest.json", "blobs/", "blobs/sha256/"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s in %q", want, names)
		}
	}

	// Read as an OCI image layout.
	idx, im := layoutIndex(t, layoutDir)
	if len(im.Manifests) != 1 {
		t.Fatalf("index of %d manifests, want 1", len(im.Manifests))
	}
	d := im.Manifests[0]
	if d.Annotations[images.ImageNameAnnotation] != ref || d.Annotations[images.RefNameAnnotation] != "0.1.0" {
		t.Errorf("index annotations %v, want %s=%s and %s=0.1.0", d.Annotations, images.ImageNameAnnotation, ref, images.RefNameAnnotation)
	}
	if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != "amd64" {
		t.Errorf("index platform %v, want linux/amd64", d.Platform)
	}
	fromLayout, err := idx.Image(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(fromLayout); err != nil {
		t.Errorf("the layout's image is invalid: %v", err)
	}
	if d.Digest != digest(t, img) {
		t.Errorf("the layout's image is %s, want %s", d.Digest, digest(t, img))
	}

	// Read as a Docker archive, by its tag.
	fromDocker := dockerImage(t, path, ref)
	if err := validate.Image(fromDocker); err != nil {
		t.Errorf("the Docker archive's image is invalid: %v", err)
	}
	wantConfig, _ := img.ConfigName()
	if got, _ := fromDocker.ConfigName(); got != wantConfig {
		t.Errorf("the Docker archive's config is %s, want %s", got, wantConfig)
	}

	// Written again: the same bytes.
	again := filepath.Join(dir, "again.tar")
	if err := images.WriteArchive(t.Context(), again, ref, build(t, c, hello, images.Options{CABundle: bundle, Created: created})); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(again); err != nil || !bytes.Equal(b, data) {
		t.Errorf("a second archive of the same image differs (%v)", err)
	}

	if err := images.WriteArchive(t.Context(), filepath.Join(dir, "x.tar"), "liqo-test", img); err == nil {
		t.Error("a reference without registry and tag was accepted")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "out", "*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left behind: %q", left)
	}
}

// extract unpacks the archive data into dir, checks its entries' times and owners, and returns
// their names.
func extract(t *testing.T, data []byte, dir string) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(created) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: modified %v, owner %d:%d; want %v, 0:0", h.Name, h.ModTime, h.Uid, h.Gid, created)
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriteArchiveIndex: the archive of a multi-platform image index names the index in its
// index.json (as containerd imports it), holds every platform's image (each validated, its
// config naming its platform), and its Docker manifest.json tags the first platform's image.
func TestWriteArchiveIndex(t *testing.T) {
	c, amd, arm := twoPlatforms(t)
	idx, err := images.Index(amd, arm)
	if err != nil {
		t.Fatal(err)
	}
	ref := c.Reference("registry.example:5000/peerkit")
	path, _, layoutDir, names := writeAndExtract(t, ref, idx, "liqo-test.tar")
	if !slices.IsSorted(names) {
		t.Errorf("entries not sorted: %q", names)
	}

	top, im := layoutIndex(t, layoutDir)
	if len(im.Manifests) != 1 || im.Manifests[0].MediaType != types.OCIImageIndex || im.Manifests[0].Digest != digest(t, idx) ||
		im.Manifests[0].Annotations[images.ImageNameAnnotation] != ref {
		t.Fatalf("index.json %+v, want the image index %s named %s", im.Manifests, digest(t, idx), ref)
	}
	fromLayout, err := top.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(fromLayout); err != nil {
		t.Errorf("the layout's index is invalid: %v", err)
	}
	for _, w := range []struct {
		img v1.Image
		p   v1.Platform
		m   elf.Machine
	}{{amd, linuxAMD64, elf.EM_X86_64}, {arm, linuxARM64, elf.EM_AARCH64}} {
		img, err := fromLayout.Image(digest(t, w.img))
		if err != nil {
			t.Fatalf("%s: %v", w.p, err)
		}
		checkPlatform(t, img, w.p, w.m)
	}

	fromDocker := dockerImage(t, path, ref)
	wantConfig, _ := amd.ConfigName()
	if got, _ := fromDocker.ConfigName(); got != wantConfig {
		t.Errorf("the Docker archive's config is %s, want linux/amd64's %s", got, wantConfig)
	}
}

// writeAndExtract writes img's archive to file (a path in a new folder) and extracts it; it
// returns the archive's path and bytes, the folder it was extracted to and its entries' names in
// order.
func writeAndExtract(t *testing.T, ref string, img partial.Describable, file string) (string, []byte, string, []string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, file)
	if err := images.WriteArchive(t.Context(), path, ref, img); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	layoutDir := filepath.Join(dir, "layout")
	return path, data, layoutDir, extract(t, data, layoutDir)
}

// twoPlatforms builds the test component's linux/amd64 and linux/arm64 images.
func twoPlatforms(t *testing.T) (images.Component, v1.Image, v1.Image) {
	t.Helper()
	bundle, _ := caBundle(t)
	c := images.Component{Name: "liqo-test", NonRoot: true}
	amd := build(t, c, hello, images.Options{CABundle: bundle, Created: created})
	arm := build(t, c, helloARM64, images.Options{CABundle: bundle, Created: created, Platform: linuxARM64})
	return c, amd, arm
}

// layoutIndex reads the OCI image layout in dir: its top index and that index's manifest.
func layoutIndex(t *testing.T, dir string) (v1.ImageIndex, *v1.IndexManifest) {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return idx, im
}

// dockerImage reads the archive at path as a Docker archive, the image tagged ref.
func dockerImage(t *testing.T, path, ref string) v1.Image {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
