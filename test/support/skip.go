package support

import (
	"os"
	"testing"
)

// Skip skips a test whose prerequisite is missing, except in CI ($CI set, as .ci/run sets it),
// where CI provides every prerequisite: there a skip would turn CI green without running the test,
// so it fails instead, naming what is missing.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("would skip in CI, which provides what this test needs: %s", reason)
		return
	}
	t.Skip(reason)
}

// SkipBecause skips a test that does not apply to this run, in CI too: the reason is why it cannot
// (a kcp-only behaviour against a kube upstream, say). Every call is one entry of the list of skips
// CI accepts.
func SkipBecause(t testing.TB, reason string) {
	t.Helper()
	t.Skip(reason)
}
