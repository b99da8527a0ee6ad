// Package registry holds dsh-acp's entry for the ACP Registry
// (agentclientprotocol/registry): agent.json and icon.svg, to be submitted
// as dsh-acp-go/agent.json and dsh-acp-go/icon.svg there (the registry wants
// the directory named after the id). The id, dsh-acp-go, and the display
// name, "dsh-acp (Go)", are our own: "dsh-acp" and its neighbours belong to
// other authors' DeepSeek Harness adapters. The registry ties neither to
// the binary (an entry's "cmd" names any executable), so the binary and
// the release archives keep the name dsh-acp. The registry lists an agent only when it
// offers terminal or agent auth; dsh-acp offers terminal auth (`dsh-acp
// login`).
//
// The package's test checks the id and name against testdata/taken-ids.txt,
// the ids and names registry entries already use (with where the list came
// from: refresh it before a submission), and the entry against the registry's documented
// schema (FORMAT.md, CONTRIBUTING.md, agent.schema.json: required fields,
// the id and version patterns, platform keys, archive formats, no
// "/latest/", the URL version equal to the entry's, a 16×16 currentColor
// icon without comments) and against this repository's .goreleaser.yaml:
// every release archive has a platform entry whose URL is the archive's
// release download URL, and the other way round.
//
// Known limits: the registry's own CI also checks that every archive URL
// answers 200 and runs the binary's initialize; neither can be checked
// before the release exists. On a release, bump "version" and the URLs
// together (the registry's updater does it for later releases).
package registry
