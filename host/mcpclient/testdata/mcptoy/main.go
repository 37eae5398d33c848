// Command mcptoy is a small MCP stdio server written with the go-sdk, for
// the tests of host/mcpclient and the benchmark: a real server with a few
// tools, and modes that misbehave in the ways real servers do.
//
//	mcptoy [-mode serve|garbage|jsonjunk|junk|hang|badschema|exit|relist|relist-changing] [-grandchild TAG]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	flag.Bool("pdeathsig-test", false, "does nothing; marks the process for a test that looks for it")
	flag.Bool("kill-test", false, "does nothing; marks the process for a test that looks for it")
	mode := flag.String("mode", "serve", "serve, stubborn (serve, and stay after stdin closes), garbage (junk on stdout, then serve), jsonjunk (JSON that is not JSON-RPC on stdout, then serve, and the tool print_junk prints more), junk (only junk), hang (never answer), badschema, exit, relist (list_changed after every tools/list, the list unchanged), relist-changing (the same, the list changing until the tool freeze is called)")
	grandchild := flag.String("grandchild", "", "first leave a process behind as a daemon does: a child starts a grandchild in a new session (setsid) and exits at once; "+
		"the grandchild (-mode linger) sleeps for ever with TAG on its command line")
	flag.Parse()
	log.SetFlags(0)
	log.SetOutput(os.Stderr)
	switch *mode {
	case "linger":
		for {
			time.Sleep(time.Hour)
		}
	case "intermediate":
		cmd := exec.Command(self(), "-mode", "linger", "-grandchild", *grandchild)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			log.Fatalf("mcptoy: %v", err)
		}
		os.Exit(0) // not waiting: the grandchild is an orphan now
	}
	if *grandchild != "" {
		if err := exec.Command(self(), "-mode", "intermediate", "-grandchild", *grandchild).Run(); err != nil {
			log.Fatalf("mcptoy: %v", err)
		}
	}
	switch *mode {
	case "junk":
		fmt.Println("Welcome to mcptoy! This is not JSON-RPC.")
		fmt.Println("still not JSON")
		io.Copy(io.Discard, os.Stdin)
		return
	case "hang":
		log.Print("mcptoy: hanging at initialize")
		io.Copy(io.Discard, os.Stdin)
		return
	case "exit":
		log.Print("mcptoy: cannot open the database: no such file")
		os.Exit(3)
	case "relist", "relist-changing":
		runRelist(*mode == "relist-changing")
		return
	case "garbage":
		fmt.Println("mcptoy v0.1 starting (a banner on stdout, as some servers print)")
	case "jsonjunk":
		printJSONJunk()
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptoy", Version: "0.1.0"}, &mcp.ServerOptions{HasTools: true})
	add(s, "add", "Adds two numbers.", `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`,
		func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			a, _ := args["a"].(float64)
			b, _ := args["b"].(float64)
			return text(fmt.Sprint(a + b)), nil
		})
	add(s, "ping", "Answers pong.", `{"type":"object"}`, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return text("pong"), nil
	})
	add(s, "crash", "Exits in the middle of the call.", `{"type":"object"}`, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		log.Print("mcptoy: crashing")
		os.Exit(2)
		return nil, nil
	})
	add(s, "fail", "Always fails.", `{"type":"object"}`, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		r := text("the printer is on fire")
		r.IsError = true
		return r, nil
	})
	add(s, "big", "Returns n bytes of text.", `{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["n"]}`,
		func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			n, _ := args["n"].(float64)
			return text(strings.Repeat("x", int(n))), nil
		})
	s.AddTool(&mcp.Tool{Name: "ask_model", Description: "Asks the client's model (sampling).", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
			if err == nil {
				return text("the client answered a sampling request"), nil
			}
			return text("sampling refused: " + err.Error()), nil
		})
	s.AddTool(&mcp.Tool{Name: "add_tool", Description: "Adds the tool extra (tools/list_changed).", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			add(s, "extra", "Added at run time.", `{"type":"object","properties":{"q":{"type":"string"}}}`,
				func(context.Context, map[string]any) (*mcp.CallToolResult, error) { return text("extra"), nil })
			return text("added"), nil
		})
	s.AddTool(&mcp.Tool{Name: "touch_tools", Description: "Sends tools/list_changed without changing the tools.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			add(s, "ping", "Answers pong.", `{"type":"object"}`, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
				return text("pong"), nil
			})
			return text("touched"), nil
		})
	s.AddTool(&mcp.Tool{Name: "weather", Description: "Structured weather.", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := text(`{"temperature":21.5,"conditions":"sunny"}`)
			r.StructuredContent = map[string]any{"temperature": 21.5, "conditions": "sunny"}
			return r, nil
		})
	if *mode == "jsonjunk" {
		add(s, "print_junk", "Prints lines of JSON that is not JSON-RPC on stdout.", `{"type":"object"}`, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			printJSONJunk()
			return text("printed"), nil
		})
	}
	if *mode == "badschema" {
		add(s, "broken", "Its schema has a type that does not exist.", `{"type":"object","properties":{"x":{"type":"strng"}}}`, nil)
		add(s, "choice", "Its schema has alternatives.", `{"type":"object","properties":{"x":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`, nil)
	}
	log.Print("mcptoy: serving on stdio")
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil && err != io.EOF {
		log.Printf("mcptoy: %v", err)
	}
	if *mode == "stubborn" {
		select {} // outlives its stdin, as a careless server may
	}
}

func self() string {
	exe, err := os.Executable()
	if err != nil {
		log.Fatalf("mcptoy: %v", err)
	}
	return exe
}

// jsonJunk is JSON, or nearly, that is not a JSON-RPC message.
var jsonJunk = []string{`{"foo":1}`, `[1,2]`, `[]`, `{}`, `{"jsonrpc":"2.0"}`, `{"jsonrpc":"1.0","id":1,"result":{}}`,
	`[{"jsonrpc":"2.0","method":"notifications/x"},7]`, `{"jsonrpc":"2.0","id":99,"result":{}} {"x":1}`, `{"jsonrpc":`}

// printJSONJunk writes each line of jsonJunk to stdout in one write (a
// pipe write this small is never interleaved with the SDK's own), and a
// batch of one valid notification, which the go-sdk refuses on newer
// protocols (it must be passed on alone).
func printJSONJunk() {
	for _, l := range jsonJunk {
		os.Stdout.WriteString(l + "\n")
	}
	os.Stdout.WriteString(`[{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a batch"}}]` + "\n")
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// add adds a tool with a raw schema; its handler gets the arguments decoded.
func add(s *mcp.Server, name, desc, schema string, h func(context.Context, map[string]any) (*mcp.CallToolResult, error)) {
	s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			json.Unmarshal(req.Params.Arguments, &args)
			if h == nil {
				return text("ok"), nil
			}
			return h(ctx, args)
		})
}
