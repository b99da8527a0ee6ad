package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-acp/dsh-acp/internal/permission"
)

// RulesFileName is the MCP allowance file's name, beside the permission
// rule files: the user's in the dsh-acp config directory, the project's
// in .dsh-acp/ of the session's directory.
const RulesFileName = "mcp.json"

// Rule lets calls of an MCP server's tools run without asking (in ask
// mode; in read-only mode only for tools the server marks read-only): one
// tool (Tool), or every tool the server marks read-only (ReadOnlyTools).
// Server and Tool are the names the server and the client use, not the
// mcp__ names the model sees.
type Rule struct {
	Server        string `json:"server"`
	Tool          string `json:"tool,omitempty"`
	ReadOnlyTools bool   `json:"readOnlyTools,omitempty"`
}

// check refuses a rule that names no server, or not exactly one of Tool
// and ReadOnlyTools.
func (r Rule) check() error {
	switch {
	case r.Server == "":
		return errors.New("a rule needs a server")
	case (r.Tool == "") == !r.ReadOnlyTools:
		return errors.New("a rule names one tool or sets readOnlyTools, not both")
	}
	return nil
}

// Allows reports whether r covers a call of tool of server; readOnly is
// the server's annotation of the tool.
func (r Rule) Allows(server, tool string, readOnly bool) bool {
	return r.Server == server && (r.Tool == tool && tool != "" || r.ReadOnlyTools && readOnly)
}

// Rules is a list of allowances.
type Rules []Rule

// Allows reports whether any rule covers the call.
func (rs Rules) Allows(server, tool string, readOnly bool) bool {
	return slices.ContainsFunc(rs, func(r Rule) bool { return r.Allows(server, tool, readOnly) })
}

// rulesFile is the file format.
type rulesFile struct {
	Schema string `json:"$schema,omitempty"`
	Allow  []Rule `json:"allow"`
}

// ProjectRulesPath is the project's allowance file for a session's cwd:
// CWD/.dsh-acp/mcp.json.
func ProjectRulesPath(cwd string) string { return filepath.Join(cwd, ".dsh-acp", RulesFileName) }

// UserRulesPath is the user's allowance file, in the directory of the
// user's permission rule file permissionRules ("" for "").
func UserRulesPath(permissionRules string) string {
	if permissionRules == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(permissionRules), RulesFileName)
}

// Loaded is the outcome of LoadRules.
type Loaded struct {
	// Rules are the allowances in force: the user's, and the project's
	// when the user approved its content.
	Rules Rules
	// Untrusted are the project file's allowances while its content is not
	// approved; they apply once it is (Approve Hash for ProjectPath).
	Untrusted   Rules
	ProjectPath string // absolute
	Hash        string // of the content read (permission.HashContent)
}

// Summary describes the untrusted allowances for the user, one a line.
func (l Loaded) Summary() string {
	var b strings.Builder
	for _, r := range l.Untrusted {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		if r.ReadOnlyTools {
			fmt.Fprintf(&b, "the read-only tools of %s", r.Server)
		} else {
			fmt.Fprintf(&b, "%s: %s", r.Server, r.Tool)
		}
	}
	return b.String()
}

// LoadRules reads and joins the user's and the project's allowance files.
// The project's apply only while store says the user approved the file's
// exact content (a nil store trusts none): a cloned repository cannot let
// its own tools run unasked. An empty path or a missing file gives
// nothing; a file that is not valid JSON, has unknown fields or holds an
// invalid rule is an error naming it, and so is a store that cannot be
// read: no rule is returned then.
func LoadRules(userPath, projectPath string, store *permission.TrustStore) (Loaded, error) {
	var l Loaded
	if userPath != "" {
		f, _, err := readRules(userPath)
		if err != nil {
			return Loaded{}, err
		}
		l.Rules = appendNew(l.Rules, f.Allow...)
	}
	if projectPath == "" {
		return l, nil
	}
	f, data, err := readRules(projectPath)
	if err != nil || len(f.Allow) == 0 {
		return l, err
	}
	l.ProjectPath, _ = filepath.Abs(projectPath)
	l.Hash = permission.HashContent(data)
	trusted, err := store.Trusted(projectPath, l.Hash)
	if err != nil {
		return Loaded{}, fmt.Errorf("mcp allowances %s: %w", projectPath, err)
	}
	if trusted {
		l.Rules = appendNew(l.Rules, f.Allow...)
	} else {
		l.Untrusted = appendNew(nil, f.Allow...)
	}
	return l, nil
}

// appendNew appends the rules of add not already in rs.
func appendNew(rs Rules, add ...Rule) Rules {
	for _, r := range add {
		if !slices.Contains(rs, r) {
			rs = append(rs, r)
		}
	}
	return rs
}

// readRules reads one allowance file and returns its content too; a
// missing or empty one is empty.
func readRules(path string) (rulesFile, []byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(bytes.TrimSpace(data)) == 0 {
		return rulesFile{}, data, nil
	}
	if err != nil {
		return rulesFile{}, nil, fmt.Errorf("mcp allowances: %w", err)
	}
	var f rulesFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return rulesFile{}, nil, fmt.Errorf("mcp allowances %s: %w", path, err)
	}
	if dec.More() {
		return rulesFile{}, nil, fmt.Errorf("mcp allowances %s: unexpected data after the object", path)
	}
	for i, r := range f.Allow {
		if err := r.check(); err != nil {
			return rulesFile{}, nil, fmt.Errorf("mcp allowances %s: allow[%d]: %w", path, i, err)
		}
	}
	return f, data, nil
}

// SaveProjectRule adds r to the project's allowance file
// (ProjectRulesPath(cwd)), creating .dsh-acp/ and the file as needed, and
// keeps it trusted: when the file was trusted before (or held no rule, or
// did not exist) the content written is approved in store too, since the
// user chose the rule just added; a file that was not trusted stays so.
// The file is replaced atomically (a temporary file, then rename) with
// mode 0644. An existing file that does not parse is left alone and
// reported.
func SaveProjectRule(cwd string, r Rule, store *permission.TrustStore) error {
	if err := r.check(); err != nil {
		return fmt.Errorf("mcp allowances: %w", err)
	}
	path := ProjectRulesPath(cwd)
	f, old, err := readRules(path)
	if err != nil {
		return err
	}
	trusted := len(f.Allow) == 0
	if !trusted {
		if trusted, err = store.Trusted(path, permission.HashContent(old)); err != nil {
			trusted = false
		}
	}
	if slices.Contains(f.Allow, r) {
		return nil
	}
	f.Allow = append(f.Allow, r)
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("mcp allowances %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("mcp allowances: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mcp-*.json")
	if err != nil {
		return fmt.Errorf("mcp allowances: %w", err)
	}
	data = append(data, '\n')
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Chmod(0o644), tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("mcp allowances %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("mcp allowances %s: %w", path, err)
	}
	if trusted && store != nil {
		return store.Approve(path, permission.HashContent(data))
	}
	return nil
}
