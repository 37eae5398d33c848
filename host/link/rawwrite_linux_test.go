package link

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/agenthost/agenthost/proto/voice"
)

// tcpPair is a connected pair of loopback TCP connections.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func TestTheRawSocketWriterDeliversWhatOverfillsTheSocket(t *testing.T) {
	c, s := tcpPair(t)
	w := socketWriter(c)
	if _, ok := w.(*rawWriter); !ok {
		t.Fatalf("a TCP connection is written by %T", w)
	}
	msg := make([]byte, 16<<20) // more than the socket's buffers: the writer waits in the poller
	for i := range msg {
		msg[i] = byte(i * 31)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(s, int64(len(msg))))
		got <- b
	}()
	if n, err := w.Write(msg); err != nil || n != len(msg) {
		t.Fatalf("wrote %d of %d: %v", n, len(msg), err)
	}
	if b := <-got; !bytes.Equal(b, msg) {
		t.Errorf("the reader got %d bytes, not what was written", len(b))
	}
}

func TestTheRawSocketWriterKeepsTheDeadlineAndTheClose(t *testing.T) {
	c, _ := tcpPair(t) // nobody reads: the socket fills
	w := socketWriter(c)
	c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	big := make([]byte, 64<<20)
	_, err := w.Write(big)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("a write past its deadline: %v, want a timeout", err)
	}
	c.Close()
	if _, err := w.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("a write after Close: %v, want net.ErrClosed", err)
	}
}

// A stream sends a frame every 60 ms for as long as a turn lasts: what the
// link allocates per frame is garbage the collector wakes for (on a Pi, a
// visible share of the stream's CPU). A frame its sender writes itself
// allocates nothing.
func TestAnAudioFrameWrittenByItsSenderAllocatesNothing(t *testing.T) {
	a, b := tcpPair(t)
	go io.Copy(io.Discard, b)
	c := newConn(1, a, &settings{keepalive: time.Hour}, slog.New(slog.DiscardHandler))
	defer c.close()
	f := voice.Frame{Type: voice.TypeAudio, Task: "t1", Seq: 1, Payload: make([]byte, 1920)}
	if err := c.send(f); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(200, func() {
		f.Seq++
		if err := c.send(f); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("%.1f allocations per audio frame, want none", allocs)
	}
}
