package ssh

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"go.uber.org/zap"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// auth gathers the keys a connection may authenticate with: the identity
// file when one is configured, then the ssh-agent's keys when an agent
// socket is configured, and, when neither is, the default key files ssh
// itself tries (~/.ssh/id_ed25519, id_ecdsa, id_rsa; unencrypted ones).
type auth struct {
	identity  string // --ssh-identity
	agentSock string // SSH_AUTH_SOCK of the daemon
	log       *zap.Logger

	signers []ssh.Signer // from the identity file or the defaults, loaded once
}

// newAuth loads the identity file (an unreadable, malformed or
// passphrase-protected one is an error) or the default key files.
func newAuth(identity, agentSock string, log *zap.Logger) (*auth, error) {
	a := &auth{identity: identity, agentSock: agentSock, log: log}
	if identity != "" {
		s, err := loadKey(identity)
		if err != nil {
			return nil, err
		}
		a.signers = []ssh.Signer{s}
		return a, nil
	}
	if agentSock != "" {
		return a, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return a, nil
	}
	for _, name := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
		s, err := loadKey(filepath.Join(home, ".ssh", name))
		switch {
		case err == nil:
			a.signers = append(a.signers, s)
		case !errors.Is(err, fs.ErrNotExist):
			log.Debug("default ssh key not used", zap.String("key", name), zap.Error(err))
		}
	}
	return a, nil
}

// loadKey reads an unencrypted private key.
func loadKey(path string) (ssh.Signer, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ssh identity: %w", err)
	}
	s, err := ssh.ParsePrivateKey(pem)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("ssh identity %s is protected by a passphrase: load it into ssh-agent (ssh-add %s) instead", path, path)
	}
	if err != nil {
		return nil, fmt.Errorf("ssh identity %s: %w", path, err)
	}
	return s, nil
}

// methods returns the authentication methods for one connection attempt
// and a function releasing what they hold (the agent connection).
func (a *auth) methods() ([]ssh.AuthMethod, func(), error) {
	signers := append([]ssh.Signer(nil), a.signers...)
	release := func() {}
	if a.agentSock != "" {
		c, err := net.Dial("unix", a.agentSock)
		if err != nil {
			if len(signers) == 0 {
				return nil, release, fmt.Errorf("ssh-agent at SSH_AUTH_SOCK: %w", err)
			}
			a.log.Warn("ssh-agent unreachable; using the identity file only", zap.Error(err))
		} else {
			release = func() { c.Close() }
			keys, err := agent.NewClient(c).Signers()
			if err != nil {
				a.log.Warn("ssh-agent keys", zap.Error(err))
			}
			signers = append(signers, keys...)
		}
	}
	if len(signers) == 0 {
		release()
		return nil, func() {}, errors.New("no ssh key to log in with: start ssh-agent and add a key (ssh-add), or pass --ssh-identity FILE")
	}
	return []ssh.AuthMethod{ssh.PublicKeys(signers...)}, release, nil
}
