package workflow_test

import (
	"errors"
	"testing"

	"github.com/vplayer/vplayer/workflow"
)

func TestStore_Start(t *testing.T) {
	s, _ := newStore(t)
	r := mustCreate(t, s, newRecord("orders"))
	tests := []struct {
		state     string
		wantWas   string
		wantState string
		wantErr   error
	}{
		{workflow.StateStopped, workflow.StateStopped, workflow.StateInit, nil},
		{workflow.StateRunning, workflow.StateRunning, workflow.StateRunning, nil},
		{workflow.StateCopying, workflow.StateCopying, workflow.StateCopying, nil},
		{workflow.StateError, workflow.StateError, workflow.StateError, workflow.ErrNotStopped},
	}
	for _, tt := range tests {
		t.Run(tt.state, func(t *testing.T) {
			if err := s.SetState(t.Context(), r.ID, tt.state, "why"); err != nil {
				t.Fatal(err)
			}
			was, err := s.Start(t.Context(), "orders")
			if was != tt.wantWas || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("Start from %s=%q, %v; want %q, %v", tt.state, was, err, tt.wantWas, tt.wantErr)
			}
			got := mustGet(t, s, "orders")
			if got.State != tt.wantState {
				t.Errorf("state after Start from %s=%q, want %q", tt.state, got.State, tt.wantState)
			}
			if tt.state == workflow.StateStopped && got.Message != workflow.StartRequestedMessage {
				t.Errorf("message after Start=%q, want %q", got.Message, workflow.StartRequestedMessage)
			}
		})
	}
	if _, err := s.Start(t.Context(), "nope"); !errors.Is(err, workflow.ErrNotFound) {
		t.Errorf("Start(nope)=%v, want ErrNotFound", err)
	}
	if _, err := workflow.New(s.DB(), s.Sidecar()+"_none").Start(t.Context(), "orders"); !errors.Is(err, workflow.ErrNotFound) {
		t.Errorf("Start in a sidecar without tables=%v, want ErrNotFound", err)
	}
}
