//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The household tests' LAN (network namespaces on a bridge) and microphones
// (named pipes written in lockstep): see household_e2e_test.go.

// hhNet is a LAN of network namespaces: a bridge in a namespace of its
// own, and a namespace per speaker joined to it by a veth pair. Nothing
// of the machine's own namespace is touched.
type hhNet struct {
	t      *testing.T
	ip     string
	prefix string
	lan    string
}

var hhNetSeq atomic.Int32

func newHHNet(t *testing.T) *hhNet {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the household's speakers run in network namespaces of their own (ip netns)")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("needs ip (iproute2) to make the household's network namespaces")
	}
	n := &hhNet{t: t, ip: ip, prefix: fmt.Sprintf("ahh%d-%d", os.Getpid(), hhNetSeq.Add(1))}
	n.lan = n.prefix + "-lan"
	n.addNS(n.lan)
	n.run("-n", n.lan, "link", "add", "br0", "type", "bridge")
	n.run("-n", n.lan, "link", "set", "br0", "up")
	return n
}

func (n *hhNet) run(args ...string) {
	n.t.Helper()
	if out, err := exec.Command(n.ip, args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (n *hhNet) addNS(ns string) {
	n.t.Helper()
	n.run("netns", "add", ns)
	n.t.Cleanup(func() {
		if out, err := exec.Command(n.ip, "netns", "del", ns).CombinedOutput(); err != nil {
			n.t.Errorf("ip netns del %s: %v %s", ns, err, out)
		}
	})
	n.run("-n", ns, "link", "set", "lo", "up")
}

// join makes the namespace of a speaker at addr on the LAN (a /24) and
// returns its name.
func (n *hhNet) join(name, addr string) string {
	n.t.Helper()
	ns := n.prefix + "-" + name
	n.addNS(ns)
	veth := "v" + name
	n.run("-n", n.lan, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
	n.run("-n", n.lan, "link", "set", veth, "master", "br0", "up")
	n.run("-n", ns, "addr", "add", addr+"/24", "dev", "eth0")
	n.run("-n", ns, "link", "set", "eth0", "up")
	n.run("-n", ns, "route", "add", "224.0.0.0/4", "dev", "eth0") // mDNS
	return ns
}

// listenIn is a TCP listener on 127.0.0.1:0 inside namespace ns: the
// socket is made by a thread that entered ns, and stays there.
func listenIn(t *testing.T, ns string) net.Listener {
	t.Helper()
	return listenInAt(t, ns, "127.0.0.1:0")
}

// listenInAt is a TCP listener on addr inside namespace ns.
func listenInAt(t *testing.T, ns, addr string) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer own.Close()
		target, err := os.Open(filepath.Join("/run/netns", ns))
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("setns %s: %w", ns, err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		if back := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); back != nil {
			// The thread stays locked: it ends with this goroutine.
			if ln != nil {
				ln.Close()
			}
			ch <- result{err: fmt.Errorf("setns back: %w", back)}
			return
		}
		runtime.UnlockOSThread()
		ch <- result{ln, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("a listener in %s: %v", ns, r.err)
	}
	return r.ln
}

// hhMics are the speakers' microphones: named pipes written in real time,
// 20 ms at a tick, the same chunk of an utterance to every microphone at
// once, each microphone's own noise when no utterance plays.
type hhMics struct {
	files   []*os.File
	noise   []float64 // each microphone's noise, RMS (full scale 1)
	out     []chan []byte
	alive   []atomic.Bool
	play    chan hhClip
	dropped atomic.Int64
	stop    chan struct{}
}

type hhClip struct {
	mics [][]int16 // one per microphone, all as long
	done chan struct{}
}

const hhChunk = 320 // 20 ms at 16 kHz

// newHHMics makes n named pipes in dir and opens them (read and write:
// neither the test nor the daemon blocks on the other's open).
func newHHMics(t *testing.T, dir string, noise []float64) (*hhMics, []string) {
	t.Helper()
	m := &hhMics{noise: noise, alive: make([]atomic.Bool, len(noise)), play: make(chan hhClip), stop: make(chan struct{})}
	var paths []string
	for i := range noise {
		p := filepath.Join(dir, fmt.Sprintf("mic%d.s16", i))
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		m.files = append(m.files, f)
		m.out = append(m.out, make(chan []byte, 50)) // a second: a reader further behind loses chunks (counted)
		m.alive[i].Store(true)
		paths = append(paths, p)
	}
	t.Cleanup(func() {
		close(m.stop)
		for _, f := range m.files {
			f.Close() // ends a write blocked on a pipe nobody reads
		}
	})
	return m, paths
}

// start writes the microphones until the test ends.
func (m *hhMics) start() {
	for i, f := range m.files {
		go func() {
			for {
				select {
				case b := <-m.out[i]:
					if _, err := f.Write(b); err != nil {
						return
					}
				case <-m.stop:
					return
				}
			}
		}()
	}
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		rng := rand.New(rand.NewPCG(44, 7946))
		var cur *hhClip
		pos := 0
		chunk := make([]int16, hhChunk)
		for {
			select {
			case <-m.stop:
				return
			case <-tick.C:
			}
			if cur == nil {
				select {
				case c := <-m.play:
					cur, pos = &c, 0
				default:
				}
			}
			for i := range m.files {
				k := 0
				if cur != nil {
					k = copy(chunk, cur.mics[i][min(pos, len(cur.mics[i])):])
				}
				for j := k; j < hhChunk; j++ {
					chunk[j] = int16(max(-32768, min(32767, math.Round(m.noise[i]*32768*rng.NormFloat64()))))
				}
				if !m.alive[i].Load() {
					continue
				}
				b := make([]byte, 2*hhChunk)
				for j, v := range chunk {
					binary.LittleEndian.PutUint16(b[2*j:], uint16(v))
				}
				select {
				case m.out[i] <- b:
				default:
					m.dropped.Add(1)
				}
			}
			if cur != nil {
				if pos += hhChunk; pos >= len(cur.mics[0]) {
					close(cur.done)
					cur = nil
				}
			}
		}
	}()
}

// say plays one utterance (every microphone's rendering) and returns when
// it has been written whole.
func (m *hhMics) say(mics [][]int16) {
	c := hhClip{mics: mics, done: make(chan struct{})}
	m.play <- c
	<-c.done
}
