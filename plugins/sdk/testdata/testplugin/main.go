// Command testplugin is a plugin for the SDK's end-to-end tests. Its first
// argument picks a misbehaviour: "badschema" (an invalid schema),
// "print-before" (prints to stdout before the handshake).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/agenthost/agenthost/plugins/sdk"
)

type greetArgs struct {
	Name  string `json:"name" desc:"who to greet" minLength:"1"`
	Times int    `json:"times,omitempty" desc:"how often" min:"1" max:"3"`
}

type fetchArgs struct {
	URL string `json:"url"`
}

func main() {
	var greeting atomic.Value
	greeting.Store("Hello")
	p := sdk.Plugin{
		Name:    "testplugin",
		Version: "0.0.1",
		Services: []sdk.Service{
			{Name: "echo", Description: "Return the params", Handler: func(_ context.Context, p sdk.Params) (any, error) {
				return p.Raw(), nil
			}},
			{Name: "fail", Description: "Always says no", Handler: func(context.Context, sdk.Params) (any, error) {
				return nil, errors.New("the answer is no")
			}},
			{Name: "panic", Description: "Panics", Handler: func(context.Context, sdk.Params) (any, error) {
				var m map[string]int
				m["boom"] = 1 // nil map write
				return nil, nil
			}},
			{Name: "sleep", Description: "Waits for the deadline", Handler: func(ctx context.Context, _ sdk.Params) (any, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}},
			{Name: "pid", Description: "Returns the process ID", Handler: func(context.Context, sdk.Params) (any, error) {
				return os.Getpid(), nil
			}},
			{Name: "log", Description: "Logs in every way", Handler: func(context.Context, sdk.Params) (any, error) {
				slog.Debug("slog debug line", "n", 1)
				slog.Info("slog info line", "n", 2)
				slog.Warn("slog warn line", "n", 3)
				slog.Error("slog error line", "n", 4)
				log.Printf("log package line")
				fmt.Println("stdout line after the handshake")
				fmt.Fprintln(os.Stderr, "raw stderr line")
				return "ok", nil
			}},
			sdk.TypedService("fetch", "Fetch a URL with the SDK's client", func(ctx context.Context, in fetchArgs) (any, error) {
				resp, err := sdk.HTTPClient(ctx).Get(in.URL)
				if errors.Is(err, sdk.ErrAddressNotAllowed) {
					return nil, fmt.Errorf("%s may not reach it", sdk.CallerOf(ctx))
				}
				if err != nil {
					return nil, err
				}
				resp.Body.Close()
				return fmt.Sprintf("%s got %d", sdk.CallerOf(ctx), resp.StatusCode), nil
			}),
			sdk.TypedService("greet", "Greet someone", func(_ context.Context, in greetArgs) (any, error) {
				if in.Times == 0 {
					in.Times = 1
				}
				out := ""
				for range in.Times {
					out += fmt.Sprintf("%s, %s! ", greeting.Load(), in.Name)
				}
				return out[:len(out)-1], nil
			}),
		},
		Configure: func(raw json.RawMessage) error {
			var cfg struct {
				Greeting string `json:"greeting"`
			}
			if err := sdk.DecodeConfig(raw, &cfg); err != nil {
				return err
			}
			if cfg.Greeting != "" {
				greeting.Store(cfg.Greeting)
			}
			return nil
		},
	}
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "badschema":
			p.Services = append(p.Services, sdk.Service{
				Name: "broken", Description: "Has a broken schema",
				Schema:  `{"type":"object","properties":{"n":{"type":"strin"}}}`,
				Handler: func(context.Context, sdk.Params) (any, error) { return nil, nil },
			})
		case "print-before":
			fmt.Println("hello from main")
		}
	}
	sdk.Serve(p)
}
