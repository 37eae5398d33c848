package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// The daemon's binary in the echo room, in real time. Its exact figures
// depend on how busy the machine is (a process late to feed the speaker
// makes the canceller learn the room again, and holds a "stop" down with
// the echo), so the tests here assert only what holds at any speed; the
// exact figures are host's TestEchoRoomBargeIns, the same room, capture
// chain and conversation in virtual time, and the figures of the real
// daemon are BenchmarkEchoRoomBargeIns.

// TestEchoRoomBargeInsThroughTheDaemon: the real daemon in VAD mode with
// conversation.aec, its microphone and speaker in the echo room (the reply
// comes back 6 dB down after 60 ms and a 150 ms reverberation), streaming
// continuously to the simulator, whose VAD interrupts a reply at the first
// 20 ms of sound on the listening turn. With the canceller, most replies'
// echo starts no turn (all, unless the machine is busy), and a person who says "stop" 800 ms into each reply
// is heard (at least once: a reply the canceller holds down while it
// learns the room is not interrupted); without it, the speaker interrupts
// itself.
func TestEchoRoomBargeInsThroughTheDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("half a minute and more of replies in real time")
	}
	clips := newEchoRoomClips(t)
	t.Run("quiet room", func(t *testing.T) {
		// On an idle machine none is (BenchmarkEchoRoomBargeIns); a
		// process descheduled long enough to starve the speaker moves the
		// echo under the filter, and CI once saw one reply of five
		// interrupted so. Without the canceller every reply is.
		interrupted, bargeIns := echoRoomReplies(t, clips, true, false, 5, nil)
		if interrupted > 2 || bargeIns > 2 {
			t.Errorf("%d of 5 replies were interrupted, %d barge-ins in all, with nobody speaking: the speaker keeps hearing itself", interrupted, bargeIns)
		}
	})
	t.Run("stop during the replies", func(t *testing.T) {
		interrupted, _ := echoRoomReplies(t, clips, true, true, 20, func(interrupted int) bool { return interrupted > 0 })
		if interrupted == 0 {
			t.Errorf("none of 20 replies was interrupted by the near-end \"stop\"")
		}
	})
	t.Run("quiet room without the canceller", func(t *testing.T) {
		if interrupted, _ := echoRoomReplies(t, clips, false, false, 1, nil); interrupted == 0 {
			t.Errorf("no reply was interrupted without the canceller: the room does not test it (the echo is below the VAD's threshold)")
		}
	})
}

// BenchmarkEchoRoomBargeIns: the figures of TestEchoRoomBargeInsThroughTheDaemon
// over 20 replies each, which depend on the machine's load (host's
// TestEchoRoomBargeIns has them exact, in virtual time): replies interrupted by
// the near-end "stop" (19 of 20 on an idle machine, the first being the
// canceller's warm-up; 9–11 of 20 seen with two busy loops on 2 cores), and
// barge-ins in a quiet room (0).
//
//	go test -run='^$' -bench=EchoRoomBargeIns -benchtime=1x ./cmd/agenthost/
func BenchmarkEchoRoomBargeIns(b *testing.B) {
	clips := newEchoRoomClips(b)
	for _, tc := range []struct {
		name      string
		interrupt bool
	}{{"quiet room", false}, {"stop during each reply", true}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				interrupted, bargeIns := echoRoomReplies(b, clips, true, tc.interrupt, 20, nil)
				b.ReportMetric(float64(interrupted), "interrupted/20")
				b.ReportMetric(float64(bargeIns), "barge-ins")
			}
		})
	}
}

type echoRoomClips struct {
	weather, okay []byte
	stopPath      string
}

func newEchoRoomClips(tb testing.TB) echoRoomClips {
	reply := audiotest.Speech(tb, "Here is the weather for today. It will be sunny and mild, with a light breeze from the west.")
	okay := audiotest.Speech(tb, "Okay.")
	stop := audiotest.SpeechVoice(tb, "en-gb+f3", "Stop.")
	c := echoRoomClips{weather: audiotest.SamplesToBytes(reply.Samples[:reply.Words]), okay: audiotest.SamplesToBytes(okay.Samples[:okay.Words]),
		stopPath: filepath.Join(tb.TempDir(), "stop.s16")}
	if err := audiotest.WriteRaw(c.stopPath, stop.Samples[:stop.Words]); err != nil {
		tb.Fatal(err)
	}
	return c
}

