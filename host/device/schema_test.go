package device_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/host/services"
)

// TestServiceNames: the names the issue fixes, each with a schema.
func TestServiceNames(t *testing.T) {
	d := newDevice(t, device.Options{})
	var names []string
	for _, s := range d.Services() {
		names = append(names, s.Name)
		if len(s.Parameters) == 0 || s.Description == "" {
			t.Errorf("%s has no schema or description", s.Name)
		}
	}
	want := "get_device_status set_volume mute_speaker unmute_speaker mute_microphone unmute_microphone set_timer set_alarm list_timers cancel_timer stop_ringing"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("services %s\nwant %s", got, want)
	}
}

// TestBadParamsAreClearAndChangeNothing: every service refuses bad
// parameters (by its schema in the dispatcher, or by the device) with a
// clear error, and nothing is scheduled or changed.
func TestBadParamsAreClearAndChangeNothing(t *testing.T) {
	d := newDevice(t, device.Options{Volume: 60})
	disp := dispatcher(t, d)
	for _, c := range []struct{ method, params, want string }{
		{"set_volume", `{"volume":101}`, "invalid parameters for set_volume: volume: must be at most 100 (got 101)"},
		{"set_volume", `{"volume":-1}`, "volume: must be at least 0 (got -1)"},
		{"set_volume", `{"volume":"loud"}`, "volume: must be an integer (got string)"},
		{"set_volume", `{"step":-101}`, "step: must be at least -100 (got -101)"},
		{"set_volume", `{}`, "give volume (0-100) or step"},
		{"set_volume", `{"volume":10,"step":5}`, "give volume or step, not both"},
		{"set_timer", `{}`, "give the timer's length"},
		{"set_timer", `{"seconds":0}`, "seconds: must be at least 1 (got 0)"},
		{"set_timer", `{"seconds":604801}`, "seconds: must be at most 604800"},
		{"set_timer", `{"seconds":1.5}`, "seconds: must be an integer (got number)"},
		{"set_timer", `{"duration":"abc"}`, `duration "abc" is not a length like 5m`},
		{"set_timer", `{"duration":"0s"}`, "at least 1 second"},
		{"set_timer", `{"duration":"8 days"}`, "is not a length"},
		{"set_timer", `{"duration":"200h"}`, "at most 168h0m0s long"},
		{"set_timer", `{"seconds":60,"duration":"1m"}`, "not both"},
		{"set_timer", `{"seconds":60,"label":"` + strings.Repeat("x", 65) + `"}`, "label: must be at most 64 characters long (got 65)"},
		{"set_alarm", `{}`, `missing required parameter "time"`},
		{"set_alarm", `{"time":"25:00"}`, `time "25:00" is not a time of day like 07:30`},
		{"set_alarm", `{"time":"7pm"}`, "24-hour clock"},
		{"set_alarm", `{"time":"07:00","days":["funday"]}`, `days[0]: must be one of "mon", "tue"`},
		{"set_alarm", `{"time":"07:00","date":"yesterday"}`, "is not a date like 2025-03-30"},
		{"set_alarm", `{"time":"07:00","date":"2001-01-01"}`, "has already passed"},
		{"set_alarm", `{"time":"07:00","days":["mon"],"date":"2031-01-01"}`, "not both"},
		{"cancel_timer", `{}`, "say which: an id, a label, or all"},
		{"cancel_timer", `{"id":"12345678901234567"}`, "id: must be at most 16 characters long (got 17)"},
		{"cancel_timer", `{"id":"42"}`, `no timer or alarm has id "42"`},
		{"cancel_timer", `{"all":"yes"}`, "all: must be a boolean (got string)"},
		{"list_timers", `[]`, "params must be a JSON object"},
	} {
		out := call(disp, services.CallerVoiceServer, c.method, c.params)
		if out.Success || !strings.Contains(out.Error, c.want) {
			t.Errorf("%s %s: %+v\nwant an error containing %q", c.method, c.params, out, c.want)
		}
	}
	if v, _ := d.Volume(); v != 60 {
		t.Errorf("the volume changed to %d", v)
	}
	if n := len(d.TimersList().Timers); n != 0 {
		t.Errorf("%d timers set by bad parameters", n)
	}
}

// TestServicesDoWhatTheySay: a good call of each service, as a model makes it.
func TestServicesDoWhatTheySay(t *testing.T) {
	// At noon, so that a timer of 5 minutes rings the same day ("it rings
	// at"); run by the wall clock at 23:58 it rang "Saturday 28 November
	// at 00:03".
	noon := time.Date(2026, 11, 27, 12, 0, 0, 0, time.Local)
	d := newDevice(t, device.Options{Volume: 60, Now: func() time.Time { return noon }, Info: func() device.Info {
		return device.Info{Link: "up", WakeWord: "off", Backend: "file"}
	}})
	disp := dispatcher(t, d)
	ok := func(method, params string) map[string]any {
		t.Helper()
		out := call(disp, services.CallerVoiceServer, method, params)
		if !out.Success {
			t.Fatalf("%s %s: %s", method, params, out.Error)
		}
		return out.Data
	}
	if got := ok("set_volume", `{"step":-15}`); got["volume"] != 45.0 {
		t.Errorf("set_volume step: %v", got)
	}
	ok("mute_speaker", `{}`)
	st := ok("get_device_status", `{}`)
	if st["volume"] != 45.0 || st["speaker_muted"] != true || st["link"] != "up" || st["audio_backend"] != "file" || st["uptime"] == nil {
		t.Errorf("get_device_status: %v", st)
	}
	ok("unmute_speaker", `{}`)
	timer := ok("set_timer", `{"duration":"5 minutes","label":"tea"}`)
	if timer["id"] != "1" || !strings.Contains(timer["message"].(string), `The timer "tea" set; it rings at`) || timer["in"] != "5 minutes" {
		t.Errorf("set_timer: %v", timer)
	}
	alarm := ok("set_alarm", `{"time":"07:30","days":["mon","fri"],"label":"wake up"}`)
	if alarm["id"] != "2" || !strings.Contains(alarm["message"].(string), `The alarm "wake up" set for`) {
		t.Errorf("set_alarm: %v", alarm)
	}
	list := ok("list_timers", `{}`)
	if ts := list["timers"].([]any); len(ts) != 2 || ts[0].(map[string]any)["label"] != "tea" {
		t.Errorf("list_timers: %v", list)
	}
	if got := ok("cancel_timer", `{"label":"TEA"}`); got["cancelled"] != 1.0 {
		t.Errorf("cancel_timer: %v", got)
	}
	if got := ok("stop_ringing", `{}`); !strings.HasPrefix(fmt.Sprint(got["message"]), "nothing was ringing") {
		t.Errorf("stop_ringing: %v", got)
	}
}
