package permission

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
)

const (
	// dirName is the directory of the rule files, under the user's config
	// directory and under a project.
	dirName = "dsh-acp"
	// projectDirName is the project's directory, in the session's cwd.
	projectDirName = ".dsh-acp"
	// fileName is the rule file's name.
	fileName = "permissions.json"
)

// UserRulesPath is the user's rule file: $XDG_CONFIG_HOME/dsh-acp/
// permissions.json when XDG_CONFIG_HOME is an absolute path, else
// $HOME/.config/dsh-acp/permissions.json. getenv is os.Getenv in
// production.
func UserRulesPath(getenv func(string) string) (string, error) {
	if x := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, dirName, fileName), nil
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		return "", errors.New("permission rules: neither XDG_CONFIG_HOME nor HOME is an absolute path")
	}
	return filepath.Join(home, ".config", dirName, fileName), nil
}

// ProjectRulesPath is the project's rule file for a session's cwd:
// CWD/.dsh-acp/permissions.json.
func ProjectRulesPath(cwd string) string {
	return filepath.Join(cwd, projectDirName, fileName)
}

// LoadRules reads and merges the user's and the project's rule files (in
// that order, duplicates dropped). It applies the project's allow rules
// without the user's approval; callers use LoadTrustedRules, which does
// not. An empty path or a missing file
// contributes nothing. A file that is not valid JSON, has fields other than
// "allow" and "deny", or holds an invalid rule is an error naming the file
// and the line and column; the rules of the other file are not returned
// then either, so a typo can never silently drop a deny rule.
func LoadRules(userPath, projectPath string) (Rules, error) {
	var allow, deny uniq
	for _, p := range []string{userPath, projectPath} {
		if p == "" {
			continue
		}
		r, err := readRulesFile(p)
		if err != nil {
			return Rules{}, err
		}
		for _, s := range r.Allow {
			allow.add(s)
		}
		for _, s := range r.Deny {
			deny.add(s)
		}
	}
	return Rules{Allow: allow.list, Deny: deny.list}, nil
}

// readRulesFile reads one rule file; a missing file is empty.
func readRulesFile(path string) (Rules, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Rules{}, nil
	}
	if err != nil {
		return Rules{}, fmt.Errorf("permission rules: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Rules{}, nil
	}
	return decodeRules(path, data)
}

// ruleFile is the file format. "$schema" is tolerated for editors.
type ruleFile struct {
	Schema string   `json:"$schema,omitempty"`
	Allow  []string `json:"allow"`
	Deny   []string `json:"deny"`
}

// decodeRules parses a rule file's content and normalizes its rules.
func decodeRules(path string, data []byte) (Rules, error) {
	var r ruleFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Rules{}, fmt.Errorf("permission rules %s:%s: %w", path, jsonPosition(data, dec, err), err)
	}
	if dec.More() {
		return Rules{}, fmt.Errorf("permission rules %s:%s: unexpected data after the object",
			path, position(data, int(dec.InputOffset())))
	}
	allow, err := normalizeList(path, data, "allow", r.Allow)
	if err != nil {
		return Rules{}, err
	}
	deny, err := normalizeList(path, data, "deny", r.Deny)
	if err != nil {
		return Rules{}, err
	}
	return Rules{Allow: allow, Deny: deny}, nil
}

func normalizeList(path string, data []byte, field string, list []string) ([]string, error) {
	var out uniq
	for i, s := range list {
		n, err := NormalizeRule(s)
		if err != nil {
			at := position(data, bytes.Index(data, []byte(strconvQuote(s))))
			return nil, fmt.Errorf("permission rules %s:%s: %s[%d]: %w", path, at, field, i, err)
		}
		out.add(n)
	}
	return out.list, nil
}

// strconvQuote renders s as a JSON string, to find it in the file.
func strconvQuote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonPosition locates a decoding error.
func jsonPosition(data []byte, dec *json.Decoder, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return position(data, int(syn.Offset))
	case errors.As(err, &typ):
		return position(data, int(typ.Offset))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if i := bytes.Index(data, []byte(name)); i >= 0 {
			return position(data, i)
		}
	}
	return position(data, int(dec.InputOffset()))
}

// position renders a byte offset as "line:column" (1-based); an offset
// that is unknown (< 0) renders as "1:1".
func position(data []byte, offset int) string {
	offset = max(0, min(offset, len(data)))
	line := 1 + bytes.Count(data[:offset], []byte("\n"))
	col := offset - bytes.LastIndexByte(data[:offset], '\n')
	return fmt.Sprintf("%d:%d", line, col)
}

// SaveProjectAllow adds prefix to the allow list of the project's rule
// file (ProjectRulesPath(projectCwd)), creating .dsh-acp/ and the file as
// needed and keeping every other field and rule as it was. The prefix must
// be one always-allow offers: at least program + subcommand (a rule for a
// program alone is refused with ErrInvalidRule). The file is replaced
// atomically (temporary file, then rename) with mode 0644. An existing
// file that does not parse is left alone and reported. Concurrent saves to
// one project may lose one another's entry; each is complete on disk.
//
// SaveProjectAllow leaves the trust of the file alone: a trusted file
// becomes untrusted, its content having changed. TrustStore.SaveProjectAllow
// keeps it trusted.
func SaveProjectAllow(projectCwd, prefix string) error {
	_, err := saveProjectAllow(projectCwd, prefix)
	return err
}

// saveProjectAllow is SaveProjectAllow; it returns the content written,
// nil when the prefix was already there.
func saveProjectAllow(projectCwd, prefix string) ([]byte, error) {
	words, err := parseRule(prefix)
	if err != nil {
		return nil, err
	}
	if len(words) < 2 {
		return nil, fmt.Errorf("%w %q: always-allow never covers a program alone", ErrInvalidRule, prefix)
	}
	norm := joinRule(words)
	path := ProjectRulesPath(projectCwd)
	fields, err := readFields(path)
	if err != nil {
		return nil, err
	}
	var allow []string
	if raw, ok := fields["allow"]; ok {
		if err := json.Unmarshal(raw, &allow); err != nil {
			return nil, fmt.Errorf("permission rules %s: allow: %w", path, err)
		}
	}
	if slices.Contains(allow, norm) {
		return nil, nil
	}
	allow = append(allow, norm)
	raw, err := json.Marshal(allow)
	if err != nil {
		return nil, fmt.Errorf("permission rules %s: %w", path, err)
	}
	fields["allow"] = raw
	out, err := json.MarshalIndent(fields, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("permission rules %s: %w", path, err)
	}
	out = append(out, '\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("permission rules: %w", err)
	}
	if err := writeFileAtomic(path, out, 0o644); err != nil {
		return nil, fmt.Errorf("permission rules: %w", err)
	}
	return out, nil
}

// readFields reads a rule file as raw fields; a missing file is empty.
func readFields(path string) (map[string]json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fields, nil
	}
	if err != nil {
		return nil, fmt.Errorf("permission rules: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fields, nil
	}
	if _, err := decodeRules(path, data); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("permission rules %s: %w", path, err)
	}
	return fields, nil
}

// writeFileAtomic replaces path with data and the given mode: a
// temporary file in the same directory, synced, then renamed over it.
func writeFileAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename this finds nothing
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
