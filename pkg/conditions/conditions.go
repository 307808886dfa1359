package conditions

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/syncer/pkg/credential"
	"github.com/kubestellar/syncer/pkg/problem"
	"github.com/kubestellar/syncer/pkg/report"
)

// Condition types written on every SyncerConfig's status.
const (
	Ready               = "Ready"
	SelectionValid      = "SelectionValid"
	ObjectsSynced       = "ObjectsSynced"
	UpstreamReachable   = "UpstreamReachable"
	DownstreamReachable = "DownstreamReachable"
	// DeletionsHeld is True while the deletion breaker holds deletions (package breaker): the one
	// condition whose True is a problem.
	DeletionsHeld = "DeletionsHeld"
	// ReportOnly is True while the syncer only reports what it would write (report-only mode, or a
	// SyncerConfig's spec.reportOnly): it is not syncing those objects, so Ready is False.
	ReportOnly = "ReportOnly"
	// UpstreamCredential says whether the upstream token is renewed before it expires (package
	// credential); absent when the credential is not a ServiceAccount token.
	UpstreamCredential = "UpstreamCredential"
	// EdgeFence is True while the syncer's last proof found the edge owner's fence holding its
	// executor, False while not (it then writes nothing at the edge); absent without an executor.
	EdgeFence = "EdgeFence"
)

// healthy tells whether a condition says that all is well: True, but for DeletionsHeld and ReportOnly, False.
func healthy(c metav1.Condition) bool {
	if c.Type == DeletionsHeld || c.Type == ReportOnly {
		return c.Status == metav1.ConditionFalse
	}
	return c.Status == metav1.ConditionTrue
}

// Bounds on what a condition message lists, so that a thousand failing objects make a short status.
const (
	MaxExamples   = 5
	MaxMessageLen = 1024
)

// Sides whose reachability is reported.
const (
	Upstream   = "upstream"
	Downstream = "downstream"
)

// Sources are what the conditions are computed from.
type Sources interface {
	// SelectionProblems are the problems found resolving the configs.
	SelectionProblems() []problem.Problem
	// ObjectProblems counts the objects failing to sync and those in conflict, with up to limit
	// examples of each.
	ObjectProblems(limit int) (failing, conflicts int, examples []problem.Problem)
	// Reachability tells whether the last request to a side got a response, and if not, since when
	// and why.
	Reachability(side string) (ok bool, lastErr string, since time.Time)
	// DeletionsHeld tells whether the deletion breaker holds deletions at the edge: since when, how
	// many, and up to limit of them.
	DeletionsHeld(limit int) (held bool, since time.Time, count int, examples []string)
	// ReleaseHow says how the deletions held are released, naming count.
	ReleaseHow(count string) string
	// Report is what the syncer would write in report-only mode, cut to limit objects; nil when it
	// reports nothing (neither the mode nor a config asks).
	Report(limit int) *report.Summary
	// Credential is how the upstream credential fares.
	Credential() credential.State
	// Fence tells whether the syncer writes through a fence it must prove (required), whether it was
	// last proven in force, and if not why.
	Fence() (required, inForce bool, why string)
}

// Shared computes the conditions that are the same on every SyncerConfig: objects failing or in
// conflict, and reachability. The heartbeat computes them once per beat.
func Shared(src Sources) []metav1.Condition {
	var out []metav1.Condition
	if r := src.Report(MaxExamples); r != nil {
		out = append(out, metav1.Condition{Type: ReportOnly, Status: metav1.ConditionTrue, Reason: "ReportOnly",
			Message: fmt.Sprintf("Report-only: nothing is written at the edge for the objects reported; it would create %d, update %d and delete %d objects (%d in conflict, %d refused by the edge). They are listed in status.syncTargets[].report (and whole at the syncer's /report when it runs with --report-only).",
				r.Creates, r.Updates, r.Deletes, r.Conflicts, r.Refused)})
	}
	failing, conflicts, examples := src.ObjectProblems(MaxExamples)
	if failing+conflicts == 0 {
		out = append(out, metav1.Condition{Type: ObjectsSynced, Status: metav1.ConditionTrue, Reason: "Synced", Message: "No object is failing to sync."})
	} else {
		ex := problem.Strings(examples)
		sort.Strings(ex)
		out = append(out, metav1.Condition{Type: ObjectsSynced, Status: metav1.ConditionFalse, Reason: "SyncFailures",
			Message: capLen(fmt.Sprintf("%d objects failing to sync, %d conflicts with objects the syncer does not own. Examples: %s",
				failing, conflicts, Bounded(ex, failing+conflicts)), MaxMessageLen)})
	}
	for _, side := range []struct{ name, typ string }{{Upstream, UpstreamReachable}, {Downstream, DownstreamReachable}} {
		if ok, lastErr, since := src.Reachability(side.name); ok {
			out = append(out, metav1.Condition{Type: side.typ, Status: metav1.ConditionTrue, Reason: "Reachable", Message: "The last request got a response."})
		} else {
			out = append(out, metav1.Condition{Type: side.typ, Status: metav1.ConditionFalse, Reason: "Unreachable",
				Message: capLen(fmt.Sprintf("unreachable since %s: %s", since.UTC().Format(time.RFC3339), lastErr), MaxMessageLen)})
		}
	}
	out = append(out, deletionsHeld(src))
	if c, ok := upstreamCredential(src.Credential()); ok {
		out = append(out, c)
	}
	if required, inForce, why := src.Fence(); required {
		c := metav1.Condition{Type: EdgeFence, Status: metav1.ConditionTrue, Reason: "InForce",
			Message: "The edge owner's fence holds the syncer's executor: its last proof (a dry run the fence must deny) was denied."}
		if !inForce {
			c.Status, c.Reason = metav1.ConditionFalse, "FenceMissing"
			c.Message = capLen("The syncer writes nothing at the edge until the edge owner's fence is in force: "+why, MaxMessageLen)
		}
		out = append(out, c)
	}
	return out
}

