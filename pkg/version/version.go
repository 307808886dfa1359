package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the linker only (see doc.go):
//
//	-X github.com/kubestellar/syncer/pkg/version.version=<git describe --tags --always --dirty>
//	-X github.com/kubestellar/syncer/pkg/version.revision=<git rev-parse HEAD>
var (
	version  string
	revision string
)

// UnknownVersion and UnknownRevision stand in for what neither the linker nor the Go toolchain recorded.
const (
	UnknownVersion  = "dev"
	UnknownRevision = "unknown"
)

// Info is what a binary knows about its build.
type Info struct {
	// Version is `git describe --tags --always --dirty` at build time, else the main module's version
	// as the Go toolchain recorded it (a pseudo-version from the VCS), else "dev".
	Version string
	// Revision is the git commit built, from the linker or the toolchain's vcs.revision, else "unknown".
	Revision string
	// GoVersion is the Go toolchain that built the binary (runtime.Version()).
	GoVersion string
	// Platform is GOOS/GOARCH.
	Platform string
}

// Get returns this binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, revision, bi)
}

// resolve fills in what the linker did not set from the toolchain's build information (nil when the
// binary has none).
func resolve(linkedVersion, linkedRevision string, bi *debug.BuildInfo) Info {
	info := Info{Version: linkedVersion, Revision: linkedRevision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		if info.Revision == "" {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					info.Revision = s.Value
				}
			}
		}
	}
	if info.Version == "" {
		info.Version = UnknownVersion
	}
	if info.Revision == "" {
		info.Revision = UnknownRevision
	}
	return info
}

// Line is the one line --version prints: the binary's name, version, revision, Go version and
// platform.
func (i Info) Line(binary string) string {
	return fmt.Sprintf("%s %s (revision %s, %s, %s)", binary, i.Version, i.Revision, i.GoVersion, i.Platform)
}
