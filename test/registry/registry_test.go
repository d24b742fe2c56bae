// Package registry_test proves that Terraform installs the provider's release (internal/release,
// `make release`) as it installs any provider from a registry: an HTTPS server with a test CA
// speaks the provider registry protocol over the release folder, and the real terraform init
// downloads the package, checks its checksum and signature, and plans; a tampered zip and a
// signature by another key are refused; and `terraform providers mirror` makes a folder that
// installs the provider with the registry gone.
package registry_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/peerkit/terraform-provider-liqo/internal/pki"
	"github.com/peerkit/terraform-provider-liqo/internal/release"
	"github.com/peerkit/terraform-provider-liqo/internal/test/testenv"
)

// version is the release's version in the test.
const version = "0.0.1"

// config calls a provider function, which plans without a cluster; wantKey is its result.
const (
	config = `terraform {
  required_providers {
    liqo = { source = "%s/%s/liqo" }
  }
}

output "public_key" {
  value = provider::liqo::wireguard_public_key("YFnVJbOhOlRaqDEyg7yOSo5fKPbCQ9RYXuIdYjyGLmo=")
}
`
	wantKey = "PcoRfoRt4C0tBDowW2H6PoYvAu0z/in7el/5EHaBLQo="
)

func TestTerraformInstallsTheRelease(t *testing.T) {
	testenv.RequireLong(t, "builds and runs binaries")
	ctx := t.Context()
	host := []release.Target{{OS: runtime.GOOS, Arch: runtime.GOARCH}}
	key, err := release.NewThrowawayKey("registry test")
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	start := time.Now()
	if _, err := release.Make(ctx, release.Options{Version: version, Source: filepath.Join("..", ".."), Out: dist,
		Targets: host, Manifest: filepath.Join("..", "..", "terraform-registry-manifest.json"), Key: key}); err != nil {
		t.Fatal(err)
	}
	t.Logf("release built in %s", time.Since(start).Round(time.Millisecond))
	armored, keyID, err := release.PublicKey(key)
	if err != nil {
		t.Fatal(err)
	}
	good := publication{dir: dist, version: version, targets: host, keyArmor: armored, keyID: keyID}
	reg := &registry{pubs: map[string]publication{
		"peerkit":  good,
		"tampered": tampered(t, good),
		"wrongsig": wronglySigned(t, good),
	}}
	addr, caFile, stop := serve(t, reg)
	tf := newTerraform(t, caFile)

	dir := tf.config(t, addr, "peerkit")
	out := tf.must(t, dir, "init", "-input=false")
	if !strings.Contains(out, "key ID "+keyID) {
		t.Errorf("terraform init did not report the signing key %s:\n%s", keyID, out)
	}
	if out := tf.must(t, dir, "plan", "-input=false"); !strings.Contains(out, wantKey) {
		t.Errorf("terraform plan did not show the function's result %s:\n%s", wantKey, out)
	}

	tf.mustFail(t, tf.config(t, addr, "tampered"), "archive has incorrect checksum", "init", "-input=false")
	tf.mustFail(t, tf.config(t, addr, "wrongsig"), "authentication signature from unknown issuer", "init", "-input=false")

	mirror := t.TempDir()
	tf.must(t, dir, "providers", "mirror", "-platform="+host[0].OS+"_"+host[0].Arch, mirror)
	stop()
	tf.rc(t, `provider_installation {
  filesystem_mirror {
    path = "`+mirror+`"
  }
}
`)
	offline := tf.config(t, addr, "peerkit")
	tf.must(t, offline, "init", "-input=false")
	if out := tf.must(t, offline, "plan", "-input=false"); !strings.Contains(out, wantKey) {
		t.Errorf("terraform plan from the mirror did not show the function's result %s:\n%s", wantKey, out)
	}
}

