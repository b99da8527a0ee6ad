package sandbox

import (
	"fmt"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
)

// detect reports that nothing confines a command on darwin: only
// executor.LevelOff is offered, and a confined level asked for explicitly is
// refused with this error.
func (s *Spawner) detect(string) error {
	return fmt.Errorf("%w: no bubblewrap on macOS; the Seatbelt design in docs/security.md is not built", executor.ErrSandbox)
}

// spawn is never reached on darwin (Spawn returns s.why first).
func (s *Spawner) spawn(engine.Command, string) (engine.Process, error) { return nil, s.why }
