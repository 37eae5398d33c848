package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The household as one device, measured on three real daemons
// (TestHouseholdAnswersOnce runs these between its utterances): an
// announcement to every room, and a timer that rings everywhere.

// hhMediaAddr is where each speaker's namespace serves the announcement: on
// its own loopback, at the same address in every namespace, so that one URL
// plays on all (loopback stands for a public server: plugins.network.allow).
const hhMediaAddr = "127.0.0.1:8099"

// serveAnnouncement serves ann.wav (2 s of a tone) in namespace ns.
func serveAnnouncement(t *testing.T, ns, dir string) {
	t.Helper()
	wav := filepath.Join(dir, "ann.wav")
	if out, err := exec.Command("sox", "-n", "-r", "16000", "-c", "1", "-b", "16", wav, "synth", "2", "sine", "600", "vol", "0.25").CombinedOutput(); err != nil {
		t.Fatalf("sox: %v\n%s", err, out)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir))}
	go srv.Serve(listenInAt(t, ns, hhMediaAddr))
	t.Cleanup(func() { srv.Close() })
}

// control is a client of the speaker's control socket, as the CLI is, for
// reading its status many times a second.
func (s *hhSpeaker) control() *http.Client {
	sock := filepath.Join(s.d.dir, "run", "control.sock")
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
}

// hhSound is what a status tells of the speaker's sound.
type hhSound struct {
	Output struct {
		Streams []struct {
			Class    string  `json:"class"`
			Position float64 `json:"position_s"`
		} `json:"streams"`
	} `json:"output"`
	Device struct {
		Ringing []json.RawMessage `json:"ringing"`
	} `json:"device"`
}

// sound reads the status, with when the request left and its answer came.
func (s *hhSpeaker) sound(c *http.Client) (st hhSound, sent, got time.Time, err error) {
	sent = time.Now()
	resp, err := c.Get("http://agenthost/v1/status")
	if err != nil {
		return st, sent, sent, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, sent, time.Now(), err
}

// mixFrame bounds how far the mixer's position of a stream lags the sound:
// it counts whole frames mixed.
const mixFrame = 20 * time.Millisecond

// announceEverywhere: `agenthost announce --room all` on one member plays
// on every member; each one's start is found from its mixer's position of
// the stream, read many times (each reading bounds the start between when
// the request left and when its answer came, less the position), and the
// spread of the starts is reported.
func announceEverywhere(t *testing.T, from *hhSpeaker, members []*hhSpeaker) {
	t.Helper()
	if out, err := from.d.cli("announce", "--room", "all", "http://"+hhMediaAddr+"/ann.wav"); err != nil {
		t.Fatalf("agenthost announce --room all: %v\n%s", err, out)
	}
	type span struct{ lo, hi time.Time }
	starts := make([]span, len(members))
	var wg sync.WaitGroup
	for i, s := range members {
		wg.Go(func() {
			c := s.control()
			seen := 0
			for deadline := time.Now().Add(30 * time.Second); seen < 40 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				st, sent, got, err := s.sound(c)
				if err != nil {
					continue
				}
				for _, str := range st.Output.Streams {
					if str.Class != "announcement" || str.Position <= 0 || str.Position > 1.5 {
						continue
					}
					pos := time.Duration(str.Position * float64(time.Second))
					lo, hi := sent.Add(-pos-mixFrame-5*time.Millisecond), got.Add(-pos+5*time.Millisecond)
					if seen == 0 || lo.After(starts[i].lo) {
						starts[i].lo = lo
					}
					if seen == 0 || hi.Before(starts[i].hi) {
						starts[i].hi = hi
					}
					seen++
				}
			}
			if seen == 0 {
				t.Errorf("%s never played the announcement to every room", s.name)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var mids []time.Time
	var widest time.Duration
	for _, sp := range starts {
		mids = append(mids, sp.lo.Add(sp.hi.Sub(sp.lo)/2))
		widest = max(widest, sp.hi.Sub(sp.lo))
	}
	first, last := slices.MinFunc(mids, time.Time.Compare), slices.MaxFunc(mids, time.Time.Compare)
	var at []string
	for i, m := range mids {
		at = append(at, fmt.Sprintf("%s +%s", members[i].name, m.Sub(first).Round(time.Millisecond)))
	}
	t.Logf("an announcement to every room started on %d members within %s of each other (%s; each start known to ±%s)",
		len(members), last.Sub(first).Round(time.Millisecond), strings.Join(at, ", "), (widest / 2).Round(time.Millisecond))
}

// ringEverywhere: a timer set on one member rings on every member
// (household.rings: everywhere), and the owner's stop on another member
// stops it on all; the time from the stop to the last ring ended is
// reported.
func ringEverywhere(t *testing.T, setOn, stopOn *hhSpeaker, members []*hhSpeaker) {
	t.Helper()
	if out, err := setOn.d.cli("call", "set_timer", `{"seconds":1,"label":"tea"}`); err != nil || !strings.Contains(out, `"success": true`) {
		t.Fatalf("set_timer on %s: %v\n%s", setOn.name, err, out)
	}
	for _, s := range members {
		c := s.control()
		hhEventually(t, s.name+" to ring the timer set on "+setOn.name, time.Minute, func() (bool, string) {
			st, _, _, err := s.sound(c)
			return err == nil && len(st.Device.Ringing) > 0, fmt.Sprint(err)
		})
	}
	stopped := time.Now()
	if out, err := stopOn.d.cli("stop"); err != nil {
		t.Fatalf("agenthost stop on %s: %v\n%s", stopOn.name, err, out)
	}
	var mu sync.Mutex
	var ends []string
	var last time.Duration
	var wg sync.WaitGroup
	for _, s := range members {
		wg.Go(func() {
			c := s.control()
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if st, _, got, err := s.sound(c); err == nil && len(st.Device.Ringing) == 0 {
					mu.Lock()
					ends = append(ends, fmt.Sprintf("%s %s", s.name, got.Sub(stopped).Round(time.Millisecond)))
					last = max(last, got.Sub(stopped))
					mu.Unlock()
					return
				}
			}
			t.Errorf("%s still rings a minute after the owner's stop on %s", s.name, stopOn.name)
		})
	}
	wg.Wait()
	slices.Sort(ends)
	t.Logf("a stop on %s ended the ring set on %s on all %d members within %s of the stop's start (%s; the CLI's own start included)",
		stopOn.name, setOn.name, len(members), last.Round(time.Millisecond), strings.Join(ends, ", "))
}
