package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/peerkit/terraform-provider-liqo/internal/images"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// binDir holds, for linux/amd64 and linux/arm64, a folder <os>_<arch> with a tiny static
// program under each component's name.
func binDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.25\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bins := filepath.Join(dir, "bin")
	for _, arch := range []string{"amd64", "arm64"} {
		out := filepath.Join(bins, "linux_"+arch)
		cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", filepath.Join(out, "hello"), ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=", "GOWORK=off")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the test program: %v\n%s", err, b)
		}
		for _, c := range images.Components {
			if err := os.Link(filepath.Join(out, "hello"), filepath.Join(out, c.Name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return bins
}

var digestRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// TestRun: every component's image, an index of linux/amd64 and linux/arm64 images, is written
// to -out, tagged as the chart runs it, with the time of SOURCE_DATE_EPOCH, and pushed under
// -push with the same digest, each platform's manifest naming its platform and holding a binary
// for it; the chart is packaged into -out and pushed beside the images, and the real helm
// (LIQO_HELM, and LIQO_HELM4 when set) pulls the same bytes, whose values name the pushed
// images. A second run writes the same archives; by default, one image of the host's platform.
func TestRun(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	repo := strings.TrimPrefix(srv.URL, "http://") + "/liqo"

	bins := binDir(t)
	bundle := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(bundle, []byte("test bundle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "images")
	args := []string{"-bin-dir", bins, "-out", out, "-ca-bundle", bundle, "-platforms", "linux/arm64,linux/amd64"}
	var stdout bytes.Buffer
	if err := run(t.Context(), append(args, "-push", repo+"/", "-chart", "../../deploy/liqo"), &stdout); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	t.Log(stdout.String())

	first := map[string][]byte{}
	for _, c := range images.Components {
		ref := c.Reference(version.Registry)
		archive := filepath.Join(out, c.Name+"-"+version.Version+".tar")
		data, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		first[archive] = data
		tag, err := name.NewTag(ref)
		if err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(archive, &tag)
		if err != nil {
			t.Fatalf("reading %s as %s: %v", archive, ref, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if want := time.Unix(1700000000, 0); !cfg.Created.Equal(want) {
			t.Errorf("%s created %v, want %v (SOURCE_DATE_EPOCH)", c.Name, cfg.Created, want)
		}
		if wantUser := map[bool]string{true: images.NonRootUser, false: "0:0"}[c.NonRoot]; cfg.Config.User != wantUser {
			t.Errorf("%s user %q, want %q", c.Name, cfg.Config.User, wantUser)
		}

		// The summary's digest for the chart's reference is the pushed index's.
		d, line := summaryDigest(stdout.String(), ref)
		if d == "" || !strings.Contains(line, archive) {
			t.Fatalf("no digest and archive for %s in:\n%s", ref, stdout.String())
		}
		pushed, err := name.NewTag(c.Reference(repo))
		if err != nil {
			t.Fatal(err)
		}
		if pd, line := summaryDigest(stdout.String(), pushed.String()); pd != d || !strings.Contains(line, "pushed") {
			t.Errorf("the summary does not report pushing %s@%s:\n%s", pushed, d, stdout.String())
		}
		checkPushedIndex(t, pushed, d)
	}
	checkChart(t, repo, filepath.Join(out, "liqo-"+version.Version+".tgz"))

	var again bytes.Buffer
	if err := run(t.Context(), args, &again); err != nil {
		t.Fatal(err)
	}
	for _, c := range images.Components {
		ref := c.Reference(version.Registry)
		if a, _ := summaryDigest(stdout.String(), ref); a != "" {
			if b, _ := summaryDigest(again.String(), ref); a != b {
				t.Errorf("%s: %s on the second run, %s on the first", ref, b, a)
			}
		}
	}
	for archive, data := range first {
		if b, err := os.ReadFile(archive); err != nil || !bytes.Equal(b, data) {
			t.Errorf("%s differs on the second run (%v)", archive, err)
		}
	}

	// By default, the host's platform only: an image, not an index.
	host := filepath.Join(t.TempDir(), "host")
	if err := run(t.Context(), []string{"-bin-dir", bins, "-out", host, "-ca-bundle", bundle}, &again); err != nil {
		t.Fatal(err)
	}
	layoutIndex, err := os.ReadFile(filepath.Join(host, images.Components[0].Name+"-"+version.Version+".tar"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"platform":{"architecture":"` + runtime.GOARCH + `","os":"linux"}`; !bytes.Contains(layoutIndex, []byte(want)) ||
		bytes.Contains(layoutIndex, []byte(types.OCIImageIndex+`","size"`)) {
		t.Errorf("the default archive's index.json does not name one image of the host's platform (%s)", want)
	}
}

// checkPushedIndex checks that ref, pushed with digest d, is an image index of a linux/amd64 and
// a linux/arm64 image, each manifest's config naming its platform and its binary an ELF for it.
func checkPushedIndex(t *testing.T, ref name.Tag, d string) {
	t.Helper()
	idx, err := remote.Index(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("%s was not pushed as an index: %v", ref, err)
	}
	if err := validate.Index(idx, validate.Fast); err != nil {
		t.Errorf("%s: invalid index: %v", ref, err)
	}
	if got, _ := idx.Digest(); got.String() != d {
		t.Errorf("pushed %s is %s, built %s", ref, got, d)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if len(m.Manifests) != len(want) {
		t.Fatalf("%s: %d manifests, want %d", ref, len(m.Manifests), len(want))
	}
	for _, desc := range m.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if desc.Platform == nil || cfg.OS != "linux" || cfg.Architecture != desc.Platform.Architecture || desc.Platform.OS != "linux" {
			t.Errorf("%s: manifest for %v has a config for %s/%s", ref, desc.Platform, cfg.OS, cfg.Architecture)
			continue
		}
		if machine := binaryMachine(t, img, "/"+ref.RepositoryStr()[strings.LastIndex(ref.RepositoryStr(), "/")+1:]); machine != want[cfg.Architecture] {
			t.Errorf("%s: the %s image's binary is for %s, want %s", ref, cfg.Architecture, machine, want[cfg.Architecture])
		}
	}
}

// binaryMachine is the ELF machine of the file path of img.
func binaryMachine(t *testing.T, img v1.Image, path string) elf.Machine {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no %s in the image: %v", path, err)
		}
		if "/"+strings.TrimPrefix(h.Name, "/") != path {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s is not ELF: %v", path, err)
		}
		return f.Machine
	}
}

// checkChart checks that the real helm (LIQO_HELM, and LIQO_HELM4 when set) pulls the chart
// pushed under repo as the bytes of archive, its values naming the images pushed under repo.
func checkChart(t *testing.T, repo, archive string) {
	t.Helper()
	want, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	values := chartFile(t, want, "liqo/values.yaml")
	for _, c := range images.Components {
		if !strings.Contains(values, c.Reference(repo)+"\n") || strings.Contains(values, c.Reference(version.Registry)) {
			t.Errorf("the pushed chart's values do not name %s instead of %s", c.Reference(repo), c.Reference(version.Registry))
		}
	}
	helms := 0
	for _, env := range []string{"LIQO_HELM", "LIQO_HELM4"} {
		bin := os.Getenv(env)
		if bin == "" {
			continue
		}
		helms++
		home := t.TempDir()
		cmd := exec.CommandContext(t.Context(), bin, "pull", "oci://"+repo+"/liqo", "--version", version.Version, "--plain-http", "--destination", home)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s pull: %v\n%s", env, err, b)
		}
		got, err := os.ReadFile(filepath.Join(home, "liqo-"+version.Version+".tgz"))
		if err != nil {
			t.Fatalf("%s pull: %v", env, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s pulled %d bytes that differ from the %d pushed", env, len(got), len(want))
		}
	}
	if helms == 0 {
		t.Log("LIQO_HELM is not set: the chart is not pulled with helm (make test sets it)")
	}
}

// chartFile is the content of the file name of the chart archive data.
func chartFile(t *testing.T, data []byte, name string) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no %s in the chart: %v", name, err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
}

// summaryDigest is the digest and the line of ref in the summary out.
func summaryDigest(out, ref string) (string, string) {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, ref+" ") {
			return digestRE.FindString(l), l
		}
	}
	return "", ""
}

// TestRunErrors: a missing binary, a bad SOURCE_DATE_EPOCH and missing flags are errors.
func TestRunErrors(t *testing.T) {
	empty := t.TempDir()
	var out bytes.Buffer
	if err := run(t.Context(), []string{"-bin-dir", empty, "-out", t.TempDir()}, &out); err == nil || !strings.Contains(err.Error(), images.Components[0].Name) {
		t.Errorf("missing binaries: error %v, want one naming %s", err, images.Components[0].Name)
	}
	if err := run(t.Context(), nil, &out); err == nil {
		t.Error("no -bin-dir: no error")
	}
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if err := run(t.Context(), []string{"-bin-dir", empty}, &out); err == nil || !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH") {
		t.Errorf("bad SOURCE_DATE_EPOCH: error %v", err)
	}
}
