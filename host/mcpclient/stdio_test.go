package mcpclient_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcpclient"
)

// lastWords is a stand-in stdio server (a shell script) whose answer to
// tools/list is its last message: it exits as soon as it has written it.
// The answer is long (its tool's description is 256 KiB), so that the host
// is still reading it when the server exits.
const lastWords = `#!/bin/sh
long=$(printf '%0262144d' 0)
while read -r line; do
	id=${line#*\"id\":}
	id=${id%%[,\}]*}
	case $line in
	*'"method":"initialize"'*)
		echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"lastwords","version":"1"}}}' ;;
	*'"method":"tools/list"'*)
		echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"tools":[{"name":"add","description":"'"$long"'","inputSchema":{"type":"object"}}]}}'
		exit 0 ;;
	esac
done
`

// TestAServersLastMessageIsRead: a server's last message, written just
// before it exits, reaches the session every time. The host read stdout
// from StdoutPipe, which Wait closes as soon as the child exits, so the
// message was now and then lost ("file already closed"). The server here
// is a stand-in whose answer to tools/list is its last message: when that
// is lost, the start fails. (It speaks 2025-06-18, which has no
// server/discover.)
func TestAServersLastMessageIsRead(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "lastwords")
	if err := os.WriteFile(bin, []byte(lastWords), 0o755); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for range 200 {
		s, err := startErr(t, mcpclient.Options{Server: mcpclient.ServerConfig{Command: bin}, ProtocolVersion: "2025-06-18"}, 10*time.Second)
		if err != nil {
			lost++
			t.Logf("start: %v", err)
			continue
		}
		if n := names(s); n != "add" {
			t.Errorf("services %q, want add", n)
		}
		s.Kill()
	}
	if lost > 0 {
		t.Errorf("the server's last message was lost %d times in 200", lost)
	}
}
