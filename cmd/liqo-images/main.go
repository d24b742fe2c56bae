// Command liqo-images builds the OCI images of the controller manager, the gateway, the
// virtual kubelet and the API-server proxy (internal/images) from their static linux/amd64 binaries, without a container
// daemon. Each image is written to -out as <name>-<version>.tar, an OCI image layout that
// `ctr -n k8s.io images import`, `docker load` and `kind load image-archive` accept, tagged
// ghcr.io/peerkit/<name>:<version> as the chart runs it; with -push <registry>/<repo>, it is
// also pushed as <registry>/<repo>/<name>:<version>. `make images` builds the binaries and runs
// it.
//
// The images' times are $SOURCE_DATE_EPOCH (seconds since the Unix epoch) when set, else the
// Unix epoch: the same binaries and CA bundle give the same digests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/peerkit/terraform-provider-liqo/internal/cli"
	"github.com/peerkit/terraform-provider-liqo/internal/images"
	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

func main() {
	cli.Main("liqo-images", run)
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("liqo-images", flag.ContinueOnError)
	fs.SetOutput(out)
	binDir := fs.String("bin-dir", "", "folder holding the components' static linux/amd64 binaries, named as the images (required)")
	outDir := fs.String("out", filepath.Join("bin", "images"), "folder the image archives are written to")
	push := fs.String("push", "", "registry and repository to push the images to, each as <push>/<name>:"+version.Version+" (such as localhost:5000/liqo); empty: no push")
	bundle := fs.String("ca-bundle", images.CABundle, "CA bundle copied into the images")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: liqo-images -bin-dir <folder> [-out <folder>] [-push <registry>/<repo>]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parsing arguments: %w", err)
	}
	if *binDir == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("want -bin-dir and no arguments")
	}
	created, err := sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	repo := strings.TrimSuffix(*push, "/")
	o := images.Options{CABundle: *bundle, Created: created}

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "IMAGE\tDIGEST\tSIZE\tARCHIVE")
	for _, c := range images.Components {
		img, err := images.Build(ctx, c, filepath.Join(*binDir, c.Name), o)
		if err != nil {
			return err
		}
		ref := c.Reference(version.Registry)
		archive := filepath.Join(*outDir, c.Name+"-"+version.Version+".tar")
		if err := images.WriteArchive(ctx, archive, ref, img); err != nil {
			return err
		}
		digest, err := img.Digest()
		if err != nil {
			return fmt.Errorf("image %s: %w", c.Name, err)
		}
		size, err := imageSize(img)
		if err != nil {
			return fmt.Errorf("image %s: %w", c.Name, err)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%.1f MiB\t%s\n", ref, digest, float64(size)/(1<<20), archive)
		if repo != "" {
			target := c.Reference(repo)
			if err := images.Push(ctx, target, img); err != nil {
				return err
			}
			_, _ = fmt.Fprintf(tw, "%s\t%s\tpushed\t\n", target, digest)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the summary: %w", err)
	}
	return nil
}

// sourceDateEpoch is the time of $SOURCE_DATE_EPOCH, s; empty: the Unix epoch.
func sourceDateEpoch(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q is not a number of seconds since the Unix epoch", s)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// imageSize is what a registry stores of img: its manifest, config and compressed layers.
func imageSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, fmt.Errorf("reading the manifest: %w", err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, fmt.Errorf("reading the manifest: %w", err)
	}
	size := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size, nil
}
