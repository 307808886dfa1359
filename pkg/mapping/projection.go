package mapping

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// StatusProjection is what of an edge object's status is returned upstream: every field (All), or
// the listed ones (Fields: field names or dotted paths); cut to MaxBytes of JSON (0: no cap). The
// zero value returns nothing.
type StatusProjection struct {
	All      bool
	Fields   []string
	MaxBytes int64
}

// Returns tells whether the projection returns anything.
func (p StatusProjection) Returns() bool { return p.All || len(p.Fields) > 0 }

// Union is what an object selected with both p and o returns: every field when either returns every
// field, else the fields of both; the larger cap (none when either has none). A projection that
// returns nothing adds nothing.
func (p StatusProjection) Union(o StatusProjection) StatusProjection {
	switch {
	case !o.Returns():
		return p
	case !p.Returns():
		return o
	}
	out := StatusProjection{All: p.All || o.All, MaxBytes: max(p.MaxBytes, o.MaxBytes)}
	if p.MaxBytes == 0 || o.MaxBytes == 0 {
		out.MaxBytes = 0
	}
	if !out.All {
		seen := map[string]bool{}
		for _, f := range append(append([]string(nil), p.Fields...), o.Fields...) {
			if !seen[f] {
				seen[f] = true
				out.Fields = append(out.Fields, f)
			}
		}
		sort.Strings(out.Fields)
	}
	return out
}

// Key identifies the projection (for merging equal ones).
func (p StatusProjection) Key() string {
	return fmt.Sprintf("%v|%d|%s", p.All, p.MaxBytes, strings.Join(p.Fields, ","))
}

// CutCondition is the type of the condition that says a returned status was cut (Project).
const CutCondition = "EdgeStatusCut"

// Project is status (a returned status, owned by the caller) as p returns it for the upstream object
// up: only p's fields, then, past p.MaxBytes of JSON, without its largest top-level fields (but
// observedGeneration), a
// condition CutCondition (True, reason TooLarge) naming the sync target and what was left out, its
// transition time kept from up's while it says the same. nil stays nil.
func Project(status interface{}, p StatusProjection, up *unstructured.Unstructured, syncTarget string, now time.Time) interface{} {
	m, ok := status.(map[string]interface{})
	if !ok {
		return status
	}
	if !p.All {
		kept := map[string]interface{}{}
		for _, f := range p.Fields {
			path := strings.Split(f, ".")
			if v, ok, _ := unstructured.NestedFieldNoCopy(m, path...); ok {
				_ = unstructured.SetNestedField(kept, runtime.DeepCopyJSONValue(v), path...)
			}
		}
		m = kept
	}
	if p.MaxBytes <= 0 {
		return m
	}
	size, sizes := jsonSizes(m)
	if size <= p.MaxBytes {
		return m
	}
	fields := make([]string, 0, len(sizes))
	for f := range sizes {
		fields = append(fields, f)
	}
	sort.Slice(fields, func(i, j int) bool {
		return sizes[fields[i]] > sizes[fields[j]] || (sizes[fields[i]] == sizes[fields[j]] && fields[i] < fields[j])
	})
	var left []string
	for _, f := range fields {
		if size <= p.MaxBytes {
			break
		}
		if f == "observedGeneration" {
			continue // what tools read the rest by; a few bytes
		}
		delete(m, f)
		size -= sizes[f] + int64(len(f)) + 4 // "f":v,
		left = append(left, f)
	}
	sort.Strings(left)
	cond := map[string]interface{}{"type": CutCondition, "status": "True", "reason": "TooLarge",
		"message": fmt.Sprintf("sync target %s: the edge's status is over %d bytes; left out: %s", syncTarget, p.MaxBytes, strings.Join(left, ", "))}
	setCondition(m, up, cond, now)
	return m
}

// jsonSizes is the size of m as JSON and the size of each of its values.
func jsonSizes(m map[string]interface{}) (int64, map[string]int64) {
	sizes := make(map[string]int64, len(m))
	var total int64 = 2
	for k, v := range m {
		raw, _ := json.Marshal(v)
		sizes[k] = int64(len(raw))
		total += int64(len(raw)+len(k)) + 4
	}
	return total, sizes
}
