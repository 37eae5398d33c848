package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/internal/procs"
	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

const token = "soak-token"

// soak is one run: its folders, the simulator, the host process and what
// happened to them.
type soak struct {
	o                                     options
	pluginDir, stage, filesRoot, sockPath string
	metricsAddr                           string // the host's /metrics, on loopback
	hostLog                               string
	variants                              [2]string // two clock binaries that differ only in appended bytes
	hashes                                [2]string
	started                               time.Time // when the load began

	sim   *voicetest.Server
	mon   *monitor
	heart *heartbeat
	ctl   *control.Client
	host  *exec.Cmd
	exit  chan struct{} // closed when the host process has exited
	err   error         // its exit status, once exit is closed

	mu        sync.Mutex
	drops     []time.Time // deliberate drops, when they began
	stopping  time.Time   // when the host was told to stop
	acct      accounts
	reloads   []reload
	reconnect []time.Duration
	samples   []snapshot
}

type reload struct {
	took    time.Duration // rename to the new sha256 in GET /v1/plugins
	applied bool
}

// setup builds the folders and files, starts the simulator and the host,
// and waits until every service is registered.
func setup(o options) (*soak, error) {
	work, err := filepath.Abs(o.work)
	if err != nil {
		return nil, err
	}
	s := &soak{o: o, pluginDir: filepath.Join(work, "plugins"), stage: filepath.Join(work, "stage"),
		filesRoot: filepath.Join(work, "files"), sockPath: filepath.Join(work, "run", "control.sock"),
		hostLog: filepath.Join(work, "host.log"), exit: make(chan struct{})}
	for _, d := range []string{s.pluginDir, s.stage, filepath.Join(s.filesRoot, "soak"), filepath.Join(work, "run"), filepath.Join(work, "state")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(s.filesRoot, "soak", "fixed.txt"), []byte(fixedContent), 0o640); err != nil {
		return nil, err
	}
	for _, name := range []string{"files", "sysinfo"} {
		if err := copyFile(filepath.Join(o.pluginBins, name), filepath.Join(s.pluginDir, name), nil); err != nil {
			return nil, err
		}
	}
	for i := range s.variants {
		s.variants[i] = filepath.Join(s.stage, fmt.Sprintf("clock-%c", 'a'+i))
		var tail []byte
		if i == 1 {
			tail = []byte("\nagenthost soak: variant b\n") // a new sha256, the same program
		}
		if err := copyFile(filepath.Join(o.pluginBins, "clock"), s.variants[i], tail); err != nil {
			return nil, err
		}
		if s.hashes[i], err = sha256File(s.variants[i]); err != nil {
			return nil, err
		}
	}
	if err := copyFile(s.variants[0], filepath.Join(s.pluginDir, "clock"), nil); err != nil {
		return nil, err
	}
	mic := filepath.Join(work, "mic.raw")
	if err := os.WriteFile(mic, micClip(), 0o640); err != nil {
		return nil, err
	}

	s.mon = newMonitor()
	s.sim, err = voicetest.NewServer(voicetest.Options{Token: token, VADHang: 300 * time.Millisecond, Pace: true, ForgetAudio: true,
		ReplyDuration: 500 * time.Millisecond, DisconnectDelay: 200 * time.Millisecond, Log: s.mon.logger()})
	if err != nil {
		return nil, err
	}
	if s.metricsAddr, err = freePort(); err != nil {
		return s, err
	}
	cfg := filepath.Join(work, "agenthost.yaml")
	if err := os.WriteFile(cfg, []byte(s.config(work, mic)), 0o640); err != nil {
		return s, err
	}
	s.ctl = control.NewClient(s.sockPath)
	if err := s.startHost(cfg); err != nil {
		return s, err
	}
	if err := s.waitServices(30 * time.Second); err != nil {
		return s, err
	}
	return s, nil
}

// fixedContent is the file read_file reads back on every call.
const fixedContent = "the soak reads this file back"

// services the load calls, as registered.
var wantServices = []string{"get_current_time", "builtin_get_current_time", "create_file", "read_file", "list_files", "get_system_info"}

