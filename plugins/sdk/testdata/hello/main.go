// Command hello is an agenthost plugin that greets people.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/agenthost/agenthost/plugins/sdk"
)

type greetParams struct {
	Name string `json:"name" desc:"Who to greet" minLength:"1"`
	Mood string `json:"mood,omitempty" desc:"How to sound" enum:"cheerful,calm"`
}

var greeting atomic.Value // string; Configure may run while calls are in flight

func main() {
	sdk.Serve(sdk.Plugin{
		Name:    "hello",
		Version: "1.0.0",
		Services: []sdk.Service{
			sdk.TypedService("say_hello", "Greet someone by name", func(ctx context.Context, p greetParams) (any, error) {
				slog.Info("greeting", "name", p.Name)
				if p.Mood == "cheerful" {
					return fmt.Sprintf("%s, %s! Great to hear from you!", greeting.Load(), p.Name), nil
				}
				return fmt.Sprintf("%s, %s.", greeting.Load(), p.Name), nil
			}),
		},
		Configure: func(raw json.RawMessage) error {
			cfg := struct {
				Greeting string `json:"greeting"`
			}{Greeting: "Hello"} // the default
			if err := sdk.DecodeConfig(raw, &cfg); err != nil {
				return err // e.g. `unknown option "greting"`
			}
			greeting.Store(cfg.Greeting)
			return nil
		},
	})
}
