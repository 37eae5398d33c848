package device

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/device/timers"
	"github.com/agenthost/agenthost/host/services"
)

// Names of the device's services. Servers and scripts rely on them: they
// are reserved (see Reserved).
const (
	GetDeviceStatus  = "get_device_status"
	SetVolume        = "set_volume"
	MuteSpeaker      = "mute_speaker"
	UnmuteSpeaker    = "unmute_speaker"
	MuteMicrophone   = "mute_microphone"
	UnmuteMicrophone = "unmute_microphone"
	SetTimer         = "set_timer"
	SetAlarm         = "set_alarm"
	ListTimers       = "list_timers"
	CancelTimer      = "cancel_timer"
	StopRinging      = "stop_ringing"
)

const noParams = `{"type":"object","properties":{}}`

// Descriptions and parameters of the services, as the register carries them.
var serviceList = []services.Service{
	{Name: GetDeviceStatus, Parameters: json.RawMessage(noParams),
		Description: "Get the speaker's status: volume (0-100), whether the speaker and the microphone are muted, the link to the server, the wake word, the audio devices, uptime, the board's temperature where it reports one, and its timers."},
	{Name: SetVolume, Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"volume":{"type":"integer","minimum":0,"maximum":100,"description":"the new volume, 0 (silent) to 100 (loudest)"},` +
		`"step":{"type":"integer","minimum":-100,"maximum":100,"description":"change the volume by this much instead, e.g. 10 (louder) or -10 (quieter)"}}}`),
		Description: "Set the speaker's volume: give volume (0-100) or step (+/-). It also unmutes the speaker. Returns the new volume."},
	{Name: MuteSpeaker, Parameters: json.RawMessage(noParams),
		Description: "Mute the speaker (replies and sounds are silent; timers and alarms still ring)."},
	{Name: UnmuteSpeaker, Parameters: json.RawMessage(noParams),
		Description: "Unmute the speaker, at the volume it had."},
	{Name: MuteMicrophone, Parameters: json.RawMessage(noParams),
		Description: "Turn the microphone off for privacy: the speaker sends no audio until its owner turns it back on. You will not be able to turn it back on yourself."},
	{Name: UnmuteMicrophone, Parameters: json.RawMessage(noParams),
		Description: "Turn the microphone back on. Only the speaker's owner may do this (the speaker's button, or `agenthost mic on`): when it is off and you call it, it fails, so tell the user to turn it on themselves."},
	{Name: SetTimer, Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"seconds":{"type":"integer","minimum":1,"maximum":604800,"description":"the timer's length in seconds"},` +
		`"duration":{"type":"string","maxLength":40,"description":"or the length as text, like 5m, 1h30m, 90s or \"10 minutes\""},` +
		`"label":{"type":"string","maxLength":64,"description":"what it is for, e.g. tea"}}}`),
		Description: "Set a countdown timer (at most 7 days); it rings on the speaker when it ends, even without a connection. Give seconds or duration."},
	{Name: SetAlarm, Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"time":{"type":"string","maxLength":5,"description":"the time of day, HH:MM on the 24-hour clock, in the speaker's time zone"},` +
		`"days":{"type":"array","maxItems":7,"items":{"type":"string","enum":["mon","tue","wed","thu","fri","sat","sun"]},"description":"repeat every week on these days; none: ring once"},` +
		`"date":{"type":"string","maxLength":10,"description":"ring once on this date, YYYY-MM-DD (default: the next time it is HH:MM)"},` +
		`"label":{"type":"string","maxLength":64,"description":"what it is for, e.g. wake up"}},"required":["time"]}`),
		Description: "Set an alarm at a time of day (local time, following daylight saving), once or repeating on days of the week; it rings on the speaker even without a connection."},
	{Name: ListTimers, Parameters: json.RawMessage(noParams),
		Description: "List the speaker's timers and alarms: id, label, when each rings and how long until then; and what rings now."},
	{Name: CancelTimer, Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"id":{"type":"string","maxLength":16,"description":"the id list_timers or set_timer gave"},` +
		`"label":{"type":"string","maxLength":64,"description":"or cancel those with this label"},` +
		`"all":{"type":"boolean","description":"or cancel every timer and alarm"}}}`),
		Description: "Cancel a timer or alarm by id or label (or all of them)."},
	{Name: StopRinging, Parameters: json.RawMessage(noParams),
		Description: "Stop what sounds, one thing a call: a timer or alarm that is ringing; when none rings, the announcement playing; when none plays, the music or radio."},
}

// ID returns "device".
func (d *Device) ID() string { return ID }

// Reserved reports true: the device's names are its own, and no plugin or
// MCP server may take one (services.ReservingProvider). They act on the
// speaker itself: a server told {"microphone_muted": true} by another
// provider's mute_microphone would believe a microphone muted that is on.
func (d *Device) Reserved() bool { return true }

// Services lists the device's services.
func (d *Device) Services() []services.Service {
	return append([]services.Service(nil), serviceList...)
}

