package pluginv1

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestAResultOfManyWindowsArrivesWhole: with the static windows of
// DialOptions and ServerOptions, a result of 16 windows (1 MiB) and params
// as large cross a unix socket whole, in one call.
func TestAResultOfManyWindowsArrivesWhole(t *testing.T) {
	big := json.RawMessage(`"` + string(bytes.Repeat([]byte("x"), 16*window)) + `"`)
	sock := filepath.Join(t.TempDir(), "plugin.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(ServerOptions()...)
	RegisterPluginServiceServer(srv, &grpcServer{impl: &fake{call: func(_ context.Context, _ string, p json.RawMessage) (json.RawMessage, error) {
		if !bytes.Equal(p, big) {
			return nil, NewCallError(ErrorKind_ERROR_KIND_INVALID_PARAMS, "params of %d bytes, want %d", len(p), len(big))
		}
		return big, nil
	}}})
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("unix://"+sock, append(DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	got, err := NewClient(conn).Call(context.Background(), "big", big)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, big) {
		t.Fatalf("a result of %d bytes, want %d", len(got), len(big))
	}
}
