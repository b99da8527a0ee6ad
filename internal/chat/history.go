package chat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
)

// History limits: the entries kept (older ones are dropped when the file
// is read), and the largest prompt stored in the file (a larger one, a big
// paste, is recalled in its session only).
const (
	historyKeep     = 1000
	historyMaxEntry = 64 << 10
)

// history is the prompts sent from the terminal, oldest first, kept in a
// file of JSON strings, one a line (a prompt may span lines), across
// sessions. The file is private (0600): prompts may hold secrets.
type history struct {
	path    string
	entries []string
}

// loadHistory reads the history at path ("" or a missing file: an empty
// one); a file grown past twice historyKeep entries is rewritten with the
// newest historyKeep. Lines that are not JSON strings are skipped.
func loadHistory(path string) *history {
	h := &history{path: path}
	if path == "" {
		return h
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return h
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 4*historyMaxEntry)
	for sc.Scan() {
		var s string
		if json.Unmarshal(sc.Bytes(), &s) == nil && s != "" {
			h.entries = append(h.entries, s)
		}
	}
	if len(h.entries) > 2*historyKeep {
		h.entries = h.entries[len(h.entries)-historyKeep:]
		h.rewrite()
	} else if len(h.entries) > historyKeep {
		h.entries = h.entries[len(h.entries)-historyKeep:]
	}
	return h
}

// add appends a prompt (not a repeat of the last one) and stores it.
// Storing is best effort: a history that cannot be written is kept for
// this session only.
func (h *history) add(s string) {
	if s == "" || len(h.entries) > 0 && h.entries[len(h.entries)-1] == s {
		return
	}
	h.entries = append(h.entries, s)
	if h.path == "" || len(s) > historyMaxEntry {
		return
	}
	line, err := json.Marshal(s)
	if err != nil {
		return
	}
	f, err := os.OpenFile(h.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(line, '\n'))
}

// rewrite replaces the file with the entries kept (through a private
// temporary file renamed over it).
func (h *history) rewrite() {
	var b bytes.Buffer
	for _, e := range h.entries {
		if len(e) > historyMaxEntry {
			continue
		}
		line, _ := json.Marshal(e)
		b.Write(append(line, '\n'))
	}
	tmp, err := os.CreateTemp(filepath.Dir(h.path), ".history-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b.Bytes())
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), h.path) != nil {
		_ = os.Remove(tmp.Name())
	}
}
