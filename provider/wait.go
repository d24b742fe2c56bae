package provider

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// deleteAndWait deletes obj (foreground: its dependents first) and waits until it is gone.
// The error names the object, the cluster and what was last seen.
func deleteAndWait(ctx context.Context, c *clusterClient, obj client.Object, timeout time.Duration) error {
	kind := kindOf(c, obj)
	ref := objectID("", obj.GetNamespace(), obj.GetName())
	err := c.ctrl.Delete(ctx, obj, client.PropagationPolicy("Foreground"))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s %s in %s: %w", kind, ref, c.describe(), err)
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		cur := obj.DeepCopyObject().(client.Object)
		err := c.ctrl.Get(ctx, client.ObjectKeyFromObject(obj), cur)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			if last == "" { // a read error does not hide what was last seen of the object
				last = err.Error()
			}
			return false, nil
		}
		last = fmt.Sprintf("still present, finalizers %v", cur.GetFinalizers())
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s %s in %s to be deleted (last seen: %s): %w; raise timeouts.delete or look at what holds it",
			kind, ref, c.describe(), last, err)
	}
	return nil
}