func (s *soak) config(work, mic string) string {
	return fmt.Sprintf(`# written by test/soak
server:
  address: %q
  params: {mode: vad}
  reconnect: {base: 100ms, cap: 1s}
log: {level: info}
services:
  builtins: true
  prefixes: {builtin: builtin_}   # the built-in get_current_time beside the clock plugin's
plugins:
  dirs: [%q]
  runtime_dir: %q
  state_dir: %q
  config:
    files: {root: %q, overwrite: true}
  sandbox:
    files: {write: [%q]}   # the plugin writes only its own folder unless granted its root
audio:
  backend: file
  input_file: %q
  output_file: %q
conversation:
  control_socket: %q
  push_to_talk_key: false
metrics: {listen: %q}
`, s.sim.Addr(), s.pluginDir, filepath.Join(work, "run"), filepath.Join(work, "state"), s.filesRoot, s.filesRoot,
		mic, filepath.Join(work, "speaker.wav"), s.sockPath, s.metricsAddr)
}

// startHost runs `agenthost run` in a process group of its own (so a
// terminal's Ctrl-C reaches only this program, which stops the host), with
// SIGTERM as its parent-death signal, so that it stops its plugins even if
// this program is killed.
func (s *soak) startHost(cfg string) error {
	log, err := os.Create(s.hostLog)
	if err != nil {
		return err
	}
	defer log.Close()
	s.host = exec.Command(s.o.hostBin, "run", "--config", cfg)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "AGENTHOST_") { // a stray config variable would change the run
			s.host.Env = append(s.host.Env, e)
		}
	}
	s.host.Env = append(s.host.Env, "AGENTHOST_SERVER_TOKEN="+token)
	s.host.Stdout, s.host.Stderr = log, log
	s.host.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	// The parent-death signal comes when the thread that forked ends, not
	// the process, and the runtime may end idle threads: fork from a thread
	// locked to a goroutine that lives until the host has exited.
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		if err := s.host.Start(); err != nil {
			started <- err
			return // the locked thread ends with the goroutine; nothing was forked
		}
		started <- nil
		err := s.host.Wait()
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.exit)
	}()
	return <-started
}

func (s *soak) hostExited() bool {
	select {
	case <-s.exit:
		return true
	default:
		return false
	}
}

