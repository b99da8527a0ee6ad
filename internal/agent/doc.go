// Package agent is the LLM loop: a session's conversation, where one turn is
// model ⇄ tools until the model answers without tool calls. It knows nothing
// of ACP; it emits Events that the ACP side presents and the journal records.
package agent
