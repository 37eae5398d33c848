// Command orphaner is a test plugin that leaves a process behind as a
// daemon does: orphaner_spawn starts a copy of the plugin that starts
// another in a new session (setsid) and exits at once, so the grandchild is
// an orphan outside the plugin's process group and session. It sleeps for
// ever with "-linger TAG" on its command line.
package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/plugins/sdk"
)

func main() {
	if len(os.Args) == 3 {
		switch os.Args[1] {
		case "-linger":
			for {
				time.Sleep(time.Hour)
			}
		case "-intermediate":
			cmd := exec.Command(os.Args[0], "-linger", os.Args[2])
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if cmd.Start() != nil {
				os.Exit(1)
			}
			os.Exit(0) // not waiting: the grandchild is an orphan now
		}
	}
	sdk.Serve(sdk.Plugin{
		Name:    "orphaner",
		Version: "1.0.0",
		Services: []sdk.Service{
			{Name: "orphaner_spawn", Description: "Leave a grandchild in a new session, marked with tag",
				Schema: `{"type":"object","properties":{"tag":{"type":"string","minLength":1}},"required":["tag"]}`,
				Handler: func(_ context.Context, p sdk.Params) (any, error) {
					exe, err := os.Executable()
					if err != nil {
						return nil, err
					}
					if err := exec.Command(exe, "-intermediate", p.String("tag")).Run(); err != nil {
						return nil, errors.New("the intermediate failed: " + err.Error())
					}
					return map[string]any{"ok": true}, nil
				}},
		},
	})
}