// waitServices waits until the simulator has a register with every service.
func (s *soak) waitServices(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		svcs := s.sim.Services()
		missing := []string{}
		for _, n := range wantServices {
			if _, ok := svcs[n]; !ok {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if s.hostExited() {
			return fmt.Errorf("the host exited before registering (%v); its log: %s", s.err, s.hostLog)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s the register lacks %v; the host's log: %s", within, missing, s.hostLog)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shutdown stops the host (SIGTERM, then SIGKILL after 15 s) and the
// simulator. Idempotent.
func (s *soak) shutdown() {
	if s.host != nil && s.host.Process != nil {
		s.mu.Lock()
		if s.stopping.IsZero() {
			s.stopping = time.Now()
		}
		s.mu.Unlock()
		s.host.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exit:
		case <-time.After(15 * time.Second):
			s.host.Process.Kill()
			<-s.exit
			s.mu.Lock()
			s.err = errors.New("did not exit within 15 s of SIGTERM; killed")
			s.mu.Unlock()
		}
	}
	if s.sim != nil {
		s.sim.Close()
	}
}

// freePort returns a loopback address with a port free now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// micClip is the looping microphone: half a second of a loud 440 Hz tone
// (speech to the simulator's VAD) and 1.5 s of silence, 16 kHz s16le.
func micClip() []byte {
	const rate = 16000
	b := make([]byte, 2*rate*2)
	for i := range rate / 2 {
		v := int16(8000 * math.Sin(2*math.Pi*440*float64(i)/rate))
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
}

// copyFile copies src to dst (mode 0755, written to a temporary name in
// dst's folder and renamed) and appends tail.
func copyFile(src, dst string, tail []byte) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".part"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		_, err = out.Write(tail)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return os.Rename(tmp, dst)
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// run drives the load, the reloads, the drops and the samples for the
// duration (or until ctx ends) and returns what the end needs to judge.
func (s *soak) run(sig context.Context) *result {
	r := &result{}
	s.started = time.Now()
	end := s.started.Add(s.o.duration)
	ctx, cancel := context.WithDeadline(sig, end)
	defer cancel()
	go func() { // the host dying ends the run at once
		select {
		case <-s.exit:
			cancel()
		case <-ctx.Done():
		}
	}()

	s.heart = newHeartbeat(s.started)
	go s.heart.run(ctx)
	var wg sync.WaitGroup
	calls := &sync.WaitGroup{}
	wg.Add(3)
	go func() { defer wg.Done(); s.load(ctx, calls) }()
	go func() { defer wg.Done(); s.every(ctx, s.o.reloadEvery, s.reload) }()
	go func() { defer wg.Done(); s.every(ctx, s.o.dropEvery, s.drop) }()

	// Figures: after warm-up, every progressEvery, and before the end.
	sleepUntil(ctx, s.started.Add(s.o.warmup))
	if ctx.Err() == nil {
		r.start, r.startOK = s.figures()
		s.progress("start", r.start)
	}
	for next := s.started.Add(s.o.warmup).Add(s.o.progressEvery); ctx.Err() == nil; next = next.Add(s.o.progressEvery) {
		if next.After(end.Add(-3 * time.Second)) {
			next = end.Add(-3 * time.Second)
		}
		sleepUntil(ctx, next)
		if ctx.Err() != nil {
			break
		}
		snap, ok := s.figures()
		if next.Equal(end.Add(-3 * time.Second)) {
			r.end, r.endOK = snap, ok
			s.progress("end", snap)
			<-ctx.Done()
			break
		}
		s.progress("", snap)
	}
	r.voice.starts, r.voice.stops, r.voice.ends, r.voice.audio, r.voice.maxGap = s.mon.turns(time.Now())
	if sig.Err() != nil {
		r.interrupted = true
		r.failf("interrupted after %s", time.Since(s.started).Round(time.Second))
	}
	if s.hostExited() {
		r.failf("the host exited during the run: %v (its log: %s)", s.err, s.hostLog)
	}
	wg.Wait()
	waitTimeout(calls, s.o.callTimeout+5*time.Second)
	r.pids = procs.In(s.pluginDir)
	return r
}

// every runs f(i) at start + interval/2 + i·interval until ctx ends.
func (s *soak) every(ctx context.Context, interval time.Duration, f func(i int)) {
	for i := 0; ; i++ {
		sleepUntil(ctx, s.started.Add(interval/2+time.Duration(i)*interval))
		if ctx.Err() != nil {
			return
		}
		f(i)
	}
}

func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// reload replaces the clock plugin by rename with the other variant and
// waits until GET /v1/plugins shows its sha256.
func (s *soak) reload(i int) {
	v := (i + 1) % 2 // variant a is installed first
	tmp := filepath.Join(s.stage, "clock")
	if err := copyFile(s.variants[v], tmp, nil); err != nil {
		fmt.Fprintln(os.Stderr, "soak: reload:", err)
		return
	}
	t0 := time.Now()
	if err := os.Rename(tmp, filepath.Join(s.pluginDir, "clock")); err != nil {
		fmt.Fprintln(os.Stderr, "soak: reload:", err)
		return
	}
	rl := reload{}
	for time.Since(t0) < reloadApply {
		if st, err := s.plugins(); err == nil && st["clock"].SHA256 == s.hashes[v] {
			rl.took, rl.applied = time.Since(t0), true
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.mu.Lock()
	s.reloads = append(s.reloads, rl)
	s.mu.Unlock()
}

// drop closes the link at the simulator and waits for the host to
// authenticate again.
func (s *soak) drop(int) {
	before := len(s.sim.Auths())
	t0 := time.Now()
	s.mu.Lock()
	s.drops = append(s.drops, t0)
	s.mu.Unlock()
	s.sim.Drop()
	for time.Since(t0) < 30*time.Second && !s.hostExited() {
		if len(s.sim.Auths()) > before {
			s.mu.Lock()
			s.reconnect = append(s.reconnect, time.Since(t0))
			s.mu.Unlock()
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stallNear reports whether this program stood still at some time in [from, to].
func (s *soak) stallNear(from, to time.Time) bool { return s.heart.near(from, to) }

// dropNear reports whether a deliberate drop began in [from, to].
func (s *soak) dropNear(from, to time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.drops {
		if !d.Before(from) && !d.After(to) {
			return true
		}
	}
	return false
}

type pluginStatus struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	PID    int    `json:"pid"`
	SHA256 string `json:"sha256"`
}

func (s *soak) plugins() (map[string]pluginStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list []pluginStatus
	if err := s.ctl.Do(ctx, "GET /v1/plugins", nil, &list); err != nil {
		return nil, err
	}
	m := map[string]pluginStatus{}
	for _, p := range list {
		m[p.Name] = p
	}
	return m, nil
}
