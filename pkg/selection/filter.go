package selection

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
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

// newFilter builds an entry's selectors. An invalid one (an unknown operator, a malformed key) is an
// error that names the field. An empty selector, like an omitted one, selects everything.
func newFilter(labelSelector, annotationSelector *metav1.LabelSelector) (filter, error) {
	var f filter
	var err error
	if f.labels, err = labelsSelector(labelSelector); err != nil {
		return filter{}, fmt.Errorf("labelSelector: %w", err)
	}
	if f.annotations, err = annotationsSelector(annotationSelector); err != nil {
		return filter{}, fmt.Errorf("annotationSelector: %w", err)
	}
	var key []string
	if f.labels != nil {
		key = append(key, "labels "+f.labels.String())
	}
	if f.annotations != nil {
		key = append(key, "annotations "+f.annotations.String())
	}
	f.key = strings.Join(key, "; ")
	return f, nil
}

func labelsSelector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return nil, nil
	}
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || s.Empty() {
		return nil, err
	}
	return s, nil
}

// annotationsSelector is a label selector over annotations. Annotation values are free text, so the
// values of matchLabels are taken as they are; keys must be qualified names, as for labels, and the
// values of matchExpressions follow the label selector rules.
func annotationsSelector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return nil, nil
	}
	for key := range ls.MatchLabels {
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("key %q: %s", key, strings.Join(errs, "; "))
		}
	}
	exprs, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: ls.MatchExpressions})
	if err != nil {
		return nil, err
	}
	reqs, _ := exprs.Requirements()
	s := labels.SelectorFromValidatedSet(ls.MatchLabels).Add(reqs...)
	if s.Empty() {
		return nil, nil
	}
	return s, nil
}
