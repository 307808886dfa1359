package selection

import (
	"time"

	"github.com/kubestellar/syncer/pkg/mapping"
)

// Policy is what the configs selecting an object say of how it is synced, beyond being selected:
// every per-object setting of the selection, answered at once (PolicyOf). A new per-object setting
// is a field here.
type Policy struct {
	// Selected tells whether the object is selected for downsync (Matches).
	Selected bool
	// ReportOnly: it is selected by report-only configs alone (spec.reportOnly): what would be
	// written for it is reported, not written.
	ReportOnly bool
	// PropagatesDeletion: its edge copy goes when it goes upstream or leaves the selection.
	PropagatesDeletion bool
	// Retain are the fields of its edge copy that the edge owns, sorted.
	Retain []mapping.FieldPath
	// Drift is what to do when its edge copy drifts.
	Drift mapping.DriftPolicy
	// AllowEmptying: every entry selecting it lets rewrites that empty its edge copy (replicas 0,
	// data emptied) through uncounted by the deletion breaker (allowEmptying).
	AllowEmptying bool
	// PausedUntil is the end of the pause of the configs selecting it, at the time asked (zero: not
	// paused by them).
	PausedUntil time.Time
}

// PolicyOf is the Policy of an object at now (pauses end). Unlike Matches, it answers for an object
// that is not selected too (the pause of the configs that select what its edge copy is, say): only
// ReportOnly needs it selected.
func (s *Selection) PolicyOf(o Object, now time.Time) Policy {
	p := Policy{Selected: s.Matches(o), PropagatesDeletion: s.PropagatesDeletion(o), Retain: s.RetainedFields(o), Drift: s.DriftPolicy(o)}
	p.ReportOnly = p.Selected && s != nil && !s.writeRules.any(o, func(r *rule) bool { return r.matches(o) })
	p.AllowEmptying = p.Selected && !s.rules.any(o, func(r *rule) bool { return !r.allowEmptying && r.matches(o) })
	p.PausedUntil, _ = s.PausedUntil(o, now)
	return p
}

// ReturnsStatus tells whether the status of a downsynced object is to be written back upstream.
func (s *Selection) ReturnsStatus(o Object) bool { return s.StatusProjection(o).Returns() }

// StatusProjection is what of a downsynced object's status is written back upstream: the union of
// what the entries selecting it return, in the configs that return status.
func (s *Selection) StatusProjection(o Object) mapping.StatusProjection {
	if s == nil {
		return mapping.StatusProjection{}
	}
	return s.statusRules.union(o, func(r *rule) mapping.StatusProjection { return r.status })
}

// SomeReportOnly tells whether a config only reports (spec.reportOnly).
func (s *Selection) SomeReportOnly() bool { return s != nil && s.someReportOnly }

// DriftPolicy is what downsync does when a selected object's edge copy drifts: Report when an entry
// selecting it says so, else Correct.
func (s *Selection) DriftPolicy(o Object) mapping.DriftPolicy {
	if s != nil && s.rules.any(o, func(r *rule) bool { return r.drift == mapping.DriftReport && r.matches(o) }) {
		return mapping.DriftReport
	}
	return mapping.DriftCorrect
}

// RetainedFields are the fields of a downsynced object that the edge owns: the union of what the
// entries selecting it retain, sorted.
func (s *Selection) RetainedFields(o Object) []mapping.FieldPath {
	if s == nil {
		return nil
	}
	var out []mapping.FieldPath
	s.rules.any(o, func(r *rule) bool {
		if len(r.retain) > 0 && r.matches(o) {
			out = append(out, r.retain...)
		}
		return false
	})
	return mapping.SortPaths(out)
}

// PropagatesDeletion tells whether the edge copy of a downsynced object is deleted when the object
// is deleted upstream or leaves the selection (no config selecting it set propagateDeletion false).
func (s *Selection) PropagatesDeletion(o Object) bool {
	return s == nil || s.deleteRules.any(o, func(r *rule) bool { return r.matches(o) })
}

// pause is a paused config: what it selects, until when.
type pause struct {
	until time.Time
	rules ruleSet
}

// PausedUntil tells whether a selected object is paused at now by the configs that select it (the
// annotation mapping.PausedUntilAnnotation on each, and no unpaused config selecting it), and until
// when: the earliest end among them.
func (s *Selection) PausedUntil(o Object, now time.Time) (time.Time, bool) {
	if s == nil || len(s.pauses) == 0 || s.unpausedRules.any(o, func(r *rule) bool { return r.matches(o) }) {
		return time.Time{}, false
	}
	var until time.Time
	for _, p := range s.pauses {
		if !p.rules.any(o, func(r *rule) bool { return r.matches(o) }) {
			continue
		}
		if !now.Before(p.until) {
			return time.Time{}, false // a config whose pause ended selects it
		}
		if until.IsZero() || p.until.Before(until) {
			until = p.until
		}
	}
	return until, !until.IsZero()
}
