// Package agent is the LLM loop: a session's conversation, where one turn is
// model ⇄ tools until the model answers without tool calls. It knows nothing
// of ACP; it emits Events that the ACP side presents and the journal records.
//
// The conversation the model reads is built only by folding events, live and
// on restore alike (history.apply). That includes keeping it inside the
// model's context window: a compaction (compact.go) is an event too, so a
// restored session's next request is the live one's. Around each request the
// session accounts for tokens (usage.go: a Usage event after every response,
// estimates calibrated on the provider's counts), reads the project's
// AGENTS.md into the system prompt at the start of each turn
// (instructions.go), and asks for the session's own model (model.go). Slash
// commands run as turns of their own that never reach the model
// (command.go).
package agent
