package mapping

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FieldPath names fields of an object that the edge owns (retained fields): dotted field names, "[*]"
// after a list field for that field in each of its elements, and "[key]" for a map key holding
// dots or slashes (metadata.annotations[example.com/owner]).
type FieldPath struct {
	text  string
	steps []step
}

// step is one field name, or every element of a list (each).
type step struct {
	field string
	each  bool
}

// String is the path as written.
func (p FieldPath) String() string { return p.text }

// Replicas is the field an autoscaler at the edge owns on the objects it scales.
var Replicas = FieldPath{text: "spec.replicas", steps: []step{{field: "spec"}, {field: "replicas"}}}

// notRetainable are the first fields a path may not name: the object's identity and type, and
// status (the edge's already).
var notRetainable = map[string]bool{"apiVersion": true, "kind": true, "status": true}

// ParseFieldPath reads a retained field's path, or says why it is not one.
func ParseFieldPath(s string) (FieldPath, error) {
	var steps []step
	rest := s
	for rest != "" {
		end := strings.IndexAny(rest, ".[")
		if end < 0 {
			end = len(rest)
		}
		if end == 0 && (len(steps) == 0 || rest[0] != '[') {
			return FieldPath{}, fmt.Errorf("%q is not a field path: an empty field name", s)
		}
		if end > 0 {
			steps = append(steps, step{field: rest[:end]})
		}
		rest = rest[end:]
		for strings.HasPrefix(rest, "[") {
			closing := strings.IndexByte(rest, ']')
			if closing < 2 {
				return FieldPath{}, fmt.Errorf("%q is not a field path: \"[\" without a key or \"*\" and \"]\"", s)
			}
			if key := rest[1:closing]; key == "*" {
				steps = append(steps, step{each: true})
			} else {
				steps = append(steps, step{field: key})
			}
			rest = rest[closing+1:]
		}
		if strings.HasPrefix(rest, ".") {
			rest = rest[1:]
			if rest == "" {
				return FieldPath{}, fmt.Errorf("%q is not a field path: it ends with \".\"", s)
			}
		} else if rest != "" {
			return FieldPath{}, fmt.Errorf("%q is not a field path: %q after \"]\"", s, rest)
		}
	}
	for len(steps) > 0 && steps[len(steps)-1].each {
		steps = steps[:len(steps)-1] // every element of a list: the list
	}
	switch {
	case len(steps) == 0 || steps[0].each:
		return FieldPath{}, fmt.Errorf("%q is not a field path", s)
	case notRetainable[steps[0].field]:
		return FieldPath{}, fmt.Errorf("%q names %s, which the syncer never applies", s, steps[0].field)
	case steps[0].field == "metadata" && (len(steps) == 1 || steps[1].field == "name" || steps[1].field == "namespace"):
		return FieldPath{}, fmt.Errorf("%q names the object's identity, which the edge cannot own", s)
	case steps[0].field == "metadata" && (steps[1].field == "labels" || steps[1].field == "annotations") &&
		(len(steps) == 2 || strings.Contains(steps[2].field, "kubestellar.io/")):
		return FieldPath{}, fmt.Errorf("%q names the syncer's own marks, which the edge cannot own: name a label or annotation by its key", s)
	case steps[0].field == "metadata" && steps[1].field != "labels" && steps[1].field != "annotations":
		return FieldPath{}, fmt.Errorf("%q names metadata the apiserver keeps; only labels and annotations can be retained", s)
	}
	return FieldPath{text: s, steps: steps}, nil
}

// SortPaths sorts paths by their text, without repeats.
func SortPaths(paths []FieldPath) []FieldPath {
	sort.Slice(paths, func(i, j int) bool { return paths[i].text < paths[j].text })
	out := paths[:0]
	for i, p := range paths {
		if i == 0 || p.text != paths[i-1].text {
			out = append(out, p)
		}
	}
	return out
}

// PathsKey identifies a sorted set of paths (for merging equal ones).
func PathsKey(paths []FieldPath) string {
	texts := make([]string, len(paths))
	for i, p := range paths {
		texts[i] = p.text
	}
	return strings.Join(texts, ",")
}

// removeRetained removes the fields the paths name from obj: the syncer neither applies them nor
// compares them.
func removeRetained(obj map[string]interface{}, paths []FieldPath) {
	for _, p := range paths {
		walk(obj, p.steps, func(parent map[string]interface{}, field string) { delete(parent, field) })
	}
}

// walk calls at with the map holding the last field of steps, wherever steps reach in v.
func walk(v interface{}, steps []step, at func(parent map[string]interface{}, field string)) {
	if len(steps) == 0 {
		return
	}
	s := steps[0]
	if s.each {
		list, _ := v.([]interface{})
		for _, e := range list {
			walk(e, steps[1:], at)
		}
		return
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return
	}
	if len(steps) == 1 {
		at(m, s.field)
		return
	}
	walk(m[s.field], steps[1:], at)
}

// RetainedFrom returns a copy of desired (an object ToDownstream made with Options.Retain) with
// the retained fields that from holds set to from's values: the edge copy's live values before an
// apply, so that the apply changes none of them, or the upstream object's before a create, so that
// the edge starts from them. List elements are matched by name when they have one, else by position;
// no element is added. desired is not changed.
func RetainedFrom(desired, from *unstructured.Unstructured, paths []FieldPath) *unstructured.Unstructured {
	out := desired.DeepCopy()
	for _, p := range paths {
		copyAt(out.Object, from.Object, p.steps)
	}
	return out
}

// copyAt sets the field steps name in dst to its value in src, where src has it.
func copyAt(dst, src interface{}, steps []step) {
	s := steps[0]
	if s.each {
		dl, _ := dst.([]interface{})
		sl, _ := src.([]interface{})
		for i, d := range dl {
			if e, ok := element(sl, d, i); ok {
				copyAt(d, e, steps[1:])
			}
		}
		return
	}
	dm, ok := dst.(map[string]interface{})
	sm, _ := src.(map[string]interface{})
	if !ok {
		return
	}
	sv, found := sm[s.field]
	if !found {
		return
	}
	if len(steps) == 1 {
		dm[s.field] = runtime.DeepCopyJSONValue(sv)
		return
	}
	next, ok := dm[s.field]
	switch {
	case ok:
		copyAt(next, sv, steps[1:])
	case !steps[1].each:
		// The syncer applies nothing of the parent but retained fields: built, when they are there.
		built := map[string]interface{}{}
		if copyAt(built, sv, steps[1:]); len(built) > 0 {
			dm[s.field] = built
		}
	}
}

// element is the element of list that matches d, the i-th element of the other list: by name when d
// has one, else the i-th.
func element(list []interface{}, d interface{}, i int) (interface{}, bool) {
	if dm, ok := d.(map[string]interface{}); ok {
		if name, ok := dm["name"].(string); ok {
			for _, e := range list {
				if em, ok := e.(map[string]interface{}); ok && em["name"] == name {
					return e, true
				}
			}
			return nil, false
		}
	}
	if i < len(list) {
		return list[i], true
	}
	return nil, false
}

// Holds tells whether obj has a value for the path (anywhere, for a path through lists).
func (p FieldPath) Holds(obj *unstructured.Unstructured) bool {
	found := false
	walk(obj.Object, p.steps, func(parent map[string]interface{}, field string) {
		if _, ok := parent[field]; ok {
			found = true
		}
	})
	return found
}
