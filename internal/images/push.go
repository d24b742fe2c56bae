package images

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push pushes a, an image (v1.Image: a component's image of one platform, or ChartArtifact's
// chart) or an image index (v1.ImageIndex: Index's images of several platforms, each pushed
// too), to ref (registry, repository and tag), with the credentials of the Docker config
// (~/.docker/config.json, $DOCKER_CONFIG; anonymous without). Registries on localhost, loopback
// and private addresses are reached over plain HTTP, others over HTTPS.
func Push(ctx context.Context, ref string, a remote.Taggable) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("pushing to %q: %w", ref, err)
	}
	if err := remote.Push(tag, a, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}
