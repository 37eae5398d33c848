package pluginmgr

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/agenthost/agenthost/internal/childenv"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/host/services"
	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// instance is one running process of a plugin binary.
type instance struct {
	name   string
	hash   string
	client *goplugin.Client
	rpc    pluginv1.Client
	desc   *pluginv1.Description
	pid    int

	mu       sync.Mutex
	calls    int
	retiring bool
	idle     chan struct{} // closed when retiring and calls reach 0
	thread   chan struct{} // closing it releases the OS thread that started the process
	stopProc context.CancelFunc
	stopped  bool
	crashed  bool // retired because it died, not because it was replaced
}

// fileHash returns the sha256 of the binary at path.
func fileHash(path string) (string, error) {
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

// start launches the binary, handshakes, describes and configures it. Any
// failure kills the process and says what went wrong in words a plugin
// author can act on.
func (m *Manager) start(ctx context.Context, name, path, hash string) (*instance, error) {
	// The process lives until stopProc: at once when the host stops during
	// the start (go-plugin's Kill waits for a start in progress), else after
	// go-plugin's own graceful Kill.
	procCtx, stopProc := context.WithCancel(context.Background())
	cmd := exec.CommandContext(procCtx, path)
	cmd.Env = append(childenv.Environ(), "PLUGIN_UNIX_SOCKET_DIR="+m.socketDir)
	if m.o.dataDir != "" {
		cmd.Env = append(cmd.Env, pluginv1.EnvDataDir+"="+m.o.dataDir+"/"+name)
	}
	// The plugin dies with the host even after a SIGKILL of the host. It fires
	// when the forking thread exits; Go does not retire threads except when a
	// locked goroutine exits, which never happens on this path.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: false}
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  pluginv1.Handshake,
		Plugins:          pluginv1.PluginSet(),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         m.o.autoMTLS,
		StartTimeout:     m.o.startTimeout,
		Logger:           hclogToSlog(m.log, name),
		SyncStdout:       outputLogger(m.log.With("plugin", name, "stream", "stdout")),
		SyncStderr:       outputLogger(m.log.With("plugin", name, "stream", "stderr")),
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
		close(thread)
		return nil, fmt.Errorf(format, a...)
	}
	var r started
	select {
	case r = <-res:
	case <-ctx.Done():
		stopProc()
		<-res
		return fail("the host is stopping")
	}
	rpc, err := r.rpc, r.err
	if err != nil {
		return fail("it did not start as an agenthost plugin: %v (is it built with plugins/sdk, and does it print nothing to stdout?)", err)
	}
	cctx, cancel := context.WithTimeout(ctx, m.o.startTimeout)
	defer cancel()
	desc, err := rpc.Describe(cctx)
	if err != nil {
		return fail("it started but Describe failed: %v", err)
	}
	if desc.Name != "" && desc.Name != name {
		m.log.Debug("plugin calls itself by another name; the file name is used", "plugin", name, "says", desc.Name)
	}
	conf, err := json.Marshal(m.o.config[name])
	if err != nil || string(conf) == "null" {
		conf = []byte(`{}`)
	}
	if err := rpc.Configure(cctx, conf); err != nil {
		return fail("it rejected its configuration (plugins.config.%s): %v", name, err)
	}
	inst := &instance{name: name, hash: hash, client: client, rpc: rpc, desc: desc, idle: make(chan struct{}), thread: thread, stopProc: stopProc}
	if rc := client.ReattachConfig(); rc != nil {
		inst.pid = rc.Pid
	}
	return inst, nil
}

// acquire admits a call unless the instance is being retired.
func (i *instance) acquire() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.retiring {
		return false
	}
	i.calls++
	return true
}

func (i *instance) release() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.calls--
	if i.retiring && i.calls == 0 {
		close(i.idle)
	}
}

// retire lets in-flight calls finish (up to grace), then stops the process.
func (i *instance) retire(grace time.Duration) {
	i.mu.Lock()
	if i.stopped {
		i.mu.Unlock()
		return
	}
	i.stopped = true
	if !i.retiring {
		i.retiring = true
		if i.calls == 0 {
			close(i.idle)
		}
	}
	i.mu.Unlock()
	select {
	case <-i.idle:
	case <-time.After(grace):
	}
	i.client.Kill()
	i.stopProc()
	close(i.thread)
}

func (i *instance) exited() bool { return i.client.Exited() }

// markCrashed records that the instance died, before it is retired, so that
// calls refused from then on say so even before go-plugin has reaped the process.
func (i *instance) markCrashed() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.crashed = true
}

func (i *instance) hasCrashed() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.crashed
}

func (i *instance) isStopped() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.stopped
}

// provider is the registry's view of one instance: ID "plugin:<name>".
type provider struct {
	m    *Manager
	inst *instance
}

func (p provider) ID() string { return "plugin:" + p.inst.name }

func (p provider) Services() []services.Service {
	out := make([]services.Service, 0, len(p.inst.desc.Services))
	for _, s := range p.inst.desc.Services {
		out = append(out, services.Service{Name: s.Name, Description: s.Description, Parameters: s.Parameters, Timeout: s.Timeout})
	}
	return out
}

func (p provider) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	i := p.inst
	if !i.acquire() {
		if i.hasCrashed() || i.exited() {
			return nil, fmt.Errorf("plugin %s crashed and is being restarted; try again in a moment", i.name)
		}
		// The call looked this instance up just before a hot reload swapped
		// it out: run it on the instance that replaced it.
		if cur := p.m.current(i.name); cur != nil && cur != i {
			return provider{m: p.m, inst: cur}.Call(ctx, method, params)
		}
		return nil, fmt.Errorf("plugin %s is being replaced; try again", i.name)
	}
	defer i.release()
	data, err := i.rpc.Call(ctx, method, params)
	if err == nil {
		return data, nil
	}
	if ce, ok := pluginv1.AsCallError(err); ok {
		return nil, ce
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.DeadlineExceeded {
		// gRPC decides the deadline passed by the clock (e.g. when the plugin
		// resets the stream at its end of the deadline), which can be a moment
		// before ctx's timer fires and ctx.Err() turns non-nil. Wait for ctx
		// so the caller sees its deadline and says the service did not answer
		// in time, instead of passing on a raw gRPC error.
		if dl, ok := ctx.Deadline(); ok {
			t := time.NewTimer(time.Until(dl) + 10*time.Millisecond)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if st, ok := status.FromError(err); (ok && st.Code() == codes.Unavailable) || i.exited() {
		p.m.crashed(i)
		return nil, fmt.Errorf("plugin %s crashed during the call; it is being restarted", i.name)
	}
	return nil, fmt.Errorf("plugin %s: %w", i.name, err)
}
