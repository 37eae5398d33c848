package pluginmgr

import (
	"github.com/agenthost/agenthost/internal/sandbox"
	"path/filepath"

	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/host/supervise"
	"github.com/agenthost/agenthost/internal/childenv"
	"github.com/agenthost/agenthost/internal/proctree"
	"github.com/agenthost/agenthost/internal/procwait"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// instance is one running process of a plugin binary: a supervise.Child.
type instance struct {
	name     string
	hash     atomic.Pointer[string] // sha256 of the binary it runs, once known (renamed.go)
	print    string                 // printOf the binary it runs
	client   *goplugin.Client
	rpc      pluginv1.Client
	desc     *pluginv1.Description
	pid      int
	thread   chan struct{} // closing it releases the OS thread that started the process
	tree     *proctree.Tree
	stopProc context.CancelFunc
	done     chan struct{} // closed when the process has exited
	killOnce sync.Once
	sockets  string          // its socket folder
	held     *os.File        // the folder, locked while the process lives
	allow    func() []string // plugins.network.allow, as it is now
	// rejected says why it refused the config a reload gave it (it runs
	// with the one it started with); nil when it took every config.
	rejected atomic.Pointer[string]
}

var _ supervise.Child = (*instance)(nil)

// fileHash returns the sha256 of the binary at path.
func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return hashOf(f)
}

