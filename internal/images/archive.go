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

// WriteArchive writes a, an image (v1.Image) or a multi-platform image index (v1.ImageIndex, see
// Index), tagged ref (a full reference: registry, repository and tag), to path as an OCI image
// layout in a tar (oci-layout, index.json, blobs/sha256/...), with a Docker manifest.json next to
// index.json over the same blobs (of an index, its first image's: Docker's format has no
// indexes): `ctr images import` (the host's platform of an index), `docker load` (old and new),
// `podman load` and `kind load image-archive` all read it. Importing through the OCI index keeps
// the manifest, so the image's digest there is the one a registry serves. The tar's entries are
// sorted and their metadata fixed (mtime: the image's creation time), so the same image always
// gives the same bytes. The file is replaced atomically.
func WriteArchive(ctx context.Context, path, ref string, a partial.Describable) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("archive %s: reference %q: %w", path, ref, err)
	}
	entries, created, err := archiveEntries(tag, a)
	if err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
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
	if err := writeTar(ctx, w, entries, created); err != nil {
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

func bytesEntry(name string, data []byte) entry {
	return entry{name: name, size: int64(len(data)), open: func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}}
}

func blobName(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// dockerImage is an image of Docker's manifest.json.
type dockerImage struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// blobSet collects an archive's blobs, each once.
type blobSet struct {
	entries []entry
	seen    map[v1.Hash]bool
}

func (b *blobSet) add(h v1.Hash, e entry) {
	if b.seen == nil {
		b.seen = map[v1.Hash]bool{}
	}
	if !b.seen[h] {
		b.seen[h] = true
		b.entries = append(b.entries, e)
	}
}

// addImage adds img's manifest, config and layers, and returns its config file and its Docker
// manifest.json entry.
func (b *blobSet) addImage(img v1.Image) (*v1.ConfigFile, dockerImage, error) {
	manifest, err := img.RawManifest()
	if err != nil {
		return nil, dockerImage{}, fmt.Errorf("reading the manifest: %w", err)
	}
	d, err := img.Digest()
	if err != nil {
		return nil, dockerImage{}, fmt.Errorf("hashing the manifest: %w", err)
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return nil, dockerImage{}, fmt.Errorf("reading the config: %w", err)
	}
	configName, err := img.ConfigName()
	if err != nil {
		return nil, dockerImage{}, fmt.Errorf("hashing the config: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, dockerImage{}, fmt.Errorf("reading the config: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, dockerImage{}, fmt.Errorf("reading the layers: %w", err)
	}
	b.add(d, bytesEntry(blobName(d), manifest))
	b.add(configName, bytesEntry(blobName(configName), config))
	docker := dockerImage{Config: blobName(configName)}
	for _, l := range layers {
		ld, err := l.Digest()
		if err != nil {
			return nil, dockerImage{}, fmt.Errorf("hashing a layer: %w", err)
		}
		docker.Layers = append(docker.Layers, blobName(ld))
		size, err := l.Size()
		if err != nil {
			return nil, dockerImage{}, fmt.Errorf("sizing layer %s: %w", ld, err)
		}
		b.add(ld, entry{name: blobName(ld), size: size, open: l.Compressed})
	}
	return cfg, docker, nil
}

// addIndex adds idx's manifest and images, and returns its first image's config file and Docker
// manifest.json entry.
func (b *blobSet) addIndex(idx v1.ImageIndex) (*v1.ConfigFile, dockerImage, error) {
	raw, err := idx.RawManifest()
	if err != nil {
		return nil, dockerImage{}, fmt.Errorf("reading the index: %w", err)
	}
	d, err := idx.Digest()
	if err != nil {
		return nil, dockerImage{}, fmt.Errorf("hashing the index: %w", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, dockerImage{}, fmt.Errorf("reading the index: %w", err)
	}
	b.add(d, bytesEntry(blobName(d), raw))
	var (
		first  *v1.ConfigFile
		docker dockerImage
	)
	for i, desc := range m.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return nil, dockerImage{}, fmt.Errorf("reading image %s of the index: %w", desc.Digest, err)
		}
		cfg, di, err := b.addImage(img)
		if err != nil {
			return nil, dockerImage{}, err
		}
		if i == 0 {
			first, docker = cfg, di
		}
	}
	if first == nil {
		return nil, dockerImage{}, fmt.Errorf("the index has no images")
	}
	return first, docker, nil
}

// archiveEntries are the files of a's archive, sorted by name, and the creation time of its
// (first) image.
func archiveEntries(tag name.Tag, a partial.Describable) ([]entry, time.Time, error) {
	var (
		blobs  blobSet
		cfg    *v1.ConfigFile
		docker dockerImage
		err    error
	)
	top := v1.Descriptor{Annotations: map[string]string{ImageNameAnnotation: tag.String(), RefNameAnnotation: tag.TagStr()}}
	switch a := a.(type) {
	case v1.Image:
		cfg, docker, err = blobs.addImage(a)
		if err == nil {
			top.Platform = &v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture}
		}
	case v1.ImageIndex:
		cfg, docker, err = blobs.addIndex(a)
	default:
		return nil, time.Time{}, fmt.Errorf("%T is neither an image nor an image index", a)
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	if top.MediaType, err = a.MediaType(); err != nil {
		return nil, time.Time{}, fmt.Errorf("reading the media type: %w", err)
	}
	if top.Size, err = a.Size(); err != nil {
		return nil, time.Time{}, fmt.Errorf("sizing the manifest: %w", err)
	}
	if top.Digest, err = a.Digest(); err != nil {
		return nil, time.Time{}, fmt.Errorf("hashing the manifest: %w", err)
	}
	indexJSON, err := json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{top}})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("encoding index.json: %w", err)
	}
	docker.RepoTags = []string{tag.String()}
	dockerJSON, err := json.Marshal([]dockerImage{docker})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("encoding manifest.json: %w", err)
	}
	entries := append(blobs.entries,
		bytesEntry("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)),
		bytesEntry("index.json", indexJSON),
		bytesEntry("manifest.json", dockerJSON))
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	return entries, cfg.Created.Time, nil
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
