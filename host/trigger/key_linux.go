package trigger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Key reads the terminal on in: each space or Enter toggles push-to-talk, the
// first calling h.Press, the next h.Release. Other keys are ignored. It puts
// the terminal in non-canonical mode without echo but leaves ISIG on, so
// Ctrl-C still reaches the process as SIGINT (the process should end ctx on
// it); the terminal's mode is restored when ctx ends and when Key returns,
// whatever the reason. A press still held when Key returns is released.
//
// If in is not a terminal, or the process is a background job of it, Key
// returns nil at once and does nothing. Key returns nil when ctx ends or the
// terminal hangs up.
func Key(ctx context.Context, in *os.File, h Handler, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "trigger", "trigger", "key")
	if in == nil {
		return nil
	}
	rc, err := in.SyscallConn()
	if err != nil {
		return nil // closed or not a real file: not a terminal
	}
	fd := -1
	if err := rc.Control(func(f uintptr) { fd = int(f) }); err != nil || fd < 0 {
		return nil
	}
	defer runtime.KeepAlive(in)

	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		log.Debug("input is not a terminal: no key trigger", "file", in.Name())
		return nil
	}
	// A background job that changed the terminal's mode would be stopped
	// by SIGTTOU. (TIOCGPGRP fails for a terminal that is not the
	// process's controlling one: there is no job control on it then.)
	if pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pg != unix.Getpgrp() {
		log.Info("running in the background of a terminal: no key trigger")
		return nil
	}
	mode := *old
	mode.Lflag &^= unix.ICANON | unix.ECHO
	mode.Lflag |= unix.ISIG
	mode.Cc[unix.VMIN], mode.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &mode); err != nil {
		return fmt.Errorf("key trigger: set the mode of terminal %s: %w", in.Name(), err)
	}
	restore := sync.OnceFunc(func() {
		if err := unix.IoctlSetTermios(fd, unix.TCSETS, old); err != nil {
			log.Debug("terminal mode not restored", "err", err)
		}
	})
	defer restore()

	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("key trigger: eventfd: %w", err)
	}
	defer unix.Close(wake)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
			restore()
			unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		case <-done:
		}
	}()
	defer wg.Wait() // before wake is closed
	defer close(done)

	t := NewToggle(h)
	defer t.Up()
	log.Info("key trigger ready: space or Enter starts and stops talking")

	buf := make([]byte, 64)
	cr := false // the last byte read was a carriage return
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("key trigger: poll: %w", err)
		}
		if fds[1].Revents != 0 || ctx.Err() != nil {
			return nil
		}
		if fds[0].Revents&unix.POLLNVAL != 0 {
			return fmt.Errorf("key trigger: terminal %s was closed", in.Name())
		}
		n, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case err != nil || n == 0:
			// EIO or end of file: the terminal hung up.
			log.Info("terminal closed: key trigger stops", "err", err)
			return nil
		}
		for _, b := range buf[:n] {
			switch {
			case b == '\n' && cr:
				// one Enter sent as CR LF (a terminal without ICRNL)
			case b == ' ' || b == '\r' || b == '\n':
				t.Tap()
			}
			cr = b == '\r'
		}
	}
}
