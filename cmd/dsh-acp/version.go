package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// Stamped by the release build:
//
//	go build -ldflags "-X main.version=1.2.3 -X main.commit=<sha>" ./cmd/dsh-acp
//
// A build without the stamp (go install, go build) takes both from the
// module and VCS information Go embeds (see buildVersion).
var (
	version = ""
	commit  = ""
)

// devVersion is the version of a build that has no stamp and no module
// version (a checkout built with go build or go run).
const devVersion = "0.1.0-dev"

// buildVersion is the version and commit of this binary: the -X stamp when
// there is one, else the module version Go records (`go install …@vX.Y.Z`,
// or a pseudo-version for `go build` in a checkout; without its "v") and
// the vcs.revision (with "-dirty" for uncommitted changes), else devVersion
// and "unknown" (a build with -buildvcs=false or outside a repository).
func buildVersion(info *debug.BuildInfo, ok bool) (ver, rev string) {
	ver, rev = version, commit
	if ok && ver == "" {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			ver = strings.TrimPrefix(v, "v")
		}
	}
	if ok && rev == "" {
		var dirty bool
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" && dirty {
			rev += "-dirty"
		}
	}
	if ver == "" {
		ver = devVersion
	}
	if rev == "" {
		rev = "unknown"
	}
	return ver, rev
}

// printVersion writes `dsh-acp <version> (commit <sha>)`.
func printVersion(w io.Writer) {
	ver, rev := buildVersion(debug.ReadBuildInfo())
	fmt.Fprintf(w, "dsh-acp %s (commit %s)\n", ver, rev)
}
