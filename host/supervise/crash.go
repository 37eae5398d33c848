package supervise

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A running child watched: its end, crash restarts with backoff, parking, failed starts.

// watch reports the child's end, its services' changes and failed health checks.
func (s *Supervisor) watch(l *life) {
	var health <-chan time.Time
	h, ok := l.child.(Healther)
	if ok && s.o.HealthInterval > 0 {
		t := time.NewTicker(s.o.HealthInterval)
		defer t.Stop()
		health = t.C
	}
	for {
		select {
		case <-l.child.Done():
			if !l.isRetired() {
				s.send(event{kind: evExited, life: l, why: "the process exited unexpectedly"})
			}
			return
		case <-l.gone:
			if !l.isRetired() {
				s.send(event{kind: evExited, life: l, why: "it died during a call"})
			}
			return
		case <-l.retired:
			return
		case <-l.child.Changed():
			s.send(event{kind: evChanged, life: l})
		case <-health:
			ctx, cancel := context.WithTimeout(context.Background(), s.o.HealthInterval/2+time.Second)
			err := h.Health(ctx)
			cancel()
			if err != nil && !l.isRetired() {
				s.log.Warn(s.o.Kind+" failed its health check; restarting it", "err", err)
				s.send(event{kind: evExited, life: l, why: "health check failed: " + err.Error()})
				return
			}
		}
	}
}

// crash handles a child that died; an old or retired one is no news.
func (s *Supervisor) crash(l *life, why string) {
	s.mu.Lock()
	if s.cur != l || l.isRetired() {
		s.mu.Unlock()
		return
	}
	s.cur = nil
	s.mu.Unlock()
	l.markGone()
	s.retire(l, 0)
	if s.o.UnregisterWhileDown {
		s.trans.Lock()
		s.o.Registry.Hold(s) // its names stay its own while it restarts
		s.mu.Lock()
		s.desc = nil
		s.mu.Unlock()
		s.trans.Unlock()
	}
	if s.o.FailedStart == Retry {
		// A server that went away is down, not broken: out of the
		// register until it answers again, retried for ever.
		s.failedStart(errors.New(why))
		return
	}
	s.crashLoop(why)
}

// crashLoop counts a crash (or a failed restart) and either schedules a
// restart with backoff or, after MaxCrashes within CrashWindow, parks the
// provider.
func (s *Supervisor) crashLoop(why string) {
	s.mu.Lock()
	now := time.Now()
	s.crashes = append(s.crashes, now)
	for len(s.crashes) > 0 && now.Sub(s.crashes[0]) > s.o.CrashWindow {
		s.crashes = s.crashes[1:]
	}
	n := len(s.crashes)
	if n >= s.o.MaxCrashes {
		s.parks++
		s.mu.Unlock()
		s.unregister(StateParked, fmt.Sprintf("crashed %d times within %s (last: %s)", n, s.o.CrashWindow, why))
		s.log.Error(s.o.Kind+" keeps crashing; parked and its services removed. Fix it to retry: install the binary again (or `touch` it), or change its settings and reload",
			"crashes", n, "window", s.o.CrashWindow)
		return
	}
	wait := s.o.Restart.Delay(n)
	s.state, s.lastErr = StateRestarting, why
	s.stopRetryLocked()
	s.retry = time.AfterFunc(wait, func() { s.send(event{kind: evRestart}) })
	s.mu.Unlock()
	s.log.Warn(s.o.Kind+" crashed; restarting it", "in", wait.Round(time.Millisecond), "crashes", n, "why", why)
}

// failedStart handles a start that failed with no child serving.
func (s *Supervisor) failedStart(err error) {
	switch s.o.FailedStart {
	case Crash:
		s.crashLoop("start failed: " + err.Error())
	case Retry:
		s.unregister(StateDown, err.Error())
		s.mu.Lock()
		s.restarts++
		s.outage++
		wait := s.o.Restart.Delay(min(s.outage, 32))
		s.stopRetryLocked()
		s.retry = time.AfterFunc(wait, func() { s.send(event{kind: evRestart}) })
		s.mu.Unlock()
		s.log.Warn(s.o.Kind+" is not reachable; its services are out of the register until it is", "retry_in", wait.Round(time.Millisecond), "err", err)
	default:
		s.fail(err)
	}
}

// restart runs when a backoff is over.
func (s *Supervisor) restart(ctx context.Context) {
	s.mu.Lock()
	state, start := s.state, s.start
	if state != StateRestarting && state != StateDown {
		s.mu.Unlock()
		return
	}
	if state == StateRestarting {
		s.restarts++
	}
	if s.o.Lazy && state == StateRestarting {
		s.state = StateIdle // the next call starts it
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	child, err := s.startChild(ctx, start)
	if err == nil {
		if _, _, err = s.install(child); err != nil {
			s.fail(err)
			return
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		if state == StateDown {
			s.failedStart(err)
		} else {
			s.crashLoop("restart failed: " + err.Error())
		}
		return
	}
	s.log.Info(s.o.Kind+" restarted", "pid", child.Info().PID, "services", names(child.Services()))
}
