package images_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/peerkit/terraform-provider-liqo/internal/images"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// hello is a tiny static linux/amd64 program standing in for the components' binaries: it
// prints its name and $SSL_CERT_FILE; helloARM64 is the same for linux/arm64.
var hello, helloARM64 string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "images-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hello, err = buildHello(dir, "amd64")
	if err == nil {
		helloARM64, err = buildHello(dir, "arm64")
	}
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func buildHello(dir, arch string) (string, error) {
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	files := map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.25\n",
		"main.go": "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() { fmt.Println(\"hello from\", os.Args[0], os.Getenv(\"SSL_CERT_FILE\")) }\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	out := filepath.Join(dir, "hello-"+arch)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the test program: %w\n%s", err, b)
	}
	return out, nil
}

// caBundle writes a stand-in CA bundle and returns its path and content.
func caBundle(t *testing.T) (string, []byte) {
	t.Helper()
	data := []byte("-----BEGIN CERTIFICATE-----\ntest bundle\n-----END CERTIFICATE-----\n")
	path := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

var created = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func build(t *testing.T, c images.Component, binary string, o images.Options) v1.Image {
	t.Helper()
	img, err := images.Build(t.Context(), c, binary, o)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// digest is the digest of an image or an image index.
func digest(t *testing.T, of interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	d, err := of.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// entryOf is a file of an image's filesystem.
type entryOf struct {
	hdr  *tar.Header
	data []byte
}

// filesystem is img's flattened filesystem by path.
func filesystem(t *testing.T, img v1.Image) map[string]entryOf {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	out := map[string]entryOf{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = entryOf{h, data}
	}
}

// TestBuild: a non-root component's image runs its binary as uid/gid 65532 (named in
// /etc/passwd and /etc/group) with the CA bundle, SSL_CERT_FILE and the OCI labels; every file
// has the fixed time, and the binary taken out of the image runs.
func TestBuild(t *testing.T) {
	bundle, certs := caBundle(t)
	c := images.Component{Name: "liqo-test", NonRoot: true}
	img := build(t, c, hello, images.Options{CABundle: bundle, Created: created})
	// validate.Image checks the images read back from an archive and a registry (TestWriteArchive,
	// TestPush); in memory, the manifest's layers have empty annotations where the raw one has
	// none, which it reports.

	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s, want %s", mt, types.OCIManifestSchema1)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 2 {
		t.Errorf("config %s and %d layers, want %s and 2", m.Config.MediaType, len(m.Layers), types.OCIConfigJSON)
	}
	for _, l := range m.Layers {
		if l.MediaType != types.OCILayer {
			t.Errorf("layer media type %s, want %s", l.MediaType, types.OCILayer)
		}
	}

	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", cfg.OS, cfg.Architecture)
	}
	if !cfg.Created.Equal(created) {
		t.Errorf("created %v, want %v", cfg.Created, created)
	}
	for _, h := range cfg.History {
		if !h.Created.Equal(created) {
			t.Errorf("history %q created %v, want %v", h.CreatedBy, h.Created, created)
		}
	}
	if want := []string{"/liqo-test"}; !slices.Equal(cfg.Config.Entrypoint, want) || len(cfg.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q, cmd %q; want %q and no cmd", cfg.Config.Entrypoint, cfg.Config.Cmd, want)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cfg.Config.User)
	}
	if !slices.Contains(cfg.Config.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("env %q lacks SSL_CERT_FILE", cfg.Config.Env)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.version": version.Version,
		"org.opencontainers.image.source":  images.Source,
		"org.opencontainers.image.title":   "liqo-test",
	}
	for k, v := range wantLabels {
		if cfg.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cfg.Config.Labels[k], v)
		}
	}

	exe, err := os.ReadFile(hello)
	if err != nil {
		t.Fatal(err)
	}
	fs := filesystem(t, img)
	type want struct {
		typ      byte
		mode     int64
		uid, gid int
		data     []byte
	}
	wants := map[string]want{
		"etc":                               {tar.TypeDir, 0o755, 0, 0, nil},
		"etc/ssl":                           {tar.TypeDir, 0o755, 0, 0, nil},
		"etc/ssl/certs":                     {tar.TypeDir, 0o755, 0, 0, nil},
		"etc/ssl/certs/ca-certificates.crt": {tar.TypeReg, 0o644, 0, 0, certs},
		"etc/passwd":                        {tar.TypeReg, 0o644, 0, 0, nil},
		"etc/group":                         {tar.TypeReg, 0o644, 0, 0, nil},
		"home":                              {tar.TypeDir, 0o755, 0, 0, nil},
		"home/nonroot":                      {tar.TypeDir, 0o700, 65532, 65532, nil},
		"tmp":                               {tar.TypeDir, 0o1777, 0, 0, nil},
		"liqo-test":                         {tar.TypeReg, 0o755, 0, 0, exe},
	}
	for p, w := range wants {
		e, ok := fs[p]
		if !ok {
			t.Errorf("no /%s in the image", p)
			continue
		}
		if e.hdr.Typeflag != w.typ || e.hdr.Mode != w.mode || e.hdr.Uid != w.uid || e.hdr.Gid != w.gid {
			t.Errorf("/%s: type %c mode %o owner %d:%d; want type %c mode %o owner %d:%d",
				p, e.hdr.Typeflag, e.hdr.Mode, e.hdr.Uid, e.hdr.Gid, w.typ, w.mode, w.uid, w.gid)
		}
		if w.data != nil && !bytes.Equal(e.data, w.data) {
			t.Errorf("/%s: %d bytes differ from the source's %d", p, len(e.data), len(w.data))
		}
	}
	for p, e := range fs {
		if _, ok := wants[p]; !ok {
			t.Errorf("unexpected /%s in the image", p)
		}
		if !e.hdr.ModTime.Equal(created) {
			t.Errorf("/%s modified %v, want %v", p, e.hdr.ModTime, created)
		}
	}
	if s := string(fs["etc/passwd"].data); !strings.Contains(s, "\nnonroot:x:65532:65532:") || !strings.HasPrefix(s, "root:x:0:0:") {
		t.Errorf("/etc/passwd lacks root or nonroot 65532:\n%s", s)
	}
	if s := string(fs["etc/group"].data); !strings.Contains(s, "\nnonroot:x:65532:") {
		t.Errorf("/etc/group lacks nonroot 65532:\n%s", s)
	}

	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return
	}
	bin := filepath.Join(t.TempDir(), "liqo-test")
	if err := os.WriteFile(bin, fs["liqo-test"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin)
	cmd.Env = cfg.Config.Env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello from") || !strings.Contains(string(out), images.CABundle) {
		t.Errorf("running the image's binary: %v: %s", err, out)
	}
}

