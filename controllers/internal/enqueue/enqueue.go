// Package enqueue maps a watched object to the reconcile requests of the objects a controller
// reconciles, for the controllers' watches.
package enqueue

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Listed returns an event handler that maps an event about any object o to the objects of type
// T listed into newList() (with the options opts(o); opts may be nil) that keep(o, item)
// accepts (keep may be nil: every one). A list that fails maps to nothing.
func Listed[T client.Object](c client.Reader, newList func() client.ObjectList,
	opts func(o client.Object) []client.ListOption, keep func(o client.Object, item T) bool,
) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := newList()
		var options []client.ListOption
		if opts != nil {
			options = opts(o)
		}
		if err := c.List(ctx, list, options...); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		_ = meta.EachListItem(list, func(obj runtime.Object) error {
			if item, ok := obj.(T); ok && (keep == nil || keep(o, item)) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(item)})
			}
			return nil
		})
		return reqs
	})
}

// InNamespaceOf is list options for Listed: the namespace of the event's object, and more.
func InNamespaceOf(more ...client.ListOption) func(o client.Object) []client.ListOption {
	return func(o client.Object) []client.ListOption {
		return append([]client.ListOption{client.InNamespace(o.GetNamespace())}, more...)
	}
}