// echoRoomReplies starts the daemon in the echo room (with the canceller
// or not; with a person who says "stop" into each reply or nobody), has
// the simulator say the weather up to n times, each once the room is quiet
// again, and counts the replies interrupted and the barge-ins in all. It
// stops early once enough(interrupted) holds, and without the canceller at
// the first interruption (the speaker goes on interrupting itself).
func echoRoomReplies(tb testing.TB, clips echoRoomClips, cancel, interrupt bool, n int, enough func(interrupted int) bool) (interrupted, bargeIns int) {
	tb.Helper()
	// A turn the simulator's VAD heard (a barge-in) is answered "okay".
	sim, err := voicetest.NewServer(voicetest.Options{ReplyPCM: clips.okay, Pace: true, VADHang: 300 * time.Millisecond, ForgetAudio: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer sim.Close()
	sets := []string{"audio.backend=echo_room", "server.params.mode=vad", "conversation.aec=true",
		"audio.echo_room.delay=60ms", "audio.echo_room.gain=-6", "audio.echo_room.noise=-65",
		fmt.Sprintf("audio.capture.echo_cancel=%v", cancel)}
	if interrupt {
		sets = append(sets, "audio.echo_room.interrupt="+clips.stopPath, "audio.echo_room.interrupt_after=800ms")
	}
	host := startHost(tb, sim, sets...)
	wait := func(d time.Duration, cond func() bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return sim.WaitFor(ctx, cond)
	}
	if err := wait(15*time.Second, func() bool { return len(listens(sim, voice.ListenStart, 0)) > 0 }); err != nil {
		tb.Fatalf("waiting for the host to listen: %v", err)
	}
	said := 0
	for i := range n {
		said++
		before := len(detections(sim))
		task, err := sim.SayAudio(fmt.Sprintf("reply %d", i+1), clips.weather)
		if err != nil {
			tb.Fatal(err)
		}
		ended := false
		if err := wait(30*time.Second, func() bool {
			ended = replyEnded(sim, 0, task)
			return ended || len(detections(sim)) > before
		}); err != nil {
			tb.Fatalf("reply %d neither ended nor was interrupted: %v", i+1, err)
		}
		if os.Getenv("AEC_E2E_LOG") != "" {
			tb.Logf("reply %d (%s): ended %v, detections %d → %d", i+1, task, ended, before, len(detections(sim)))
		}
		if !ended {
			interrupted++
		}
		if (!ended && !cancel) || (enough != nil && enough(interrupted)) {
			break
		}
		// Every turn the VAD heard has been answered ("okay") and the
		// room is quiet again (the speaker's buffer, the reverberation,
		// the VAD's hang) before the next reply, so that its "stop"
		// starts a turn of its own.
		for range 5 {
			heard := detections(sim)
			if err := wait(15*time.Second, func() bool {
				for _, turn := range heard {
					if !replyEnded(sim, 0, turn) {
						return false
					}
				}
				return true
			}); err != nil {
				tb.Logf("after reply %d: an answer to a barge-in never ended (interrupted in turn); going on", i+1)
			}
			time.Sleep(time.Second) // the room's quiet, in real time: the test waits for no event here
			if len(detections(sim)) == len(heard) {
				break
			}
		}
	}
	bargeIns = len(detections(sim))
	tb.Logf("%d replies: %d interrupted, %d barge-ins in all (%d outside the replies)", said, interrupted, bargeIns, bargeIns-interrupted)
	if os.Getenv("AEC_E2E_LOG") != "" {
		tb.Logf("host log:\n%s", host.log)
	}
	return interrupted, bargeIns
}

// detections are the LISTEN detecting frames the simulator sent: each is
// its VAD hearing speech on the listening turn, which interrupts a reply.
func detections(sim *voicetest.Server) []string {
	var out []string
	for _, r := range sim.Sent() {
		if r.Frame.Type == voice.TypeListen && bytes.Contains(r.Frame.Payload, []byte(`"state":"`+voice.ListenDetecting+`"`)) {
			out = append(out, r.Frame.Task)
		}
	}
	return out
}
