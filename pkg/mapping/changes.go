package mapping

import (
	"fmt"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Change is one field a write would change at the edge.
type Change struct {
	// Path names the field as Drift.Path does.
	Path string `json:"path"`
	// Edge is its value at the edge now, and Upstream its value after the write, as JSON cut short;
	// "(absent)" for none.
	Edge     string `json:"edge"`
	Upstream string `json:"upstream"`
}

// bookkeeping are the metadata fields an apiserver changes on every write, never content.
var bookkeeping = map[string]bool{
	"resourceVersion": true, "generation": true, "managedFields": true, "uid": true, "creationTimestamp": true, "selfLink": true,
}

// marks are the annotations and label the syncer writes to keep track of an object, not its content.
var marks = map[string]bool{
	DownsyncedAnnotation: true, HashAnnotation: true, OwnerLabel: true, ClusterAnnotation: true, UpstreamGenerationAnnotation: true,
	UpstreamResourceVersionAnnotation: true, RenaturedFromAnnotation: true, StoredBytesAnnotation: true,
}

// Changes lists the fields in which after (an edge object as a write would leave it: the edge's
// server-side dry-run of the write) differs from before (the edge object now): content only, not
// status, the apiserver's bookkeeping or the syncer's marks. Maps are walked field by field, lists of
// named elements element by element, other values compared whole.
func Changes(before, after *unstructured.Unstructured) []Change {
	var out []Change
	var walk func(path []string, b, a interface{}, top bool)
	walk = func(path []string, b, a interface{}, top bool) {
		if reflect.DeepEqual(b, a) {
			return
		}
		bm, bok := b.(map[string]interface{})
		am, aok := a.(map[string]interface{})
		if bok && a == nil || aok && b == nil {
			bok, aok = true, true // a map on one side only: walked, so that marks alone are not a change
		}
		if bok && aok {
			keys := map[string]bool{}
			for k := range bm {
				keys[k] = true
			}
			for k := range am {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			for _, k := range sorted {
				if skip(path, k, top) {
					continue
				}
				walk(append(append([]string(nil), path...), k), bm[k], am[k], false)
			}
			return
		}
		bl, bok := b.([]interface{})
		al, aok := a.([]interface{})
		if bok && aok && namedElements(bl) && namedElements(al) {
			for _, e := range al { // elements changed or added
				step := append(append([]string(nil), path...), fmt.Sprintf("[name=%v]", e.(map[string]interface{})["name"]))
				if be, ok := element(bl, e, -1); ok {
					walk(step, be, e, false)
				} else {
					out = append(out, Change{Path: joinPath(step), Edge: "(absent)", Upstream: orAbsent(e)})
				}
			}
			for _, e := range bl { // elements removed
				if _, ok := element(al, e, -1); !ok {
					step := fmt.Sprintf("[name=%v]", e.(map[string]interface{})["name"])
					out = append(out, Change{Path: joinPath(append(append([]string(nil), path...), step)), Edge: orAbsent(e), Upstream: "(absent)"})
				}
			}
			return
		}
		out = append(out, Change{Path: joinPath(path), Edge: orAbsent(b), Upstream: orAbsent(a)})
	}
	walk(nil, before.Object, after.Object, true)
	return out
}

// skip tells whether the field k under path is not content: status, bookkeeping, marks.
func skip(path []string, k string, top bool) bool {
	switch {
	case top:
		return k == "status"
	case len(path) == 1 && path[0] == "metadata":
		return bookkeeping[k]
	case len(path) == 2 && path[0] == "metadata" && (path[1] == "annotations" || path[1] == "labels"):
		return marks[k]
	}
	return false
}

func orAbsent(v interface{}) string {
	if v == nil {
		return "(absent)"
	}
	return shortJSON(v)
}
