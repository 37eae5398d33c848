package host

import (
	"fmt"
	"os"
	"runtime"

	"github.com/agenthost/agenthost/audio/mixer"

	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/host/household"
	"github.com/agenthost/agenthost/host/link"
	"github.com/agenthost/agenthost/host/mcpservers"
	"github.com/agenthost/agenthost/host/talk"
	hostwake "github.com/agenthost/agenthost/host/wakeword"
)

// Status is a summary for `agenthost status` and the control socket.
type Status struct {
	Connected bool                `json:"connected"`
	Conn      int                 `json:"connection"`
	Link      link.State          `json:"link"`
	Registers int                 `json:"registers_sent"`
	Services  []string            `json:"services"`
	Conflicts []string            `json:"conflicts,omitempty"`
	LeftOut   []string            `json:"left_out,omitempty"` // services over services.max_register
	InFlight  int                 `json:"calls_in_flight"`
	MCP       []mcpservers.Status `json:"mcp_servers,omitempty"`
	// WakeWord says whether the wake word is on, and why not.
	WakeWord hostwake.Status `json:"wake_word"`
	// Household is the speakers this one answers with (absent: none).
	Household *household.Status `json:"household,omitempty"`
	Process   Process           `json:"process"`

	// Device is the speaker's own state (host/device).
	Device *device.Status `json:"device,omitempty"`
	// Output is what the speaker plays (the output mixer's streams).
	Output *Output `json:"output,omitempty"`
}

// Output is the speaker's mixer: what plays, and whether media is ducked
// for the assistant.
type Output struct {
	Active  bool                 `json:"assistant_active"`
	Streams []mixer.StreamStatus `json:"streams"`
	Ducks   int64                `json:"ducks"`
	// Played is how long each class of sound has played since the start,
	// in seconds.
	Played map[string]float64 `json:"played_s"`
	// Format is what the mixer mixes at and the speaker takes
	// (audio.output_rate, audio.output_channels); DeviceFormat what the
	// device was opened at, when it was (a sound card that does not take
	// Format is opened at one it does, the mix converted).
	Format       string `json:"format"`
	DeviceFormat string `json:"device_format,omitempty"`
}

// Process is what the daemon's own process holds, for watching it over time.
type Process struct {
	PID        int   `json:"pid"`
	Goroutines int   `json:"goroutines"`
	RSSBytes   int64 `json:"rss_bytes"`
	OpenFDs    int   `json:"open_fds"`
}

func processNow() Process {
	p := Process{PID: os.Getpid(), Goroutines: runtime.NumGoroutine()}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		var size, rss int64
		if _, err := fmt.Sscan(string(b), &size, &rss); err == nil {
			p.RSSBytes = rss * int64(os.Getpagesize())
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		p.OpenFDs = len(fds) - 1 // the one reading the folder
	}
	return p
}

// Status reports the host's state.
func (h *Host) Status() Status {
	up, conn := h.link.Up()
	reg := h.calls.Registry()
	s := Status{Connected: up, Conn: conn, Registers: h.calls.Registers(), InFlight: h.calls.Dispatcher().InFlight(), Conflicts: reg.Conflicts(), LeftOut: reg.LeftOut(), Process: processNow()}
	s.Link = h.link.State()
	for _, e := range reg.Entries() {
		s.Services = append(s.Services, e.Name)
	}
	s.MCP = h.mcp.Status()
	s.WakeWord = talk.WakeStatus(h.talk, h.Config())
	s.Household = talk.HouseholdStatus(h.talk)
	ds := h.speaker.Device().Status()
	s.Device = &ds
	if m := h.speaker.Output(); m != nil {
		st := m.Stats()
		s.Output = &Output{Active: st.Active, Streams: m.Status(), Ducks: st.Ducks, Played: map[string]float64{}, Format: m.Format().String()}
		if f := h.speaker.DeviceFormat(); f.Rate > 0 {
			s.Output.DeviceFormat = f.String()
		}
		for c, d := range st.Played {
			s.Output.Played[c] = d.Seconds()
		}
	}
	return s
}
