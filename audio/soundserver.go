package audio

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
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
	ents, _ := os.ReadDir("/proc")
	var out []SoundServer
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		if name != "pipewire" && name != "pulseaudio" {
			continue
		}
		fi, err := os.Stat(filepath.Join("/proc", e.Name()))
		if err != nil {
			continue
		}
		s := SoundServer{Name: name, PID: pid, UID: -1}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			s.UID = int(st.Uid)
			s.User = strconv.Itoa(s.UID)
			if u, err := user.LookupId(s.User); err == nil {
				s.User = u.Username
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
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
