package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/event"
)

// InstructionsFile is the project-instructions file every current agent
// reads.
const InstructionsFile = "AGENTS.md"

// DefaultInstructionsLimit caps the project instructions in the system
// prompt, in bytes, all files together.
const DefaultInstructionsLimit = 32 << 10

// projectInstructions is the system prompt's section for the AGENTS.md
// files of a session: the git work tree's root's (when the cwd is inside
// one and is not the root) and then the cwd's. It is read at the start of
// every turn, so an edit applies from the next turn on.
type projectInstructions struct {
	section string // "" when there are none
	info    event.Instructions
}

// instructionFiles are the AGENTS.md paths that apply to cwd, most general
// first: the git root's, then cwd's.
func instructionFiles(cwd string) []string {
	var files []string
	if root := gitRoot(cwd); root != "" && root != cwd {
		files = append(files, filepath.Join(root, InstructionsFile))
	}
	return append(files, filepath.Join(cwd, InstructionsFile))
}

// gitRoot is the nearest directory at or above dir holding .git (a
// directory, or the file a linked work tree has), "" when there is none.
func gitRoot(dir string) string {
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// readInstructions reads the files that exist, together at most limit
// bytes (a file cut short says so where it was cut). A file that cannot be
// read is skipped and logged.
func readInstructions(cwd string, limit int, log *zap.Logger) projectInstructions {
	var pi projectInstructions
	if limit <= 0 {
		return pi
	}
	var b strings.Builder
	h := sha256.New()
	left := limit
	for _, path := range instructionFiles(cwd) {
		text, size, err := readCapped(path, left)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && strings.TrimSpace(text) == "") {
			continue
		}
		if err != nil {
			log.Warn("project instructions not read", zap.String("file", path), zap.Error(err))
			continue
		}
		if size > len(text) {
			pi.info.Cut = true
			text = strings.ToValidUTF8(text, "") + fmt.Sprintf("\n[… %s cut here: it has %d bytes, the prompt carries the first %d]", InstructionsFile, size, len(text))
		}
		left -= len(text)
		fmt.Fprintf(&b, "\n\n## %s\n\n%s", path, strings.TrimSpace(text))
		pi.info.Files = append(pi.info.Files, path)
		h.Write([]byte(path + "\x00" + text + "\x00"))
		if left <= 0 {
			break
		}
	}
	if len(pi.info.Files) == 0 {
		return pi
	}
	pi.section = "# Project instructions\n\nThe project gives these instructions in its " + InstructionsFile +
		" files (a later, more specific file wins where they disagree). Follow them." + b.String()
	pi.info.Bytes = len(pi.section)
	pi.info.Digest = hex.EncodeToString(h.Sum(nil)[:12])
	return pi
}

// readCapped reads at most limit bytes of path and returns them with the
// file's whole size.
func readCapped(path string, limit int) (string, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is not a regular file", path)
	}
	buf, err := io.ReadAll(io.LimitReader(f, int64(limit)))
	if err != nil {
		return "", 0, err
	}
	return string(buf), max(int(fi.Size()), len(buf)), nil
}

// refreshSystem re-reads the project instructions and rebuilds the system
// prompt of the coming requests. It reports the instructions' event when
// they differ from what was last announced. The turn token must be held.
func (s *Session) refreshSystem() (event.Instructions, bool) {
	pi := readInstructions(s.cwd, s.cfg.InstructionsLimit, s.log)
	s.system = s.base
	if sec := rootsSection(s.AdditionalDirectories()); sec != "" {
		s.system += "\n" + sec
	}
	if sec := s.box.PromptSection(s.toolSession()); sec != "" {
		s.system += "\n\n" + sec
	}
	if pi.section != "" {
		s.system += "\n\n" + pi.section
	}
	if pi.info.Digest == s.hist.announced {
		return pi.info, false
	}
	return pi.info, true
}
