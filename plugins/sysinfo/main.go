package main

import "github.com/agenthost/agenthost/plugins/sdk"

func main() {
	sdk.Serve(newSysinfo().plugin())
}
