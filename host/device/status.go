package device

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/device/timers"
)

// Status is the device's state: get_device_status, `agenthost status`,
// the metrics.
type Status struct {
	Volume          int    `json:"volume"`
	SpeakerMuted    bool   `json:"speaker_muted"`
	MicrophoneMuted bool   `json:"microphone_muted"`
	Mixer           string `json:"mixer,omitempty"`
	Info
	Uptime        string      `json:"uptime"`
	UptimeSeconds int64       `json:"uptime_seconds"`
	TemperatureC  *float64    `json:"temperature_c,omitempty"`
	Timers        int         `json:"timers"`
	Next          *TimerView  `json:"next,omitempty"`
	Ringing       []TimerView `json:"ringing,omitempty"`
	Recent        []Event     `json:"recent,omitempty"`
	// MicFramesWithheld counts microphone frames not sent while muted.
	MicFramesWithheld int64    `json:"microphone_frames_withheld"`
	Warnings          []string `json:"warnings,omitempty"`
}

// TimerView is a timer or alarm as the services and the CLI show it.
type TimerView struct {
	ID          string   `json:"id"`
	Kind        string   `json:"kind"`
	Label       string   `json:"label,omitempty"`
	RingsAt     string   `json:"rings_at"`
	In          string   `json:"in"`
	SecondsLeft int64    `json:"seconds_left"`
	Length      string   `json:"length,omitempty"`
	At          string   `json:"at,omitempty"`
	Days        []string `json:"days,omitempty"`
	Date        string   `json:"date,omitempty"`
}

// TimerList is the answer of list_timers.
type TimerList struct {
	TimeZone string      `json:"time_zone"`
	Now      string      `json:"now"`
	Timers   []TimerView `json:"timers"`
	Ringing  []TimerView `json:"ringing,omitempty"`
	Recent   []Event     `json:"recent,omitempty"`
}

func (d *Device) view(e timers.Entry) TimerView {
	loc := d.sched.Location()
	left := max(e.Due.Sub(d.o.Now().Round(0)).Round(time.Second), 0)
	v := TimerView{ID: e.ID, Kind: string(e.Kind), Label: e.Label, RingsAt: e.Due.In(loc).Format("2006-01-02 15:04:05"),
		In: Human(left), SecondsLeft: int64(left / time.Second), At: e.At, Days: e.Days, Date: e.Date}
	if e.Kind == timers.Timer {
		v.Length = Human(time.Duration(e.Seconds) * time.Second)
	}
	return v
}

// TimersList lists the timers and alarms, soonest first.
func (d *Device) TimersList() TimerList {
	loc := d.sched.Location()
	out := TimerList{TimeZone: loc.String(), Now: d.o.Now().In(loc).Format("2006-01-02 15:04:05 MST"), Timers: []TimerView{}}
	for _, e := range d.sched.List() {
		out.Timers = append(out.Timers, d.view(e))
	}
	d.mu.Lock()
	ringing := append([]timers.Entry(nil), d.ringing...)
	out.Recent = append([]Event(nil), d.recent...)
	d.mu.Unlock()
	for _, e := range ringing {
		out.Ringing = append(out.Ringing, d.view(e))
	}
	return out
}

// Status reports the device's state.
func (d *Device) Status() Status {
	d.mu.Lock()
	s := Status{Volume: d.st.Volume, SpeakerMuted: d.st.SpeakerMuted, MicrophoneMuted: d.st.MicMuted,
		Recent: append([]Event(nil), d.recent...), Warnings: append([]string(nil), d.warnings...)}
	ringing := append([]timers.Entry(nil), d.ringing...)
	d.mu.Unlock()
	if d.o.Mixer != nil {
		s.Mixer = d.o.Mixer.String()
	}
	if d.o.Info != nil {
		s.Info = d.o.Info()
	}
	up := d.o.Now().Sub(d.start).Round(time.Second)
	s.Uptime, s.UptimeSeconds = Human(up), int64(up/time.Second)
	temp := d.o.Temperature
	if temp == nil {
		temp = BoardTemperature
	}
	if c, ok := temp(); ok {
		s.TemperatureC = &c
	}
	list := d.sched.List()
	s.Timers = len(list)
	if len(list) > 0 {
		v := d.view(list[0])
		s.Next = &v
	}
	for _, e := range ringing {
		s.Ringing = append(s.Ringing, d.view(e))
	}
	s.MicFramesWithheld = d.withheld.Load()
	return s
}

// Stats are the device's figures for metrics.
type Stats struct {
	Volume          int
	SpeakerMuted    bool
	MicrophoneMuted bool
	Pending         int
	Ringing         int
	Fired           int64
	Withheld        int64
}

// Stats reports the figures.
func (d *Device) Stats() Stats {
	ts := d.sched.Stats()
	d.mu.Lock()
	defer d.mu.Unlock()
	return Stats{Volume: d.st.Volume, SpeakerMuted: d.st.SpeakerMuted, MicrophoneMuted: d.st.MicMuted,
		Pending: ts.Pending, Ringing: len(d.ringing), Fired: ts.Fired, Withheld: d.withheld.Load()}
}

// thermalZones is where Linux reports temperatures (a variable for tests).
var thermalZones = "/sys/class/thermal"

// BoardTemperature reads the first thermal zone (the SoC on a Raspberry
// Pi), in °C.
func BoardTemperature() (float64, bool) {
	zones, _ := filepath.Glob(filepath.Join(thermalZones, "thermal_zone*", "temp"))
	for _, z := range zones {
		b, err := os.ReadFile(z)
		if err != nil {
			continue
		}
		milli, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		return float64(milli) / 1000, true
	}
	return 0, false
}
