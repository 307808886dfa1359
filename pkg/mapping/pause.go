package mapping

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PausedUntilAnnotation pauses syncing until an RFC 3339 time: on an upstream object (its edge copy
// and its status), on a SyncerConfig (what it alone selects) or on an edge copy (a technician at the
// site). While paused the syncer writes nothing for the object in any direction, deletions included;
// at that time it resumes by itself. The annotation is never copied to the edge: the edge copy's is
// the site's own.
const PausedUntilAnnotation = "edge.kubestellar.io/paused-until"

// PausedPrefix starts the key of the per-target signal that a sync target holds the object paused:
// label paused.edge.kubestellar.io/<sync target>: the end of the pause (PauseLabelValue). Status
// return writes it while the object is paused and removes it when it resumes.
const PausedPrefix = "paused" + signalDomain + "/"

// PausedLabel is a sync target's PausedPrefix label key; "" when the target's name cannot be a label
// name.
func PausedLabel(syncTarget string) string { return signalKey(PausedPrefix, syncTarget) }

// labelTime is a time as a label value can hold it (no colons): 20261127T230000Z.
const labelTime = "20060102T150405Z"

// PauseLabelValue is the end of a pause as a label value can hold it.
func PauseLabelValue(until time.Time) string { return until.UTC().Format(labelTime) }

// resumeMargin is how long after a pause's end the paused object is looked at again.
const resumeMargin = 100 * time.Millisecond

// ResumeAfter is how long from now to look again at an object paused until then.
func ResumeAfter(until, now time.Time) time.Duration { return until.Sub(now) + resumeMargin }

// Pause is what an object's PausedUntilAnnotation says.
type Pause struct {
	// Until is the end of the pause; zero when the object has no pause or a malformed one.
	Until time.Time
	// Err says why the annotation is not a time.
	Err error
}

// PauseOf reads obj's PausedUntilAnnotation.
func PauseOf(obj *unstructured.Unstructured) Pause {
	if obj == nil {
		return Pause{}
	}
	v, ok := obj.GetAnnotations()[PausedUntilAnnotation]
	if !ok {
		return Pause{}
	}
	t, err := ParsePause(v)
	return Pause{Until: t, Err: err}
}

// ParsePause reads a PausedUntilAnnotation value.
func ParsePause(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not an RFC 3339 time (such as 2026-11-27T23:00:00Z)", PausedUntilAnnotation, v)
	}
	return t, nil
}

// Active tells whether the pause holds at now.
func (p Pause) Active(now time.Time) bool { return p.Err == nil && now.Before(p.Until) }
