package mapping

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// AppliedField is the top-level field under which an edge object in a slim cache (Slim) keeps
// AppliedFields: no API has a field of that name (it holds a "/"), so it never meets a real one.
const AppliedField = "edge.kubestellar.io/applied"

// appliedStrip are the metadata fields server-side apply never records as owned (the apiserver
// strips them from every field set); UpToDate leaves them out of the desired object.
var appliedStrip = []string{
	"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
	"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds",
}

// Slim is what a cache of edge objects that the syncer writes by server-side apply keeps of one:
// apiVersion, kind, metadata with no managedFields but CreatedEntries, status (status return reads it), a Service's
// spec.clusterIP (ReplaceOnly reads it) and, under AppliedField, AppliedFields: the fields that the
// apply manager manager owns, each with a digest of its value. UpToDate compares the desired object
// with those instead of with the object's content, which the cache then need not hold: the field
// values are most of an object's size. obj is not changed.
func Slim(obj *unstructured.Unstructured, manager string) *unstructured.Unstructured {
	out := make(map[string]interface{}, 5)
	for _, k := range []string{"apiVersion", "kind", "status"} {
		if v, ok := obj.Object[k]; ok {
			out[k] = v
		}
	}
	if m, ok := obj.Object["metadata"].(map[string]interface{}); ok {
		meta := make(map[string]interface{}, len(m))
		for k, v := range m {
			if k != "managedFields" {
				meta[k] = v
			}
		}
		if created := CreatedEntries(obj, manager); created != nil {
			meta["managedFields"] = created
		}
		out["metadata"] = meta
	}
	if ip, ok, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ok {
		out["spec"] = map[string]interface{}{"clusterIP": ip}
	}
	out[AppliedField] = AppliedFields(obj, manager)
	return &unstructured.Unstructured{Object: out}
}

// AppliedFields are the fields of obj that the field manager manager owns, as its managedFields
// entries on the object itself (not a subresource) list them: its apply entry, and the update entry
// of a plain create (CreatedEntries) whose fields have not been handed to the apply entry yet. In the
// object's shape:
// maps of the fields named, lists of the elements named (in obj's order), and below the fields the
// set names no further (a scalar, an atomic map or list, or a map applied empty) the value's shape
// with a digest of each scalar.
// Status is left out (the edge's). An empty map when the manager has no entry. A field someone else
// changes (an update, or an apply that forces it) leaves the manager's set, and a field someone
// removes leaves every set, so drift shows in them (appliedMatch).
func AppliedFields(obj *unstructured.Unstructured, manager string) map[string]interface{} {
	entries, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "managedFields")
	list, _ := entries.([]interface{})
	var owned map[string]interface{}
	copied := false
	for _, e := range list {
		entry, _ := e.(map[string]interface{})
		if !ownEntry(entry, manager, metav1.ManagedFieldsOperationApply) && !ownEntry(entry, manager, metav1.ManagedFieldsOperationUpdate) {
			continue
		}
		set, ok := entry["fieldsV1"].(map[string]interface{})
		if !ok {
			continue
		}
		if owned == nil {
			owned = set
			continue
		}
		if !copied { // merged into a copy: obj is not changed
			owned, copied = runtime.DeepCopyJSONValue(owned).(map[string]interface{}), true
		}
		owned = mergeSets(owned, set)
	}
	if owned == nil {
		return map[string]interface{}{}
	}
	fields, _ := project(obj.Object, owned).(map[string]interface{})
	if fields == nil {
		return map[string]interface{}{}
	}
	delete(fields, "status")
	return fields
}

// appliedMatch tells whether the fields an apply manager owns (AppliedFields) hold what want, the
// object it last applied, asks for: every field of want is owned (a null one is not applied), and
// every scalar in it has the digest of want's value; fields and list elements are matched as the
// object's shape gives them, so a map may hold more than want (defaults the edge adds inside an
// atomic value) but a list holds as many elements. A map or list want leaves empty only has to be
// owned: applied empty, others may fill it (the edge's labels on a Job's template, a LimitRange's
// resources). The caller has checked that want is what was last applied (the hash annotation): a
// field owned but not in want is one applied empty. With created (the object was made by a plain
// create, CreatedByUpdate), an empty map or list need not be owned at all: the apiserver records the
// fields of a create from the object decoded into its types, which leave out empty fields that are
// optional (a Job template's labels once the source's are stripped; a ConfigMap's empty data).
func appliedMatch(want interface{}, have interface{}, created bool) bool {
	switch w := want.(type) {
	case map[string]interface{}:
		h, ok := have.(map[string]interface{})
		if !ok {
			return len(w) == 0
		}
		for k, wv := range w {
			if wv == nil {
				continue
			}
			hv, owned := h[k]
			if !owned && created && hollow(wv) {
				continue
			}
			if !owned || !appliedMatch(wv, hv, created) {
				return false
			}
		}
		return true
	case []interface{}:
		h, ok := have.([]interface{})
		if !ok || len(w) == 0 {
			return len(w) == 0
		}
		if len(w) != len(h) {
			return false
		}
		for i := range w {
			if !appliedMatch(w[i], h[i], created) {
				return false
			}
		}
		return true
	default:
		return have == valueDigest(want)
	}
}

