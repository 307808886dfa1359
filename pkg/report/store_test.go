package report

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/syncer/pkg/framework"
)

// The store tells what changed, counts each action, and cuts the summary to size.
func TestStore(t *testing.T) {
	s := NewStore()
	key := func(name string) framework.Key {
		return framework.Key{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "a", Name: name}
	}
	if !s.Set(key("x"), Entry{Action: Update}) || s.Set(key("x"), Entry{Action: Update}) {
		t.Error("Set: a new entry is a change, the same one again is not")
	}
	s.Set(key("y"), Entry{Action: Create})
	s.Set(key("z"), Entry{Action: Delete})
	if !s.Forget(key("z")) || s.Forget(key("z")) {
		t.Error("Forget")
	}
	sum := s.Summary(1, 10)
	if sum.Creates != 1 || sum.Updates != 1 || sum.Deletes != 0 || len(sum.Objects) != 1 || sum.Omitted != 1 || sum.Objects[0].Object != "configmaps a/x" {
		t.Errorf("summary %+v", sum)
	}
}
