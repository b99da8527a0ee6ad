package chat

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/tools"
)

// plain is the frontend for piped input: each line is a prompt, and a
// question is answered by the next line.
type plain struct {
	r     *Renderer
	lines <-chan string
}

// readLines sends each line of in, then closes the channel at its end.
func readLines(in io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// forwardInterrupts presses it for each signal on sigs until quit.
func forwardInterrupts(sigs <-chan os.Signal, it *interrupter) {
	if sigs == nil {
		return
	}
	go func() {
		for {
			select {
			case <-sigs:
				it.press()
			case <-it.quit:
				return
			}
		}
	}()
}

func (p *plain) opened()   {}
func (p *plain) busy(bool) {}

// ask prints the question and takes the next line as the answer: a key,
// a number or yes/always/no. Any other line is refused (it is not kept as
// a prompt) and the question asked again; the end of input rejects once
// when the agent offered that.
func (p *plain) ask(ctx context.Context, q question, cancel <-chan struct{}) (sdk.PermissionOption, bool) {
	p.r.Notice("%s", q.text())
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return firstOf(q.choices, sdk.PermissionOptionKindRejectOnce)
			}
			if o, ok := match(q.choices, line); ok {
				return o, true
			}
			p.r.Notice("%q is not an option: answer %s", tools.CleanTerminalText(strings.TrimSpace(line)), q.keys())
		case <-cancel:
			return sdk.PermissionOption{}, false
		case <-ctx.Done():
			return sdk.PermissionOption{}, false
		}
	}
}
