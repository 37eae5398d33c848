package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/proto/voice/voicetest"
)

// TestPlayWithoutAMediaPluginSaysSo: `agenthost play` and `announce` on a
// daemon without the media plugin say that it is missing.
func TestPlayWithoutAMediaPluginSaysSo(t *testing.T) {
	t.Parallel()
	sim := newSim(t, voicetest.Options{})
	d, _ := startPluginHost(t, sim, nil)
	pluginsReady(t, sim)
	for _, cmd := range []string{"play", "announce"} {
		out, err := d.cli(cmd, "http://127.0.0.1:1/x.mp3")
		if err == nil || !strings.Contains(out, "no media plugin is loaded") {
			t.Errorf("agenthost %s: %v\n%s", cmd, err, out)
		}
	}
}

// TestPlayReachesTheMediaPlugin: `agenthost play URL` and `announce URL`
// call the media plugin's play_media through the control socket, and its
// answer (here a 404 of the URL) comes back to the owner.
func TestPlayReachesTheMediaPlugin(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	sim := newSim(t, voicetest.Options{})
	d, _ := startPluginHost(t, sim, func(dir string) { copyExec(t, bundled(t, "media"), filepath.Join(dir, "media")) })
	pluginsReady(t, sim)
	for _, cmd := range []string{"play", "announce"} {
		out, err := d.cli(cmd, srv.URL+"/song.mp3")
		if err == nil || !strings.Contains(out, "answered 404 Not Found") {
			t.Errorf("agenthost %s: %v\n%s", cmd, err, out)
		}
	}
	d.logLine("call", "method=play_media")
}
