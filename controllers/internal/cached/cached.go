// Package cached holds what the controllers do through their manager's cache first, so that a
// reconcile that finds nothing to do asks its API server nothing.
package cached

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeleteIfPresent deletes obj (its name and namespace are read) when the client's reader, the
// manager's cache, holds it, and reports whether it did: a controller that reconciles often an
// object whose dependent is usually gone (a virtual node's InternalNode, an unaccepted slice's
// VirtualNode) then sends no DELETE that would find nothing. An object the cache has not seen
// yet is deleted by a later reconcile, when its creation reaches the cache.
func DeleteIfPresent(ctx context.Context, c client.Client, obj client.Object) (bool, error) {
	switch err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("deleting %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return true, nil
}
