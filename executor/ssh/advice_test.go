package ssh

import (
	"errors"
	"strings"
	"testing"

	"github.com/dsh-acp/dsh-acp/executor"
)

// What the host lacks, from the probe's output, becomes a reason that
// names the host, the program and the host's fix; never this machine's.
func TestProbeFailedReasons(t *testing.T) {
	s := &Spawner{d: &dialer{target: Target{Host: "build.example"}}}
	for _, tc := range []struct {
		out, missing string
		want         []string
	}{
		{"missing bwrap /opt/bin:/usr/sbin", "bwrap", []string{"the host has no bwrap on its PATH", "Install bubblewrap on build.example", "(now /opt/bin:/usr/sbin)"}},
		{"missing unshare /usr/bin", "unshare", []string{"the host has no unshare on its PATH", "Install util-linux on build.example"}},
		{"missing flock /usr/bin", "flock", []string{"the host has no flock on its PATH", "Install util-linux on build.example"}},
		{"missing stat /usr/bin", "stat", []string{"the host has no stat on its PATH", "Install coreutils on build.example"}},
		{"bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces", "",
			[]string{"No permissions to create new namespace", "Allow unprivileged user namespaces on build.example"}},
		{"bwrap: something else", "", []string{"bwrap: something else", "what the sandbox needs on build.example"}},
	} {
		err := s.probeFailed(tc.out)
		r := executor.ReasonOf(err)
		if !errors.Is(err, executor.ErrSandbox) || r == nil || r.Host != "build.example" || r.Missing != tc.missing {
			t.Errorf("%q: %v (reason %+v)", tc.out, err, r)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error()+" "+r.Fix, w) {
				t.Errorf("%q: %q / fix %q lacks %q", tc.out, err, r.Fix, w)
			}
		}
	}
	// Before the probe: the reason names the host and the level to choose.
	if r := executor.ReasonOf(s.Unavailable()); r == nil || r.Host != "build.example" || !strings.Contains(r.Fix, "/sandbox workspace") {
		t.Errorf("before the probe: %+v", r)
	}
}