// desiredFields is what UpToDate compares of the desired object: without what server-side apply
// never records (apiVersion, kind, identity and bookkeeping in metadata), and without status.
func desiredFields(desired *unstructured.Unstructured) map[string]interface{} {
	content := make(map[string]interface{}, len(desired.Object))
	for k, v := range desired.Object {
		switch k {
		case "apiVersion", "kind", "status":
		case "metadata":
			m, _ := v.(map[string]interface{})
			meta := make(map[string]interface{}, len(m))
			for mk, mv := range m {
				meta[mk] = mv
			}
			for _, f := range appliedStrip {
				delete(meta, f)
			}
			content[k] = meta
		default:
			content[k] = v
		}
	}
	return content
}

// digests is v in its shape, nulls left out, each scalar replaced by its digest (valueDigest).
func digests(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, e := range t {
			if e != nil {
				out[k] = digests(e)
			}
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, e := range t {
			out[i] = digests(e)
		}
		return out
	default:
		return valueDigest(v)
	}
}

// valueDigest is the digest of a scalar (the shapes around it are kept by digests and project):
// 16 hex digits of the SHA-256 of its JSON.
func valueDigest(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// project is the part of value v that the field set set (a managedFields entry's FieldsV1, decoded)
// names: "f:<name>" a map's field, "k:<keys>" the element of an associative list whose key fields
// have those values, "v:<value>" the element of a set with that value, "i:<index>" the element at
// that index; "." marks the element itself. Where the set names nothing below a value (a scalar, an
// atomic map or list, a map applied empty) the value is kept in its shape with each scalar replaced
// by its digest (digests). Elements keep v's order. nil when nothing named is in v.
func project(v interface{}, set map[string]interface{}) interface{} {
	if !namesChildren(set) {
		return digests(v)
	}
	switch t := v.(type) {
	case map[string]interface{}:
		out := map[string]interface{}{}
		for k, child := range set {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok {
				continue
			}
			if e, ok := t[name]; ok {
				childSet, _ := child.(map[string]interface{})
				if p := project(e, childSet); p != nil {
					out[name] = p
				}
			}
		}
		return out
	case []interface{}:
		elements := indexElements(set)
		var out []interface{}
		for i, e := range t {
			if childSet, ok := elements.find(i, e); ok {
				if p := project(e, childSet); p != nil {
					out = append(out, p)
				} else {
					out = append(out, map[string]interface{}{})
				}
			}
		}
		if out == nil {
			return nil
		}
		return out
	default:
		return valueDigest(v) // a scalar where the set names fields: the set is of another shape
	}
}

// namesChildren tells whether a field set names anything below the value it is of.
func namesChildren(set map[string]interface{}) bool {
	for k := range set {
		if k != "." {
			return true
		}
	}
	return false
}

// elements are the entries of a list's field set, by what names an element: its key field values
// ("k:"), its value ("v:") or its index ("i:"). Keys and values are compared in canonical JSON.
type elements struct {
	keyFields [][]string                        // the field names of the "k:" entries, each set once
	byKey     map[string]map[string]interface{} // canonical JSON of the key field values → entry
	byValue   map[string]map[string]interface{} // canonical JSON of the value → entry
	byIndex   map[int]map[string]interface{}    // index → entry
}

func indexElements(set map[string]interface{}) elements {
	var el elements
	seen := map[string]bool{}
	for k, child := range set {
		childSet, _ := child.(map[string]interface{})
		switch {
		case strings.HasPrefix(k, "k:"):
			var keys map[string]interface{}
			if decodeNumbers(k[2:], &keys) != nil || len(keys) == 0 {
				continue
			}
			canonical, err := json.Marshal(keys)
			if err != nil {
				continue
			}
			names := make([]string, 0, len(keys))
			for name := range keys {
				names = append(names, name)
			}
			sort.Strings(names)
			if joined := strings.Join(names, "\x00"); !seen[joined] {
				seen[joined] = true
				el.keyFields = append(el.keyFields, names)
			}
			if el.byKey == nil {
				el.byKey = map[string]map[string]interface{}{}
			}
			el.byKey[string(canonical)] = childSet
		case strings.HasPrefix(k, "v:"):
			var value interface{}
			if decodeNumbers(k[2:], &value) != nil {
				continue
			}
			if canonical, err := json.Marshal(value); err == nil {
				if el.byValue == nil {
					el.byValue = map[string]map[string]interface{}{}
				}
				el.byValue[string(canonical)] = childSet
			}
		case strings.HasPrefix(k, "i:"):
			if n, err := strconv.Atoi(k[2:]); err == nil {
				if el.byIndex == nil {
					el.byIndex = map[int]map[string]interface{}{}
				}
				el.byIndex[n] = childSet
			}
		}
	}
	return el
}

// find is the entry that names element e at index i.
func (el elements) find(i int, e interface{}) (map[string]interface{}, bool) {
	if m, ok := e.(map[string]interface{}); ok && el.byKey != nil {
		for _, names := range el.keyFields {
			keys := make(map[string]interface{}, len(names))
			for _, name := range names {
				if v, ok := m[name]; ok {
					keys[name] = v
				}
			}
			if len(keys) != len(names) {
				continue
			}
			if canonical, err := json.Marshal(keys); err == nil {
				if childSet, ok := el.byKey[string(canonical)]; ok {
					return childSet, true
				}
			}
		}
	}
	if el.byValue != nil {
		if canonical, err := json.Marshal(e); err == nil {
			if childSet, ok := el.byValue[string(canonical)]; ok {
				return childSet, true
			}
		}
	}
	childSet, ok := el.byIndex[i]
	return childSet, ok
}

// decodeNumbers decodes JSON keeping numbers as written (json.Number), so that they encode again
// as the apiserver wrote them.
func decodeNumbers(raw string, v interface{}) error {
	d := json.NewDecoder(strings.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

// mergeSets is the union of two decoded field sets.
func mergeSets(a, b map[string]interface{}) map[string]interface{} {
	if a == nil {
		return b
	}
	for k, bv := range b {
		bm, _ := bv.(map[string]interface{})
		am, _ := a[k].(map[string]interface{})
		a[k] = mergeSets(am, bm)
	}
	return a
}

// ownEntry tells whether a managedFields entry is manager's, of operation op, on the object itself
// (not a subresource).
func ownEntry(entry map[string]interface{}, manager string, op metav1.ManagedFieldsOperationType) bool {
	return manager != "" && entry["manager"] == manager && entry["operation"] == string(op) &&
		(entry["subresource"] == nil || entry["subresource"] == "")
}

// CreatedEntries is what a cache keeps of obj's managedFields: nil, or, when manager made obj by a
// plain create (a POST, which the apiserver records as an update: operation Update) and its fields
// have not been handed to its apply entry since, that entry without its fields, with its place in
// managedFields under "index" when manager has no apply entry beside it (CreatedIndex: the
// hand-over is then a rename of the entry). CreatedByUpdate reads it: before the manager's first
// apply the create's fields are handed to its apply entry (client-go's csaupgrade), or a field left
// out of a later apply would stay at the edge under the update entry, and every apply would weigh
// two entries.
func CreatedEntries(obj *unstructured.Unstructured, manager string) []interface{} {
	entries, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "managedFields")
	list, _ := entries.([]interface{})
	var found map[string]interface{}
	index, applied := 0, false
	for i, e := range list {
		entry, _ := e.(map[string]interface{})
		switch {
		case found == nil && ownEntry(entry, manager, metav1.ManagedFieldsOperationUpdate):
			found, index = entry, i
		case ownEntry(entry, manager, metav1.ManagedFieldsOperationApply):
			applied = true
		}
	}
	if found == nil {
		return nil
	}
	kept := map[string]interface{}{"manager": manager, "operation": string(metav1.ManagedFieldsOperationUpdate)}
	if _, fromServer := found["fieldsType"]; !fromServer {
		if recorded, ok := found["index"]; ok { // a cache's entry: the place it recorded
			kept["index"] = recorded
		}
	} else if !applied {
		kept["index"] = int64(index)
	}
	return []interface{}{kept}
}

// CreatedByUpdate tells whether obj (from the apiserver, or a cache that keeps CreatedEntries) has
// an update entry of manager on the object itself: it made obj by a plain create, and its apply
// entry does not hold those fields yet.
func CreatedByUpdate(obj *unstructured.Unstructured, manager string) bool {
	return obj != nil && CreatedEntries(obj, manager) != nil
}

// CreatedIndex is the place in obj's managedFields of manager's update entry of a plain create, when
// the manager has no apply entry beside it (CreatedEntries): the hand-over then renames it.
func CreatedIndex(obj *unstructured.Unstructured, manager string) (int, bool) {
	if obj == nil {
		return 0, false
	}
	created := CreatedEntries(obj, manager)
	if created == nil {
		return 0, false
	}
	index, ok := created[0].(map[string]interface{})["index"].(int64)
	return int(index), ok
}

// hollow tells whether v holds no value: nil, or a map or list of hollow values only.
func hollow(v interface{}) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]interface{}:
		for _, e := range t {
			if !hollow(e) {
				return false
			}
		}
		return true
	case []interface{}:
		for _, e := range t {
			if !hollow(e) {
				return false
			}
		}
		return true
	}
	return false
}

// createdMarked tells whether an object of a slim cache keeps an update entry (Slim keeps its
// manager's, CreatedEntries): its manager made it by a plain create.
func createdMarked(obj *unstructured.Unstructured) bool {
	entries, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "managedFields")
	list, _ := entries.([]interface{})
	for _, e := range list {
		if entry, _ := e.(map[string]interface{}); entry["operation"] == string(metav1.ManagedFieldsOperationUpdate) {
			return true
		}
	}
	return false
}
