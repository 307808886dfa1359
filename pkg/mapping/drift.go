package mapping

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DriftPolicy says what downsync does when an edge copy differs from what it applied (drift).
type DriftPolicy string

const (
	// DriftCorrect puts drift back at once (the default).
	DriftCorrect DriftPolicy = "Correct"
	// DriftReport leaves drift in place, says so upstream, and holds the object's upstream changes
	// until someone acknowledges the drift (AcknowledgeDriftAnnotation) or it goes away.
	DriftReport DriftPolicy = "Report"
)

// DriftAnnotation on an upstream object sets its DriftPolicy, over its selection entries'. It is
// never copied to the edge.
const DriftAnnotation = "edge.kubestellar.io/drift"

// DriftHeldAnnotation is written on an edge copy whose drift is held under DriftReport, for the
// technician at the site: "<id> <fields>", id the time the drift was found (DriftID), fields the
// paths that differ. Downsync writes nothing else for the object while it is there, and removes it
// when the hold ends.
const DriftHeldAnnotation = "edge.kubestellar.io/drift-held"

// AcknowledgeDriftAnnotation on an upstream object ends the holds it names: "<sync target>=<id>",
// several separated by commas. The object then converges: the edge's change is put back.
const AcknowledgeDriftAnnotation = "edge.kubestellar.io/acknowledge-drift"

// DriftedPrefix starts the key of the per-target signal that a sync target holds the object's drift:
// label drifted.edge.kubestellar.io/<sync target>: the drift's id.
const DriftedPrefix = "drifted" + signalDomain + "/"

// DriftedLabel is a sync target's DriftedPrefix label key; "" when the target's name cannot be a label
// name.
func DriftedLabel(syncTarget string) string { return signalKey(DriftedPrefix, syncTarget) }

// DriftID is the id of a drift found at t, as a label value can hold it.
func DriftID(t time.Time) string { return PauseLabelValue(t) }

// ParseDriftPolicy reads a DriftPolicy ("" is DriftCorrect).
func ParseDriftPolicy(s string) (DriftPolicy, error) {
	switch DriftPolicy(s) {
	case "", DriftCorrect:
		return DriftCorrect, nil
	case DriftReport:
		return DriftReport, nil
	}
	return DriftCorrect, fmt.Errorf("drift policy %q is neither %s nor %s", s, DriftCorrect, DriftReport)
}

// HeldDrift is the id of the drift held on an edge copy (DriftHeldAnnotation), "" when none.
func HeldDrift(down *unstructured.Unstructured) string {
	if down == nil {
		return ""
	}
	id, _, _ := strings.Cut(down.GetAnnotations()[DriftHeldAnnotation], " ")
	return id
}

// Acknowledged tells whether an upstream object acknowledges the drift id held by syncTarget.
func Acknowledged(up *unstructured.Unstructured, syncTarget, id string) bool {
	for _, ack := range strings.Split(up.GetAnnotations()[AcknowledgeDriftAnnotation], ",") {
		if strings.TrimSpace(ack) == syncTarget+"="+id {
			return true
		}
	}
	return false
}

// AcknowledgedAll tells whether the upstream object acknowledges, for syncTarget, a drift found no
// earlier than every one of these changes at the edge: then they are the drift acknowledged (found
// again after the hold ended, or after a restart), to be put back, not held anew.
func AcknowledgedAll(up *unstructured.Unstructured, syncTarget string, drifts []Drift) bool {
	var latest time.Time
	for _, ack := range strings.Split(up.GetAnnotations()[AcknowledgeDriftAnnotation], ",") {
		target, id, ok := strings.Cut(strings.TrimSpace(ack), "=")
		if t, err := time.Parse(labelTime, id); ok && target == syncTarget && err == nil && t.After(latest) {
			latest = t
		}
	}
	if latest.IsZero() {
		return false
	}
	for _, d := range drifts {
		since, err := time.Parse(time.RFC3339, d.Since)
		if err != nil || since.After(latest) {
			return false // a change nobody is known to have made when: not known to be acknowledged
		}
	}
	return true
}

