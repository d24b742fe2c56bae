package images_test

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/peerkit/terraform-provider-liqo/internal/images"
)

// TestPush: an image pushed to a registry (go-containerregistry's, in process) is pulled back
// by its tag with the same digest and contents.
func TestPush(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // anonymous, whatever the user's Docker config says
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	bundle, _ := caBundle(t)
	c := images.Component{Name: "liqo-test", NonRoot: true}
	img := build(t, c, hello, images.Options{CABundle: bundle, Created: created})
	ref := c.Reference(host + "/peerkit")
	if err := images.Push(t.Context(), ref, img); err != nil {
		t.Fatal(err)
	}

	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(tag, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(pulled); err != nil {
		t.Errorf("the pulled image is invalid: %v", err)
	}
	if got, want := digest(t, pulled), digest(t, img); got != want {
		t.Errorf("pulled %s, pushed %s", got, want)
	}
	cfg, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Labels["org.opencontainers.image.title"] != "liqo-test" || cfg.Config.User != images.NonRootUser {
		t.Errorf("pulled config labels %v, user %q", cfg.Config.Labels, cfg.Config.User)
	}

	if err := images.Push(t.Context(), "not a reference", img); err == nil {
		t.Error("an invalid reference was accepted")
	}
}
