package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agenthost/agenthost/audio"
	"github.com/agenthost/agenthost/audio/wakeword"
	hostwake "github.com/agenthost/agenthost/host/wakeword"
)

func init() {
	commands["wakeword"] = command{"the wake word's owner's verifier: agenthost wakeword enroll", cmdWakeWord}
}

// Recording lengths at the microphone.
const (
	takeLength = 3 * time.Second
	roomLength = 5 * time.Second
	maxFile    = 30 * time.Second
)

func cmdWakeWord(e *env, args []string) error {
	fs := e.flags("wakeword enroll")
	model := fs.String("model", "", "the wake model whose verifier to train (default: the first of conversation.wake_word.models)")
	takes := fs.Int("takes", 5, "at the microphone: how many times to say the phrase")
	var phrases, others stringList
	fs.Var(&phrases, "phrase", "a recording (WAV or raw 16 kHz s16le) of the owner saying the phrase, instead of the microphone; repeatable")
	fs.Var(&others, "other", "with --phrase: a recording of the owner saying one of the prompts (listed in `agenthost help wakeword`), or of the room; repeatable")
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fs.Usage()
		return errHelpShown
	}
	if len(args) == 0 || args[0] != "enroll" {
		return usageErr("usage: agenthost wakeword enroll [--model NAME] [--takes N] [--phrase FILE --phrase FILE… --other FILE…] (agenthost help wakeword)")
	}
	if err := e.parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageErr("wakeword enroll takes no arguments; give recordings with --phrase and --other")
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	w := cfg.Conversation.WakeWord
	name := *model
	if name == "" {
		if !w.On() {
			return usageErr("no wake model: set conversation.wake_word.models or give --model")
		}
		name = w.Models[0]
	}
	if *takes < wakeword.MinPhrases || *takes > wakeword.MaxPhrases {
		return usageErr("--takes %d is outside %d…%d", *takes, wakeword.MinPhrases, wakeword.MaxPhrases)
	}
	tmp, err := os.MkdirTemp("", "agenthost-enroll-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // the owner's voice is not left behind
	ctx, cancel := signalContext()
	defer cancel()
	var pf, of []string
	if len(phrases) > 0 {
		if pf, err = convert(tmp, "phrase", phrases); err != nil {
			return err
		}
		if of, err = convert(tmp, "other", others); err != nil {
			return err
		}
	} else {
		if len(others) > 0 {
			return usageErr("--other goes with --phrase; without them enroll records at the microphone")
		}
		if pf, of, err = record(ctx, e, cfg.Audio.Backend, cfg.Audio.Input, tmp, wakeword.ModelName(name), *takes); err != nil {
			return err
		}
	}
	dir := filepath.Join(cfg.Plugins.StateDirectory(), hostwake.VerifierFolder)
	cmdArgs := []string{"--dir", w.Dir, "--enroll", dir}
	if w.ONNXRuntime != "" {
		cmdArgs = append(cmdArgs, "--onnxruntime", w.ONNXRuntime)
	}
	for _, p := range pf {
		cmdArgs = append(cmdArgs, "--phrase", p)
	}
	for _, p := range of {
		cmdArgs = append(cmdArgs, "--other", p)
	}
	cmdArgs = append(cmdArgs, "--", name)
	fmt.Fprintln(e.stdout, "training the verifier…")
	cmd := exec.CommandContext(ctx, hostwake.FindBinary(), cmdArgs...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var m wakeword.Message
	if jerr := json.Unmarshal(firstLine(out), &m); jerr != nil {
		if err == nil {
			err = jerr
		}
		return fmt.Errorf("the detector %s: %w; %s", hostwake.FindBinary(), err, lastLines(stderr.String(), 5))
	}
	if m.Type != wakeword.KindEnrolled {
		return fmt.Errorf("wakeword enroll: %s", m.Error)
	}
	fmt.Fprintf(e.stdout, "enrolled: %s's verifier (%d takes of the phrase heard of %d, %d windows of other sound) is in %s\n", m.Model, m.Phrases, len(pf), m.Negatives, m.Path)
	fmt.Fprintln(e.stdout, "the daemon takes it at its next reload: systemctl reload agenthost (delete the file and reload to go back to the model alone)")
	return nil
}

// convert reads each recording (WAV at any rate and channels, or raw 16
// kHz s16le) and writes it as raw 16 kHz mono into dir.
func convert(dir, kind string, paths []string) ([]string, error) {
	var out []string
	for i, p := range paths {
		src, err := audio.OpenFileSource(p, audio.Options{Rate: wakeword.Rate})
		if err != nil {
			return nil, fmt.Errorf("--%s %s: %w", kind, p, err)
		}
		pcm, err := readAll(src, int(maxFile.Seconds()*wakeword.Rate))
		src.Close()
		if err != nil {
			return nil, fmt.Errorf("--%s %s: %w", kind, p, err)
		}
		dst := filepath.Join(dir, fmt.Sprintf("%s-%d.s16", kind, i))
		if err := writeRaw(dst, pcm); err != nil {
			return nil, err
		}
		out = append(out, dst)
	}
	return out, nil
}

// readAll reads src to its end, at most most samples.
func readAll(src audio.Source, most int) ([]int16, error) {
	var pcm []int16
	buf := make([]int16, 1600)
	for {
		n, err := src.Read(buf)
		pcm = append(pcm, buf[:n]...)
		if len(pcm) > most {
			return nil, fmt.Errorf("longer than %s: a take is a few seconds", maxFile)
		}
		if errors.Is(err, io.EOF) {
			if len(pcm) == 0 {
				return nil, errors.New("no sound in it")
			}
			return pcm, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// record asks the owner for the takes and the prompts at the configured
// microphone, and records the room's own sound.
func record(ctx context.Context, e *env, backend, input, dir, name string, takes int) ([]string, []string, error) {
	if backend != "portaudio" {
		return nil, nil, fmt.Errorf("audio.backend is %s, not a microphone: give recordings with --phrase and --other", backend)
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	src, err := audio.OpenPortAudioSource(octx, audio.Options{Device: input, Rate: wakeword.Rate, FailFast: true})
	cancel()
	if err != nil {
		return nil, nil, fmt.Errorf("the microphone (audio.input %q): %w; if the daemon holds it, stop it first (systemctl stop agenthost)", input, err)
	}
	defer src.Close()
	phrase := strings.ReplaceAll(name, "_", " ")
	in := bufio.NewReader(e.stdin)
	take := func(kind string, i int, say string, d time.Duration) (string, error) {
		fmt.Fprintf(e.stdout, "%s — press Enter, then speak ", say)
		if _, err := in.ReadString('\n'); err != nil {
			return "", fmt.Errorf("enrollment ended: %w", err)
		}
		fmt.Fprintf(e.stdout, "recording %s… ", d)
		pcm := make([]int16, int(d.Seconds()*wakeword.Rate))
		if _, err := audio.ReadFull(src, pcm); err != nil {
			return "", fmt.Errorf("the microphone: %w", err)
		}
		fmt.Fprintln(e.stdout, "done")
		p := filepath.Join(dir, fmt.Sprintf("%s-%d.s16", kind, i))
		return p, writeRaw(p, pcm)
	}
	var pf, of []string
	for i := 0; i < takes; i++ {
		p, err := take("phrase", i, fmt.Sprintf("take %d of %d: say %q as you would to the speaker", i+1, takes, phrase), takeLength)
		if err != nil {
			return nil, nil, err
		}
		pf = append(pf, p)
	}
	for i, text := range wakeword.EnrollPrompts {
		p, err := take("other", i, fmt.Sprintf("now say %q (%d of %d)", text, i+1, len(wakeword.EnrollPrompts)), takeLength)
		if err != nil {
			return nil, nil, err
		}
		of = append(of, p)
	}
	p, err := take("other", len(of), "last, the room as it is: say nothing", roomLength)
	if err != nil {
		return nil, nil, err
	}
	return pf, append(of, p), nil
}

func firstLine(b []byte) []byte {
	s, _, _ := strings.Cut(string(b), "\n")
	return []byte(s)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "; ")
}

// writeRaw writes pcm as raw s16le, readable by this user only.
func writeRaw(path string, pcm []int16) error {
	b := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return os.WriteFile(path, b, 0o600)
}
