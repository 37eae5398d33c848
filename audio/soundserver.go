package audio

import (
	"fmt"
	"os/user"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/internal/procs"
)

// SoundServer is a sound server that runs on this machine: PipeWire or
// PulseAudio, in some user's session. One owns the sound card, so a process
// of another user (a system service in the audio group, say) gets no sound.
type SoundServer struct {
	Name string // "pipewire" or "pulseaudio"
	PID  int
	UID  int
	User string
}

// SoundServers lists the sound servers running now (from /proc), sorted by
// PID.
func SoundServers() []SoundServer {
	var out []SoundServer
	for _, p := range procs.All() {
		if p.Comm != "pipewire" && p.Comm != "pulseaudio" {
			continue
		}
		s := SoundServer{Name: p.Comm, PID: p.PID, UID: p.UID, User: strconv.Itoa(p.UID)}
		if u, err := user.LookupId(s.User); err == nil {
			s.User = u.Username
		}
		out = append(out, s)
	}
	return out
}

// SoundReport says which sound server the process with uid would talk to,
// and warns when one owned by another user holds the card. warn is "" when
// all is well.
func SoundReport(uid int, servers []SoundServer) (report, warn string) {
	if len(servers) == 0 {
		return "no sound server (PipeWire, PulseAudio) runs: agenthost uses ALSA directly", ""
	}
	var own, others []string
	for _, s := range servers {
		desc := fmt.Sprintf("%s (pid %d, user %s)", s.Name, s.PID, s.User)
		if s.UID == uid {
			own = append(own, desc)
		} else {
			others = append(others, desc)
		}
	}
	if len(own) > 0 {
		return "sound server in this user's session: " + strings.Join(own, ", "), ""
	}
	return "sound servers of other users: " + strings.Join(others, ", "),
		"a sound server of another user owns the sound card, so this user (a system service, say) may get no sound: " +
			"run agenthost as that user (the user unit: sudo scripts/install.sh --user, or systemctl --user enable --now agenthost), " +
			"or stop the sound server"
}
