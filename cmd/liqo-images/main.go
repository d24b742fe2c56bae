// Command liqo-images builds the OCI images of the controller manager, the gateway, the
// virtual kubelet, the API-server proxy and the fabric agent (internal/images) from their static
// Linux binaries, without a container daemon, for the platforms of -platforms (by default the
// host's linux platform; with several, each image is an OCI image index of one image per
// platform). Each image is written to -out as <name>-<version>.tar, an OCI image layout that
// `ctr -n k8s.io images import`, `docker load` and `kind load image-archive` accept, tagged
// ghcr.io/peerkit/<name>:<version> as the chart runs it; with -push <registry>/<repo>, it is
// also pushed as <registry>/<repo>/<name>:<version>. With -chart, the chart is packaged as
// `helm package` does into -out and, with -push, pushed as Helm's OCI artifact
// <registry>/<repo>/<chart>:<chart version>, its images those pushed beside it. `make images`
// builds the binaries and runs it.
//
// The images' and the chart's times are $SOURCE_DATE_EPOCH (seconds since the Unix epoch) when
// set, else the Unix epoch: the same binaries, CA bundle and chart give the same digests.
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
	"github.com/google/go-containerregistry/pkg/v1/partial"

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
	binDir := fs.String("bin-dir", "", "folder holding, for each platform, a folder <os>_<arch> of the components' static binaries, named as the images (required)")
	platforms := fs.String("platforms", images.HostPlatform().String(), "comma-separated platforms of the images: linux/amd64, linux/arm64; several make each image an OCI image index")
	outDir := fs.String("out", filepath.Join("bin", "images"), "folder the image archives (and the chart) are written to")
	push := fs.String("push", "", "registry and repository to push the images (and the chart) to, each as <push>/<name>:"+version.Version+" (such as localhost:5000/liqo); empty: no push")
	chartDir := fs.String("chart", "", "chart folder to package as <name>-<version>.tgz into -out and push as <push>/<name>:<version> (its images those of -push); empty: none")
	bundle := fs.String("ca-bundle", images.CABundle, "CA bundle copied into the images")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: liqo-images -bin-dir <folder> [-platforms <os/arch,...>] [-out <folder>] [-chart <folder>] [-push <registry>/<repo>]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parsing arguments: %w", err)
	}
	if *binDir == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("want -bin-dir and no arguments")
	}
	plats, err := images.ParsePlatforms(*platforms)
	if err != nil {
		return fmt.Errorf("-platforms: %w", err)
	}
	created, err := sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return err
	}
	repo := strings.TrimSuffix(*push, "/")

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "IMAGE\tDIGEST\tSIZE\tARCHIVE")
	for _, c := range images.Components {
		a, size, err := buildComponent(ctx, c, *binDir, plats, images.Options{CABundle: *bundle, Created: created})
		if err != nil {
			return err
		}
		if err := publish(ctx, tw, c.Reference(version.Registry), c.Reference(repo), repo != "", a, size,
			filepath.Join(*outDir, c.Name+"-"+version.Version+".tar")); err != nil {
			return err
		}
	}
	if *chartDir != "" {
		if err := publishChart(ctx, tw, *chartDir, *outDir, repo, created); err != nil {
			return err
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the summary: %w", err)
	}
	return nil
}

// artifact is an image, an image index or a chart.
type artifact interface {
	partial.Describable
	RawManifest() ([]byte, error)
}

// buildComponent builds c's image of each platform from <binDir>/<os>_<arch>/<name>: with one
// platform, that image; with several, their index. It returns it with its size.
func buildComponent(ctx context.Context, c images.Component, binDir string, plats []v1.Platform, o images.Options) (artifact, int64, error) {
	var (
		imgs []v1.Image
		size int64
	)
	for _, p := range plats {
		o.Platform = p
		img, err := images.Build(ctx, c, filepath.Join(binDir, images.PlatformDir(p), c.Name), o)
		if err != nil {
			return nil, 0, err
		}
		s, err := imageSize(img)
		if err != nil {
			return nil, 0, fmt.Errorf("image %s: %w", c.Name, err)
		}
		imgs, size = append(imgs, img), size+s
	}
	if len(imgs) == 1 {
		return imgs[0], size, nil
	}
	idx, err := images.Index(imgs...)
	if err != nil {
		return nil, 0, fmt.Errorf("image %s: %w", c.Name, err)
	}
	return idx, size, nil
}

// publish writes a (tagged ref) to archive, when not empty, pushes it to target when push, and
// reports both in tw.
func publish(ctx context.Context, tw io.Writer, ref, target string, push bool, a artifact, size int64, archive string) error {
	digest, err := a.Digest()
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	if archive != "" {
		if err := images.WriteArchive(ctx, archive, ref, a); err != nil {
			return err
		}
	}
	_, _ = fmt.Fprintf(tw, "%s\t%s\t%.1f MiB\t%s\n", ref, digest, float64(size)/(1<<20), archive)
	if push {
		if err := images.Push(ctx, target, a); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\tpushed\t\n", target, digest)
	}
	return nil
}

// publishChart packages the chart in dir into outDir and, with repo, pushes it there.
func publishChart(ctx context.Context, tw io.Writer, dir, outDir, repo string, created time.Time) error {
	ch, err := images.PackageChart(dir, images.ChartOptions{ImageRepo: repo, Created: created})
	if err != nil {
		return err
	}
	path := filepath.Join(outDir, ch.FileName())
	if err := os.MkdirAll(outDir, 0o750); err != nil {
		return fmt.Errorf("chart %s: %w", ch.Name, err)
	}
	if err := os.WriteFile(path, ch.Archive, 0o644); err != nil {
		return fmt.Errorf("chart %s: %w", ch.Name, err)
	}
	_, _ = fmt.Fprintf(tw, "chart %s %s\t\t%.1f KiB\t%s\n", ch.Name, ch.Version, float64(len(ch.Archive))/(1<<10), path)
	if repo == "" {
		return nil
	}
	a, err := images.ChartArtifact(ch, created)
	if err != nil {
		return err
	}
	return publish(ctx, tw, ch.Reference(repo), ch.Reference(repo), true, a, int64(len(ch.Archive)), "")
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
