package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Calls: run on the current child, waiting for a lazy start, never on the supervisor's loop.

// HonorsContext implements services.ContextProvider: a child's call and a
// lazy start both end with their context.
func (s *Supervisor) HonorsContext() bool { return true }

// Call implements services.Provider: it runs the call on the current child,
// starting a lazy one first.
func (s *Supervisor) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	l, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer s.release(l)
	data, err := l.child.Call(ctx, method, params)
	if err != nil && errors.Is(err, ErrGone) && ctx.Err() == nil {
		// A crash marks the life gone before retiring it; a life retired
		// and not gone was killed on purpose (Stop, or replaced) after
		// its grace.
		if l.isRetired() && !l.isGone() {
			return nil, fmt.Errorf("%s %s was stopped before the call finished (shut down or replaced); try again", s.o.Kind, s.o.Name)
		}
		l.markGone()
		return nil, fmt.Errorf("%s %s crashed during the call; it is being restarted", s.o.Kind, s.o.Name)
	}
	return data, err
}

// acquire returns the running child with one more call on it, starting a
// lazy child when none runs.
func (s *Supervisor) acquire(ctx context.Context) (*life, error) {
	for {
		s.mu.Lock()
		if l := s.cur; l != nil && l.acquire() {
			s.mu.Unlock()
			return l, nil
		}
		state, lastErr := s.state, s.lastErr
		lazy := s.o.Lazy && (state == StateIdle || state == StateRunning)
		if !lazy {
			s.mu.Unlock()
			return nil, s.unavailable(state, lastErr)
		}
		sc, created := s.starting, false
		if sc == nil {
			sc, created = &startCall{done: make(chan struct{})}, true
			s.starting = sc
		}
		s.mu.Unlock()
		if created && !s.send(event{kind: evStart, sc: sc}) {
			return nil, s.unavailable(StateStopped, "")
		}
		select {
		case <-sc.done:
		case <-s.done: // stopped before it got to the start
			return nil, s.unavailable(StateStopped, "")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if sc.err != nil {
			return nil, fmt.Errorf("%s %s could not start: %v", s.o.Kind, s.o.Name, sc.err)
		}
	}
}

// unavailable says why no child can take a call.
func (s *Supervisor) unavailable(state, lastErr string) error {
	switch state {
	case StateRestarting:
		return fmt.Errorf("%s %s crashed and is being restarted; try again in a moment", s.o.Kind, s.o.Name)
	case StateParked:
		return fmt.Errorf("%s %s is parked after crashing repeatedly (%s)", s.o.Kind, s.o.Name, lastErr)
	case StateDown:
		return fmt.Errorf("%s %s is not reachable (%s); retrying", s.o.Kind, s.o.Name, lastErr)
	case StateStopped:
		return fmt.Errorf("%s %s has stopped", s.o.Kind, s.o.Name)
	}
	if lastErr != "" {
		return fmt.Errorf("%s %s is not running: %s", s.o.Kind, s.o.Name, lastErr)
	}
	return fmt.Errorf("%s %s is not running (%s)", s.o.Kind, s.o.Name, state)
}

func (s *Supervisor) release(l *life) {
	// Rearming the timer made by an earlier call allocates nothing.
	if l.release() && s.o.Lazy && !l.rearmIdle(s.o.IdleStop) {
		l.armIdle(s.o.IdleStop, func() { s.send(event{kind: evIdle, life: l}) })
	}
}