// Drift is one field of an edge copy that differs from what downsync applies.
type Drift struct {
	// Path names the field: dotted names, [name=<n>] for the element of a list with that name.
	Path string `json:"path"`
	// Edge is the edge's value as JSON, cut short; "(absent)" when the edge removed it.
	Edge string `json:"edge"`
	// Manager is the field manager that owns it at the edge ("" when none does: removed).
	Manager string `json:"manager,omitempty"`
	// Since is the time of that manager's last change of the object.
	Since string `json:"since,omitempty"`
}

// maxDriftValue is how much of an edge value a Drift keeps.
const maxDriftValue = 80

// Drifts lists the fields of desired whose value at the edge (live) differs, with who changed them.
// Maps are walked field by field and lists of named elements element by element; other lists and
// scalars are compared whole (a map at the edge may hold more: defaults). The syncer's marks are not
// content. self is the syncer's field manager, never named as the one who changed a field.
func Drifts(desired, live *unstructured.Unstructured, self string) []Drift {
	var out []Drift
	walkDrifts(desired, live, func(path []string, _, have interface{}, absent bool) {
		d := Drift{Path: joinPath(path), Edge: "(absent)"}
		if !absent {
			d.Edge = shortJSON(have)
		}
		d.Manager, d.Since = ownerOf(live, path, self)
		out = append(out, d)
	})
	return out
}

// walkDrifts calls found for each field of desired whose value at the edge (live) differs (Drifts),
// with the value desired holds there and the edge's (absent: the edge has none).
func walkDrifts(desired, live *unstructured.Unstructured, found func(path []string, want, have interface{}, absent bool)) {
	var walk func(path []string, want, have interface{})
	walk = func(path []string, want, have interface{}) {
		if Subset(want, have) {
			return
		}
		switch w := want.(type) {
		case map[string]interface{}:
			if h, ok := have.(map[string]interface{}); ok {
				keys := make([]string, 0, len(w))
				for k := range w {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					if skip(path, k, len(path) == 0) {
						continue
					}
					hv, ok := h[k]
					if !ok && !isEmpty(w[k]) {
						found(append(path, k), w[k], nil, true)
						continue
					}
					walk(append(append([]string(nil), path...), k), w[k], hv)
				}
				return
			}
		case []interface{}:
			if h, ok := have.([]interface{}); ok && namedElements(w) && namedElements(h) {
				for _, e := range w {
					step := fmt.Sprintf("[name=%v]", e.(map[string]interface{})["name"])
					if he, ok := element(h, e, -1); ok {
						walk(append(append([]string(nil), path...), step), e, he)
					} else {
						found(append(path, step), e, nil, true)
					}
				}
				if len(w) == len(h) {
					return
				}
			}
		}
		found(path, want, have, false)
	}
	walk(nil, desiredFields(desired), live.Object)
}

// DriftPutBackAnnotation is written on an edge copy whose drift is held beside DriftHeldAnnotation:
// the value downsync last applied to each drifted field, as JSON (a list of {"field": the path as a
// list of steps, "value": the value, absent when the field was not there}). Once every one of those
// fields holds its value again at the edge (PutBack), the hold ends: the technician undid the change.
// Left out when the values are over maxPutBackBytes; such a hold ends by acknowledgement, or when the
// copy matches upstream again.
const DriftPutBackAnnotation = "edge.kubestellar.io/drift-put-back"

// maxPutBackBytes bounds DriftPutBackAnnotation's value.
const maxPutBackBytes = 8 << 10

// putBackField is one field of DriftPutBackAnnotation.
type putBackField struct {
	Field []string    `json:"field"`
	Value interface{} `json:"value,omitempty"`
}

// PutBackNote is the DriftPutBackAnnotation value of a copy (live) drifted from what downsync last
// applied (written): each drifted field with its written value; "" when there is no drift or the
// values are too large to note.
func PutBackNote(written, live *unstructured.Unstructured) string {
	var fields []putBackField
	walkDrifts(written, live, func(path []string, want, _ interface{}, _ bool) {
		fields = append(fields, putBackField{Field: append([]string(nil), path...), Value: want})
	})
	if len(fields) == 0 {
		return ""
	}
	data, err := json.Marshal(fields)
	if err != nil || len(data) > maxPutBackBytes {
		return ""
	}
	return string(data)
}

