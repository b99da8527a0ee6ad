package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/internal/event"
)

// Tool names.
const (
	BashName       = "bash"
	BashOutputName = "bash_output"
	BashKillName   = "bash_kill"
)

// bash runs a command through the executor, in the foreground or as a
// background task.
type bash struct {
	ex     executor.Executor
	cfg    Config
	text   func() texts           // rendered on first use
	schema func() json.RawMessage // marshalled on first use
}

func (t *bash) Name() string            { return BashName }
func (t *bash) Description() string     { return t.text().bash }
func (t *bash) Schema() json.RawMessage { return t.schema() }

// PromptSection is the habits the three bash tools' descriptions cannot
// carry (check every result's exit marker, workdir not cd, poll background
// tasks) and what the session's sandbox level allows (s.Level, else the
// executor's default level).
func (t *bash) PromptSection(s Session) string {
	prompts := t.text().prompts
	if p, ok := prompts[t.level(s.Level)]; ok {
		return p
	}
	return prompts[executor.LevelOff]
}

// level is l, or the executor's default level when l is empty.
func (t *bash) level(l executor.Level) executor.Level {
	if l != "" {
		return l
	}
	if c, ok := t.ex.(executor.Confiner); ok {
		return c.DefaultLevel()
	}
	return executor.LevelOff
}

// Needs is the command line: the permission judge decides on it.
func (t *bash) Needs(args json.RawMessage) (Need, error) {
	a, err := decodeBashArgs(args)
	if err != nil {
		return Need{}, err
	}
	return Need{Kind: NeedCommand, Subject: a.Command, Background: a.RunInBackground}, nil
}

// Run decodes the named arguments, resolves them with the calling session's
// cwd and owner token, and runs the command. A bad argument, an executor
// failure or a cancelled ctx is an IsError result; a non-zero exit, a signal
// or a timeout is not.
func (t *bash) Run(ctx context.Context, call Call) event.Result {
	args, err := decodeBashArgs(call.Args)
	if err != nil {
		return errorResult(err)
	}
	spec, err := t.ex.Resolve(t.request(args, call))
	spec.AllowNewRepository = call.NewRepository
	if err != nil {
		return errorResult(fmt.Errorf("cannot run command: %w", err))
	}
	if args.RunInBackground {
		return t.start(spec).event()
	}
	return t.run(ctx, spec, call.Output).event()
}

// request builds the executor request from the named arguments only: Stdin
// and Env are never set from model input. An empty workdir defaults to the
// session's cwd here, so N sessions sharing one executor each run in their
// own directory; a relative one is left for Resolve to join to SessionCwd.
// The level is the call's, else the session's.
func (t *bash) request(args bashArgs, call Call) executor.Request {
	s := call.Session
	workdir := args.Workdir
	if workdir == "" {
		workdir = s.Cwd
	}
	level := call.Level
	if level == "" {
		level = s.Level
	}
	return executor.Request{
		Command:    args.Command,
		Workdir:    workdir,
		SessionCwd: s.Cwd,
		Roots:      s.Roots,
		Timeout:    args.timeout(),
		Owner:      s.ID,
		Level:      level,
	}
}

// start runs spec as a background task.
func (t *bash) start(spec executor.Spec) result {
	id, err := t.ex.Start(spec)
	if errors.Is(err, executor.ErrSandbox) {
		return resultOf(sandboxRefusal(spec.Level, err))
	}
	if err != nil {
		return resultOf(errorResult(fmt.Errorf("cannot start background task: %w", err)))
	}
	var r result
	r.Text = fmt.Sprintf("Started background task %s. Poll its output with bash_output {\"task_id\":%q}; stop it with bash_kill.",
		id, id)
	r.setTask(id, executor.Running.String())
	return r
}

