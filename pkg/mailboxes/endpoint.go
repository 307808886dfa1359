package mailboxes

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubestellar/syncer/pkg/informermanager"
	"github.com/kubestellar/syncer/pkg/wellknown"
)

// watchURL watches the APIExportEndpointSlice (with provider, whose Stop ends the watch), and returns
// its virtual workspace URL once it shows one. The watch goes on: a later, different URL (the export
// moved) cancels moved, for Run to return an error and the process to start again against the new one.
func (c *Controller) watchURL(ctx context.Context, provider *informermanager.Manager, moved context.CancelCauseFunc) (string, error) {
	logger := klog.FromContext(ctx)
	found := make(chan string, 1)
	var mu sync.Mutex
	url, last := "", ""
	see := func(obj interface{}) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch now := endpointURL(u); {
		case now == "" && url == "":
			if last != "no URL" {
				logger.Info("Waiting for the APIExportEndpointSlice to show a URL (kcp publishes it with the first binding)", "endpointSlice", c.cfg.EndpointSlice)
			}
			last = "no URL"
		case url == "" && now != "":
			url = now
			found <- now
		case now != "" && now != url:
			moved(fmt.Errorf("the APIExport's virtual workspace moved from %s to %s; starting again", url, now))
		}
	}
	slices, err := provider.Watch(wellknown.EndpointSlices, informermanager.Configs, informermanager.Spec{FieldSelector: "metadata.name=" + c.cfg.EndpointSlice},
		cache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, obj interface{}) { see(obj) }})
	if err != nil {
		return "", err
	}
	refused := ""
	for !slices.Synced("") {
		if err := slices.Denied(); err != nil && err.Error() != refused {
			logger.Error(err, "Cannot watch the APIExportEndpointSlice in the workspace of --upstream-kubeconfig (is it a kcp workspace, and may the syncer read apiexportendpointslices?)",
				"endpointSlice", c.cfg.EndpointSlice)
			refused = err.Error()
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if len(slices.List("")) == 0 {
		logger.Error(nil, "The APIExportEndpointSlice does not exist (yet) in the workspace of --upstream-kubeconfig; waiting for it", "endpointSlice", c.cfg.EndpointSlice)
	}
	select {
	case u := <-found:
		return u, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// stopCause is what Run returns when ctx ended: nil when the caller's context did, the cause when the
// virtual workspace moved.
func stopCause(outer, ctx context.Context, err error) error {
	select {
	case <-outer.Done(): // shutting down
		return nil
	default:
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	default:
		return err
	}
}

// endpointURL is the first URL in an APIExportEndpointSlice's status.
func endpointURL(slice *unstructured.Unstructured) string {
	eps, _, _ := unstructured.NestedSlice(slice.Object, "status", "endpoints")
	for _, ep := range eps {
		if m, ok := ep.(map[string]interface{}); ok {
			if u, ok := m["url"].(string); ok && u != "" {
				return u
			}
		}
	}
	return ""
}
