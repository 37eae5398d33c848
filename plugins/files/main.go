package main

import "github.com/agenthost/agenthost/plugins/sdk"

func main() {
	f := &files{dataDir: sdk.DataDir()}
	sdk.Serve(f.plugin())
}
