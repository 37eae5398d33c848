package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/internal/procs"
)

// The control socket is the owner's. Everything the daemon starts (plugins,
// MCP stdio servers, hooks, the wake-word detector, and whatever they start)
// runs as the daemon's user and so may open the socket; the kernel says who
// is calling (SO_PEERCRED, read as the connection is accepted), and a caller
// that is the daemon or descends from it is refused before any endpoint
// runs. The daemon is a child subreaper (proctree.BecomeSubreaper), so the
// orphan of a double fork under setsid is adopted by it and its parent chain
// still reaches the daemon. Where the caller cannot be told apart (its
// process is gone, its PID was reused, /proc hides one of its ancestors of
// the daemon's user), it is refused: fail closed.
//
// What this does not close (docs/security.md lists it too):
//   - The verdict is the connecting process's, once per connection. A
//     descendant that hands its connection to another process (SCM_RIGHTS)
//     stays refused; a connection the owner's process opened stays the
//     owner's wherever it goes, and the owner's programs do not hand it on.
//   - A descendant cannot make a process outside the tree connect for it,
//     unless something outside starts processes for it as the daemon's
//     user: cron or at, a systemd user manager (systemd-run --user), D-Bus
//     activation (the service user has none of them by default), or ptrace
//     of the owner's `sudo -u agenthost agenthost …` while it runs (Yama's
//     ptrace_scope 1, or the children's Landlock domain, forbids it).
//   - Without SO_PEERPIDFD (Linux < 6.5, as bookworm's 6.1), a
//     peer that connects and exits before the accept, whose PID is taken in
//     that moment by a process outside the tree, is judged as that process:
//     the PID space would have to wrap between connect and accept (or a
//     reuse after the accept fall in the same 10 ms tick).
//   - A daemon that is not root takes a peer of another user for the owner
//     without reading /proc (ProtectProc=invisible hides it): its processes
//     can change user only through a set-uid program, which the unit
//     forbids (NoNewPrivileges); outside the unit, a set-uid program that
//     connects on its caller's behalf would pass.
//   - Plugins and MCP servers that `agenthost call` or `agenthost mcp` start
//     themselves (no daemon running) are not the daemon's: the ones that
//     outlive them run as that user, who may use the socket anyway.

// RefusedMessage is the error a process started by agenthost gets.
const RefusedMessage = "the control socket is the owner's: a process started by agenthost (a plugin, an MCP server, a hook) may not use it"

// Peer is the process on the other end of a connection, as the kernel gave
// it when the connection was accepted.
type Peer struct {
	PID, UID, GID int
	Accepted      uint64 // when the connection was accepted, in clock ticks since boot (procs.Proc.Start's unit)
}

// Verdict is what the socket decided about a peer.
type Verdict struct {
	Peer
	Allowed    bool
	Descendant bool   // refused as the daemon or a process it started
	Comm       string // the peer's short name, when read
	Child      string // the daemon's child it descends from, "name (pid N)", when known
	Why        string // why a peer that is not known to descend was refused
}

// daemon is the process whose descendants are refused.
type daemon struct {
	procs.Proc
	UID       int  // its effective user
	Subreaper bool // it adopts its descendants' orphans (PR_SET_CHILD_SUBREAPER)
}

// maxWalk bounds the parent chain followed, and maxRetries the walks made
// again when the chain changed under it.
const (
	maxWalk    = 4096
	maxRetries = 3
)

// decide tells whether peer may use the socket of d.
func decide(p Peer, d daemon) Verdict {
	v := Verdict{Peer: p}
	refuse := func(why string) Verdict { v.Why = why; return v }
	switch {
	case p.PID <= 0:
		return refuse("the kernel gave no process id: the caller is outside the daemon's PID namespace")
	case p.PID == d.PID:
		v.Descendant, v.Comm = true, d.Comm
		return v
	case d.UID != 0 && p.UID != d.UID:
		// The daemon's processes run as its user and cannot become another
		// (the unit sets NoNewPrivileges): a person's CLI, or root's.
		v.Allowed = true
		return v
	}
	for range maxRetries {
		peer, err := procs.Stat(p.PID)
		if err != nil {
			return refuse("its process is " + unseen(p.PID))
		}
		if !peer.Alive() {
			return refuse("its process has ended")
		}
		if peer.Start > p.Accepted {
			return refuse("its process id belongs to a process started after the connection: the caller is gone")
		}
		v.Comm = peer.Comm
		child, why, again := walk(peer, d)
		switch {
		case again:
			continue
		case why != "":
			return refuse(why)
		case child != nil:
			v.Descendant, v.Child = true, fmt.Sprintf("%s (pid %d)", child.Comm, child.PID)
			return v
		}
		// Still the same process: its ancestry was read, not another's.
		if now, err := procs.Stat(p.PID); err != nil || now.Start != peer.Start {
			return refuse("its process ended while it was looked at")
		}
		if !d.Subreaper && p.UID == d.UID {
			// Orphans of its processes went to init: the chain tells nothing.
			return refuse("the daemon is not a child subreaper (see its start's WARN), so it cannot tell its own user's processes from the orphans of those it started; use the CLI as root or as a member of the group agenthost")
		}
		v.Allowed = true
		return v
	}
	return refuse("its parent chain kept changing while it was read")
}

