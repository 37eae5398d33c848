package hwvolume_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audio/hwvolume"
)

// card is a software ALSA card (testdata/ctl_agtest.c, an external control
// plugin built here with the system's libasound) whose control values land
// in a file; empty when it could not be built.
var card, cardState string

func TestMain(m *testing.M) {
	dir, _ := os.MkdirTemp("", "hwvolume-test-")
	lib := filepath.Join(dir, "libasound_module_ctl_agtest.so")
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", "alsa").Output()
	if err == nil {
		args := append([]string{"-shared", "-fPIC", "-DPIC", "-o", lib, "testdata/ctl_agtest.c"}, strings.Fields(string(flags))...)
		if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building the test card: %v\n%s", err, out)
		} else {
			cardState = filepath.Join(dir, "state")
			conf := filepath.Join(dir, "asound.conf")
			os.WriteFile(conf, []byte(fmt.Sprintf("ctl_type.agtest { lib %q }\nctl.agtest { type agtest\nfile %q }\n", lib, cardState)), 0o644)
			os.Setenv("ALSA_CONFIG_PATH", conf) // before libasound reads its configuration
			card = "agtest"
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestMissingCardOrControlIsClear: a mixer that is not there is an error
// that names it and says how to find the right one.
func TestMissingCardOrControlIsClear(t *testing.T) {
	cases := map[string]string{
		"hw:97/Speaker": "opening card hw:97",
		"":              "write NAME or CARD/NAME",
		"hw:0/":         "write NAME or CARD/NAME",
	}
	if card != "" {
		cases[card+"/Speaker"] = `card agtest has no playback volume control "Speaker"; it has: Master`
	}
	for spec, want := range cases {
		_, err := hwvolume.Open(spec, 50)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", spec, err, want)
		}
	}
}

// TestSetsTheCardsControl: the volume lands on a real ALSA control in
// decibels on the curve (100 is the top, 50 is 25 dB down, 1 is 50 dB
// down), and 0 turns its switch off.
func TestSetsTheCardsControl(t *testing.T) {
	if card == "" {
		t.Skip("the test card could not be built (no cc or no libasound headers)")
	}
	c, err := hwvolume.Open(card+"/Master", 50)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.String() != "agtest/Master" {
		t.Errorf("String() = %q", c.String())
	}
	for _, tc := range []struct {
		level int
		want  string // raw volume (0.5 dB steps from -50 dB) and switch
	}{
		{100, "100 1"}, {50, "50 1"}, {1, "0 1"}, {0, "0 0"}, {80, "80 1"},
	} {
		if err := c.SetVolume(tc.level); err != nil {
			t.Fatalf("SetVolume(%d): %v", tc.level, err)
		}
		b, _ := os.ReadFile(cardState)
		if got := strings.TrimSpace(string(b)); got != tc.want {
			t.Errorf("volume %d: the card holds %q, want %q", tc.level, got, tc.want)
		}
	}
}
