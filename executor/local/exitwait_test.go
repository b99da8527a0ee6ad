package local

import (
	"errors"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeExits is an exitEvents that plays a script and records the calls.
type fakeExits struct {
	watch     []error     // successive Watch results; nil when used up
	next      []fakeEvent // successive Next results; an exit when used up
	exited    bool        // Exited's answer
	exitedErr error
	calls     []string
}

type fakeEvent struct {
	exited bool
	err    error
}

func (f *fakeExits) Watch(int) error {
	f.calls = append(f.calls, "watch")
	if len(f.watch) == 0 {
		return nil
	}
	err := f.watch[0]
	f.watch = f.watch[1:]
	return err
}

func (f *fakeExits) Next() (bool, error) {
	f.calls = append(f.calls, "next")
	if len(f.next) == 0 {
		return true, nil
	}
	ev := f.next[0]
	f.next = f.next[1:]
	return ev.exited, ev.err
}

func (f *fakeExits) Exited(int) (bool, error) {
	f.calls = append(f.calls, "exited")
	return f.exited, f.exitedErr
}

func (f *fakeExits) Close() error {
	f.calls = append(f.calls, "close")
	return nil
}

// TestAwaitExit drives the darwin exit logic through every path of its
// event source: awaitExit reports the exit only when it was seen (an
// event, or a watch refused for a process Exited confirms is our exited
// child), retries EINTR, skips events that are not the exit, fails
// otherwise, and always closes the source.
func TestAwaitExit(t *testing.T) {
	tests := []struct {
		name    string
		ev      fakeExits
		wantErr error // nil: success
		calls   []string
	}{
		{name: "exit event", ev: fakeExits{next: []fakeEvent{{exited: true}}},
			calls: []string{"watch", "next", "close"}},
		{name: "interrupted watch", ev: fakeExits{watch: []error{unix.EINTR, unix.EINTR}},
			calls: []string{"watch", "watch", "watch", "next", "close"}},
		{name: "interrupted wait and other events", ev: fakeExits{next: []fakeEvent{{err: unix.EINTR}, {exited: false}, {exited: true}}},
			calls: []string{"watch", "next", "next", "next", "close"}},
		{name: "exited before the watch", ev: fakeExits{watch: []error{unix.ESRCH}, exited: true},
			calls: []string{"watch", "exited", "close"}},
		{name: "gone and not our exited child", ev: fakeExits{watch: []error{unix.ESRCH}, exited: false},
			wantErr: errNotOurExit, calls: []string{"watch", "exited", "close"}},
		{name: "gone and unreadable", ev: fakeExits{watch: []error{unix.ESRCH}, exitedErr: unix.EIO},
			wantErr: unix.EIO, calls: []string{"watch", "exited", "close"}},
		{name: "watch fails", ev: fakeExits{watch: []error{unix.EBADF}},
			wantErr: unix.EBADF, calls: []string{"watch", "close"}},
		{name: "wait fails", ev: fakeExits{next: []fakeEvent{{exited: false}, {err: unix.EBADF}}},
			wantErr: unix.EBADF, calls: []string{"watch", "next", "next", "close"}},
		{name: "event error after an interrupt", ev: fakeExits{next: []fakeEvent{{err: unix.EINTR}, {err: unix.ENOMEM}}},
			wantErr: unix.ENOMEM, calls: []string{"watch", "next", "next", "close"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := awaitExit(&tc.ev, 4242)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("awaitExit: %v; want %v", err, tc.wantErr)
			}
			if !slices.Equal(tc.ev.calls, tc.calls) {
				t.Errorf("calls %v; want %v", tc.ev.calls, tc.calls)
			}
		})
	}
}

// TestGroupSignalError: ESRCH is never an error; EPERM is none only where
// the kernel refuses to signal a group of zombies and the leader has exited.
func TestGroupSignalError(t *testing.T) {
	tests := []struct {
		err                        error
		leaderExited, zombiesEPERM bool
		want                       error
	}{
		{nil, false, false, nil},
		{unix.ESRCH, false, false, nil},
		{unix.ESRCH, true, true, nil},
		{unix.EPERM, true, true, nil},         // darwin: a finished command before Release
		{unix.EPERM, false, true, unix.EPERM}, // darwin: the leader runs, and may not be signalled
		{unix.EPERM, true, false, unix.EPERM}, // Linux: a leftover that may not be signalled
		{unix.EINVAL, true, true, unix.EINVAL},
	}
	for _, tc := range tests {
		if got := groupSignalError(tc.err, tc.leaderExited, tc.zombiesEPERM); !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("groupSignalError(%v, exited %v, zombiesEPERM %v) = %v; want %v", tc.err, tc.leaderExited, tc.zombiesEPERM, got, tc.want)
		}
	}
}
