package selection

import (
	"k8s.io/apimachinery/pkg/labels"
)

// filter is an entry's label and annotation selectors, built once when the configs are merged. A
// nil selector selects every object.
type filter struct {
	labels, annotations labels.Selector
	// key is the selectors' canonical text: entries with equal keys select the same objects and
	// share a rule.
	key string
}

var noLabels = labels.Set(nil)

// matches tells whether the object's labels and annotations match the selectors.
func (f filter) matches(o Object) bool {
	return matchesSelector(f.labels, o.Labels) && matchesSelector(f.annotations, o.Annotations)
}

func matchesSelector(s labels.Selector, l labels.Labels) bool {
	if s == nil {
		return true
	}
	if l == nil {
		l = noLabels
	}
	return s.Matches(l)
}
