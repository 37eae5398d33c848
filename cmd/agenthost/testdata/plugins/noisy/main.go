// Command noisy is a test plugin that breaks the go-plugin handshake by
// printing to stdout before it serves.
package main

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/plugins/sdk"
)

func main() {
	fmt.Println("hello from noisy before the handshake")
	sdk.Serve(sdk.Plugin{
		Name:    "noisy",
		Version: "1.0.0",
		Services: []sdk.Service{{Name: "noisy_hello", Description: "never registered", Handler: func(context.Context, sdk.Params) (any, error) {
			return "hello", nil
		}}},
	})
}
