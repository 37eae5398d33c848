// Command versioned is a test plugin for the host's hot-reload tests. Its
// version is set at build time (-ldflags "-X main.version=2") and appears in
// its service's description, so each version changes the register.
package main

import (
	"context"
	"os"

	"github.com/agenthost/agenthost/plugins/sdk"
)

var version = "1"

func main() {
	sdk.Serve(sdk.Plugin{
		Name:    "versioned",
		Version: version,
		Services: []sdk.Service{{
			Name:        "versioned_info",
			Description: "Say which build of the versioned test plugin runs: v" + version,
			Handler: func(context.Context, sdk.Params) (any, error) {
				return map[string]any{"version": version, "pid": os.Getpid()}, nil
			},
		}},
	})
}
