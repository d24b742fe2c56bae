// Command liqo-release makes a release of the provider in the layout the Terraform provider
// registry protocol expects (internal/release): per-platform zips, the registry manifest, the
// SHA256SUMS file and its detached OpenPGP signature. `make release VERSION=x.y.z` runs it.
//
// The signing key is an armored OpenPGP private key, read from the file -key-file or else from
// the environment variable GPG_PRIVATE_KEY; GPG_PASSPHRASE unlocks it when it is encrypted.
// -throwaway-key signs with a new key instead (for trials: no registry should trust it) and
// writes its public key beside the release.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/peerkit/terraform-provider-liqo/internal/cli"
	"github.com/peerkit/terraform-provider-liqo/internal/release"
	productversion "github.com/peerkit/terraform-provider-liqo/internal/version"
)

// The environment variables holding the signing key and its passphrase.
const (
	keyEnv        = "GPG_PRIVATE_KEY"
	passphraseEnv = "GPG_PASSPHRASE" //nolint:gosec // the variable's name, not a credential
)

func main() {
	cli.Main("liqo-release", run)
}

// run parses args and makes the release.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("liqo-release", flag.ContinueOnError)
	version := fs.String("version", "", "release version, x.y.z without a leading v (required)")
	out := fs.String("out", "dist", "folder the release files are written to")
	source := fs.String("source", ".", "folder of the provider's main package (the module root)")
	manifest := fs.String("manifest", "terraform-registry-manifest.json", "the registry manifest to publish")
	targets := fs.String("targets", "", "comma-separated os/arch platforms to build (default: all of the release's)")
	keyFile := fs.String("key-file", "", "file of the armored OpenPGP private signing key (default: $"+keyEnv+")")
	throwaway := fs.Bool("throwaway-key", false, "sign with a new throwaway key (trials only) and write its public key beside the release")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("liqo-release: %w", err)
	}
	if err := checkVersion(*version); err != nil {
		return err
	}
	opts := release.Options{Version: *version, Source: *source, Out: *out, Manifest: *manifest}
	if *targets != "" {
		t, err := release.ParseTargets(*targets)
		if err != nil {
			return err
		}
		opts.Targets = t
	}
	key, err := signingKey(*keyFile, *throwaway)
	if err != nil {
		return err
	}
	opts.Key = key
	files, err := release.Make(ctx, opts)
	if err != nil {
		return err
	}
	if *throwaway {
		if err := writePublicKey(key, filepath.Join(*out, release.Name+"_"+*version+"_throwaway_key.asc"), stdout); err != nil {
			return err
		}
	}
	for _, f := range append(files.Zips, files.Manifest, files.Sums, files.Signature) {
		_, _ = fmt.Fprintln(stdout, filepath.Join(*out, f))
	}
	return nil
}

// checkVersion refuses a release version other than the one the components, their images and
// the chart carry (internal/version, which deploy/liqo/Chart.yaml must match): a release's
// provider, images and chart share one version.
func checkVersion(v string) error {
	if v != "" && v != productversion.Version {
		return fmt.Errorf("liqo-release: -version %s differs from %s, the version the images and the chart carry "+
			"(internal/version.Version and deploy/liqo/Chart.yaml's version and appVersion): a release's provider, images and "+
			"chart share one version; set those to %s and commit first, or release %s", v, productversion.Version, v, productversion.Version)
	}
	return nil
}

// signingKey returns the key to sign with: a throwaway one, the one in keyFile, or the one in
// the environment.
func signingKey(keyFile string, throwaway bool) (*openpgp.Entity, error) {
	if throwaway {
		return release.NewThrowawayKey("liqo-release throwaway")
	}
	passphrase := []byte(os.Getenv(passphraseEnv))
	if keyFile != "" {
		armored, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("signing key: %w", err)
		}
		return release.ReadKey(armored, passphrase)
	}
	if armored := os.Getenv(keyEnv); armored != "" {
		return release.ReadKey([]byte(armored), passphrase)
	}
	return nil, errors.New("no signing key: set " + keyEnv + " to an armored OpenPGP private key " +
		"(gpg --armor --export-secret-keys ID) and " + passphraseEnv + " to its passphrase if it has one, " +
		"or give -key-file (make release KEY_FILE=...); for a trial only, -throwaway-key (make release THROWAWAY_KEY=1)")
}

// writePublicKey writes key's armored public key to path and says so.
func writePublicKey(key *openpgp.Entity, path string, stdout io.Writer) error {
	armored, id, err := release.PublicKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(armored), 0o644); err != nil {
		return fmt.Errorf("throwaway public key: %w", err)
	}
	_, _ = fmt.Fprintf(stdout, "signed with throwaway key %s (public key: %s); do not publish this release\n", id, path)
	return nil
}
