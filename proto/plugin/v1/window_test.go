package pluginv1

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestAResultOfManyWindowsArrivesWhole: with the static windows of
// DialOptions and ServerOptions, a result of 16 windows (1 MiB) and params
// as large cross a unix socket whole, in one call.
func TestAResultOfManyWindowsArrivesWhole(t *testing.T) {
	big := json.RawMessage(`"` + string(bytes.Repeat([]byte("x"), 16*window)) + `"`)
	c, _ := windowed(t, func(_ context.Context, _ string, p json.RawMessage) (json.RawMessage, error) {
		if !bytes.Equal(p, big) {
			return nil, NewCallError(ErrorKind_ERROR_KIND_INVALID_PARAMS, "params of %d bytes, want %d", len(p), len(big))
		}
		return big, nil
	})
	got, err := c.Call(context.Background(), "big", big)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, big) {
		t.Fatalf("a result of %d bytes, want %d", len(got), len(big))
	}
}

// TestCallsCarryNoPings: the host's side of a connection made with
// DialOptions and ServerOptions sends no HTTP/2 PING over 50 calls, neither
// its own nor an ack of the plugin's. gRPC's dynamic windows sent a PING
// each way on every call to estimate the bandwidth-delay product.
func TestCallsCarryNoPings(t *testing.T) {
	c, sent := windowed(t, func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`"12:00"`), nil
	})
	for range 50 {
		if _, err := c.Call(context.Background(), "now", json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if n := sent.frames(0x6); n != 0 { // PING
		t.Fatalf("the host sent %d PING frames over 50 calls, want none", n)
	}
}

// windowed serves call on a unix socket with ServerOptions and returns a
// client dialled with DialOptions, and what the client wrote.
func windowed(t *testing.T, call func(context.Context, string, json.RawMessage) (json.RawMessage, error)) (Client, *recorder) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "plugin.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(ServerOptions()...)
	RegisterPluginServiceServer(srv, &grpcServer{impl: &fake{call: call}})
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	rec := &recorder{}
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, "unix", sock)
		if err != nil {
			return nil, err
		}
		rec.Conn = nc
		return rec, nil
	}
	conn, err := grpc.NewClient("passthrough:///plugin", append(DialOptions(),
		grpc.WithContextDialer(dial), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return NewClient(conn), rec
}

// recorder is a connection that keeps what is written to it.
type recorder struct {
	net.Conn
	mu  sync.Mutex
	out []byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.out = append(r.out, p...)
	r.mu.Unlock()
	return r.Conn.Write(p)
}

// frames counts the HTTP/2 frames of type typ written after the client's
// preface.
func (r *recorder) frames(typ byte) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	const preface = len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	n := 0
	for b := r.out[preface:]; len(b) >= 9; {
		size := int(binary.BigEndian.Uint32(append([]byte{0}, b[:3]...)))
		if b[3] == typ {
			n++
		}
		b = b[min(len(b), 9+size):]
	}
	return n
}
