// Package mcp connects a session to the MCP servers its client passes and
// offers their tools to the model as ordinary tools.Tool values, on the
// official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// Start connects every server of a session in the background — a stdio
// server is spawned by the commands' own group code (local.Program: a
// session and process group of its own, its exit seen without reaping it)
// with the daemon's scrubbed environment plus the client's variables; a streamable
// HTTP server is reached with the client's headers — and lists its tools.
// A server that fails is a Failure (its name and why) for the caller to
// show; the others work. Tools lists the tools as mcp__<server>__<tool>
// (names kept to ^[a-zA-Z0-9_-]{1,64}$, collisions resolved by a hash of
// the real names), with the server's schema and description; Refresh picks
// up tool list changes the servers announced. Close stops everything: the
// TERM → grace → KILL path of commands, to each server's whole group.
//
// A tool's Run calls the server (a cancelled ctx sends
// notifications/cancelled), renders the result to text (images, audio and
// resources as one line each), caps it with tools.CapText and spills the
// whole of a cut text through a Spiller. Needs says tools.NeedTool, with
// the server's read-only annotation; the user's allowances (Rules, from
// the mcp.json files) decide. PresentCall and PresentResult are pure: a
// generic card titled "<server>: <tool>" from the tool's Info, which a
// session journals under StateKey so that Cards draws a reloaded call
// exactly, with or without its server.
//
// Toolbox is one session's tools: the daemon's registry followed by the
// MCP tools, swapped as a whole between turns.
//
// # Known limits
//
//   - A server that exits during a session is not restarted; its calls
//     fail saying it is not connected.
//   - Only tools: resources, prompts, sampling, elicitation and progress
//     notifications are not used. SSE servers are not supported.
//   - A stdio server that leaves its process group on purpose (setsid)
//     escapes the kill, as a command does; a SIGKILLed daemon leaves its
//     servers running.
//   - The read-only annotation is the server's claim; nothing checks it.
//   - Every tool of every server is offered; providers cap the number of
//     tools in one request.
package mcp
