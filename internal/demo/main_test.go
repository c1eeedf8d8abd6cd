package demo

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if the demo leaves a goroutine behind: its stream, workload and
// progress printer must all be gone when Run returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
