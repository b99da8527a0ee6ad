package permission

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrTrustStore reports a trust store that cannot be used safely (a
// directory others can write to); nothing it holds is trusted then.
var ErrTrustStore = errors.New("permission trust store")

// TrustStore remembers which contents of project rule files the user
// approved: for each file, by its absolute path, the SHA-256 of the
// approved content. A project's allow rules take effect only while the
// file holds exactly that content. The records live in a directory of
// the user's state (mode 0700), one file per project rule file (mode
// 0600), each replaced atomically, so approvals of different projects
// never race. Safe for concurrent use by several processes: two
// approvals of the same file keep one of them.
type TrustStore struct {
	dir string
}

// NewTrustStore returns the store kept in dir (created on the first
// Approve). dir should be the user's state directory for dsh-acp, e.g.
// $XDG_STATE_HOME/dsh-acp/trust.
func NewTrustStore(dir string) *TrustStore { return &TrustStore{dir: dir} }

// trustRecord is one stored approval.
type trustRecord struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// HashContent is the hash a store keeps for a file's content.
func HashContent(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// recordPath is the record of one rule file.
func (s *TrustStore) recordPath(path string) (string, string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrTrustStore, err)
	}
	sum := sha256.Sum256([]byte(abs))
	return abs, filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json"), nil
}

// Trusted reports whether the user approved content with this hash for
// the rule file at path. A store whose directory others may write to is
// an ErrTrustStore error: an approval there proves nothing.
func (s *TrustStore) Trusted(path, hash string) (bool, error) {
	if s == nil || s.dir == "" {
		return false, nil
	}
	abs, rec, err := s.recordPath(path)
	if err != nil {
		return false, err
	}
	if fi, err := os.Stat(s.dir); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("%w: %w", ErrTrustStore, err)
	} else if fi.Mode().Perm()&0o022 != 0 {
		return false, fmt.Errorf("%w: %s is writable by others (mode %v)", ErrTrustStore, s.dir, fi.Mode().Perm())
	}
	data, err := os.ReadFile(rec)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrTrustStore, err)
	}
	var r trustRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return false, fmt.Errorf("%w: %s: %w", ErrTrustStore, rec, err)
	}
	return r.Path == abs && r.SHA256 == hash, nil
}

// Approve records that the user approved the content with this hash
// (see HashContent) for the rule file at path, replacing an earlier
// approval of that file. Pass the hash of the content the user was
// shown, not of the file as it is now: it may have changed since.
func (s *TrustStore) Approve(path, hash string) error {
	if s == nil || s.dir == "" {
		return fmt.Errorf("%w: no directory", ErrTrustStore)
	}
	abs, rec, err := s.recordPath(path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("%w: %w", ErrTrustStore, err)
	}
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return fmt.Errorf("%w: %w", ErrTrustStore, err)
	}
	data, err := json.Marshal(trustRecord{Path: abs, SHA256: hash})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTrustStore, err)
	}
	if err := writeFileAtomic(rec, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("%w: %w", ErrTrustStore, err)
	}
	return nil
}

// ProjectFile is a project rule file as LoadTrustedRules read it.
type ProjectFile struct {
	// Path is the file's absolute path.
	Path string
	// Hash is HashContent of the bytes read; Approve it to trust them.
	Hash string
	// Rules are all the file's rules, normalized.
	Rules Rules
	// Trusted reports that its allow rules apply: the user approved this
	// exact content, or it has no allow rules.
	Trusted bool
	// Summary describes the rules for the question that asks the user to
	// trust the file.
	Summary string
}

// Loaded is the outcome of LoadTrustedRules.
type Loaded struct {
	// Rules are the rules to decide with: the user's, the project file's
	// deny rules, and its allow rules only when it is trusted.
	Rules Rules
	// Project is the project rule file; nil when there is none or it is
	// empty.
	Project *ProjectFile
	user    Rules
}

// NeedsApproval reports whether the project file has allow rules that do
// not apply until the user approves its content.
func (l Loaded) NeedsApproval() bool {
	return l.Project != nil && !l.Project.Trusted
}

// IfTrusted returns the rules as they would be with the project file
// trusted: decide with them to know whether trusting it would let a
// command run.
func (l Loaded) IfTrusted() Rules {
	if l.Project == nil {
		return l.Rules
	}
	return mergeRules(l.user, l.Project.Rules, true)
}

// LoadTrustedRules reads the user's and the project's rule files like
// LoadRules, except that the project file's allow rules apply only when
// store says the user approved its exact content; until then only its
// deny rules apply, and Loaded.Project says so, with the hash to approve
// and a summary to show. A nil store trusts no project file. A store that
// cannot be read is an error, like a malformed file: the caller denies.
func LoadTrustedRules(userPath, projectPath string, store *TrustStore) (Loaded, error) {
	var l Loaded
	if userPath != "" {
		r, err := readRulesFile(userPath)
		if err != nil {
			return Loaded{}, err
		}
		l.user = r
	}
	l.Rules = mergeRules(l.user, Rules{}, false)
	if projectPath == "" {
		return l, nil
	}
	data, err := os.ReadFile(projectPath)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return Loaded{}, fmt.Errorf("permission rules: %w", err)
	}
	if strings.TrimSpace(string(data)) == "" {
		return l, nil
	}
	r, err := decodeRules(projectPath, data)
	if err != nil {
		return Loaded{}, err
	}
	abs, err := filepath.Abs(projectPath)
	if err != nil {
		return Loaded{}, fmt.Errorf("permission rules: %w", err)
	}
	p := &ProjectFile{Path: abs, Hash: HashContent(data), Rules: r, Trusted: len(r.Allow) == 0}
	if !p.Trusted {
		if p.Trusted, err = store.Trusted(abs, p.Hash); err != nil {
			return Loaded{}, err
		}
	}
	p.Summary = summarizeRules(abs, r)
	l.Project = p
	l.Rules = mergeRules(l.user, r, p.Trusted)
	return l, nil
}

// mergeRules merges the user's rules with a project's (duplicates
// dropped); the project's allow rules only when withAllow.
func mergeRules(user, project Rules, withAllow bool) Rules {
	var allow, deny uniq
	for _, s := range user.Allow {
		allow.add(s)
	}
	if withAllow {
		for _, s := range project.Allow {
			allow.add(s)
		}
	}
	for _, s := range user.Deny {
		deny.add(s)
	}
	for _, s := range project.Deny {
		deny.add(s)
	}
	return Rules{Allow: allow.list, Deny: deny.list}
}

// summarizeRules describes a project file's rules for the user.
func summarizeRules(path string, r Rules) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s lets these commands run without asking (an allow rule covers every command that begins with it):\n", path)
	for _, s := range r.Allow {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	if len(r.Deny) > 0 {
		b.WriteString("It also denies (deny rules apply without approval):\n")
		for _, s := range r.Deny {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// SaveProjectAllow is SaveProjectAllow that keeps the project file
// trusted: when the file was trusted before (or had no allow rules, or
// did not exist), the content written is approved too, since the user
// chose the rule just added. A file that was not trusted stays so.
func (s *TrustStore) SaveProjectAllow(projectCwd, prefix string) error {
	path := ProjectRulesPath(projectCwd)
	trusted := true
	if old, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(old)) != "" {
		if r, err := decodeRules(path, old); err == nil && len(r.Allow) > 0 {
			if trusted, err = s.Trusted(path, HashContent(old)); err != nil {
				trusted = false
			}
		}
	}
	written, err := saveProjectAllow(projectCwd, prefix)
	if err != nil || !trusted || written == nil {
		return err
	}
	return s.Approve(path, HashContent(written))
}
