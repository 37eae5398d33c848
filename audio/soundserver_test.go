package audio

import (
	"strings"
	"testing"
)

func TestSoundReport(t *testing.T) {
	if r, w := SoundReport(0, nil); !strings.Contains(r, "ALSA directly") || w != "" {
		t.Errorf("none: %q %q", r, w)
	}
	pw := []SoundServer{{Name: "pipewire", PID: 42, UID: 1000, User: "pi"}}
	if r, w := SoundReport(1000, pw); !strings.Contains(r, "this user's session: pipewire (pid 42, user pi)") || w != "" {
		t.Errorf("own: %q %q", r, w)
	}
	if r, w := SoundReport(998, pw); !strings.Contains(r, "other users: pipewire (pid 42, user pi)") || !strings.Contains(w, "user unit") {
		t.Errorf("another user's: %q %q", r, w)
	}
}
