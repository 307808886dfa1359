package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestResolve: what the linker set wins; otherwise the toolchain's main-module version and
// vcs.revision are used; otherwise "dev" and "unknown". The Go version and platform are always the
// running binary's.
func TestResolve(t *testing.T) {
	stamped := &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20250101000000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		name                     string
		linkedVersion, linkedRev string
		bi                       *debug.BuildInfo
		wantVersion, wantRev     string
	}{
		{"set by the linker", "v1.2.3-4-gabcdef0-dirty", "abcdef0123", stamped, "v1.2.3-4-gabcdef0-dirty", "abcdef0123"},
		{"plain go build in a git checkout", "", "", stamped, "v0.0.0-20250101000000-0123456789ab+dirty", "0123456789abcdef"},
		{"no VCS information", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, UnknownVersion, UnknownRevision},
		{"no build information", "", "", nil, UnknownVersion, UnknownRevision},
		{"only the version linked", "v1.0.0", "", stamped, "v1.0.0", "0123456789abcdef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolve(tc.linkedVersion, tc.linkedRev, tc.bi)
			want := Info{Version: tc.wantVersion, Revision: tc.wantRev, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestLine(t *testing.T) {
	got := Info{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26.0", Platform: "linux/amd64"}.Line("syncer")
	if want := "syncer v1.2.3 (revision abc, go1.26.0, linux/amd64)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