// TestBuildPath: another project's image (upstream Liqo's, built from its source) carries its
// binary where its chart runs it (/usr/bin/<name>, with the folders above it), as its
// entrypoint, and that project's version and source labels.
func TestBuildPath(t *testing.T) {
	bundle, _ := caBundle(t)
	c := images.Component{Name: "proxy", Path: "/usr/bin/proxy", Version: "v1.2.0", Source: "https://github.com/liqotech/liqo"}
	img := build(t, c, hello, images.Options{CABundle: bundle, Created: created})
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/usr/bin/proxy"}) {
		t.Errorf("entrypoint %q, want /usr/bin/proxy", cfg.Config.Entrypoint)
	}
	if v, src := cfg.Config.Labels["org.opencontainers.image.version"], cfg.Config.Labels["org.opencontainers.image.source"]; v != c.Version || src != c.Source {
		t.Errorf("labels version %q source %q, want %q and %q", v, src, c.Version, c.Source)
	}
	fs := filesystem(t, img)
	for _, dir := range []string{"usr", "usr/bin"} {
		if e, ok := fs[dir]; !ok || e.hdr.Typeflag != tar.TypeDir || e.hdr.Mode != 0o755 {
			t.Errorf("/%s is not a 0755 folder of the image", dir)
		}
	}
	if e, ok := fs["usr/bin/proxy"]; !ok || e.hdr.Typeflag != tar.TypeReg || e.hdr.Mode != 0o755 || len(e.data) == 0 {
		t.Errorf("/usr/bin/proxy is not the image's executable")
	}
	if _, ok := fs["proxy"]; ok {
		t.Errorf("the binary is also at /proxy")
	}
}

// TestBuildRoot: a root component's image runs as 0:0 and shares the base layer with the
// non-root images.
func TestBuildRoot(t *testing.T) {
	bundle, _ := caBundle(t)
	o := images.Options{CABundle: bundle, Created: created}
	root := build(t, images.Component{Name: "liqo-root"}, hello, o)
	nonRoot := build(t, images.Component{Name: "liqo-nonroot", NonRoot: true}, hello, o)
	cfg, err := root.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "0:0" || !slices.Equal(cfg.Config.Entrypoint, []string{"/liqo-root"}) {
		t.Errorf("user %q, entrypoint %q; want 0:0 and /liqo-root", cfg.Config.User, cfg.Config.Entrypoint)
	}
	a, _ := root.Manifest()
	b, _ := nonRoot.Manifest()
	if a.Layers[0].Digest != b.Layers[0].Digest {
		t.Errorf("base layers differ: %s and %s", a.Layers[0].Digest, b.Layers[0].Digest)
	}
}

