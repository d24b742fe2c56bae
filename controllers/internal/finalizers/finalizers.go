// Package finalizers holds and releases the objects the controllers clean up after: it adds or
// removes a controller's finalizer and writes the object when that changed it.
package finalizers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Add puts finalizer on obj and updates obj, unless it carries it already. what names obj's
// kind in the error, e.g. "tenant".
func Add(ctx context.Context, c client.Writer, obj client.Object, finalizer, what string) error {
	return updateIf(ctx, c, obj, controllerutil.AddFinalizer(obj, finalizer), "adding finalizer to", what)
}

// Remove takes finalizer off obj and updates obj, releasing it, unless it does not carry it.
// what names obj's kind in the error, e.g. "tenant".
func Remove(ctx context.Context, c client.Writer, obj client.Object, finalizer, what string) error {
	return updateIf(ctx, c, obj, controllerutil.RemoveFinalizer(obj, finalizer), "releasing", what)
}

// updateIf updates obj when its finalizers changed; the error says what it was doing to obj,
// an object of kind what.
func updateIf(ctx context.Context, c client.Writer, obj client.Object, changed bool, doing, what string) error {
	if !changed {
		return nil
	}
	if err := c.Update(ctx, obj); err != nil {
		return fmt.Errorf("%s %s %s: %w", doing, what, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
