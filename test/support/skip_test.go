package support

import "testing"

// recorder is a testing.TB that records how a helper ended the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                                   {}
func (r *recorder) Skip(args ...interface{})                  { r.skipped = args[0].(string) }
func (r *recorder) Fatalf(format string, args ...interface{}) { r.failed = format }

// TestSkip: a missing prerequisite skips outside CI and fails in CI; SkipBecause skips in both.
func TestSkip(t *testing.T) {
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	Skip(r, "no helm")
	if r.skipped != "no helm" || r.failed != "" {
		t.Errorf("outside CI: skipped %q failed %q, want a skip", r.skipped, r.failed)
	}
	t.Setenv("CI", "true")
	r = &recorder{TB: t}
	Skip(r, "no helm")
	if r.skipped != "" || r.failed == "" {
		t.Errorf("in CI: skipped %q failed %q, want a failure", r.skipped, r.failed)
	}
	r = &recorder{TB: t}
	SkipBecause(r, "kcp only")
	if r.skipped != "kcp only" || r.failed != "" {
		t.Errorf("SkipBecause in CI: skipped %q failed %q, want a skip", r.skipped, r.failed)
	}
}
