package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// runRelist is a hostile server written by hand (the go-sdk's server
// debounces list_changed; a hostile one need not): after every tools/list
// it answers, it says notifications/tools/list_changed at once. When
// changing, each list differs from the one before (the description of
// looper counts up) until the tool freeze is called: from then on the list
// stays as it is, one last list_changed is sent, and freeze answers the
// final version.
func runRelist(changing bool) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		out.Write(append(b, '\n'))
		out.Flush()
		mu.Unlock()
	}
	answer := func(id json.RawMessage, result any) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	listChanged := func() { send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}) }
	version, frozen := 1, false
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue // a notification, or a response
		}
		switch m.Method {
		case "initialize":
			answer(m.ID, map[string]any{"protocolVersion": m.Params.ProtocolVersion, "serverInfo": map[string]any{"name": "mcptoy-relist", "version": "0.1.0"},
				"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}}})
		case "tools/list":
			schema := map[string]any{"type": "object"}
			answer(m.ID, map[string]any{"tools": []any{
				map[string]any{"name": "looper", "description": fmt.Sprintf("version %d", version), "inputSchema": schema},
				map[string]any{"name": "freeze", "description": "Stops the changes; answers the final version.", "inputSchema": schema},
			}})
			if !frozen {
				if changing {
					version++
				}
				listChanged()
			}
		case "tools/call":
			text, froze := "ok", m.Params.Name == "freeze" && !frozen
			if m.Params.Name == "freeze" {
				frozen = true
				text = fmt.Sprintf("version %d", version)
			}
			answer(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
			if froze {
				listChanged()
			}
		case "ping":
			answer(m.ID, map[string]any{})
		default: // server/discover among them: the client falls back to initialize
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + m.Method}})
		}
	}
}
