package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"

	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// Helm's media types of a chart pushed to an OCI registry (`helm push`): the manifest's config
// (Chart.yaml as JSON) and its layer (the chart's .tgz).
const (
	HelmConfigMediaType types.MediaType = "application/vnd.cncf.helm.config.v1+json"
	HelmChartMediaType  types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// helmGzipExtra and helmGzipComment are what `helm package` of Helm 4 writes in its archives'
// gzip header: an extra field with subfield ID "rr" and its little-endian length (Helm 3 wrote
// the same 40 bytes with a "+" in place of the ID and length).
var (
	helmGzipExtra   = []byte("rr\x28\x00aHR0cHM6Ly95b3V0dS5iZS96OVV6MWljandyTQo=")
	helmGzipComment = "Helm"
)

// chartMeta is the part of Chart.yaml this packager supports, with the JSON names and order of
// Helm's chart metadata (its push config is these fields as JSON, in this order).
type chartMeta struct {
	Name        string            `json:"name,omitempty"`
	Home        string            `json:"home,omitempty"`
	Sources     []string          `json:"sources,omitempty"`
	Version     string            `json:"version,omitempty"`
	Description string            `json:"description,omitempty"`
	Keywords    []string          `json:"keywords,omitempty"`
	Icon        string            `json:"icon,omitempty"`
	APIVersion  string            `json:"apiVersion,omitempty"`
	AppVersion  string            `json:"appVersion,omitempty"`
	Deprecated  bool              `json:"deprecated,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	KubeVersion string            `json:"kubeVersion,omitempty"`
	Type        string            `json:"type,omitempty"`
}

// Chart is a chart packaged as `helm package` packages it.
type Chart struct {
	// Name and Version are Chart.yaml's.
	Name, Version string
	// Archive is the chart's .tgz.
	Archive []byte
	meta    chartMeta
}

// FileName is the archive's name as `helm package` names it: <name>-<version>.tgz.
func (c *Chart) FileName() string {
	return c.Name + "-" + c.Version + ".tgz"
}

// Reference is the chart's reference in repository repo, where `helm push` puts it:
// <repo>/<name>:<version>.
func (c *Chart) Reference(repo string) string {
	return repo + "/" + c.Name + ":" + c.Version
}

// ChartOptions are how PackageChart packages a chart.
type ChartOptions struct {
	// ImageRepo, when set, is the repository the images are pushed to: values.yaml's references
	// to the Components' images (Component.Reference(version.Registry)) become
	// Component.Reference(ImageRepo), so that the chart runs the images pushed beside it.
	ImageRepo string
	// Created is the modification time of the archive's files; the zero value is the Unix
	// epoch (`helm package` takes the time of packaging, so its archives differ every time).
	Created time.Time
}

// PackageChart packages the chart in folder dir as `helm package` does: the same files, names,
// modes, order and formats (Chart.yaml rewritten from its fields with sorted keys, then
// values.yaml, values.schema.json, the templates and the other files), gzip-compressed with
// Helm's header; unlike `helm package`, with fixed times, so the same chart gives the same
// bytes. Charts with dependencies, a .helmignore or hidden files are not supported (an error).
func PackageChart(dir string, o ChartOptions) (*Chart, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	var meta chartMeta
	if err := yaml.UnmarshalStrict(raw, &meta); err != nil {
		return nil, fmt.Errorf("chart %s: Chart.yaml: %w (this packager supports no dependencies or maintainers)", dir, err)
	}
	if meta.APIVersion != "v2" || meta.Name == "" || meta.Version == "" {
		return nil, fmt.Errorf("chart %s: Chart.yaml: want apiVersion v2, a name and a version", dir)
	}
	chartYAML, err := yaml.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("chart %s: Chart.yaml: %w", dir, err)
	}
	files, err := chartFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	if o.ImageRepo != "" {
		if files["values.yaml"], err = rewriteImages(files["values.yaml"], o.ImageRepo); err != nil {
			return nil, fmt.Errorf("chart %s: values.yaml: %w", dir, err)
		}
	}
	files["Chart.yaml"] = chartYAML
	mtime := o.Created.UTC().Truncate(time.Second)
	if o.Created.IsZero() {
		mtime = time.Unix(0, 0).UTC()
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Extra, zw.Comment = helmGzipExtra, helmGzipComment
	tw := tar.NewWriter(zw)
	for _, name := range chartOrder(files) {
		h := &tar.Header{Name: meta.Name + "/" + name, Mode: 0o644, Size: int64(len(files[name])), ModTime: mtime}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("chart %s: writing %s: %w", dir, name, err)
		}
		if _, err := tw.Write(files[name]); err != nil {
			return nil, fmt.Errorf("chart %s: writing %s: %w", dir, name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	return &Chart{Name: meta.Name, Version: meta.Version, Archive: buf.Bytes(), meta: meta}, nil
}

// chartFiles are the files of the chart in dir by slash-separated path (without a UTF-8 byte
// order mark, as Helm loads them).
func chartFiles(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("chart folder: %w", err)
	}
	defer func() { _ = root.Close() }()
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		rel = filepath.ToSlash(rel)
		switch base := path.Base(rel); {
		case rel == ".":
			return nil
		case strings.HasPrefix(base, "."), rel == "charts", rel == "Chart.lock", rel == "requirements.yaml":
			return fmt.Errorf("%s: not supported by this packager (no .helmignore, hidden files or dependencies)", rel)
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file", rel)
		}
		data, err := root.ReadFile(filepath.FromSlash(rel))
		if err != nil {
			return fmt.Errorf("reading %s: %w", rel, err)
		}
		files[rel] = bytes.TrimPrefix(data, []byte{0xEF, 0xBB, 0xBF})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chart folder %s: %w", dir, err)
	}
	return files, nil
}

// chartOrder is the order `helm package` writes a chart's files in: Chart.yaml, values.yaml,
// values.schema.json, the templates, the other files, each group sorted.
func chartOrder(files map[string][]byte) []string {
	rank := func(name string) int {
		switch {
		case name == "Chart.yaml":
			return 0
		case name == "values.yaml":
			return 1
		case name == "values.schema.json":
			return 2
		case strings.HasPrefix(name, "templates/"):
			return 3
		}
		return 4
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if ri, rj := rank(names[i]), rank(names[j]); ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	return names
}

// rewriteImages replaces the Components' images in values with those of repo.
func rewriteImages(values []byte, repo string) ([]byte, error) {
	s := string(values)
	for _, c := range Components {
		from, to := c.Reference(version.Registry), c.Reference(repo)
		if !strings.Contains(s, from) {
			return nil, fmt.Errorf("no image %s to replace with %s", from, to)
		}
		s = strings.ReplaceAll(s, from, to)
	}
	return []byte(s), nil
}

// ChartArtifact is c as `helm push` pushes it to an OCI registry: an OCI manifest whose config
// is Chart.yaml's fields as JSON (HelmConfigMediaType) and whose one layer is the archive
// (HelmChartMediaType), annotated with the chart's title, version, description and created
// (RFC 3339; the zero time is the Unix epoch, so that the same chart gives the same digest).
func ChartArtifact(c *Chart, created time.Time) (v1.Image, error) {
	config, err := json.Marshal(c.meta)
	if err != nil {
		return nil, fmt.Errorf("chart %s: config: %w", c.Name, err)
	}
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	a := &artifact{config: static.NewLayer(config, HelmConfigMediaType), layer: static.NewLayer(c.Archive, HelmChartMediaType)}
	desc := func(l v1.Layer, mt types.MediaType, size int) (v1.Descriptor, error) {
		d, err := l.Digest()
		if err != nil {
			return v1.Descriptor{}, fmt.Errorf("digest: %w", err)
		}
		return v1.Descriptor{MediaType: mt, Size: int64(size), Digest: d}, nil
	}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Annotations: map[string]string{
		"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.description": c.meta.Description,
		"org.opencontainers.image.title":       c.Name,
		"org.opencontainers.image.version":     c.Version,
	}}
	if m.Config, err = desc(a.config, HelmConfigMediaType, len(config)); err != nil {
		return nil, fmt.Errorf("chart %s: config: %w", c.Name, err)
	}
	layer, err := desc(a.layer, HelmChartMediaType, len(c.Archive))
	if err != nil {
		return nil, fmt.Errorf("chart %s: archive: %w", c.Name, err)
	}
	m.Layers = []v1.Descriptor{layer}
	if a.manifest, err = json.Marshal(m); err != nil {
		return nil, fmt.Errorf("chart %s: manifest: %w", c.Name, err)
	}
	img, err := partial.CompressedToImage(a)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", c.Name, err)
	}
	return img, nil
}

// artifact is an OCI manifest of a config and one layer of any media types.
type artifact struct {
	manifest      []byte
	config, layer v1.Layer
}

// RawConfigFile is the artifact's config blob (partial.CompressedImageCore).
func (a *artifact) RawConfigFile() ([]byte, error) {
	rc, err := a.config.Compressed()
	if err != nil {
		return nil, fmt.Errorf("chart config: %w", err)
	}
	defer func() { _ = rc.Close() }()
	var b bytes.Buffer
	if _, err := b.ReadFrom(rc); err != nil {
		return nil, fmt.Errorf("chart config: %w", err)
	}
	return b.Bytes(), nil
}

// MediaType is the manifest's media type, OCI's (partial.CompressedImageCore).
func (a *artifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// RawManifest is the manifest's JSON (partial.CompressedImageCore).
func (a *artifact) RawManifest() ([]byte, error) { return a.manifest, nil }

// LayerByDigest is the config or the chart layer by its digest (partial.CompressedImageCore).
func (a *artifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	for _, l := range []v1.Layer{a.config, a.layer} {
		if d, err := l.Digest(); err == nil && d == h {
			return l, nil
		}
	}
	return nil, fmt.Errorf("no blob %s in the chart artifact", h)
}
