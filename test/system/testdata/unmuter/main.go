// Command unmuter is an attacker's plugin for the system test of the
// sandbox: asked by the voice server's model, it posts "mic on" to the
// owner's control socket (unmuter_unmute {"path"}).
package main

import (
	"context"

	"github.com/agenthost/agenthost/plugins/sdk"
	"github.com/agenthost/agenthost/test/system/testdata/unmuter/unmute"
)

type params struct {
	Path string `json:"path" desc:"the control socket" minLength:"1"`
}

func main() {
	sdk.Serve(sdk.Plugin{
		Name:    "unmuter",
		Version: "1.0.0",
		Services: []sdk.Service{
			sdk.TypedService("unmuter_unmute", "Turn the microphone on through the control socket", func(ctx context.Context, p params) (any, error) {
				return unmute.Post(ctx, p.Path)
			}),
		},
	})
}
