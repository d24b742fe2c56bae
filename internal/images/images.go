// Package images builds the OCI images of this project's components without a container
// daemon (with go-containerregistry): each is a static Linux binary on an empty base, plus a CA
// bundle and minimal /etc/passwd and /etc/group, for linux/amd64 or linux/arm64; Index joins one
// component's images of several platforms into an OCI image index. The images are reproducible:
// the same binaries and CA bundle give the same digests (fixed timestamps, owners and modes,
// sorted tar entries). WriteArchive saves an image or index as a tarball that `ctr images
// import`, `docker load` and `kind load image-archive` accept; Push publishes it to a registry.
// PackageChart packages the chart as `helm package` does, and ChartArtifact makes it the OCI
// artifact `helm push` would push.
package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/peerkit/terraform-provider-liqo/internal/version"
)

// Source is the project's source repository, the images' org.opencontainers.image.source label.
const Source = "https://github.com/peerkit/terraform-provider-liqo"

// CABundle is where the images carry the CA bundle (SSL_CERT_FILE points at it), and the
// default bundle copied into them from the build host.
const CABundle = "/etc/ssl/certs/ca-certificates.crt"

// NonRootUser is the user ("uid:gid", numeric so that Kubernetes can check runAsNonRoot) that
// non-root components run as; /etc/passwd names it nonroot.
const NonRootUser = "65532:65532"

const (
	nonRootID = 65532
	// rootUser is the user of the components that run as root.
	rootUser = "0:0"
	// pathEnv is the images' PATH: the usual one, for whatever a base image may add later.
	pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// Component is one of the project's images: the binary of one command.
type Component struct {
	// Name is the image's name (the last element of its repository) and its binary's: the
	// image's entrypoint is /<Name>.
	Name string
	// NonRoot runs the binary as NonRootUser; otherwise as root.
	NonRoot bool
	// Path is where the binary is in the image, its entrypoint; empty: /<Name>. Another
	// project's images built from its source (upstream Liqo's put theirs in /usr/bin, where its
	// chart's commands name them) set it.
	Path string
	// Version and Source are the image's org.opencontainers.image.version and .source labels;
	// empty: this project's version (version.Version) and Source.
	Version, Source string
}

// Components are the project's images, in the order they are built.
//
// The gateway runs as root: it creates the WireGuard interface (/dev/net/tun), routes and
// nftables rules (through netlink: the image needs no other binary), and its Deployment grants it NET_ADMIN (internal/gateway/workload). So
// does the fabric agent (links, routes, rules and nftables rules of the node, through netlink;
// the chart's DaemonSet grants it NET_ADMIN and NET_RAW). The controller
// manager, the virtual kubelet and the API-server proxy run as NonRootUser (the chart and the
// virtual kubelet's Deployment set runAsNonRoot).
var Components = []Component{
	{Name: "liqo-controller-manager", NonRoot: true},
	{Name: "liqo-gateway", NonRoot: false},
	{Name: "liqo-virtual-kubelet", NonRoot: true},
	{Name: "liqo-proxy", NonRoot: true},
	{Name: "liqo-fabric", NonRoot: false},
}

// Reference is c's image in repository repo (such as version.Registry, or a registry and path
// of one's own: "localhost:5000/liqo"), tagged with the project's version.
func (c Component) Reference(repo string) string {
	return repo + "/" + c.Name + ":" + version.Version
}

// path is the binary's absolute path in c's image.
func (c Component) path() string {
	if c.Path != "" {
		return c.Path
	}
	return "/" + c.Name
}

// labels are c's image's OCI labels.
func (c Component) labels() map[string]string {
	l := map[string]string{"org.opencontainers.image.version": version.Version, "org.opencontainers.image.source": Source,
		"org.opencontainers.image.title": c.Name}
	if c.Version != "" {
		l["org.opencontainers.image.version"] = c.Version
	}
	if c.Source != "" {
		l["org.opencontainers.image.source"] = c.Source
	}
	return l
}

// binaryFiles are the binary layer's entries: the folders above c's path, then the binary.
func (c Component) binaryFiles(exe []byte) []file {
	var files []file
	rel := strings.TrimPrefix(c.path(), "/")
	for i, r := range rel {
		if r == '/' {
			files = append(files, file{name: rel[:i+1], mode: 0o755})
		}
	}
	return append(files, file{name: rel, mode: 0o755, data: exe})
}

// user is the "uid:gid" c runs as.
func (c Component) user() string {
	if c.NonRoot {
		return NonRootUser
	}
	return rootUser
}

// Options are what the images of one build share.
type Options struct {
	// CABundle is the CA bundle on the build host copied into the images; empty: the constant
	// CABundle.
	CABundle string
	// Created is the images' creation time and the modification time of their files; the zero
	// value is the Unix epoch. A constant (such as $SOURCE_DATE_EPOCH) keeps them reproducible.
	Created time.Time
	// Platform is the image's platform, which its binary must be built for (Platforms lists
	// those supported); the zero value is linux/amd64.
	Platform v1.Platform
}

func (o Options) platform() v1.Platform {
	if o.Platform.OS == "" && o.Platform.Architecture == "" {
		return v1.Platform{OS: "linux", Architecture: "amd64"}
	}
	return o.Platform
}

func (o Options) created() time.Time {
	if o.Created.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return o.Created.UTC().Truncate(time.Second)
}

// Build builds c's image from its binary, a static executable for o's platform: two layers, the
// base files (CA bundle, /etc/passwd, /etc/group, /tmp, the non-root user's home), identical in
// every image, and the binary at c's path (/<Name> for ours); the binary as the entrypoint,
// SSL_CERT_FILE, c's user, and the OCI labels version, source and title.
func Build(ctx context.Context, c Component, binary string, o Options) (v1.Image, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	platform := o.platform()
	if err := checkStatic(binary, platform); err != nil {
		return nil, fmt.Errorf("image %s: %w", c.Name, err)
	}
	bundle := o.CABundle
	if bundle == "" {
		bundle = CABundle
	}
	certs, err := os.ReadFile(bundle)
	if err != nil {
		return nil, fmt.Errorf("image %s: reading the CA bundle: %w", c.Name, err)
	}
	exe, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("image %s: reading the binary: %w", c.Name, err)
	}
	created := o.created()
	base, err := layer(baseFiles(certs), created)
	if err != nil {
		return nil, fmt.Errorf("image %s: base layer: %w", c.Name, err)
	}
	bin, err := layer(c.binaryFiles(exe), created)
	if err != nil {
		return nil, fmt.Errorf("image %s: binary layer: %w", c.Name, err)
	}

	cfg := &v1.ConfigFile{
		Architecture: platform.Architecture,
		OS:           platform.OS,
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			Entrypoint: []string{c.path()},
			Env:        []string{pathEnv, "SSL_CERT_FILE=" + CABundle},
			User:       c.user(),
			WorkingDir: "/",
			Labels:     c.labels(),
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", c.Name, err)
	}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: cfg.Created, CreatedBy: "liqo-images: CA bundle, /etc/passwd, /etc/group"}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: cfg.Created, CreatedBy: "liqo-images: " + c.path()}})
	if err != nil {
		return nil, fmt.Errorf("image %s: adding layers: %w", c.Name, err)
	}
	// Computing the digest now reports a broken image here rather than when it is written.
	if _, err := img.Digest(); err != nil {
		return nil, fmt.Errorf("image %s: digest: %w", c.Name, err)
	}
	return img, nil
}