// TestBuildReproducible: the digest depends on the binary's and the bundle's contents and on
// Created, not on the files' paths or times, nor on when the image is built.
func TestBuildReproducible(t *testing.T) {
	bundle, _ := caBundle(t)
	c := images.Component{Name: "liqo-test", NonRoot: true}
	first := build(t, c, hello, images.Options{CABundle: bundle, Created: created})

	// The same contents elsewhere, with other times.
	exe, err := os.ReadFile(hello)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyBin, copyBundle := filepath.Join(dir, "bin"), filepath.Join(dir, "bundle")
	if err := os.WriteFile(copyBin, exe, 0o700); err != nil {
		t.Fatal(err)
	}
	certs, _ := os.ReadFile(bundle)
	if err := os.WriteFile(copyBundle, certs, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []string{copyBin, copyBundle} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	second := build(t, c, copyBin, images.Options{CABundle: copyBundle, Created: created.Add(500 * time.Millisecond)})
	if a, b := digest(t, first), digest(t, second); a != b {
		t.Errorf("two builds of the same contents: digests %s and %s", a, b)
	}

	if a, b := digest(t, first), digest(t, build(t, c, hello, images.Options{CABundle: bundle, Created: created.Add(time.Hour)})); a == b {
		t.Errorf("another creation time, same digest %s", a)
	}
	if err := os.WriteFile(copyBundle, append(certs, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if a, b := digest(t, first), digest(t, build(t, c, hello, images.Options{CABundle: copyBundle, Created: created})); a == b {
		t.Errorf("another CA bundle, same digest %s", a)
	}

	// An index of both platforms: the same images give the same index, in any order.
	arm := images.Options{CABundle: bundle, Created: created, Platform: v1.Platform{OS: "linux", Architecture: "arm64"}}
	armCopy := filepath.Join(dir, "arm64")
	armExe, err := os.ReadFile(helloARM64)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(armCopy, armExe, 0o700); err != nil {
		t.Fatal(err)
	}
	a, err := images.Index(first, build(t, c, helloARM64, arm))
	if err != nil {
		t.Fatal(err)
	}
	arm.CABundle = bundle
	b, err := images.Index(build(t, c, armCopy, arm), second)
	if err != nil {
		t.Fatal(err)
	}
	if da, db := digest(t, a), digest(t, b); da != db {
		t.Errorf("two indexes of the same images: digests %s and %s", da, db)
	}

	// The zero time is the Unix epoch.
	epoch := build(t, c, hello, images.Options{CABundle: bundle})
	cfg, err := epoch.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("created %v, want the Unix epoch", cfg.Created)
	}
}

// TestBuildRejects: binaries that cannot run on an empty base of the image's platform, other
// platforms, and missing inputs are errors naming the problem.
func TestBuildRejects(t *testing.T) {
	bundle, _ := caBundle(t)
	o := images.Options{CABundle: bundle, Created: created}
	c := images.Component{Name: "liqo-test", NonRoot: true}
	dir := t.TempDir()

	exe, err := os.ReadFile(hello)
	if err != nil {
		t.Fatal(err)
	}
	arm := slices.Clone(exe)
	arm[18], arm[19] = 183, 0 // e_machine: EM_AARCH64
	armBin := filepath.Join(dir, "arm64")
	text := filepath.Join(dir, "script")
	for p, data := range map[string][]byte{armBin: arm, text: []byte("#!/bin/sh\necho hi\n")} {
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, binary string
		o            images.Options
		want         string
	}{
		{"not ELF", text, o, "not an ELF executable"},
		{"arm64", armBin, o, "want amd64"},
		{"missing binary", filepath.Join(dir, "none"), o, "not an ELF executable"},
		{"missing CA bundle", hello, images.Options{CABundle: filepath.Join(dir, "none")}, "CA bundle"},
		{"amd64 as arm64", hello, images.Options{CABundle: bundle, Platform: v1.Platform{OS: "linux", Architecture: "arm64"}}, "want arm64 (GOOS=linux GOARCH=arm64)"},
		{"unsupported platform", hello, images.Options{CABundle: bundle, Platform: v1.Platform{OS: "linux", Architecture: "386"}}, "linux/386 is not supported"},
	}
	// A dynamically linked program of the host's, when there is one.
	for _, p := range []string{"/bin/sh", "/usr/bin/env"} {
		if b, err := os.ReadFile(p); err == nil && runtime.GOARCH == "amd64" && bytes.Contains(b[:min(len(b), 4096)], []byte("ld-linux")) {
			cases = append(cases, struct {
				name, binary string
				o            images.Options
				want         string
			}{"dynamic", p, o, "dynamically linked"})
			break
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := images.Build(t.Context(), c, tc.binary, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "liqo-test") {
				t.Errorf("error %v, want one naming liqo-test and %q", err, tc.want)
			}
		})
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := images.Build(ctx, c, hello, o); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: error %v", err)
	}
}
