package local

import "errors"

// MakeNonDumpable cannot protect the daemon's environment on darwin and
// says so: it returns an error and changes nothing. macOS has no
// PR_SET_DUMPABLE and no /proc; sysctl KERN_PROCARGS2 (what `ps -E` reads)
// returns the argv and the startup environment of any process of the same
// user, and XNU omits the environment only for a code-signing-restricted
// target, which dsh-acp is not. So a command run at level off can read an
// API key the daemon was given in its environment (as it can read the file
// `dsh-acp login` stores). Its memory is another matter: task_for_pid on
// another process needs root or the developer-tools authorization, not
// something a command gets; ptrace(PT_DENY_ATTACH) would only add a block on
// debugger attach, not on KERN_PROCARGS2, and is not used.
func MakeNonDumpable() error {
	return errors.New("macOS has no PR_SET_DUMPABLE: processes of the same user can read the daemon's startup environment (sysctl KERN_PROCARGS2, ps -E)")
}
