package dynclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// events is a watch stream as kube-apiserver writes it: one JSON object a line, numbers of both
// kinds, a bookmark closing the initial events, and an ERROR event carrying a Status.
const events = `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"10","labels":{"x":"y"}},"data":{"k":"v"}}}
{"type":"MODIFIED","object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"ns","resourceVersion":"11","generation":3},"spec":{"replicas":2,"ratio":0.5,"big":9007199254740993,"list":[1,"two",{"three":3.0}],"none":null,"yes":true}}}
{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}
{"type":"DELETED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"13"}}}
{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (12)","reason":"Expired","code":410}}
`

// server answers watches with events and creates as kube-apiserver does: the object back with a
// resourceVersion, or a Status 409 when the name is taken. It records each request's URL.
func server(t *testing.T) (*httptest.Server, *[]string) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.String())
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path != "/api/v1/namespaces/ns/configmaps":
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`)
		case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
			for _, line := range strings.SplitAfter(events, "\n") {
				_, _ = io.WriteString(w, line)
				w.(http.Flusher).Flush()
			}
		case r.Method == http.MethodPost:
			var obj map[string]interface{}
			if err := json.NewDecoder(r.Body).Decode(&obj); err != nil {
				t.Errorf("create's body: %v", err)
			}
			if obj["metadata"].(map[string]interface{})["name"] == "taken" {
				w.WriteHeader(http.StatusConflict)
				_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"taken\" already exists","reason":"AlreadyExists","details":{"name":"taken","kind":"configmaps"},"code":409}`)
				return
			}
			obj["metadata"].(map[string]interface{})["resourceVersion"] = "42"
			obj["metadata"].(map[string]interface{})["generation"] = 1
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(obj)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

// clients are this package's client and client-go's, of the server.
func clients(t *testing.T, srv *httptest.Server) (*Client, *dynamic.DynamicClient) {
	cfg := &rest.Config{Host: srv.URL}
	ours, err := NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ours, theirs
}

// TestWatchDecodesAsClientGo: every event of a stream decodes to what client-go's dynamic client
// decodes it to (types, objects, number kinds), and the stream ends when the server ends it.
func TestWatchDecodesAsClientGo(t *testing.T) {
	srv, seen := server(t)
	ours, theirs := clients(t, srv)
	collect := func(c dynamic.Interface) []watch.Event {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w, err := c.Resource(configMaps).Namespace("ns").Watch(ctx, metav1.ListOptions{ResourceVersion: "9", AllowWatchBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var out []watch.Event
		for e := range w.ResultChan() {
			out = append(out, e)
		}
		return out
	}
	got, want := collect(ours), collect(theirs)
	if len(want) != 5 {
		t.Fatalf("client-go decoded %d events, want 5", len(want))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events decoded differently:\n got %#v\nwant %#v", got, want)
	}
	if n := got[1].Object.(*unstructured.Unstructured).Object["spec"].(map[string]interface{})["big"]; n != int64(9007199254740993) {
		t.Errorf("a large integer decoded as %T %v", n, n)
	}
	if err := apierrors.FromObject(got[4].Object); !apierrors.IsResourceExpired(err) {
		t.Errorf("the ERROR event gives %v, want a resource-expired error", err)
	}
	if (*seen)[0] != (*seen)[1] {
		t.Errorf("the watch requests differ:\n%s\n%s", (*seen)[0], (*seen)[1])
	}
}

// TestWatchRefused: a watch the apiserver refuses returns its Status as an error.
func TestWatchRefused(t *testing.T) {
	srv, _ := server(t)
	c, err := NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gone"}).Watch(context.Background(), metav1.ListOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a refused watch gives %v, want NotFound", err)
	}
}

