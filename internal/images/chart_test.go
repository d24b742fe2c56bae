package images_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/types"

	"sigs.k8s.io/yaml"

	"github.com/peerkit/terraform-provider-liqo/internal/images"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

const root = "../.."

// TestChartImages: the images built are the ones the chart runs by default, at the version of
// internal/version, and the GNUmakefile builds the binaries of the components, which are commands
// of this module.
func TestChartImages(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "liqo", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Image          string `json:"image"`
		GatewayImage   string `json:"gatewayImage"`
		VirtualKubelet struct {
			Image string `json:"image"`
		} `json:"virtualKubelet"`
		Proxy struct {
			Image string `json:"image"`
		} `json:"proxy"`
		Fabric struct {
			Image string `json:"image"`
		} `json:"fabric"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	chart := map[string]string{
		"image":                values.Image,
		"gatewayImage":         values.GatewayImage,
		"virtualKubelet.image": values.VirtualKubelet.Image,
		"proxy.image":          values.Proxy.Image,
		"fabric.image":         values.Fabric.Image,
	}
	want := map[string]string{
		"image":                version.ControllerManagerImage,
		"gatewayImage":         version.GatewayImage,
		"virtualKubelet.image": version.VirtualKubeletImage,
		"proxy.image":          version.ProxyImage,
		"fabric.image":         version.FabricImage,
	}
	for k, v := range want {
		if chart[k] != v {
			t.Errorf("deploy/liqo/values.yaml %s = %q, want %q (internal/version)", k, chart[k], v)
		}
	}

	built := map[string]bool{}
	for _, c := range images.Components {
		built[c.Reference(version.Registry)] = true
	}
	for k, v := range want {
		if !built[v] {
			t.Errorf("the chart's %s %s is not among the images built", k, v)
		}
	}
	if len(images.Components) != len(want) {
		t.Errorf("%d components, the chart runs %d images", len(images.Components), len(want))
	}

	makefile, err := os.ReadFile(filepath.Join(root, "GNUmakefile"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range images.Components {
		names = append(names, c.Name)
		if _, err := os.Stat(filepath.Join(root, "cmd", c.Name, "main.go")); err != nil {
			t.Errorf("component %s has no command: %v", c.Name, err)
		}
	}
	var listed []string
	for _, line := range strings.Split(string(makefile), "\n") {
		if v, ok := strings.CutPrefix(line, "IMAGE_COMPONENTS"); ok {
			_, v, _ = strings.Cut(v, "=")
			listed = strings.Fields(v)
		}
	}
	if strings.Join(listed, " ") != strings.Join(names, " ") {
		t.Errorf("the GNUmakefile's IMAGE_COMPONENTS are %q, want %q (images.Components)", listed, names)
	}
}

// tarFile is a file of a chart archive.
type tarFile struct {
	hdr  tar.Header
	data []byte
}

// readChart returns the gzip header and the files, in order, of a chart archive.
func readChart(t *testing.T, data []byte) (gzip.Header, []tarFile) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var files []tarFile
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return zr.Header, files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, tarFile{*h, b})
	}
}

// TestPackageChart: the chart packaged in Go is what the real `helm package` (LIQO_HELM) makes
// of deploy/liqo, file by file (names, order, headers, contents, gzip header), but for the
// files' times: ours are fixed, so packaging again gives the same bytes. With ImageRepo, only
// values.yaml's image references change.
func TestPackageChart(t *testing.T) {
	dir := filepath.Join(root, "deploy", "liqo")
	ch, err := images.PackageChart(dir, images.ChartOptions{Created: created})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name != "liqo" || ch.Version != version.Version || ch.FileName() != "liqo-"+version.Version+".tgz" {
		t.Errorf("chart %s %s (%s)", ch.Name, ch.Version, ch.FileName())
	}
	again, err := images.PackageChart(dir, images.ChartOptions{Created: created})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ch.Archive, again.Archive) {
		t.Error("packaging the chart twice gave different bytes")
	}
	zh, files := readChart(t, ch.Archive)
	for _, f := range files {
		if !f.hdr.ModTime.Equal(created) {
			t.Errorf("%s modified %v, want %v", f.hdr.Name, f.hdr.ModTime, created)
		}
	}

	// With another image repository, only the images differ.
	repo := "registry.example:5000/team/liqo"
	moved, err := images.PackageChart(dir, images.ChartOptions{Created: created, ImageRepo: repo})
	if err != nil {
		t.Fatal(err)
	}
	_, movedFiles := readChart(t, moved.Archive)
	for i, f := range movedFiles {
		want := files[i].data
		if f.hdr.Name == "liqo/values.yaml" {
			for _, c := range images.Components {
				want = bytes.ReplaceAll(want, []byte(c.Reference(version.Registry)), []byte(c.Reference(repo)))
				if !bytes.Contains(f.data, []byte("image: "+c.Reference(repo))) && !bytes.Contains(f.data, []byte("Image: "+c.Reference(repo))) {
					t.Errorf("values.yaml does not name %s", c.Reference(repo))
				}
			}
		}
		if !bytes.Equal(f.data, want) {
			t.Errorf("%s differs with ImageRepo beyond the images", f.hdr.Name)
		}
	}

	helm := os.Getenv("LIQO_HELM")
	if helm == "" {
		t.Skip("LIQO_HELM is not set: not compared with `helm package` (make test sets it)")
	}
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), helm, "package", dir, "--destination", out)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(out, "cache"), "HELM_CONFIG_HOME="+filepath.Join(out, "config"), "HELM_DATA_HOME="+filepath.Join(out, "data"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helm package: %v\n%s", err, b)
	}
	theirs, err := os.ReadFile(filepath.Join(out, ch.FileName()))
	if err != nil {
		t.Fatal(err)
	}
	hzh, helmFiles := readChart(t, theirs)
	if !bytes.Equal(zh.Extra, hzh.Extra) || zh.Comment != hzh.Comment || zh.OS != hzh.OS || !zh.ModTime.Equal(hzh.ModTime) {
		t.Errorf("gzip header %+v, helm's %+v", zh, hzh)
	}
	if len(files) != len(helmFiles) {
		t.Errorf("%d files, helm packages %d", len(files), len(helmFiles))
	}
	for i := range min(len(files), len(helmFiles)) {
		a, b := files[i], helmFiles[i]
		a.hdr.ModTime, b.hdr.ModTime = time.Time{}, time.Time{}
		if !reflect.DeepEqual(a.hdr, b.hdr) || !bytes.Equal(a.data, b.data) {
			t.Errorf("file %d: %+v (%d bytes), helm's %+v (%d bytes)", i, a.hdr, len(a.data), b.hdr, len(b.data))
		}
	}
}

// TestChartArtifact: the chart's OCI artifact has Helm's media types, Chart.yaml's fields as its
// config, the archive as its one layer, the chart's annotations, and a fixed digest.
func TestChartArtifact(t *testing.T) {
	ch, err := images.PackageChart(filepath.Join(root, "deploy", "liqo"), images.ChartOptions{Created: created})
	if err != nil {
		t.Fatal(err)
	}
	a, err := images.ChartArtifact(ch, created)
	if err != nil {
		t.Fatal(err)
	}
	m, err := a.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != images.HelmConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != images.HelmChartMediaType {
		t.Fatalf("manifest %+v, want Helm's media types", m)
	}
	if m.Annotations["org.opencontainers.image.title"] != "liqo" || m.Annotations["org.opencontainers.image.version"] != version.Version ||
		m.Annotations["org.opencontainers.image.created"] != created.Format(time.RFC3339) {
		t.Errorf("annotations %v", m.Annotations)
	}
	l, err := a.LayerByDigest(m.Layers[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	if b, err := io.ReadAll(rc); err != nil || !bytes.Equal(b, ch.Archive) {
		t.Errorf("the layer is not the archive (%v)", err)
	}
	raw, err := a.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg["name"] != "liqo" || cfg["version"] != version.Version || cfg["apiVersion"] != "v2" {
		t.Errorf("config %s (%v)", raw, err)
	}
	b, err := images.ChartArtifact(ch, created)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, a) != digest(t, b) {
		t.Error("the same chart gave two digests")
	}
}