// Call runs one of the device's services for the caller in ctx.
func (d *Device) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if d.o.Standalone {
		return nil, fmt.Errorf("%s: %w: only the daemon keeps the speaker's volume, mutes and timers; start it (e.g. systemctl start agenthost) and call again", method, ErrNoDaemon)
	}
	caller := services.CallerOf(ctx)
	var p struct {
		Volume   *int     `json:"volume"`
		Step     *int     `json:"step"`
		Seconds  *int64   `json:"seconds"`
		Duration string   `json:"duration"`
		Label    string   `json:"label"`
		Time     string   `json:"time"`
		Days     []string `json:"days"`
		Date     string   `json:"date"`
		ID       string   `json:"id"`
		All      bool     `json:"all"`
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
	}
	var out any
	var err error
	switch method {
	case GetDeviceStatus:
		out = d.Status()
	case SetVolume:
		out, err = d.callSetVolume(p.Volume, p.Step)
	case MuteSpeaker, UnmuteSpeaker:
		err = d.MuteSpeaker(method == MuteSpeaker)
		out = d.volumeResult()
	case MuteMicrophone, UnmuteMicrophone:
		if err = d.SetMicMuted(caller, method == MuteMicrophone); err == nil || errors.Is(err, ErrNotSaved) {
			out = map[string]any{"microphone_muted": d.MicMuted()}
		}
	case SetTimer:
		out, err = d.callSetTimer(p.Seconds, p.Duration, p.Label)
	case SetAlarm:
		var e timers.Entry
		e, err = d.sched.AddAlarm(p.Time, p.Days, p.Date, p.Label)
		if err == nil || asSave(err) {
			out = d.setResult(e, fmt.Sprintf("%s set for %s", capital(nameOf(e)), d.when(e)))
		}
	case ListTimers:
		out = d.TimersList()
	case CancelTimer:
		var gone []timers.Entry
		gone, err = d.sched.Cancel(p.ID, p.Label, p.All)
		if err == nil || asSave(err) {
			names := make([]string, len(gone))
			for i, e := range gone {
				names[i] = e.ID + " (" + nameOf(e) + ")"
			}
			msg := "nothing to cancel"
			if len(gone) > 0 {
				msg = "cancelled " + strings.Join(names, ", ")
			}
			out = map[string]any{"cancelled": len(gone), "message": msg}
		}
	case StopRinging:
		st := d.Stop(caller.String() + " (stop_ringing)")
		out = map[string]any{"stopped": len(st.Names), "what": st.What, "message": st.Message()}
	default:
		return nil, fmt.Errorf("device: unknown service %q", method)
	}
	if out == nil {
		return nil, err
	}
	if err != nil { // done, but not saved: say so beside the answer
		if m, ok := out.(map[string]any); ok {
			m["warning"] = err.Error()
		}
	}
	return json.Marshal(out)
}

func asSave(err error) bool {
	var se *timers.SaveError
	return errors.As(err, &se)
}

func (d *Device) callSetVolume(volume, step *int) (any, error) {
	var err error
	switch {
	case volume != nil && step != nil:
		return nil, errors.New("give volume or step, not both")
	case volume != nil:
		_, err = d.SetVolume(*volume, false)
	case step != nil:
		_, err = d.SetVolume(*step, true)
	default:
		return nil, errors.New("give volume (0-100) or step (e.g. 10 or -10)")
	}
	if err != nil && !errors.Is(err, ErrNotSaved) {
		return nil, err
	}
	return d.volumeResult(), err
}

func (d *Device) volumeResult() map[string]any {
	v, muted := d.Volume()
	return map[string]any{"volume": v, "speaker_muted": muted}
}

func (d *Device) callSetTimer(seconds *int64, duration, label string) (any, error) {
	var length time.Duration
	switch {
	case seconds != nil && duration != "":
		return nil, errors.New("give seconds or duration, not both")
	case seconds != nil:
		length = time.Duration(*seconds) * time.Second
	case duration != "":
		var err error
		if length, err = timers.ParseDuration(duration); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New(`give the timer's length: seconds (e.g. 300) or duration (e.g. "5m")`)
	}
	e, err := d.sched.AddTimer(length, label)
	if err != nil && !asSave(err) {
		return nil, err
	}
	return d.setResult(e, fmt.Sprintf("%s set; it rings %s", capital(nameOf(e)), d.when(e))), err
}

// setResult is the answer of set_timer and set_alarm.
func (d *Device) setResult(e timers.Entry, msg string) map[string]any {
	v := d.view(e)
	return map[string]any{"id": e.ID, "label": e.Label, "rings_at": v.RingsAt, "in": v.In, "message": msg}
}

// when says when e rings, for a person: "at 14:35 (in 5 minutes)", with
// the date when it is not today.
func (d *Device) when(e timers.Entry) string {
	now := d.o.Now().In(d.sched.Location())
	due := e.Due.In(d.sched.Location())
	at := "at " + due.Format("15:04")
	if due.Second() != 0 {
		at = "at " + due.Format("15:04:05")
	}
	if y, m, dd := due.Date(); y != now.Year() || m != now.Month() || dd != now.Day() {
		at = due.Format("Monday 2 January") + " " + at
	}
	return fmt.Sprintf("%s (in %s)", at, Human(due.Sub(now).Round(time.Second)))
}