// hashOf returns the sha256 of what f holds.
func hashOf(f *os.File) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// start launches the binary, handshakes, describes and configures it. Any
// failure kills the process and says what went wrong in words a plugin
// author can act on. ctx bounds the start. A binary still open for writing
// (a copy finishing as it is noticed) cannot be run yet, so that is retried.
func (m *Manager) start(ctx context.Context, name, path string) (*instance, error) {
	for {
		inst, err := m.startOnce(ctx, name, path)
		if !errors.Is(err, syscall.ETXTBSY) {
			return inst, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (m *Manager) startOnce(ctx context.Context, name, path string) (*instance, error) {
	// The process lives until stopProc: at once when the start is abandoned
	// (go-plugin's Kill waits for a start in progress), else after
	// go-plugin's own graceful Kill.
	exe, err := m.pinned(name, path)
	if err != nil {
		return nil, err
	}
	if exe != nil {
		defer exe.Close() // the process has its own copy once started
	}
	procCtx, stopProc := context.WithCancel(context.Background())
	cmd := exec.CommandContext(procCtx, path)
	if exe != nil {
		// Run the very file that was hashed: its descriptor, which the
		// child still holds when it execs (close-on-exec applies after).
		cmd = exec.CommandContext(procCtx, fmt.Sprintf("/proc/self/fd/%d", exe.Fd()))
		cmd.Args[0] = path
	}
	tree := proctree.New() // what the plugin starts ends with it
	// Each process has a socket folder of its own: it may create its socket
	// there, and cannot touch another's or the control socket.
	// Its name is short: a socket's path has room for 107 bytes.
	sockets, held, err := m.socketFolder()
	if err != nil {
		stopProc()
		return nil, err
	}
	cmd.Env = append(childenv.Environ(), "PLUGIN_UNIX_SOCKET_DIR="+sockets, "TMPDIR="+sockets, tree.Env())
	policy := m.grant(name).Policy().With(sandbox.Policy{Read: m.o.dirs, Write: []string{sockets}})
	if m.o.dataDir != "" {
		data := filepath.Join(m.o.dataDir, name)
		cmd.Env = append(cmd.Env, pluginv1.EnvDataDir+"="+data)
		policy.Write = append(policy.Write, data)
	}
	if exe != nil {
		// The pinned file's descriptor reaches the sandbox's trampoline as 3.
		cmd.ExtraFiles = []*os.File{exe}
		cmd.Path = "/proc/self/fd/3"
	}
	if err := m.jail.Confine(cmd, policy); err != nil {
		stopProc()
		os.RemoveAll(sockets)
		held.Close()
		return nil, fmt.Errorf("it cannot be started in its sandbox: %w", err)
	}
	// The plugin dies with the host even after a SIGKILL of the host. It fires
	// when the forking thread exits; see below.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	log := m.log.With("plugin", name)
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  pluginv1.Handshake,
		Plugins:          m.pluginSet(name),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         m.o.autoMTLS,
		GRPCDialOptions:  pluginv1.DialOptions(),
		StartTimeout:     m.o.startTimeout,
		Logger:           hclogToSlog(log),
		SyncStdout:       outputLogger(log.With("stream", "stdout")),
		SyncStderr:       outputLogger(log.With("stream", "stderr")),
	})
	// Pdeathsig fires when the forking OS thread exits, and Go retires a
	// thread when a goroutine locked to it ends. So the process is started
	// from a goroutine that locks its thread and keeps it until the instance
	// is stopped: no other code's LockOSThread can take the plugin down.
	type started struct {
		rpc pluginv1.Client
		err error
	}
	thread := make(chan struct{}) // closed when the process is gone
	res := make(chan started, 1)
	go func() {
		runtime.LockOSThread()
		rpc, err := pluginv1.Dispense(client)
		res <- started{rpc, err}
		<-thread
	}()
	fail := func(format string, a ...any) (*instance, error) {
		client.Kill()
		stopProc()
		tree.Kill()
		close(thread)
		os.RemoveAll(sockets)
		held.Close()
		return nil, fmt.Errorf(format, a...)
	}
	var r started
	select {
	case r = <-res:
	case <-ctx.Done():
		stopProc()
		<-res
		return fail("the start was abandoned: %v", context.Cause(ctx))
	}
	if r.err != nil {
		return fail("it did not start as an agenthost plugin: %w (is it built with plugins/sdk, and does it print nothing to stdout?)", r.err)
	}
	desc, err := r.rpc.Describe(ctx)
	if err != nil {
		return fail("it started but Describe failed: %v", err)
	}
	if desc.Name != "" && desc.Name != name {
		log.Debug("plugin calls itself by another name; the file name is used", "says", desc.Name)
	}
	if err := r.rpc.Configure(ctx, m.pluginConfig(name)); err != nil {
		return fail("it rejected its configuration (plugins.config.%s): %w", name, err)
	}
	inst := &instance{name: name, client: client, rpc: r.rpc, desc: desc, thread: thread, tree: tree, stopProc: stopProc, done: make(chan struct{}),
		sockets: sockets, held: held, allow: m.networkAllow}
	if rc := client.ReattachConfig(); rc != nil {
		inst.pid = rc.Pid
		tree.Started(rc.Pid)
	}
	go inst.watchExit()
	return inst, nil
}

// pinned opens a plugin pinned by plugins.sha256 and checks the pin on the
// open file, which is what gets executed: replacing the file between the
// check and the start cannot run anything else. nil when there is no pin.
// A pinned plugin must be an ELF binary (a script's interpreter would look
// for the descriptor after it is closed).
func (m *Manager) pinned(name, path string) (*os.File, error) {
	pin := m.pin(name)
	if pin == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	hash, err := hashOf(f)
	if err == nil {
		err = checkPin(name, pin, hash)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// watchExit closes done when the process exits. go-plugin offers no exit
// notification: a pidfd tells without waking up; where there is none, it
// polls.
func (i *instance) watchExit() {
	if exited, err := procwait.Watch(i.pid); err == nil {
		<-exited // Kill ends the process, so this returns
		close(i.done)
		return
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for range t.C {
		if i.client.Exited() {
			close(i.done)
			return
		}
	}
}

// Services implements supervise.Child.
func (i *instance) Services() []services.Service {
	out := make([]services.Service, 0, len(i.desc.Services))
	for _, s := range i.desc.Services {
		out = append(out, services.Service{Name: s.Name, Description: s.Description, Parameters: s.Parameters, Timeout: s.Timeout})
	}
	return out
}

// Done implements supervise.Child.
func (i *instance) Done() <-chan struct{} { return i.done }

// Changed implements supervise.Child: a plugin's services are fixed.
func (i *instance) Changed() <-chan struct{} { return nil }

// Info implements supervise.Child.
func (i *instance) Info() supervise.Info {
	var build string
	if h := i.hash.Load(); h != nil {
		build = *h
	}
	return supervise.Info{PID: i.pid, Version: i.desc.Version, Transport: "go-plugin", Build: build}
}

// Health implements supervise.Healther with the contract's Health RPC.
func (i *instance) Health(ctx context.Context) error { return i.rpc.Health(ctx) }

// Kill implements supervise.Child: the process, then what it left running.
func (i *instance) Kill() {
	i.killOnce.Do(func() {
		i.client.Kill()
		i.stopProc()
		i.tree.Kill()
		close(i.thread)
		os.RemoveAll(i.sockets)
		i.held.Close()
	})
}

// Call implements supervise.Child. The plugin learns who calls (the
// caller ctx names) and where a call that is not the owner's may reach.
func (i *instance) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ctx = pluginv1.WithCallInfo(ctx, pluginv1.CallInfo{Caller: callerOf(ctx), NetworkAllow: i.allow()})
	data, err := i.rpc.Call(ctx, method, params)
	if err == nil {
		return data, nil
	}
	if ce, ok := pluginv1.AsCallError(err); ok {
		return nil, ce
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.DeadlineExceeded {
		// gRPC decides the deadline passed by the clock (e.g. when the plugin
		// resets the stream at its end of the deadline), which can be a
		// moment before ctx's timer fires: it is the caller's deadline.
		return nil, context.DeadlineExceeded
	}
	if st, ok := status.FromError(err); (ok && st.Code() == codes.Unavailable) || i.client.Exited() {
		return nil, fmt.Errorf("plugin %s: %w", i.name, supervise.ErrGone)
	}
	return nil, fmt.Errorf("plugin %s: %w", i.name, err)
}

// callerOf names the caller ctx carries in the contract's terms; a context
// that names none is the least trusted.
func callerOf(ctx context.Context) pluginv1.Caller {
	switch services.CallerOf(ctx) {
	case services.CallerOwner:
		return pluginv1.Caller_CALLER_OWNER
	case services.CallerVoiceServer:
		return pluginv1.Caller_CALLER_VOICE_SERVER
	case services.CallerMCP:
		return pluginv1.Caller_CALLER_MCP_CLIENT
	}
	return pluginv1.Caller_CALLER_UNSPECIFIED
}

// networkAllow is plugins.network.allow as the last reload left it.
func (m *Manager) networkAllow() []string {
	m.cfgMu.Lock()
	defer m.cfgMu.Unlock()
	return m.allow
}