// TestWatchBrokenStream: a stream cut in the middle of an event ends the watch; an event of an
// unknown type is an ERROR event, as client-go makes it.
func TestWatchBrokenStream(t *testing.T) {
	for name, stream := range map[string]string{
		"cut":          `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"`,
		"unknown type": `{"type":"SOMETHING","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}}`,
		"no object":    `{"type":"ADDED"}`,
	} {
		t.Run(name, func(t *testing.T) {
			w := watch.NewStreamWatcher(newDecoder(io.NopCloser(strings.NewReader(stream))),
				apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding"))
			var got []watch.Event
			for e := range w.ResultChan() {
				got = append(got, e)
			}
			if name == "cut" {
				if len(got) != 0 {
					t.Errorf("a cut stream gave %v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Type != watch.Error {
				t.Errorf("got %v, want one ERROR event", got)
			}
		})
	}
}

// TestCreate: a create sends what client-go's sends, and returns the apiserver's object, or its
// Status as the error client-go returns.
func TestCreate(t *testing.T) {
	srv, seen := server(t)
	ours, theirs := clients(t, srv)
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "a", "namespace": "ns"},
		"data":     map[string]interface{}{"k": "v"},
	}}
	opts := metav1.CreateOptions{FieldManager: "m", FieldValidation: metav1.FieldValidationStrict}
	got, err := ours.Resource(configMaps).Namespace("ns").Create(context.Background(), obj, opts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := theirs.Resource(configMaps).Namespace("ns").Create(context.Background(), obj, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("created object decoded differently:\n got %#v\nwant %#v", got, want)
	}
	if got.GetResourceVersion() != "42" || got.GetGeneration() != 1 {
		t.Errorf("created object %v", got)
	}
	if (*seen)[0] != (*seen)[1] {
		t.Errorf("the create requests differ:\n%s\n%s", (*seen)[0], (*seen)[1])
	}
	// Other options: the same query as client-go's parameter codec writes.
	for _, opts := range []metav1.CreateOptions{{}, {FieldManager: "m"}, {FieldValidation: metav1.FieldValidationWarn},
		{FieldManager: "m", DryRun: []string{metav1.DryRunAll}}} {
		*seen = nil
		if _, err := ours.Resource(configMaps).Namespace("ns").Create(context.Background(), obj, opts); err != nil {
			t.Fatal(err)
		}
		if _, err := theirs.Resource(configMaps).Namespace("ns").Create(context.Background(), obj, opts); err != nil {
			t.Fatal(err)
		}
		if (*seen)[0] != (*seen)[1] {
			t.Errorf("options %+v: the create requests differ:\n%s\n%s", opts, (*seen)[0], (*seen)[1])
		}
	}
	taken := obj.DeepCopy()
	taken.SetName("taken")
	_, err = ours.Resource(configMaps).Namespace("ns").Create(context.Background(), taken, opts)
	_, theirErr := theirs.Resource(configMaps).Namespace("ns").Create(context.Background(), taken, opts)
	if !apierrors.IsAlreadyExists(err) || !reflect.DeepEqual(err, theirErr) {
		t.Errorf("a taken name gives %#v, want %#v", err, theirErr)
	}
}

// TestWatchAsClientGo: watches skip the client's rate limiter, a connection dropped as a watch
// opens is an empty watch (no error), and a namespace that is no path segment is refused — all as
// client-go's dynamic client does.
func TestWatchAsClientGo(t *testing.T) {
	srv, _ := server(t)
	limited, err := NewForConfig(&rest.Config{Host: srv.URL, QPS: 0.001, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := 0; i < 3; i++ { // the limiter would hold the second for 1,000 s
		w, err := limited.Resource(configMaps).Namespace("ns").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
		w.Stop()
	}

	dropping := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler) // the connection closes without an answer
	}))
	defer dropping.Close()
	c, err := NewForConfig(&rest.Config{Host: dropping.URL})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Resource(configMaps).Namespace("ns").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("a dropped connection gives %v, want an empty watch", err)
	}
	if _, open := <-w.ResultChan(); open {
		t.Error("the watch of a dropped connection has an event")
	}

	for _, ns := range []string{"..", "a/b"} {
		if _, err := c.Resource(configMaps).Namespace(ns).Watch(ctx, metav1.ListOptions{}); err == nil {
			t.Errorf("namespace %q: watch not refused", ns)
		}
		if _, err := c.Resource(configMaps).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{"kind": "ConfigMap"}}, metav1.CreateOptions{}); err == nil {
			t.Errorf("namespace %q: create not refused", ns)
		}
	}
}
