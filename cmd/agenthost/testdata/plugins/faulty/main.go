// Command faulty is a test plugin that misbehaves on demand: faulty_crash
// exits the process in the middle of a call, faulty_hang never answers (its
// deadline is 300 ms), faulty_ok answers "ok" with its process ID.
package main

import (
	"context"
	"os"
	"time"

	"github.com/agenthost/agenthost/plugins/sdk"
)

func main() {
	sdk.Serve(sdk.Plugin{
		Name:    "faulty",
		Version: "1.0.0",
		Services: []sdk.Service{
			{Name: "faulty_ok", Description: "Answer ok with the process ID", Handler: func(context.Context, sdk.Params) (any, error) {
				return map[string]any{"ok": true, "pid": os.Getpid()}, nil
			}},
			{Name: "faulty_crash", Description: "Exit the plugin process in the middle of the call", Handler: func(context.Context, sdk.Params) (any, error) {
				os.Exit(3)
				return nil, nil
			}},
			{Name: "faulty_hang", Description: "Never answer, ignoring the deadline", Timeout: 300 * time.Millisecond,
				Handler: func(context.Context, sdk.Params) (any, error) {
					select {}
				}},
		},
	})
}
