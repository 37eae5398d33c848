package audiotest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ALSADevice describes one PCM of a headless ALSA configuration built on the
// `file` plugin with a `null` slave. Data read by a capture stream comes
// from Capture (raw bytes, no WAV header); data written by a playback stream
// goes to Playback (raw). ALSA does not pace such a device: it runs as fast
// as the CPU allows, and at the end of Capture it repeats the last chunk it
// read, so pad capture files with silence.
type ALSADevice struct {
	// Name of the PCM ("default" makes it the default device).
	Name string
	// Capture is the file capture streams read; "" reads /dev/zero.
	Capture string
	// Playback is the file playback streams write; "" writes /dev/null.
	Playback string
	// Rate, Channels: when Rate is set the device is wrapped in a `plug`
	// so applications can open any rate, format and channel count while
	// the files hold S16_LE at Rate and Channels (default 1). When Rate is
	// 0 the files hold whatever format the application opened.
	Rate, Channels int
}

// WriteALSAConfig writes a standalone ALSA configuration (for
// ALSA_CONFIG_PATH; it replaces the system alsa.conf, so ALSA probes almost
// nothing) with the given devices into dir and returns its path. Without a
// device named "default" it adds a `null` default, because PortAudio cannot
// start without one.
func WriteALSAConfig(dir string, devices ...ALSADevice) (confPath string, err error) {
	var b strings.Builder
	hasDefault := false
	for _, d := range devices {
		hasDefault = hasDefault || d.Name == "default"
		if d.Name == "" {
			return "", fmt.Errorf("audiotest: ALSA device without a name")
		}
		raw := d.Name
		if d.Rate > 0 {
			raw = d.Name + "_raw"
		}
		play := d.Playback
		if play == "" {
			play = "/dev/null"
		}
		capt := d.Capture
		if capt == "" {
			capt = "/dev/zero"
		}
		fmt.Fprintf(&b, "pcm.%s {\n\ttype file\n\tslave.pcm { type null }\n\tfile %q\n\tinfile %q\n\tformat \"raw\"\n\tperm 0644\n}\n",
			pcmName(raw), play, capt)
		if d.Rate > 0 {
			ch := d.Channels
			if ch == 0 {
				ch = 1
			}
			fmt.Fprintf(&b, "pcm.%s {\n\ttype plug\n\tslave { pcm %q format S16_LE rate %d channels %d }\n}\n",
				pcmName(d.Name), raw, d.Rate, ch)
		}
	}
	if !hasDefault {
		// PortAudio 19.6 aborts in Pa_Initialize (BuildDeviceList
		// assertion) when ALSA has no "default" PCM.
		b.WriteString("pcm.!default {\n\ttype null\n}\n")
	}
	path := filepath.Join(dir, "asound.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

func pcmName(n string) string {
	if n == "default" {
		return "!default"
	}
	return n
}

// WriteHeadlessALSAConfig writes the standard headless configuration into dir
// and returns its path: a default device that captures from captureRawPath
// and plays into playbackRawPath, both S16_LE 16 kHz mono behind a `plug`,
// so applications may open the default device at any rate, format and
// channel count. The raw `file` PCMs underneath are named "default_raw".
func WriteHeadlessALSAConfig(dir, captureRawPath, playbackRawPath string) (confPath string, err error) {
	return WriteALSAConfig(dir, ALSADevice{
		Name: "default", Capture: captureRawPath, Playback: playbackRawPath, Rate: 16000, Channels: 1,
	})
}
