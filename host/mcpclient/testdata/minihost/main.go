// Command minihost starts one MCP stdio server session the way the host
// does and waits to be killed: the test of Pdeathsig kills it with SIGKILL
// and checks that the server died with it.
//
//	minihost COMMAND [ARGS...]
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agenthost/agenthost/host/mcpclient"
)

func main() {
	starter, err := mcpclient.NewStarter(mcpclient.Options{Name: "toy", Server: mcpclient.ServerConfig{Command: os.Args[1], Args: os.Args[2:]}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	child, err := starter(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(child.Info().PID) // the test waits for this line
	select {}
}
