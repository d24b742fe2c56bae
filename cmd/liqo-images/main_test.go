package main

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/peerkit/terraform-provider-liqo/internal/images"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// binDir holds a tiny static program under each component's name.
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
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", filepath.Join(bins, "hello"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the test program: %v\n%s", err, out)
	}
	for _, c := range images.Components {
		if err := os.Link(filepath.Join(bins, "hello"), filepath.Join(bins, c.Name)); err != nil {
			t.Fatal(err)
		}
	}
	return bins
}

var digestRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// TestRun: every component's image is written to -out, tagged as the chart runs it, with the
// time of SOURCE_DATE_EPOCH, and pushed under -push with the same digest; a second run writes
// the same archives.
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
	var stdout bytes.Buffer
	if err := run(t.Context(), []string{"-bin-dir", bins, "-out", out, "-push", repo + "/", "-ca-bundle", bundle}, &stdout); err != nil {
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

		// The summary's digest for the chart's reference is the pushed image's.
		d, line := summaryDigest(stdout.String(), ref)
		if d == "" || !strings.Contains(line, archive) {
			t.Fatalf("no digest and archive for %s in:\n%s", ref, stdout.String())
		}
		pushed, err := name.NewTag(c.Reference(repo))
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Head(pushed, remote.WithContext(t.Context()))
		if err != nil {
			t.Fatalf("%s was not pushed: %v", pushed, err)
		}
		if desc.Digest.String() != d {
			t.Errorf("pushed %s is %s, built %s", pushed, desc.Digest, d)
		}
		if pd, line := summaryDigest(stdout.String(), pushed.String()); pd != d || !strings.Contains(line, "pushed") {
			t.Errorf("the summary does not report pushing %s@%s:\n%s", pushed, d, stdout.String())
		}
	}

	var again bytes.Buffer
	if err := run(t.Context(), []string{"-bin-dir", bins, "-out", out, "-ca-bundle", bundle}, &again); err != nil {
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
