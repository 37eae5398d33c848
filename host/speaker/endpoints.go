package speaker

import (
	"context"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/host/control"
	"github.com/agenthost/agenthost/host/device"
	"github.com/agenthost/agenthost/host/services"
)

// VolumeRequest is the body of POST /v1/device/volume: Volume (0–100),
// or Step, or Mute (true/false).
type VolumeRequest struct {
	Volume *int  `json:"volume,omitempty"`
	Step   *int  `json:"step,omitempty"`
	Mute   *bool `json:"mute,omitempty"`
}

// MicRequest is the body of POST /v1/device/mic.
type MicRequest struct {
	On bool `json:"on"`
}

// TalkRequest is the body of POST /v1/talk: action "start" or "stop".
type TalkRequest struct {
	Action string `json:"action"`
}

// Endpoints adds the owner's endpoints for the device (the CLI's volume,
// mic, timers, stop) and POST /v1/talk. They call the device directly, as
// the owner, so that services.deny never locks the owner out.
func (sp *Speaker) Endpoints(s *control.Server) {
	d := sp.dev
	control.HandleJSON(s, "GET /v1/device", func(context.Context, struct{}) (any, error) { return d.Status(), nil })
	control.HandleJSON(s, "POST /v1/device/volume", func(_ context.Context, in VolumeRequest) (any, error) {
		var err error
		switch {
		case in.Volume != nil && (*in.Volume < 0 || *in.Volume > 100):
			return nil, fmt.Errorf("volume %d is outside 0–100", *in.Volume)
		case in.Volume != nil:
			_, err = d.SetVolume(*in.Volume, false)
		case in.Step != nil:
			_, err = d.SetVolume(*in.Step, true)
		case in.Mute != nil:
			err = d.MuteSpeaker(*in.Mute)
		}
		if err != nil && !errors.Is(err, device.ErrNotSaved) {
			return nil, err
		}
		return d.Status(), nil
	})
	control.HandleJSON(s, "POST /v1/device/mic", func(_ context.Context, in MicRequest) (any, error) {
		if err := d.SetMicMuted(services.CallerOwner, !in.On); err != nil && !errors.Is(err, device.ErrNotSaved) {
			return nil, err
		}
		return d.Status(), nil
	})
	control.HandleJSON(s, "GET /v1/device/timers", func(context.Context, struct{}) (any, error) { return d.TimersList(), nil })
	control.HandleJSON(s, "POST /v1/device/stop", func(context.Context, struct{}) (any, error) {
		st := sp.Stop("the owner (agenthost stop)")
		return map[string]any{"stopped": len(st.Names), "what": st.What, "names": st.Names, "message": st.Message()}, nil
	})
	control.HandleJSON(s, "POST /v1/talk", func(_ context.Context, in TalkRequest) (any, error) {
		out, err := sp.talk(in.Action)
		if out == nil {
			return nil, err
		}
		return out, err
	})
}
