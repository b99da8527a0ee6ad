package ssh

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// ErrHostKey is wrapped (errors.Is) by *HostKeyError: the host's key is not
// known, or not the one known. Nothing was run on the host.
var ErrHostKey = errors.New("host key refused")

// HostKeyError refuses a host whose key is not in the known_hosts files
// (Known is empty) or differs from the one recorded there (Known lists what
// is recorded). There is no trust on first use: its text says how to add
// the key after checking it.
type HostKeyError struct {
	Addr  string        // host:port as dialed
	Key   ssh.PublicKey // the key the host presented
	Known []knownhosts.KnownKey
	Files []string // the known_hosts files consulted (existing or not)
	// Revoked is set when the key is marked @revoked.
	Revoked bool
}

func (e *HostKeyError) Is(target error) bool { return target == ErrHostKey }

// Error is a first line that fits a card's reason, then how to fix it.
func (e *HostKeyError) Error() string {
	host, port, _ := net.SplitHostPort(e.Addr)
	file := "~/.ssh/known_hosts"
	if len(e.Files) > 0 {
		file = e.Files[0]
	}
	fp := e.Key.Type() + " " + ssh.FingerprintSHA256(e.Key)
	pattern := knownhosts.Normalize(e.Addr)
	keyscan := fmt.Sprintf("ssh-keyscan -p %s -t %s %s >> %s", port, keyscanType(e.Key.Type()), host, file)
	var b strings.Builder
	switch {
	case e.Revoked:
		fmt.Fprintf(&b, "refusing to connect to %s: its host key (%s) is marked @revoked in known_hosts; nothing was run.", e.Addr, fp)
	case len(e.Known) == 0:
		fmt.Fprintf(&b, "refusing to connect to %s: its host key %s is not known; nothing was run.\n", e.Addr, ssh.FingerprintSHA256(e.Key))
		fmt.Fprintf(&b, "%s has no entry for the key the host presented (%s). dsh-acp never trusts a host key on first use. Check the fingerprint with the host's owner (on the host: ssh-keygen -lf /etc/ssh/ssh_host_%s_key.pub), then add the key:\n", file, fp, keyscanType(e.Key.Type()))
		fmt.Fprintf(&b, "  %s\n", keyscan)
		fmt.Fprintf(&b, "or connect once with `ssh -p %s %s` and accept it.", port, host)
	default:
		k := e.Known[0]
		fmt.Fprintf(&b, "refusing to connect to %s: its host key CHANGED (now %s; %s:%d has %s); someone may be intercepting the connection. Nothing was run.\n",
			e.Addr, fp, k.Filename, k.Line, ssh.FingerprintSHA256(k.Key))
		fmt.Fprintf(&b, "If the host was reinstalled and the new key is right (check it with the host's owner), replace the old one:\n")
		fmt.Fprintf(&b, "  ssh-keygen -R '%s' -f %s\n  %s", pattern, k.Filename, keyscan)
	}
	return b.String()
}

// keyscanType is ssh-keyscan's -t name of a key type.
func keyscanType(keyType string) string {
	switch {
	case keyType == ssh.KeyAlgoRSA:
		return "rsa"
	case keyType == ssh.KeyAlgoED25519:
		return "ed25519"
	case strings.HasPrefix(keyType, "ecdsa-"):
		return "ecdsa"
	}
	return keyType
}

// hostKeys checks host keys against known_hosts files.
type hostKeys struct {
	files    []string
	callback ssh.HostKeyCallback // nil: no file exists, every host is unknown
}

// newHostKeys reads files. A file that does not exist is skipped when
// optional (the defaults), an error otherwise; a file that cannot be parsed
// is an error.
func newHostKeys(files []string, optional bool) (*hostKeys, error) {
	var existing []string
	for _, f := range files {
		_, err := os.Stat(f)
		switch {
		case err == nil:
			existing = append(existing, f)
		case errors.Is(err, fs.ErrNotExist) && optional:
		default:
			return nil, fmt.Errorf("known hosts: %w", err)
		}
	}
	h := &hostKeys{files: files}
	if len(existing) > 0 {
		cb, err := knownhosts.New(existing...)
		if err != nil {
			return nil, fmt.Errorf("known hosts: %w", err)
		}
		h.callback = cb
	}
	return h, nil
}

// defaultKnownHosts are the files ssh reads: the user's and the system's.
func defaultKnownHosts() []string {
	var files []string
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".ssh", "known_hosts"))
	}
	return append(files, "/etc/ssh/ssh_known_hosts")
}

// check is the ssh.HostKeyCallback: a known, matching key passes; anything
// else is a *HostKeyError.
func (h *hostKeys) check(addr string, remote net.Addr, key ssh.PublicKey) error {
	refuse := &HostKeyError{Addr: addr, Key: key, Files: h.files}
	if h.callback == nil {
		return refuse
	}
	err := h.callback(addr, remote, key)
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ke):
		refuse.Known = ke.Want
	case errors.As(err, &re):
		refuse.Revoked = true
	default:
		return fmt.Errorf("check host key of %s: %w", addr, err)
	}
	return refuse
}

// algorithms lists the host key algorithms to offer for addr: those of the
// keys known_hosts records for it, so a host with several keys presents one
// that can be checked (nil, the library's default, for an unknown host).
func (h *hostKeys) algorithms(addr string) []string {
	if h.callback == nil {
		return nil
	}
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil
	}
	probe, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if !errors.As(h.callback(addr, &net.TCPAddr{IP: net.IPv4zero}, probe), &ke) {
		return nil
	}
	var algos []string
	seen := map[string]bool{}
	for _, k := range ke.Want {
		for _, a := range algorithmsOf(k.Key.Type()) {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return algos
}

// algorithmsOf maps a key type to the signature algorithms that use it.
func algorithmsOf(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}
