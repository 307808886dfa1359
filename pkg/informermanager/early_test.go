package informermanager

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

type fakeLister struct{ w *watch.FakeWatcher }

func (f fakeLister) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return &unstructured.UnstructuredList{}, nil
}
func (f fakeLister) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return f.w, nil
}

// TestEarlyWatch: the objects of the initial events of a watch-list go to early as they arrive,
// those after the bookmark that ends them do not, and every event is passed on; nothing of a plain
// watch (resumed from a resourceVersion) goes to early. An error event marks the informer broken.
func TestEarlyWatch(t *testing.T) {
	var got []string
	fake := watch.NewFakeWithChanSize(10, false)
	var h Health
	lw := listWatch(fakeLister{fake}, Spec{}, &h, true, func(u *unstructured.Unstructured) { got = append(got, u.GetName()) }).(*observedListWatch)
	plain, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fake.Add(cm("a", "plain"))
	<-plain.ResultChan()
	plain.Stop()
	if len(got) != 0 {
		t.Errorf("an object of a plain watch went to early: %v", got)
	}
	fake = watch.NewFakeWithChanSize(10, false)
	lw.l = fakeLister{fake}
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	if h.current() {
		t.Error("a watch that begins with a list counts as current before the list replaced the cache")
	}
	end := cm("", "")
	end.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	fake.Add(cm("a", "x"))
	fake.Add(cm("a", "y"))
	fake.Action(watch.Bookmark, end)
	fake.Add(cm("a", "z"))
	for i := 0; i < 4; i++ {
		select {
		case <-w.ResultChan():
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d not passed on", i)
		}
	}
	if diff := cmp.Diff([]string{"x", "y"}, got); diff != "" {
		t.Errorf("early objects (-want +got):\n%s", diff)
	}
	fake.Error(&metav1.Status{Code: 410})
	<-w.ResultChan()
	if !h.Broken() {
		t.Error("an error event did not mark the informer broken")
	}
	// A consumer that stops without reading does not leave the relay blocked.
	fake.Add(cm("a", "w"))
	w.Stop()
	select {
	case _, open := <-w.ResultChan():
		for open {
			_, open = <-w.ResultChan()
		}
	case <-time.After(5 * time.Second):
		t.Fatal("result channel not closed after Stop")
	}
}
