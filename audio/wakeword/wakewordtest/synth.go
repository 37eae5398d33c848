package wakewordtest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// synthesize writes c spoken to wav and says which sox effects finish it.
// A voice "engine/name" is flite's, festival's, MBROLA's, RHVoice's or
// SVOX Pico's (OtherVoices): their speed and pitch come from sox (tempo
// WPM/175, pitch (Pitch-50)·10 cents), the same for all, since festival's
// HTS voices ignore its duration stretch and Pico has neither; any other
// voice is espeak-ng's, which takes both itself.
func synthesize(c *Clip, wav string) ([]string, error) {
	engine, voice, ok := strings.Cut(c.Voice, "/")
	if !ok {
		if out, err := exec.Command("espeak-ng", "-v", c.VoiceName(), "-s", strconv.Itoa(c.WPM), "-p", strconv.Itoa(c.Pitch), "-w", wav, c.Text).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("espeak-ng %s: %w: %s", c.Name(), err, out)
		}
		return nil, nil
	}
	var cmd *exec.Cmd
	switch engine {
	case "flite":
		cmd = exec.Command("flite", "-voice", voice, "-t", c.Text, "-o", wav)
	case "festival":
		txt := wav + ".txt"
		if err := os.WriteFile(txt, []byte(c.Text+"\n"), 0o644); err != nil {
			return nil, err
		}
		defer os.Remove(txt)
		cmd = exec.Command("text2wave", "-eval", "(voice_"+voice+")", txt, "-o", wav)
	case "mbrola": // through espeak-ng at its default speed and pitch
		cmd = exec.Command("espeak-ng", "-v", "mb-"+voice, "-w", wav, c.Text)
	case "rhvoice":
		cmd = exec.Command("RHVoice-test", "-p", voice, "-o", wav)
		cmd.Stdin = strings.NewReader(c.Text)
	case "pico":
		cmd = exec.Command("pico2wave", "-l", voice, "-w", wav, c.Text)
	default:
		return nil, fmt.Errorf("wake set: %s: no synthesizer %q", c.Name(), engine)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", engine, c.Name(), err, out)
	}
	return []string{"tempo", "-s", fmt.Sprintf("%.3f", float64(c.WPM)/175), "pitch", strconv.Itoa((c.Pitch - 50) * 10)}, nil
}
