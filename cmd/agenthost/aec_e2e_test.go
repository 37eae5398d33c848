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

// TestEchoRoomBargeIns: the real daemon in VAD mode with conversation.aec,
// its microphone and speaker in the echo room (the reply comes back 6 dB
// down after 60 ms and a 150 ms reverberation), streaming continuously to
// the simulator, whose VAD interrupts a reply at the first 20 ms of sound
// on the listening turn. With the canceller: 20 spoken replies and no
// near speech bring no barge-in; a person who says "stop" 800 ms into each
// of 20 replies interrupts at least 19 of them (the first reply is the
// canceller's warm-up, held down), each answered "okay". Without the
// canceller, the speaker interrupts itself.
func TestEchoRoomBargeIns(t *testing.T) {
	if testing.Short() {
		t.Skip("about three minutes of replies in real time")
	}
	reply := audiotest.Speech(t, "Here is the weather for today. It will be sunny and mild, with a light breeze from the west.")
	okay := audiotest.Speech(t, "Okay.")
	stop := audiotest.SpeechVoice(t, "en-gb+f3", "Stop.")
	cases := []struct {
		name      string
		cancel    bool
		interrupt bool
		replies   int
		check     func(t *testing.T, interrupted, bargeIns int)
	}{
		{"quiet room", true, false, 20, func(t *testing.T, interrupted, bargeIns int) {
			if interrupted != 0 || bargeIns != 0 {
				t.Errorf("%d of 20 replies were interrupted, %d barge-ins in all, with nobody speaking: the speaker heard itself", interrupted, bargeIns)
			}
		}},
		{"stop during each reply", true, true, 20, func(t *testing.T, interrupted, bargeIns int) {
			if interrupted < 19 {
				t.Errorf("%d of 20 replies were interrupted by the near-end \"stop\", want ≥ 19", interrupted)
			}
		}},
		{"quiet room without the canceller", false, false, 1, func(t *testing.T, interrupted, bargeIns int) {
			if interrupted == 0 {
				t.Errorf("no reply was interrupted without the canceller: the room does not test it (the echo is below the VAD's threshold)")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			stopPath := filepath.Join(dir, "stop.s16")
			if err := audiotest.WriteRaw(stopPath, stop.Samples[:stop.Words]); err != nil {
				t.Fatal(err)
			}
			// Each reply is the weather; a turn the simulator's VAD heard
			// (a barge-in) is answered "okay".
			sim := newSim(t, voicetest.Options{ReplyPCM: audiotest.SamplesToBytes(okay.Samples[:okay.Words]), Pace: true,
				VADHang: 300 * time.Millisecond})
			weather := audiotest.SamplesToBytes(reply.Samples[:reply.Words])
			sets := []string{"audio.backend=echo_room", "server.params.mode=vad", "conversation.aec=true",
				"audio.echo_room.delay=60ms", "audio.echo_room.gain=-6", "audio.echo_room.noise=-65",
				fmt.Sprintf("audio.capture.echo_cancel=%v", tc.cancel)}
			if tc.interrupt {
				sets = append(sets, "audio.echo_room.interrupt="+stopPath, "audio.echo_room.interrupt_after=800ms")
			}
			host := startHost(t, sim, sets...)
			waitFor(t, sim, "the host to listen", func() bool { return len(listens(sim, voice.ListenStart, 0)) > 0 })

			interrupted := 0
			for i := range tc.replies {
				before := len(detections(sim))
				task, err := sim.SayAudio(fmt.Sprintf("reply %d", i+1), weather)
				if err != nil {
					t.Fatal(err)
				}
				ended := false
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err = sim.WaitFor(ctx, func() bool {
					ended = replyEnded(sim, 0, task)
					return ended || len(detections(sim)) > before
				})
				cancel()
				if err != nil {
					t.Fatalf("reply %d neither ended nor was interrupted: %v", i+1, err)
				}
				if os.Getenv("AEC_E2E_LOG") != "" {
					t.Logf("reply %d (%s): ended %v, detections %d → %d", i+1, task, ended, before, len(detections(sim)))
				}
				if !ended {
					interrupted++
					if !tc.cancel {
						break // it goes on interrupting itself
					}
				}
				// Every turn the VAD heard has been answered ("okay") and the
				// room is quiet again (the speaker's buffer, the reverberation,
				// the VAD's hang) before the next reply, so that its "stop"
				// starts a turn of its own.
				for range 5 {
					heard := detections(sim)
					ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
					err := sim.WaitFor(ctx, func() bool {
						for _, turn := range heard {
							if !replyEnded(sim, 0, turn) {
								return false
							}
						}
						return true
					})
					cancel()
					if err != nil {
						t.Logf("after reply %d: an answer to a barge-in never ended (interrupted in turn); going on", i+1)
					}
					time.Sleep(time.Second)
					if len(detections(sim)) == len(heard) {
						break
					}
				}
			}
			bargeIns := len(detections(sim))
			t.Logf("%d replies: %d interrupted, %d barge-ins in all (%d outside the replies)", tc.replies, interrupted, bargeIns, bargeIns-interrupted)
			tc.check(t, interrupted, bargeIns)
			if os.Getenv("AEC_E2E_LOG") != "" {
				t.Logf("host log:\n%s", host.log)
			}
		})
	}
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
