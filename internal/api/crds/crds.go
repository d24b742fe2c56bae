// Package crds embeds the CustomResourceDefinitions generated from our API types (by
// `make generate`) and installs them into a cluster.
package crds

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// All returns our CustomResourceDefinitions, sorted by name.
func All() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing embedded CRDs: %w", err)
	}
	sort.Strings(names)
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading embedded CRD %s: %w", name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("decoding embedded CRD %s: %w", name, err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// Install creates our CRDs in the cluster behind c, or updates those that exist, and waits
// until every one is Established, so that objects of its kind can be created right after.
func Install(ctx context.Context, c client.Client) error {
	all, err := All()
	if err != nil {
		return err
	}
	for _, want := range all {
		if err := apply(ctx, c, want); err != nil {
			return err
		}
	}
	for _, want := range all {
		if err := waitEstablished(ctx, c, want.Name); err != nil {
			return err
		}
	}
	return nil
}

func apply(ctx context.Context, c client.Client, want *apiextensionsv1.CustomResourceDefinition) error {
	var lastErr error
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 6},
		func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			err := c.Get(ctx, client.ObjectKey{Name: want.Name}, got)
			switch {
			case apierrors.IsNotFound(err):
				err = c.Create(ctx, want.DeepCopy())
			case err == nil:
				got.Spec = want.Spec
				got.Labels, got.Annotations = want.Labels, want.Annotations
				err = c.Update(ctx, got)
			}
			if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
				lastErr = err
				return false, nil // raced with another writer: read again
			}
			return err == nil, err //nolint:wrapcheck // wrapped below, with the CRD's name
		})
	if wait.Interrupted(err) && lastErr != nil {
		err = lastErr // gave up racing with other writers: the last conflict says more than "timed out"
	}
	if err != nil {
		return fmt.Errorf("installing CRD %s: %w", want.Name, err)
	}
	return nil
}

// Check verifies that every one of our CRDs exists and is Established in the cluster behind c,
// for a manager that does not install them (someone else does). The error names the first one
// missing and the fix.
func Check(ctx context.Context, c client.Client) error {
	all, err := All()
	if err != nil {
		return err
	}
	for _, want := range all {
		got := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, client.ObjectKey{Name: want.Name}, got)
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("CRD %s is not installed, and this manager does not install CRDs (--manage-crds=false, chart value crds.manage=false): "+
				"install the CRDs of this version (internal/api/crds) or let the manager manage them", want.Name)
		}
		if err != nil {
			return fmt.Errorf("checking that CRD %s is installed: %w", want.Name, err)
		}
		if err := waitEstablished(ctx, c, want.Name); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				last = err.Error()
				return false, nil
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
				if cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse {
					last = cond.Message
				}
			}
			return false, nil
		})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established (last seen: %s): %w", name, last, err)
	}
	return nil
}
