// Package replay is the session journal: one append-only JSONL file per
// session under <stateDir>/sessions/, written by the session's single writer
// and read back (whole or streamed) to replay a session through the same
// event path it took live.
//
// # File format
//
// Every line is one record, a JSON object with an envelope and a flat payload:
//
//	{"v":1,"seq":N,"t":"<RFC3339Nano>","type":"…", …payload}
//
// v is the format version (records with a newer version are skipped with a
// warning), seq counts records from 1 (the session header) and t is the time
// the record was written, in UTC. The record types are:
//
//	session          id, cwd, created, daemonVersion (always the first record)
//	user_prompt      text
//	assistant        text, reasoning, toolCalls [{id, name, args|argsText|argsBytes}]
//	tool_call        id, name, args|argsText|argsBytes, direct, pending
//	tool_result      id, name, args|argsText|argsBytes, result (a tools.Result)
//	notice           text
//	error            text
//	turn_end         stopReason
//	state            key, value (any JSON; the latest value per key wins)
//	usage            usage {model, used, size, prompt, completion, …} (an event.Usage)
//	compaction       compaction {reason, elideBefore, summaryBefore, summary, …} (an event.Compaction)
//	command          text (a slash command the daemon handled)
//	info             text (the daemon's message for the user)
//	instructions     instructions {files, bytes, cut, digest} (an event.Instructions)
//	output           id, text|textZ (a running call's live card output since its previous output record)
//	file_changes     changes {id, call, task, dir, files [{path, op, old, new, …}], undoes, refused}
//	                 (an event.FileChanges: references into the content store, never the contents)
//
// The last seven are additions to version 2, not a new version: a reader
// from before them skips them with an "unknown record type" warning and
// replays the rest.
//
// Card output (a result's cardOutput, an output record's text) that is
// mostly bytes JSON must escape (a NUL takes six) is stored deflated and
// base64-encoded instead, under cardOutputZ and textZ.
//
// Tool-call arguments are kept exactly as the model sent them: as a JSON
// value under "args" when they are valid compact JSON, as a string under
// "argsText" when they are not (invalid JSON, or valid JSON with insignificant
// whitespace), and as base64 under "argsBytes" when they are not even UTF-8.
//
// # Durability
//
// Each record is written with one write(2) of the whole line on an O_APPEND
// descriptor (AppendAll writes several records' lines with one). The file
// is fsynced when a turn ends (in the background; turns ending within 100
// ms of the last fsync share the next one), on SyncSoon (in the background:
// a new session's journal, with its directory entry, once the session/new
// reply is out), on Sync and on Close, never per record. A crash can therefore leave a torn last line (or a run of
// NUL bytes), which OpenAppend cuts back to the last newline and which
// readers skip with a warning. A writer holds flock(LOCK_EX) on its file for
// its whole life; a second writer, in this or another process, gets ErrLocked.
//
// # A full disk
//
// A record whose line cannot be written whole is written compact instead:
// numbered the same, its large texts (a result's text and card output, a
// message's text and reasoning) cut to their last KiB behind a line
// "[dsh-acp: N bytes of this text were not saved (<why>)]", everything else
// kept — a tool result's error flag, task and payload (bash's exit code and
// markers) — so a reload shows the call as it ended. The store holds 64 KiB
// back for these records (sessions/.reserve, made in the background once
// the disk has 1 MiB free), removed when even a compact line does not fit.
// What cannot be written either way waits in memory (ErrKept) and is
// written first — whole, else compact — by the next Append or Close, before
// any later record. A running call's output checkpoint is dropped instead
// (ErrDropped): its result carries the whole output. Journal.Shortened
// counts the records written compact.
//
// Known limits: a record whose arguments alone pass the compact size (16
// KiB: a call writing a big file through a heredoc) or a huge state value
// has no compact form and waits in memory; a compact record stays compact
// (the journal is append-only: the whole text is not written later).
package replay
