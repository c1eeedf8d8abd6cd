package mysqld

import (
	"context"
	"fmt"
)

// Restart shuts the server down cleanly (SIGTERM, as Stop) and starts it again on the same data
// directory and port, returning once it accepts connections as root, within StartTimeout or
// ctx. Connections open before are broken; pools reconnect. It must not run concurrently with
// Stop, Kill or another Restart.
func (s *Server) Restart(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	if err := s.proc.stop(StopGrace); err != nil {
		return fmt.Errorf("restart %s: stop: %w; error log ends:\n%s", s.name, err, tail(s.dir.errorLog, 20))
	}
	proc, err := startProcess(s.binary, serverArgs(s.flavor, s.opts, s.dir, s.port), s.dir.errorLog)
	if err != nil {
		return fmt.Errorf("restart %s: %w", s.name, err)
	}
	s.proc = proc
	if err := s.waitReady(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", s.name, err)
	}
	return nil
}