// checkStatic fails unless path is an ELF executable for p without a dynamic loader or shared
// libraries: on an empty base, nothing else runs.
func checkStatic(path string, p v1.Platform) error {
	machine, ok := machines[p.String()]
	if !ok {
		return fmt.Errorf("platform %s is not supported (want one of %s)", p, supported())
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	if f.Machine != machine || f.Class != elf.ELFCLASS64 {
		return fmt.Errorf("%s is for %s, %s; want %s (GOOS=%s GOARCH=%s)", path, f.Machine, f.Class, p.Architecture, p.OS, p.Architecture)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%s is a %s, not an executable", path, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (build it with CGO_ENABLED=0)", path)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("reading the libraries %s needs: %w", path, err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("%s needs shared libraries %v (build it with CGO_ENABLED=0)", path, libs)
	}
	return nil
}

// file is one entry of a layer: a directory when its name ends with "/".
type file struct {
	name     string
	mode     int64
	uid, gid int
	data     []byte
}

// baseFiles are the base layer's entries, sorted by name.
func baseFiles(certs []byte) []file {
	const (
		passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
		group = "root:x:0:\nnonroot:x:65532:\n"
	)
	return []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: CABundle[1:], mode: 0o644, data: certs},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: nonRootID, gid: nonRootID},
		{name: "tmp/", mode: 0o1777},
	}
}

// layer is a gzip-compressed OCI layer of files, in their order, with every header field fixed
// but the name, mode, owner and size: its digest depends on the files' contents only.
func layer(files []file, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.name,
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if f.name[len(f.name)-1] == '/' {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer: %w", err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("compressing the layer: %w", err)
	}
	return l, nil
}
