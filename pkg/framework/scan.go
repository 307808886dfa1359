package framework

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// ScanLabelled lists the objects of gvr that match selector, pageSize at a time, and calls visit
// with each until it returns false: the one scan of a side for objects carrying the syncer's marks
// (owned edge copies at start, a workspace's objects at the edge). A resource the syncer may not
// list, does not serve or no longer serves holds nothing of its: that is no error.
func ScanLabelled(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, selector string,
	pageSize int64, visit func(*unstructured.Unstructured) bool) error {
	opts := metav1.ListOptions{LabelSelector: selector, Limit: pageSize}
	for {
		list, err := client.Resource(gvr).List(ctx, opts)
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
			return nil
		case err != nil:
			return fmt.Errorf("looking for %s labelled %s: %w", gvr.GroupResource(), selector, err)
		}
		for i := range list.Items {
			if !visit(&list.Items[i]) {
				return nil
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// ObjectLister lists objects of one resource (a dynamic client's ResourceInterface).
type ObjectLister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
}

// CountObjects tells how many objects l lists, from a list of one object and the rest the
// apiserver says remain (remainingItemCount): it reads no more than one object. known is false when
// the apiserver does not say (it does not with a label or field selector).
func CountObjects(ctx context.Context, l ObjectLister) (n int64, known bool, err error) {
	list, err := l.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, false, err
	}
	n = int64(len(list.Items))
	if list.GetContinue() == "" {
		return n, true, nil
	}
	if rest := list.GetRemainingItemCount(); rest != nil {
		return n + *rest, true, nil
	}
	return 0, false, nil
}