// walk follows the parent chain of p up to the daemon d (and returns the
// daemon's child on it), or to a process that cannot descend from d (nil,
// ""). why says why it could not tell; again, that the chain changed under
// it (a parent exited) and the walk is to be made anew.
func walk(p procs.Proc, d daemon) (child *procs.Proc, why string, again bool) {
	cur := p
	for range maxWalk {
		switch {
		case cur.PPID == d.PID:
			return &cur, "", false
		case cur.PPID <= 1 || cur.Start < d.Start:
			// init or the kernel, or a process older than the daemon: none
			// of them descends from it, so neither does the peer.
			return nil, "", false
		}
		parent, err := procs.Stat(cur.PPID)
		if err != nil {
			switch kill0(cur.PPID) {
			case syscall.ESRCH:
				return nil, "", true // the parent ended: cur was adopted since
			case syscall.EPERM:
				// Another user's process (sudo, a login shell): the daemon's
				// processes cannot run as another user.
				if d.UID != 0 {
					return nil, "", false
				}
			}
			return nil, fmt.Sprintf("an ancestor (pid %d) is %s", cur.PPID, unseen(cur.PPID)), false
		}
		if parent.Start > cur.Start {
			return nil, "", true // the parent's id was reused: cur was adopted since
		}
		cur = parent
	}
	return nil, "its parent chain is too long", false
}

// unseen says why /proc has no process pid: it ended, or /proc hides it
// (ProtectProc=invisible hides a process that made itself not dumpable).
func unseen(pid int) string {
	switch err := kill0(pid); {
	case errors.Is(err, syscall.ESRCH):
		return "gone"
	case err == nil:
		return "of the daemon's user and hidden from it in /proc"
	default:
		return "hidden from the daemon in /proc"
	}
}

// kill0 asks the kernel whether pid exists (nil), is gone (ESRCH) or is
// another user's (EPERM), without sending a signal.
func kill0(pid int) error {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return syscall.ESRCH
	}
	if errors.Is(err, syscall.EPERM) {
		return syscall.EPERM
	}
	return err
}

// verdictKey holds a connection's Verdict in its requests' context.
type verdictKey struct{}

// admitConns is the http.Server's ConnContext: it decides about each
// connection as it is accepted, and logs a refusal.
func (s *Server) admitConns(d daemon) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		v := identify(c, d)
		if !v.Allowed {
			s.logRefusal(v)
		}
		return context.WithValue(ctx, verdictKey{}, v)
	}
}

// guard answers 403 to every request on a connection that was not
// admitted, before any endpoint runs, and closes it.
func guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, ok := r.Context().Value(verdictKey{}).(Verdict)
		if ok && v.Allowed {
			next.ServeHTTP(w, r)
			return
		}
		msg := RefusedMessage
		if !v.Descendant {
			why := v.Why
			if !ok {
				why = "the connection was not looked at"
			}
			msg = "the control socket is the owner's, and it could not tell this caller from a process started by agenthost (" + why + "): refused"
		}
		w.Header().Set("Connection", "close")
		writeJSON(w, http.StatusForbidden, map[string]string{"error": msg})
	})
}

// thisDaemon is the process whose descendants s refuses: this one, or the
// one a test names.
func (s *Server) thisDaemon() (daemon, error) {
	pid := s.daemonPID
	if pid == 0 {
		pid = os.Getpid()
	}
	p, err := procs.Stat(pid)
	if err != nil {
		return daemon{}, fmt.Errorf("reading this process in /proc, which the control socket needs to tell the owner from the processes agenthost starts: %w", err)
	}
	return daemon{Proc: p, UID: os.Geteuid(), Subreaper: s.daemonPID != 0 || isSubreaper()}, nil
}

// refusalLog bounds the refusals logged: a process that connects in a loop
// does not flood the log.
type refusalLog struct {
	mu         sync.Mutex
	window     time.Time
	logged     int
	suppressed int
}

const refusalsLoggedPerMinute = 20

func (s *Server) logRefusal(v Verdict) {
	l := &s.refusals
	l.mu.Lock()
	now := time.Now()
	if now.Sub(l.window) > time.Minute {
		l.window, l.logged = now, 0
	}
	if l.logged >= refusalsLoggedPerMinute {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	l.logged++
	suppressed := l.suppressed
	l.suppressed = 0
	l.mu.Unlock()
	attrs := []any{"pid", v.PID, "uid", v.UID}
	if v.Comm != "" {
		attrs = append(attrs, "process", v.Comm)
	}
	if v.Child != "" && v.Child != fmt.Sprintf("%s (pid %d)", v.Comm, v.PID) {
		attrs = append(attrs, "child", v.Child)
	}
	if suppressed > 0 {
		attrs = append(attrs, "refusals_not_logged", suppressed)
	}
	if v.Descendant {
		s.log.Warn("the control socket refused a process started by agenthost: only the owner may use it", attrs...)
		return
	}
	s.log.Warn("the control socket refused a caller it could not tell from the processes agenthost starts", append(attrs, "why", v.Why)...)
}