// upstreamCredential is condition UpstreamCredential; none when the credential is not a
// ServiceAccount token with an expiry. It turns False only once less than a quarter of the token's
// life is left (State.Urgent, the alert's threshold): a renewal that fails before then is retried
// and said, without making the syncer look broken.
func upstreamCredential(st credential.State) (metav1.Condition, bool) {
	c := metav1.Condition{Type: UpstreamCredential, Status: metav1.ConditionTrue}
	if st.Urgent {
		c.Status = metav1.ConditionFalse
	}
	expires := st.Expires.UTC().Format(time.RFC3339)
	switch {
	case st.Expires.IsZero():
		return c, false
	case st.NotRenewed != "":
		c.Reason = map[bool]string{false: "NotRenewed", true: "ExpiresSoon"}[st.Urgent]
		c.Message = fmt.Sprintf("The upstream token of ServiceAccount %s expires at %s and is not renewed: %s. Bootstrap the syncer again (syncer-gen) before then.",
			st.ServiceAccount, expires, st.NotRenewed)
	case st.Failure != "":
		c.Reason = map[bool]string{false: "RenewalRetrying", true: "RenewalFailing"}[st.Urgent]
		c.Message = capLen(fmt.Sprintf("Renewing the upstream token of ServiceAccount %s has failed since %s: %s. The token in use expires at %s; the syncer keeps trying. "+
			"Once it has expired the syncer cannot reach the mailbox: bootstrap it again (syncer-gen) and restart it.",
			st.ServiceAccount, st.FailingSince.UTC().Format(time.RFC3339), st.Failure, expires), MaxMessageLen)
	default:
		c.Reason, c.Message = "Renewed", fmt.Sprintf("The upstream token of ServiceAccount %s expires at %s; the syncer renews it at %s, once half its life has gone.",
			st.ServiceAccount, expires, st.RenewAt.UTC().Format(time.RFC3339))
	}
	return c, true
}

// deletionsHeld is condition DeletionsHeld.
func deletionsHeld(src Sources) metav1.Condition {
	held, since, n, examples := src.DeletionsHeld(MaxExamples)
	if !held {
		return metav1.Condition{Type: DeletionsHeld, Status: metav1.ConditionFalse, Reason: "NoneHeld", Message: "No deletion is held."}
	}
	return metav1.Condition{Type: DeletionsHeld, Status: metav1.ConditionTrue, Reason: "TooManyDeletions",
		Message: capLen(fmt.Sprintf("%d deletions at the edge held since %s: more fell due than the deletion breaker allows. "+
			"The edge owner lets them go: %s (a value the annotation did not have when the hold began); "+
			"undoing the change that made them due ends the hold too. Held: %s",
			n, since.UTC().Format(time.RFC3339), src.ReleaseHow(strconv.Itoa(n)), Bounded(examples, n)), MaxMessageLen)}
}

// ForConfig computes the conditions of one config (a SyncerConfig or an EdgeSyncConfig, per kind):
// SelectionValid from the selection problems that concern it, the shared ones, and Ready (True when
// all the others are), Ready first.
func ForConfig(kind, name string, generation int64, selectionProblems []problem.Problem, shared []metav1.Condition) []metav1.Condition {
	var errs, warnings []string
	for _, p := range selectionProblems {
		switch {
		case !p.Concerns(kind, name):
		case p.Warning():
			warnings = append(warnings, "warning: "+p.String())
		default:
			errs = append(errs, p.String())
		}
	}
	var out []metav1.Condition
	switch {
	case len(errs) > 0:
		all := append(append([]string(nil), errs...), warnings...)
		out = append(out, metav1.Condition{Type: SelectionValid, Status: metav1.ConditionFalse, Reason: "SelectionProblems", Message: Bounded(all, len(all))})
	case len(warnings) > 0:
		// Nothing is broken, so Ready stays True; but the user likely meant something else.
		out = append(out, metav1.Condition{Type: SelectionValid, Status: metav1.ConditionTrue, Reason: "ResolvedWithWarnings", Message: Bounded(warnings, len(warnings))})
	default:
		out = append(out, metav1.Condition{Type: SelectionValid, Status: metav1.ConditionTrue, Reason: "Resolved", Message: "Every selected resource is served on both sides."})
	}
	out = append(out, shared...)
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	ready := metav1.Condition{Type: Ready, Status: metav1.ConditionTrue, Reason: "Syncing", Message: "The syncer is running and every condition holds."}
	for _, c := range out {
		if !healthy(c) {
			ready = metav1.Condition{Type: Ready, Status: metav1.ConditionFalse, Reason: c.Reason, Message: "See condition " + c.Type + "."}
			break
		}
	}
	out = append([]metav1.Condition{ready}, out...)
	for i := range out {
		out[i].ObservedGeneration = generation
	}
	return out
}

// Bounded lists up to MaxExamples items, says how many more of total there are, and caps the length
// at MaxMessageLen.
func Bounded(items []string, total int) string {
	shown := items
	if len(shown) > MaxExamples {
		shown = shown[:MaxExamples]
	}
	msg := strings.Join(shown, "; ")
	if total > len(shown) {
		more := fmt.Sprintf("; and %d more", total-len(shown))
		return capLen(msg, MaxMessageLen-len(more)) + more
	}
	return capLen(msg, MaxMessageLen)
}

// capLen cuts a message to n characters.
func capLen(msg string, n int) string {
	if len(msg) > n {
		return msg[:n-3] + "..."
	}
	return msg
}
