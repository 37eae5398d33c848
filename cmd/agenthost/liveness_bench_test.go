package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/proto/voice"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// BenchmarkLinkLiveness measures, against the real host binary with the
// default server.liveness and reconnect settings: the time from a turn's
// start (a say request on the control socket) into a black hole until the
// host drops the connection (its status's last_outage_at), the time from
// there until the new connection is authenticated and registered, and, with
// server.keepalive at 10s, the time from an idle link's last traffic (and
// its black hole) to the drop: keepalive + answer_timeout by design, 4m05s
// with the defaults.
//
//	go test -run='^$' -bench=LinkLiveness -benchtime=20x ./cmd/agenthost/
func BenchmarkLinkLiveness(b *testing.B) {
	sim, err := voicetest.NewServer(voicetest.Options{ReplyDuration: 120 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	d, sock := startDefaultHost(b, sim)
	ctx := context.Background()
	cl := control.NewClient(sock)
	wait := func(what string, cond func() bool) time.Time {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := sim.WaitFor(wctx, cond); err != nil {
			b.Fatalf("%s: %v\nhost log:\n%s", what, err, d.log)
		}
		return time.Now()
	}
	wait("a connection", func() bool { return sim.Connections() == 1 })
	var detect, reconnect []time.Duration
	for b.Loop() {
		// Registered, and the PING after connecting answered (a turn that
		// started with that PING still out would count its PONG).
		conn := sim.Connections()
		wait("registered", func() bool { return registersOn(sim, conn) == 1 && ponged(sim, conn) })
		time.Sleep(100 * time.Millisecond) // the host reads the PONG
		sim.BlackHole()
		start := time.Now()
		var out struct{ Task string }
		if err := cl.Do(ctx, "POST /v1/say", host.SayRequest{Text: "are you there?"}, &out); err == nil {
			b.Fatal("a turn into the black hole succeeded")
		}
		registered := wait("the new connection's register", func() bool { return registersOn(sim, conn+1) == 1 })
		var st struct {
			Link struct {
				LastOutageAt time.Time `json:"last_outage_at"`
			} `json:"link"`
		}
		if err := cl.Do(ctx, "GET /v1/status", nil, &st); err != nil {
			b.Fatal(err)
		}
		detect = append(detect, st.Link.LastOutageAt.Sub(start))
		reconnect = append(reconnect, registered.Sub(st.Link.LastOutageAt))
	}
	b.StopTimer()
	slices.Sort(detect)
	slices.Sort(reconnect)
	b.ReportMetric(detect[len(detect)/2].Seconds(), "detect-p50-s")
	b.ReportMetric(detect[len(detect)-1].Seconds(), "detect-max-s")
	b.ReportMetric(float64(reconnect[len(reconnect)/2].Microseconds())/1e3, "reconnect-p50-ms")
	b.ReportMetric(float64(reconnect[len(reconnect)-1].Microseconds())/1e3, "reconnect-max-ms")

	// Idle: no turn; the keepalive PING's answer is due like any other.
	sim2, err := voicetest.NewServer(voicetest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sim2.Close()
	startDefaultHost(b, sim2, "--set", "server.keepalive=10s")
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The last traffic: the PONG to the PING after connecting (the
	// register went out before that PING).
	if err := sim2.WaitFor(wctx, func() bool { return ponged(sim2, 1) }); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	sim2.BlackHole()
	if err := sim2.WaitFor(wctx, func() bool { return sim2.Connections() == 2 }); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "idle-detect-keepalive-10s-s")
}

// ponged reports whether the simulator sent a PONG on conn.
func ponged(sim *voicetest.Server, conn int) bool {
	for _, r := range sim.Sent() {
		if r.Conn == conn && string(r.Frame.Payload) == voice.StatusPong {
			return true
		}
	}
	return false
}

// startDefaultHost starts the host with the default settings but for the
// server's address, private folders and no audio; it returns the control
// socket's path.
func startDefaultHost(b *testing.B, sim *voicetest.Server, args ...string) (*hostProc, string) {
	dir := b.TempDir()
	sock := filepath.Join(dir, "control.sock")
	conf := filepath.Join(dir, "agenthost.yaml")
	yaml := "server: {address: " + sim.Addr() + "}\n" +
		"log: {level: info}\n" +
		"plugins: {runtime_dir: " + filepath.Join(dir, "run") + ", dirs: [" + filepath.Join(dir, "plugins") + "], state_dir: " + filepath.Join(dir, "state") + "}\n" +
		"audio: {backend: none}\n" +
		"conversation: {push_to_talk_key: false, control_socket: " + sock + "}\n"
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		b.Fatal(err)
	}
	d := startHostArgs(b, testbinHost(b), append([]string{"run", "--config", conf}, args...), dir)
	return d, sock
}
