// Package changes sees what commands do to the files of a session's
// directory and of its additional directories, keeps the contents it
// needs, and takes changes back (/undo).
//
// A Tracker wraps a command the way the sandbox does: Begin before it,
// End after it. Begin looks at the tree (what changed since the last look
// is the user's own doing, not the command's); End looks again and makes
// one event.FileChanges — created, modified and deleted files, with
// references to their contents — which Tracker.Sink, the session's sink,
// puts right after the call's ToolResult (in the same batch), so the
// journal keeps it and the presenter draws it as a card of its own after
// the command's. A command started in the background is Begin, then
// StartTask; TaskDone emits what changed until the task ended (also what
// changed while other commands' Begin looked, since it ran). tools.Tracked
// does all this around the bash tool.
//
// Wiring, per session (acp):
//
//	tr := changes.NewTracker(changes.Options{Dir: cwd, Open: open}) // open: one store per daemon, OpenStore(stateDir, 0) once, at the first look
//	box := mcp.NewToolbox(tools.Tracked(registry, tr))
//	fan := fanout{title, journal, presenter}                          // presenter: PresenterOptions.Contents = store
//	tr.SetSink(fan)
//	agent := agent.NewSession(id, cwd, model, box, tr.Sink(), approver, cfg)
//	tr.SetRoots(additionalDirectories)                              // when the session has (or restores) them
//	// after the session/new reply: tr.Prime(); on session/load: tr.Observe(ev) for each replayed event;
//	// "/undo [turn]": agent.Command(ctx, text, func(ctx) string { return tr.Undo(ctx, args) }); at close: tr.Close()
//
// Looking is cheap: on Linux an inotify watch on every tracked directory
// names the entries that changed since the last look, and only those are
// examined (a look with nothing reported costs one read(2)); where inotify
// is missing, full (its watch limit reached, its queue overflowed, or a
// .gitignore changed) every file is stat'ed and its size, mtime, ctime,
// inode and mode compared with the last look's (the stat cache): only a
// file whose key changed is read. The first look reads every file; Prime
// takes it in the background when the session opens, and the first Begin
// waits for it.
//
// Every root is tracked alike: the session's directory and each
// additional directory (SetRoots) has its own watcher, stat cache,
// ignore rules and limits (MaxFiles, MaxFirst), and one command's changes
// in all of them make one event. A path in the session's directory is
// relative to it (FileChanges.Dir), a path in an additional directory is
// absolute: the folder's name as a prefix could not be told from a
// subdirectory of the same name in the session's directory (nor two
// folders of one name apart), an absolute path cannot be confused, is what
// ACP's diffs and locations carry anyway, and reads the same after a
// reload whatever the client then sends. The journal keeps the paths as
// they are, so replay draws the same card; /undo writes a path only in the
// tracked root holding it now (an absolute path in no current root is
// refused, never written). A root equal to or under another is tracked
// once, by the outer one; the session's directory under an additional one
// is left out of that one.
//
// Ignored files are not tracked: .git itself, and what the repository's
// ignore rules name (each directory's .gitignore, the .gitignore files
// above the tracked directory up to the repository's root, and
// .git/info/exclude), matched by go-git's plumbing/format/gitignore. No
// git binary is run.
//
// Contents live in a Store under the state dir: content-addressed (SHA-256),
// each content once, shared by all sessions, swept after DefaultMaxAge
// unused. A look keeps the content of every file it reads, so the store
// grows by the bytes of what changed; the first look of a tree keeps the
// whole tree once, in one pack (one file, not one per content), at most
// MaxFirst (256 MiB) of it. Files over MaxKept (1 MiB), and those past the
// first look's budget, are tracked by their stat alone: listed, never
// diffed or undone, until a command changes them.
//
// Deleting a session (session/delete) calls Store.Forget: the store
// records, per session (Options.Session), every content its tracker kept
// or found kept (owners/<session>: the whole tree at a first look, then
// each file a look read — a superset of what its cards and /undo name),
// and Forget removes from disk the contents no other session's records
// name: loose ones are unlinked, a pack holding one is removed after the
// contents it holds for others are kept loose. So once session/delete
// answers, a deleted thread's file contents are gone unless another
// thread (of any daemon sharing the state dir) also saw the very same
// bytes — a content shared is the other thread's as much. Looks hold
// owners/.lock shared, Forget holds it exclusive, so a content a look has
// just found kept is recorded before Forget can take it; stores of other
// daemons drop their belief that removed contents are held at their next
// look (owners/.gen). What no record names (kept before records existed)
// and what a session of a crashed daemon kept but did not record yet is
// left to the age sweep (DefaultMaxAge after its last use, at the next
// OpenStore), which also takes the records of sessions not tracked since.
//
// Undo takes back the newest change not yet undone, or every change of
// the last turn that has one ("/undo turn"). A file is put back only if it
// still holds what the change left, else it is named and left alone. The
// undo is an event.FileChanges too (Undoes naming what it took back), so
// it is journaled and replayed, and a Tracker rebuilt from a journal
// (Emit, given the replayed events) never undoes a change twice.
//
// # Known limits
//
//   - Only the session's directories are tracked: a command's writes
//     outside them (its home, /tmp) are not seen. Commands run through the ssh
//     executor write on another machine and are not tracked.
//   - Symlinks, fifos and devices are not tracked; a rename is a deletion
//     and a creation; a file written through mmap without a later close
//     or stat change may be missed by the watcher.
//   - Commands running at the same time share one view: a background
//     task's changes made while a foreground command runs are that
//     command's; edits the user makes while a tracked background task runs
//     are the task's.
//   - Global git excludes (core.excludesFile) are not read; the rules above
//     the session's directory are read once per tracker.
//   - The first look of a tree reads all its files (up to MaxKept each and
//     MaxFirst in all); trees over MaxFiles (100 000 files) are not
//     tracked at all. Without inotify (macOS, or past its watch or queue
//     limits) every look stats every file: tens to hundreds of
//     milliseconds per command in a big tree.
//   - The store is not bounded in size, only in age: a session that keeps
//     rewriting a big file keeps every version for 30 days.
//   - Forget reads every session's records (32 bytes per content each
//     session saw: ~320 KiB for a tree of 10 000 files) and the index of
//     every pack; a content seen by two sessions stays until both are
//     deleted (or swept). Contents kept before ownership records existed
//     are swept by age only. A removed pack's other contents become loose
//     files (one per content).
//   - Undo writes as the daemon (never inside the sandbox), only under the
//     session's directories (an os.Root per root: no path or symlink leads
//     out). A change in an additional directory the session no longer has
//     cannot be undone until the folder is added back.
//   - An additional directory set while a command runs gets its first
//     look then (in the background, or at that command's End): that
//     command's changes there are not seen; later commands' are.
package changes