// PutBack tells whether every field an edge copy's DriftPutBackAnnotation names holds its noted
// value again (as Subset compares: the edge may add defaults to a map). False when the copy
// carries no such note, or one that cannot be read.
func PutBack(live *unstructured.Unstructured) bool {
	note := live.GetAnnotations()[DriftPutBackAnnotation]
	var fields []putBackField
	if note == "" || json.Unmarshal([]byte(note), &fields) != nil || len(fields) == 0 {
		return false
	}
	for _, f := range fields {
		have, found := valueAt(live.Object, f.Field)
		if !found {
			if !isEmpty(f.Value) {
				return false
			}
			continue
		}
		if !Subset(f.Value, have) {
			return false
		}
	}
	return true
}

// valueAt is the value at a path of walkDrifts' steps: field names, and [name=<n>] for the element
// of a list with that name.
func valueAt(obj interface{}, steps []string) (interface{}, bool) {
	v := obj
	for _, s := range steps {
		if name, ok := strings.CutPrefix(s, "[name="); ok {
			list, _ := v.([]interface{})
			name = strings.TrimSuffix(name, "]")
			var next interface{}
			for _, e := range list {
				if m, ok := e.(map[string]interface{}); ok && fmt.Sprint(m["name"]) == name {
					next = e
					break
				}
			}
			if next == nil {
				return nil, false
			}
			v = next
			continue
		}
		m, ok := v.(map[string]interface{})
		if !ok {
			return nil, false
		}
		if v, ok = m[s]; !ok {
			return nil, false
		}
	}
	return v, true
}

// namedElements tells whether every element of a list is a map with a name.
func namedElements(list []interface{}) bool {
	for _, e := range list {
		m, ok := e.(map[string]interface{})
		if !ok {
			return false
		}
		if _, ok := m["name"].(string); !ok {
			return false
		}
	}
	return len(list) > 0
}

// joinPath writes a path as retainFields does: dotted names, a name with dots or slashes in brackets
// (metadata.labels[app.kubernetes.io/name]), named elements as [name=<n>].
func joinPath(path []string) string {
	var b strings.Builder
	for i, p := range path {
		switch {
		case strings.HasPrefix(p, "[name="):
		case strings.ContainsAny(p, "./[]"):
			p = "[" + p + "]"
		case i > 0:
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func shortJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(data) > maxDriftValue {
		return string(data[:maxDriftValue]) + "..."
	}
	return string(data)
}

// ownerOf is the field manager (other than self) whose managedFields entry on obj names the field at
// path or the closest of its parents, and the time of that entry; the latest such entry.
func ownerOf(obj *unstructured.Unstructured, path []string, self string) (manager, since string) {
	steps := fieldSetSteps(path)
	var best time.Time
	for _, e := range obj.GetManagedFields() {
		if e.Manager == self || e.FieldsV1 == nil || e.Subresource == "status" {
			continue
		}
		var set map[string]interface{}
		if json.Unmarshal(e.FieldsV1.Raw, &set) != nil || !setNames(set, steps) {
			continue
		}
		t := time.Time{}
		if e.Time != nil {
			t = e.Time.Time
		}
		if manager == "" || t.After(best) {
			manager, best = e.Manager, t
			since = ""
			if !t.IsZero() {
				since = t.UTC().Format(time.RFC3339)
			}
		}
	}
	return manager, since
}

// fieldSetSteps are the keys of a field set that name the field at path: "f:<name>" for a field,
// "k:{"name":"<n>"}" for a named element.
func fieldSetSteps(path []string) []string {
	steps := make([]string, 0, len(path))
	for _, part := range path {
		if name, ok := strings.CutPrefix(part, "[name="); ok {
			quoted, _ := json.Marshal(strings.TrimSuffix(name, "]"))
			steps = append(steps, `k:{"name":`+string(quoted)+`}`)
			continue
		}
		steps = append(steps, "f:"+part)
	}
	return steps
}

// setNames tells whether a field set names the field the steps reach, or a parent of it whose value
// it holds whole (names nothing below it).
func setNames(set map[string]interface{}, steps []string) bool {
	for _, s := range steps {
		child, ok := set[s].(map[string]interface{})
		if !ok {
			return false
		}
		if !namesChildren(child) {
			return true
		}
		set = child
	}
	return true
}
