// Command player is a test plugin that plays through the host with
// sdk.Play: a known ramp of samples, or an endless one, and can crash.
package main

import (
	"context"
	"encoding/binary"
	"io"
	"os"
	"sync"

	"github.com/agenthost/agenthost/plugins/sdk"
)

// ramp gives frames samples of 8 kHz mono, sample i being i%1000.
type ramp struct{ i, frames int }

func (r *ramp) Read(p []byte) (int, error) {
	n := 0
	for ; n+2 <= len(p) && (r.frames < 0 || r.i < r.frames); n += 2 {
		binary.LittleEndian.PutUint16(p[n:], uint16(r.i%1000))
		r.i++
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

var (
	mu      sync.Mutex
	endless []*sdk.Playback
	heard   []string // what OnHeld was given, in order
)

func main() {
	type playParams struct {
		Frames int    `json:"frames"`
		Class  string `json:"class"`
	}
	type endlessParams struct {
		Class string `json:"class,omitempty"` // media when empty
		Name  string `json:"name,omitempty"`  // endless when empty
	}
	sdk.Serve(sdk.Plugin{
		Name: "player", Version: "1.0.0",
		Services: []sdk.Service{
			sdk.TypedService("play", "Play a ramp of frames samples and wait until it played out",
				func(ctx context.Context, p playParams) (any, error) {
					pb, err := sdk.Play(ctx, &ramp{frames: p.Frames}, sdk.Audio{Name: "ramp", Class: p.Class, Rate: 8000, Channels: 1})
					if err != nil {
						return nil, err
					}
					return "played", pb.Wait()
				}),
			sdk.TypedService("play_endless", "Start an endless ramp and return",
				func(_ context.Context, p endlessParams) (any, error) {
					if p.Name == "" {
						p.Name = "endless"
					}
					pb, err := sdk.Play(context.Background(), &ramp{frames: -1}, sdk.Audio{Name: p.Name, Class: p.Class, Rate: 8000, Channels: 1,
						OnHeld: func(state string) { mu.Lock(); heard = append(heard, state); mu.Unlock() }})
					if err != nil {
						return nil, err
					}
					mu.Lock()
					endless = append(endless, pb)
					mu.Unlock()
					return "playing", nil
				}),
			{Name: "stop_all", Description: "Stop the endless ramps", Handler: func(context.Context, sdk.Params) (any, error) {
				mu.Lock()
				all := endless
				endless = nil
				mu.Unlock()
				for _, pb := range all {
					pb.Stop()
					<-pb.Done()
				}
				return len(all), nil
			}},
			{Name: "held", Description: "How the host holds each endless ramp, and what OnHeld heard", Handler: func(context.Context, sdk.Params) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				var states []string
				for _, pb := range endless {
					states = append(states, pb.Held())
				}
				return map[string]any{"held": states, "heard": heard}, nil
			}},
			{Name: "crash", Description: "Exit at once", Handler: func(context.Context, sdk.Params) (any, error) {
				os.Exit(3)
				return nil, nil
			}},
		},
	})
}
