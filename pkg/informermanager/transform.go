package informermanager

import (
	"unique"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kubestellar/syncer/pkg/framework"
	"github.com/kubestellar/syncer/pkg/mapping"
)

// transformFor is the transform of an informer as spec asks: managedFields dropped but for the
// entry of a plain create by spec.Manager (mapping.CreatedEntries), or for a slim cache
// (spec.AppliedBy) only what mapping.Slim keeps, or what a Signals informer needs (spec.Signals,
// slimSignal), an object over spec.MaxObjectBytes only as mapping.TooLargeStub (heldOf); then held
// as a framework.Compact, or, decoded (the informers a Source runs), with
// field names shared (internKeys). Anything but an unstructured object (a Compact, a tombstone) is
// kept as it is, and so is an object already slim.
func transformFor(spec Spec, compact bool) cache.TransformFunc {
	return func(obj interface{}) (interface{}, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		u = heldOf(spec, u)
		switch _, done := u.Object[mapping.AppliedField]; {
		case spec.Signals:
			u = slimSignal(u)
		case spec.AppliedBy == "":
			if created := mapping.CreatedEntries(u, spec.Manager); created != nil {
				_ = unstructured.SetNestedSlice(u.Object, created, "metadata", "managedFields")
			} else {
				u.SetManagedFields(nil)
			}
		case !done:
			u = mapping.Slim(u, spec.AppliedBy)
		}
		if compact {
			return framework.Compacted(u)
		}
		internKeys(u.Object)
		return u, nil
	}
}

// heldOf is what may be held of u under spec.MaxObjectBytes: u, or a mapping.TooLargeStub when its
// JSON as the apiserver sent it (jsonSize) is larger. The transform and the early handlers (withEarly)
// both see objects through it, so that they agree on which are too large.
func heldOf(spec Spec, u *unstructured.Unstructured) *unstructured.Unstructured {
	if spec.MaxObjectBytes <= 0 {
		return u
	}
	if size := jsonSize(u.Object); size > spec.MaxObjectBytes {
		return mapping.TooLargeStub(u, size, spec.MaxObjectBytes)
	}
	return u
}

// jsonSize is about the length of v's JSON, without encoding it. Numbers count as 8 bytes.
func jsonSize(v interface{}) int {
	switch t := v.(type) {
	case map[string]interface{}:
		n := 2
		for k, e := range t {
			n += len(k) + 4 + jsonSize(e) // quotes, colon, comma
		}
		return n
	case []interface{}:
		n := 2
		for _, e := range t {
			n += jsonSize(e) + 1
		}
		return n
	case string:
		return len(t) + 2
	case nil:
		return 4
	case bool:
		return 5
	}
	return 8
}

// internKeys replaces the keys of every map in v by their canonical copies (unique.Make); values are
// unchanged. Decoded anew for each object, field names and the marks' label and annotation keys are
// a good part of a small object's size in a decoded cache. unique keeps its canonical copy only while
// a Handle to it lives, and none is kept: objects decoded between two garbage collections share their
// names, a later one may get a new copy (measured, docs/performance.md).
// Assigning to a key already in a map stores the key given (the runtime updates string keys), so the
// decoded copy is freed.
func internKeys(v interface{}) {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, e := range t {
			internKeys(e)
			t[unique.Make(k).Value()] = e
		}
	case []interface{}:
		for _, e := range t {
			internKeys(e)
		}
	}
}
