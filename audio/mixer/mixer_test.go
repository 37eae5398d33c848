package mixer_test

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/audio/mixer"
)

// TestMissingCardOrControlIsClear: a mixer that is not there is an error
// that names it and says how to find the right one.
func TestMissingCardOrControlIsClear(t *testing.T) {
	for spec, want := range map[string]string{
		"hw:97/Speaker": "opening card hw:97",
		"":              "write NAME or CARD/NAME",
		"hw:0/":         "write NAME or CARD/NAME",
	} {
		_, err := mixer.Open(spec, 50)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", spec, err, want)
		}
	}
}
