package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations of the archive's index.json that name the image: containerd's `ctr images import`
// (and `docker load` from Docker 25 on) tag it with the full reference of ImageNameAnnotation;
// RefNameAnnotation is its tag, as the OCI image layout has it.
const (
	ImageNameAnnotation = "io.containerd.image.name"
	RefNameAnnotation   = "org.opencontainers.image.ref.name"
)

// WriteArchive writes img, tagged ref (a full reference: registry, repository and tag), to path
// as an OCI image layout in a tar (oci-layout, index.json, blobs/sha256/...), with a Docker
// manifest.json next to index.json over the same blobs: `ctr images import`, `docker load`
// (old and new), `podman load` and `kind load image-archive` all read it. Importing through the
// OCI index keeps the manifest, so the image's digest there is the one a registry serves. The
// tar's entries are sorted and their metadata fixed (mtime: the image's creation time), so the
// same image always gives the same bytes. The file is replaced atomically.
func WriteArchive(ctx context.Context, path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("archive %s: reference %q: %w", path, ref, err)
	}
	entries, err := archiveEntries(tag, img)
	if err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("archive %s: reading the config: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err := writeTar(ctx, w, entries, cfg.Created.Time); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("archive %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("archive %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("archive %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	return nil
}

// entry is one file of an archive: its size and how to read it.
type entry struct {
	name string
	size int64
	open func() (io.ReadCloser, error)
}

// archiveEntries are the files of img's archive, sorted by name.
func archiveEntries(tag name.Tag, img v1.Image) ([]entry, error) {
	bytesEntry := func(name string, data []byte) entry {
		return entry{name: name, size: int64(len(data)), open: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}}
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

	manifest, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the manifest: %w", err)
	}
	desc, err := partial.Descriptor(img)
	if err != nil {
		return nil, fmt.Errorf("describing the image: %w", err)
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	configName, err := img.ConfigName()
	if err != nil {
		return nil, fmt.Errorf("hashing the config: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("reading the layers: %w", err)
	}

	index := v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType:   desc.MediaType,
			Size:        desc.Size,
			Digest:      desc.Digest,
			Annotations: map[string]string{ImageNameAnnotation: tag.String(), RefNameAnnotation: tag.TagStr()},
			Platform:    &v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture},
		}},
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return nil, fmt.Errorf("encoding index.json: %w", err)
	}
	docker := []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: blob(configName), RepoTags: []string{tag.String()}}}

	entries := []entry{
		bytesEntry("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)),
		bytesEntry("index.json", indexJSON),
		bytesEntry(blob(desc.Digest), manifest),
		bytesEntry(blob(configName), config),
	}
	seen := map[v1.Hash]bool{desc.Digest: true, configName: true}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return nil, fmt.Errorf("hashing a layer: %w", err)
		}
		docker[0].Layers = append(docker[0].Layers, blob(d))
		if seen[d] {
			continue
		}
		seen[d] = true
		size, err := l.Size()
		if err != nil {
			return nil, fmt.Errorf("sizing layer %s: %w", d, err)
		}
		entries = append(entries, entry{name: blob(d), size: size, open: l.Compressed})
	}
	dockerJSON, err := json.Marshal(docker)
	if err != nil {
		return nil, fmt.Errorf("encoding manifest.json: %w", err)
	}
	entries = append(entries, bytesEntry("manifest.json", dockerJSON))
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	return entries, nil
}

// writeTar writes entries, in their order, with their folders before them, owned by root,
// modified at mtime.
func writeTar(ctx context.Context, w io.Writer, entries []entry, mtime time.Time) error {
	tw := tar.NewWriter(w)
	dirs := map[string]bool{}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, dir := range parents(e.name) {
			if dirs[dir] {
				continue
			}
			dirs[dir] = true
			h := &tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}
			if err := tw.WriteHeader(h); err != nil {
				return fmt.Errorf("writing %s: %w", dir, err)
			}
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: e.size, ModTime: mtime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("writing %s: %w", e.name, err)
		}
		if err := copyEntry(tw, e); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("closing the tar: %w", err)
	}
	return nil
}

func copyEntry(w io.Writer, e entry) error {
	r, err := e.open()
	if err != nil {
		return fmt.Errorf("reading %s: %w", e.name, err)
	}
	defer func() { _ = r.Close() }()
	n, err := io.Copy(w, r)
	if err != nil {
		return fmt.Errorf("writing %s: %w", e.name, err)
	}
	if n != e.size {
		return fmt.Errorf("writing %s: %d bytes, want %d", e.name, n, e.size)
	}
	return nil
}

// parents are the folders of a slash-separated path, outermost first, each ending with "/".
func parents(p string) []string {
	var out []string
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i+1])
		}
	}
	return out
}
