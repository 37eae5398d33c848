package link

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Link states, for status.
const (
	StateConnecting = "connecting" // not up yet since the link started
	StateUp         = "up"
	StateDown       = "down" // an outage: reconnecting
)

// Outage reasons, a fixed set (a metrics label).
const (
	ReasonNoAnswer = "no_answer" // a PING went unanswered (NoAnswerError)
	ReasonTimeout  = "timeout"   // TCP gave up (tcp_user_timeout, keepalive) or the read deadline passed
	ReasonClosed   = "closed"    // the server closed or reset the connection
	ReasonAuth     = "auth"      // the server refused AUTH
	ReasonError    = "error"     // anything else
)

// Reasons lists every outage reason.
var Reasons = []string{ReasonNoAnswer, ReasonTimeout, ReasonClosed, ReasonAuth, ReasonError}

// State is the link's state and its outages since it was made.
type State struct {
	State string    `json:"state"`
	Since time.Time `json:"since"` // when State began
	// Outages counts connections that were up and ended without the host
	// asking (by reason in ByReason).
	Outages  int64            `json:"outages"`
	ByReason map[string]int64 `json:"-"`
	// LastOutage says why the latest outage began, LastOutageAt when.
	LastOutage   string     `json:"last_outage,omitempty"`
	LastOutageAt *time.Time `json:"last_outage_at,omitempty"`
	// LastError, while not up, says why the latest attempt to connect failed.
	LastError string `json:"last_error,omitempty"`
}

type stateKeeper struct {
	mu sync.Mutex
	s  State
}

func newStateKeeper() *stateKeeper {
	return &stateKeeper{s: State{State: StateConnecting, Since: time.Now(), ByReason: map[string]int64{}}}
}

func (k *stateKeeper) up() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.s.State, k.s.Since, k.s.LastError = StateUp, time.Now(), ""
}

// down notes the end of a connection that was up; a nil err is one the
// host asked for (shutdown, new settings), not an outage.
func (k *stateKeeper) down(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	if err == nil {
		k.s.State, k.s.Since = StateConnecting, now
		return
	}
	k.s.State, k.s.Since = StateDown, now
	k.s.Outages++
	k.s.ByReason[Reason(err)]++
	k.s.LastOutage, k.s.LastOutageAt = err.Error(), &now
}

// failed notes an attempt to connect that failed.
func (k *stateKeeper) failed(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.s.LastError = err.Error()
}

func (k *stateKeeper) get() State {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.s
	s.ByReason = make(map[string]int64, len(k.s.ByReason))
	for r, n := range k.s.ByReason {
		s.ByReason[r] = n
	}
	return s
}

// Reason classifies why a connection ended (one of Reasons).
func Reason(err error) string {
	var ne net.Error
	switch {
	case IsNoAnswer(err):
		return ReasonNoAnswer
	case errors.Is(err, errAuth):
		return ReasonAuth
	case errors.Is(err, syscall.ETIMEDOUT), errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed), strings.Contains(err.Error(), "closed the connection"):
		return ReasonClosed
	}
	return ReasonError
}

// State reports the link's state and outages.
func (l *Link) State() State { return l.state.get() }
