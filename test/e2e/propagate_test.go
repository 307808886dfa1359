package e2e

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubestellar/syncer/pkg/mapping"
)

// TestPropagateDeletionFalse: objects that only propagateDeletion=false configs select
// keep their edge copies when they are deleted upstream or leave the selection; an object a default
// config selects too is deleted as usual (union semantics).
func TestPropagateDeletionFalse(t *testing.T) {
	f := newFixture(t)
	kept, shared := f.namespace("kept"), f.namespace("shared")
	for _, ns := range []string{kept, shared} {
		for _, name := range []string{"gone-upstream", "deselected"} {
			f.create(f.up, gvrConfigMaps, configMap(ns, name, map[string]interface{}{"k": "v"}))
		}
	}
	keep := nsScope([]string{kept, shared}, resource("", "v1", "configmaps"))
	keep["propagateDeletion"] = false
	f.syncerConfig(f.name+"-keep", keep)
	f.syncerConfig(f.name+"-default", nsScope([]string{shared}, resource("", "v1", "configmaps")))
	f.startSyncer()
	keepMark := func(want bool) func(*unstructured.Unstructured) (bool, string) {
		return func(o *unstructured.Unstructured) (bool, string) {
			ok, why := hasMark(o)
			return ok && mapping.KeepOnDelete(o) == want, fmt.Sprintf("%s; %s=%q", why, mapping.PropagateDeletionAnnotation, o.GetAnnotations()[mapping.PropagateDeletionAnnotation])
		}
	}
	for _, name := range []string{"gone-upstream", "deselected"} {
		f.waitFor(f.down, gvrConfigMaps, kept, name, keepMark(true))
		f.waitFor(f.down, gvrConfigMaps, shared, name, keepMark(false))
	}
	f.delete(f.up, gvrConfigMaps, kept, "gone-upstream")
	f.delete(f.up, gvrConfigMaps, shared, "gone-upstream")
	// The default config's object goes; that shows the syncer has processed the deletions.
	f.waitGone(f.down, gvrConfigMaps, shared, "gone-upstream")
	// Deselect "kept" (the keep config now names only "shared").
	f.syncerConfig(f.name+"-keep", func() map[string]interface{} {
		s := nsScope([]string{shared}, resource("", "v1", "configmaps"))
		s["propagateDeletion"] = false
		return s
	}())
	const quietWindow = 5 * time.Second
	consistently(t, quietWindow, "the kept copies stay at the edge", func() (bool, string) {
		for _, name := range []string{"gone-upstream", "deselected"} {
			if _, err := f.get(f.down, gvrConfigMaps, kept, name); err != nil {
				return false, fmt.Sprintf("%s/%s: %v", kept, name, err)
			}
		}
		return true, ""
	})
	// The shared object is still selected by both: kept up to date, and still deleted with upstream.
	f.delete(f.up, gvrConfigMaps, shared, "deselected")
	f.waitGone(f.down, gvrConfigMaps, shared, "deselected")
}
