package release

import (
	"bytes"
	"crypto"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// TestZipIsReproducible: the same binary gives the same zip whatever its file's modification
// time, and the zip holds it under its name, executable.
func TestZipIsReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, BinaryName("1.2.3", "linux"))
	if err := os.WriteFile(bin, []byte("provider"), 0o600); err != nil {
		t.Fatal(err)
	}
	var sums []string
	for i, mtime := range []time.Time{time.Now(), time.Now().Add(-time.Hour)} {
		if err := os.Chtimes(bin, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		zip := filepath.Join(dir, "r"+string(rune('0'+i))+".zip")
		if err := WriteZip(zip, bin); err != nil {
			t.Fatal(err)
		}
		sum, err := FileSHA256(zip)
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sum)
	}
	if sums[0] != sums[1] {
		t.Errorf("two zips of the same binary differ: %s, %s", sums[0], sums[1])
	}
	if got := BinaryName("1.2.3", "windows"); got != "terraform-provider-liqo_v1.2.3.exe" {
		t.Errorf("windows binary name %q", got)
	}
}

// TestSignatureVerifies: the detached signature of the checksums verifies with the public key a
// registry hands out, and not once the checksums change.
func TestSignatureVerifies(t *testing.T) {
	key, err := NewThrowawayKey("test")
	if err != nil {
		t.Fatal(err)
	}
	sums := []byte("00  terraform-provider-liqo_1.2.3_linux_amd64.zip\n")
	sig, err := Sign(key, sums)
	if err != nil {
		t.Fatal(err)
	}
	armored, keyID, err := PublicKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(armored))
	if err != nil {
		t.Fatal(err)
	}
	if len(ring) != 1 || ring[0].PrivateKey != nil || len(keyID) != 16 {
		t.Fatalf("public key: %d entities, private part %v, key ID %q", len(ring), ring[0].PrivateKey != nil, keyID)
	}
	if _, err := openpgp.CheckDetachedSignature(ring, bytes.NewReader(sums), bytes.NewReader(sig), nil); err != nil {
		t.Errorf("signature does not verify: %v", err)
	}
	if _, err := openpgp.CheckDetachedSignature(ring, strings.NewReader("11"+string(sums[2:])), bytes.NewReader(sig), nil); err == nil {
		t.Error("signature verifies changed checksums")
	}
}

// TestReadKeyErrors: a public key, an encrypted key without or with a wrong passphrase and a
// missing key are refused, saying what to give.
func TestReadKeyErrors(t *testing.T) {
	key, err := NewThrowawayKey("test")
	if err != nil {
		t.Fatal(err)
	}
	public, _, err := PublicKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := key.EncryptPrivateKeys([]byte("secret"), &packet.Config{DefaultHash: crypto.SHA256}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := key.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, armored, passphrase, want string
	}{
		{"public key", public, "", "this is a public key"},
		{"no passphrase", b.String(), "", "set GPG_PASSPHRASE"},
		{"wrong passphrase", b.String(), "other", "wrong passphrase"},
		{"not a key", "hello", "", "not an armored OpenPGP key"},
	} {
		if _, err := ReadKey([]byte(c.armored), []byte(c.passphrase)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error saying %q, got %v", c.name, c.want, err)
		}
	}
	if _, err := ReadKey(b.Bytes(), []byte("secret")); err != nil {
		t.Errorf("encrypted key with its passphrase: %v", err)
	}
	if _, err := Make(t.Context(), Options{Version: "v1", Source: ".", Out: t.TempDir(), Manifest: "m"}); err == nil ||
		!strings.Contains(err.Error(), "no signing key") || !strings.Contains(err.Error(), "VERSION=x.y.z") {
		t.Errorf("Make without a key and with version v1: %v", err)
	}
}

// TestProviderBuildsForEveryTarget: the provider's main package links none of the gateway's
// Linux data plane (nftables, netlink), which does not compile for darwin, windows or freebsd.
// It reads the import graph only (go list), without cross-compiling.
func TestProviderBuildsForEveryTarget(t *testing.T) {
	linuxOnly := []string{"github.com/google/nftables", "github.com/vishvananda/netlink",
		"github.com/peerkit/terraform-provider-liqo/gateway/agent", "github.com/peerkit/terraform-provider-liqo/gateway/netcfg"}
	seen := map[string]bool{}
	for _, target := range Targets {
		if target.OS == "linux" || seen[target.OS] {
			continue
		}
		seen[target.OS] = true
		cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", ".")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "GOOS="+target.OS, "GOARCH="+target.Arch, "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list for %s: %v", target, err)
		}
		for pkg := range strings.Lines(string(out)) {
			for _, bad := range linuxOnly {
				if pkg = strings.TrimSpace(pkg); pkg == bad || strings.HasPrefix(pkg, bad+"/") {
					t.Errorf("the provider links %s, which does not build for %s: name gateway ends through internal/gateway/mode", pkg, target)
				}
			}
		}
	}
}
