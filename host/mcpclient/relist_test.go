package mcpclient_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcpclient"
)

// TestListChangedLoopIsPaced: a server that says tools/list_changed after
// every tools/list, with the list unchanged or changing each time, is
// listed again at most once per MinRelistInterval, and the last list always
// wins: once it stops changing, the session holds the final one (found by
// attack: ~500 re-lists a second, a full core, and 3,271 registers in 13 s).
func TestListChangedLoopIsPaced(t *testing.T) {
	bin := toy(t)
	for _, mode := range []string{"relist", "relist-changing"} {
		t.Run(mode, func(t *testing.T) {
			s := start(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: bin, Args: []string{"-mode", mode}}})
			eventually(t, "the loop", func() bool { return s.Status().Relisted > 0 })
			r0, t0 := s.Status().Relisted, time.Now()
			time.Sleep(2 * time.Second) // a window to count in, not a wait for an event
			r1, elapsed := s.Status().Relisted, time.Since(t0)
			t.Logf("%s: %d re-lists in %v: %.1f a second (notifications so far: %d)", mode, r1-r0, elapsed.Round(time.Millisecond),
				float64(r1-r0)/elapsed.Seconds(), s.Status().ListChanged)
			if most := int(elapsed/mcpclient.MinRelistInterval) + 2; r1-r0 > most {
				t.Errorf("%d re-lists in %v, over %d (one per %v)", r1-r0, elapsed, most, mcpclient.MinRelistInterval)
			}
			if mode != "relist-changing" {
				return
			}
			final, err := call(t, s, "freeze", `{}`)
			if err != nil {
				t.Fatal(err)
			}
			final = strings.Trim(final, `"`)
			eventually(t, "the final list ("+final+")", func() bool { return looper(s) == final })
		})
	}
}

// looper is the description of the tool looper.
func looper(s *mcpclient.Session) string {
	for _, sv := range s.Services() {
		if sv.Name == "looper" {
			return sv.Description
		}
	}
	return ""
}
