package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ffmpeg logs at level+info: each line says its level. Its error lines are
// kept (what -loglevel error would print); its own description of the input
// ("Input #0 … Duration: … Stream #0:0: Audio: pcm_s16le, 4 Hz, mono, …"),
// printed once the input is probed and before any sound is decoded, is
// checked against the formats a speaker plays, and a sound outside them is
// refused and its decoder killed. That costs no second process and no
// second read of a network stream (ffprobe first would need both).
//
// What the check cannot see (a header that says 48 kHz over frames that say
// 1 Hz; a chained stream that changes format) is held by the memory bound.

// The formats a sound may have. A rate of a few Hz resampled to 48 kHz is
// minutes of sound per packet, decoded in one piece.
const (
	minRate     = 4000   // below telephony's 8 kHz, above anything absurd
	maxRate     = 384000 // DXD; DSD is decoded at 352.8 kHz
	maxChannels = 8      // 7.1
	maxDuration = 7 * 24 * time.Hour
	maxLogLine  = 4096 // bytes of one log line kept
)

// inputFormat is what ffmpeg says of the input's first audio stream.
type inputFormat struct {
	rate, channels int
	duration       time.Duration // 0: not said (a stream)
}

// check says why the format is not played, or nil.
func (f inputFormat) check() error {
	switch {
	case f.rate < minRate || f.rate > maxRate:
		return fmt.Errorf("its header says %d Hz: sound plays at %d to %d Hz", f.rate, minRate, maxRate)
	case f.channels < 1 || f.channels > maxChannels:
		return fmt.Errorf("its header says %d channels: sound plays with 1 to %d", f.channels, maxChannels)
	case f.duration > maxDuration:
		return fmt.Errorf("its header says it lasts %s: no sound lasts more than %s", f.duration.Round(time.Hour), maxDuration)
	}
	return nil
}

var (
	logLevel      = regexp.MustCompile(`^(\[[^\]]* @ 0x[0-9a-f]+\] )?\[(trace|debug|verbose|info|warning|error|fatal|panic)\] (.*)$`)
	logDuration   = regexp.MustCompile(`^  Duration: (\d+):(\d\d):(\d\d)\.(\d\d)`)
	logAudio      = regexp.MustCompile(`^  Stream #0:\d+.*?: Audio: .*?, (\d+) Hz, ([^,]+)`)
	logNChannels  = regexp.MustCompile(`^(\d+) channels`)
	wideLayouts   = map[string]int{"hexadecagonal": 16, "22.2": 24} // ffmpeg's named layouts over 8 channels
	errorLogLevel = map[string]bool{"error": true, "fatal": true, "panic": true}
)

// ffmpegLog is ffmpeg's stderr.
type ffmpegLog struct {
	errors *tailBuffer // the error lines, as -loglevel error prints them
	refuse func()      // called once when the format is refused

	mu       sync.Mutex
	partial  []byte
	level    string // of the line being continued
	input    bool   // in the description of Input #0
	duration time.Duration
	format   *inputFormat
	refused  error
	said     chan struct{} // closed once the format is known, or ffmpeg has ended
	sayOnce  sync.Once
}

func newFFmpegLog(refuse func()) *ffmpegLog {
	return &ffmpegLog{errors: &tailBuffer{max: 2048}, refuse: refuse, said: make(chan struct{})}
}

func (l *ffmpegLog) Write(p []byte) (int, error) {
	n := len(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.partial = append(l.partial, p[:min(len(p), max(0, maxLogLine-len(l.partial)))]...)
			break
		}
		l.partial = append(l.partial, p[:min(i, max(0, maxLogLine-len(l.partial)))]...)
		l.line(strings.TrimRight(string(l.partial), "\r"))
		l.partial = l.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

// line takes one line of the log.
func (l *ffmpegLog) line(s string) {
	context := ""
	if m := logLevel.FindStringSubmatch(s); m != nil {
		context, l.level, s = m[1], m[2], m[3]
	}
	if errorLogLevel[l.level] {
		l.errors.Write([]byte(context + s + "\n"))
		return
	}
	if l.level != "info" || l.format != nil {
		return
	}
	switch {
	case strings.HasPrefix(s, "Input #0, "):
		l.input = true
	case !l.input:
	case !strings.HasPrefix(s, " "): // "Stream mapping:", "Output #0": the input told no audio
		l.input = false
		l.say()
	case logDuration.MatchString(s):
		m := logDuration.FindStringSubmatch(s)
		h, _ := strconv.Atoi(m[1])
		mi, _ := strconv.Atoi(m[2])
		sec, _ := strconv.Atoi(m[3])
		l.duration = time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(sec)*time.Second
	case logAudio.MatchString(s):
		m := logAudio.FindStringSubmatch(s)
		f := inputFormat{duration: l.duration}
		f.rate, _ = strconv.Atoi(m[1])
		f.channels = channelCount(strings.TrimSpace(m[2]))
		l.format = &f
		if l.refused = f.check(); l.refused != nil {
			l.refuse()
		}
		l.say()
	}
}

// channelCount reads ffmpeg's channel layout: "mono", "5.1(side)",
// "64 channels", "3 channels (FL+FR+LFE)".
func channelCount(layout string) int {
	if m := logNChannels.FindStringSubmatch(layout); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	if n, ok := wideLayouts[layout]; ok {
		return n
	}
	if layout == "mono" {
		return 1
	}
	return 2 // one of ffmpeg's named layouts, all of 2 to 8 channels
}

func (l *ffmpegLog) say() { l.sayOnce.Do(func() { close(l.said) }) }

// ended is called once ffmpeg has ended and its log is read.
func (l *ffmpegLog) ended() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.line(string(l.partial))
		l.partial = nil
	}
	l.say()
}

// verdict is the input's format and why it is refused, once said.
func (l *ffmpegLog) verdict() (*inputFormat, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.format, l.refused
}