// tampered copies pub's release with one byte of its zip changed after the checksums were made.
func tampered(t *testing.T, pub publication) publication {
	t.Helper()
	pub.dir = copyRelease(t, pub.dir)
	zip := filepath.Join(pub.dir, release.FileNames(pub.version, pub.targets).Zips[0])
	data, err := os.ReadFile(zip)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(zip, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return pub
}

// wronglySigned copies pub's release with its checksums signed by another key than the one the
// registry hands out.
func wronglySigned(t *testing.T, pub publication) publication {
	t.Helper()
	pub.dir = copyRelease(t, pub.dir)
	other, err := release.NewThrowawayKey("another key")
	if err != nil {
		t.Fatal(err)
	}
	files := release.FileNames(pub.version, pub.targets)
	sums, err := os.ReadFile(filepath.Join(pub.dir, files.Sums))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := release.Sign(other, sums)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pub.dir, files.Signature), sig, 0o644); err != nil {
		t.Fatal(err)
	}
	return pub
}

// copyRelease copies the files of a release folder into a new one.
func copyRelease(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// serve starts reg on HTTPS at localhost with a certificate of a new test CA; it returns the
// host:port, the CA's PEM file and a function that stops the server (also run at cleanup).
func serve(t *testing.T, reg *registry) (string, string, func()) {
	t.Helper()
	ca, err := pki.NewCA("registry test CA", time.Hour, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(pki.Template{Subject: pkix.Name{CommonName: "localhost"}, Usage: pki.Serving, Hosts: []string{"localhost"}, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := cert.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cert.CertPEM(), keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(reg)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	addr := "localhost:" + port
	reg.base = "https://" + addr
	return addr, caFile, srv.Close
}

// terraform runs the terraform on PATH with its own CLI configuration, trusting the test CA.
type terraform struct {
	bin, rcFile string
	env         []string
}

// newTerraform finds terraform and gives it an empty CLI configuration (no dev_overrides).
func newTerraform(t *testing.T, caFile string) *terraform {
	t.Helper()
	bin, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal("terraform is not on PATH: install Terraform >= 1.11")
	}
	tf := &terraform{bin: bin, rcFile: filepath.Join(t.TempDir(), "terraformrc")}
	tf.rc(t, "")
	tf.env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+tf.rcFile, "SSL_CERT_FILE="+caFile,
		"TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_PLUGIN_CACHE_DIR=", "TF_DATA_DIR=", "TF_CLI_ARGS=")
	return tf
}

// rc writes the CLI configuration.
func (tf *terraform) rc(t *testing.T, content string) {
	t.Helper()
	if err := os.WriteFile(tf.rcFile, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// config writes a configuration requiring the provider from addr/namespace into a new folder.
func (tf *terraform) config(t *testing.T, addr, namespace string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), fmt.Appendf(nil, config, addr, namespace), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run runs terraform in dir, returning its output and exit code.
func (tf *terraform) run(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	// -no-color goes after the command's name: one word, or two for `providers mirror`.
	name := 1
	if args[0] == "providers" {
		name = 2
	}
	cmd := exec.CommandContext(t.Context(), tf.bin, append(args[:name:name], append([]string{"-no-color"}, args[name:]...)...)...)
	cmd.Dir, cmd.Env = dir, tf.env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("terraform %s: %v", args[0], err)
	}
	return string(out), 0
}

// must runs terraform and fails the test unless it succeeds.
func (tf *terraform) must(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, code := tf.run(t, dir, args...)
	if code != 0 {
		t.Fatalf("terraform %s exited %d:\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// mustFail runs terraform and fails the test unless it fails with a message containing want.
func (tf *terraform) mustFail(t *testing.T, dir, want string, args ...string) {
	t.Helper()
	out, code := tf.run(t, dir, args...)
	// terraform wraps its messages: compare with every run of white space folded into one space.
	if code == 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
		t.Fatalf("terraform %s: want a failure saying %q, got exit %d:\n%s", strings.Join(args, " "), want, code, out)
	}
	t.Logf("terraform %s refused as expected:\n%s", strings.Join(args, " "), out)
}