// run runs spec in the foreground, streaming its output to the card.
func (t *bash) run(ctx context.Context, spec executor.Spec, output func(string)) result {
	card := newCardStream(t.cfg.CardOutputLimit, output)
	res, err := t.ex.Run(ctx, spec, card.observe)
	if err == nil && !card.sawOutput() && len(res.Combined) > 0 {
		// An executor that does not stream: show the output at the end.
		card.observe(executor.Chunk{Stream: executor.Stdout, Data: res.Combined})
	}
	cardOutput := card.close(res.SpillPath, res.SpillError)
	if err != nil {
		r := errorResult(fmt.Errorf("cannot run command: %w", err))
		if errors.Is(err, executor.ErrSandbox) {
			r = sandboxRefusal(spec.Level, err)
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			r = errorResult(errors.New("command aborted: " + abortReason(ctxErr)))
		}
		r.CardOutput = cardOutput
		return resultOf(r)
	}
	abort := ""
	if ctxErr := ctx.Err(); ctxErr != nil {
		abort = "[aborted: " + abortReason(ctxErr) + "]"
	}
	text, truncated := t.resultText(res, spec, abort)
	r := result{
		Result: event.Result{Text: text, CardOutput: cardOutput},
		Outcome: Outcome{
			Signal:     res.Signal,
			TimedOut:   res.TimedOut,
			TimeoutMs:  spec.Timeout.Milliseconds(),
			SpillPath:  res.SpillPath,
			SpillError: res.SpillError,
			Truncated:  truncated,
			LimitHit:   res.LimitHit,
		},
	}
	if total, capped := card.total(); capped && len(res.Combined) > 0 {
		r.CardTail, r.CardTailCut = cardTail(res.Combined, total)
	}
	if res.Signal == "" {
		code := res.ExitCode
		r.ExitCode = &code
	}
	r.IsError = abort != "" // an aborted call is not a normal result
	return r
}

// resultText is what the model reads of a finished run: stdout, the
// [stderr] section, then the status markers, and abort when not empty.
// truncated reports whether the model does not see the whole output.
func (t *bash) resultText(res executor.Result, spec executor.Spec, abort string) (string, bool) {
	stdout := trimNewlines(CleanTerminalText(string(res.Stdout)))
	stderr := trimNewlines(CleanTerminalText(string(res.Stderr)))
	markers := func(cut bool) []string {
		var m []string
		if res.TimedOut {
			m = append(m, fmt.Sprintf("[timed out after %dms]", spec.Timeout.Milliseconds()))
		}
		if res.Signal != "" {
			m = append(m, "[killed by signal: "+res.Signal+"]")
		} else if res.ExitCode != 0 {
			m = append(m, fmt.Sprintf("[exit code: %d]", res.ExitCode))
			if s := sandboxMarker(spec.Level, res); s != "" {
				m = append(m, s)
			}
		}
		if res.LimitHit != "" {
			m = append(m, limitMarker)
		}
		if cut || res.Truncated() {
			m = append(m, truncationMarker(res.SpillPath, res.SpillError))
		}
		if abort != "" {
			m = append(m, abort)
		}
		return m
	}
	text, cut := assemble(t.cfg.OutputLimit, stdout, stderr, markers)
	if text == "" {
		text = "(no output)"
	}
	return text, cut || res.Truncated()
}

// abortReason says why a call's context ended.
func abortReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "the call's deadline passed"
	}
	return "the call was cancelled"
}

// errorResult is the IsError result for a failure the model should read.
func errorResult(err error) event.Result {
	return event.Result{Text: err.Error(), IsError: true}
}

// bashSchema is the JSON schema of bash's arguments.
func bashSchema(cfg Config) json.RawMessage {
	return mustSchema(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"command": map[string]any{
				"type":        "string",
				"description": "The command to run with bash -c.",
			},
			"description": map[string]any{
				"type":        "string",
				"description": "One-line, active-voice summary of the command (5-10 words), shown to the user.",
			},
			"timeoutMs": map[string]any{
				"type": "number",
				"description": fmt.Sprintf("Timeout in milliseconds for a foreground command (default %d, at most %d).",
					cfg.DefaultTimeout.Milliseconds(), cfg.MaxTimeout.Milliseconds()),
			},
			"workdir": map[string]any{
				"type":        "string",
				"description": "Directory to run in; relative to the session's directory; defaults to it.",
			},
			"run_in_background": map[string]any{
				"type":        "boolean",
				"description": "Start as a background task and return its task id at once; no timeout applies.",
			},
		},
		"required":             []string{"command", "description"},
		"additionalProperties": false,
	})
}

// taskIDSchema is the schema of bash_output's and bash_kill's arguments.
func taskIDSchema(what string) json.RawMessage {
	return mustSchema(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"task_id": map[string]any{
				"type":        "string",
				"description": what,
			},
		},
		"required":             []string{"task_id"},
		"additionalProperties": false,
	})
}

func mustSchema(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("tools: marshal schema: %v", err))
	}
	return b
}
