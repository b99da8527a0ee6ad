package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dsh-acp/dsh-acp/executor"
)

// noticeCommandLimit caps the command quoted in a completion notice, in runes.
const noticeCommandLimit = 80

// WatchCompletions subscribes to ex's finished background tasks and hands
// a short notice for each to deliver, with the task's owner token. deliver
// returns false when the owner is gone; the notice is then dropped. A
// notice is context for the owner's next model request, not a wake-up.
// deliver runs on an executor goroutine and must not block. stop
// unsubscribes.
func WatchCompletions(ex executor.Executor, deliver func(owner, text string) bool) (stop func()) {
	return ex.OnTaskDone(func(d executor.TaskDone) {
		deliver(d.Owner, CompletionNotice(d))
	})
}

// CompletionNotice is the text the model reads when a background task
// finishes, e.g.:
//
//	Background task bash-3 (`npm run build`) finished [status: completed, exit code: 0]. Read its remaining output with bash_output {"task_id":"bash-3"}.
func CompletionNotice(d executor.TaskDone) string {
	verb := "finished"
	if d.Status == executor.Killed {
		verb = "was stopped"
	}
	return fmt.Sprintf("Background task %s (%s) %s [status: %s]. Read its remaining output with bash_output {\"task_id\":%q}.",
		d.ID, quoteCommand(d.Command), verb, taskStatusText(d.Status, d.ExitCode, d.Signal), d.ID)
}

// quoteCommand shortens a command to its first line and noticeCommandLimit
// runes and quotes it as inline code.
func quoteCommand(cmd string) string {
	cmd = strings.TrimSpace(cmd)
	short := cmd
	if i := strings.IndexByte(short, '\n'); i >= 0 {
		short = short[:i]
	}
	if utf8.RuneCountInString(short) > noticeCommandLimit {
		short = string([]rune(short)[:noticeCommandLimit-1])
	}
	if short != cmd {
		short = strings.TrimRight(short, " \t") + "…"
	}
	return "`" + strings.ReplaceAll(short, "`", "'") + "`"
}
