// Package credentials keeps the API key that `dsh-acp login` stored and
// decides which key the daemon uses.
//
// The credential file is $XDG_CONFIG_HOME/dsh-acp/credentials (a relative
// XDG_CONFIG_HOME is ignored, as the XDG spec says: then ~/.config), a small
// JSON document holding the key, the base URL it belongs to and a model. It
// is written 0600, atomically (a temporary file renamed over it), in a 0700
// directory; a directory or file that is a symlink, another user's, or
// writable by its group or others is refused (package privdir), because
// whoever can change the file can point the key at a host of their choice.
//
// Precedence (Resolve): a key in the environment (DSH_API_KEY, then
// DEEPSEEK_API_KEY) wins and the stored credential is then not read at all;
// otherwise the stored credential is used as a unit — its key goes only to
// its own base URL, so an explicit --base-url or DSH_BASE_URL naming another
// endpoint sets the stored key aside (a login for that endpoint is needed).
//
// Login is the interactive flow behind `dsh-acp login`: base URL and model
// shown and editable, the key read with echo off, checked against the
// provider's GET /models (Check), then stored. A model the provider does not
// list is not stored as is: on a terminal the user picks a listed one (or
// types the same one again to keep it); piped, the login is refused
// (UnlistedModelError), naming the models listed. Nothing here logs or prints a
// key; errors that could carry it are scrubbed.
//
// Known limits: unix only (privdir, termios). The file is plain JSON, not
// encrypted and not in a system keychain: anything running as the user can
// read it — including commands the model runs, which can equally read a key
// in Zed's settings.json; only a sandbox that hides the directory stops
// that. Check needs the provider to serve GET /models (a provider without it
// answers 404, and login then asks before storing an unchecked key).
package credentials
