package vad

import (
	"math"
	"reflect"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agenthost/agenthost/audio/audiotest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLevels(t *testing.T) {
	if got := DBFS(make([]int16, 100)); got != Floor {
		t.Errorf("silence: %v dBFS, want %v", got, Floor)
	}
	// A sine at half of full scale: RMS 0.5/sqrt2, -9.03 dBFS.
	tone := audiotest.Tone(1000, 16000, time.Second)
	if got := DBFS(tone); math.Abs(got-(-9.03)) > 0.05 {
		t.Errorf("tone: %.2f dBFS, want -9.03", got)
	}
	sq := make([]int16, 100)
	for i := range sq {
		sq[i] = -32768
	}
	if got := RMS(sq); got != 1 {
		t.Errorf("full-scale square: RMS %v, want 1", got)
	}
}

// A tone, then silence: exact sample positions, in any chunking.
func TestToneThenSilence(t *testing.T) {
	const rate = 16000
	sig := append(audiotest.Silence(rate, 200*time.Millisecond), audiotest.Tone(440, rate, 500*time.Millisecond)...)
	sig = append(sig, audiotest.Silence(rate, time.Second)...)
	want := []Event{
		// Tone starts at 3200; 60 ms = 960 samples later speech starts.
		{Kind: SpeechStart, Since: 3200, At: 3200 + 960},
		// Tone ends at 11200; 700 ms = 11200 samples later speech ends.
		{Kind: SpeechEnd, Since: 11200, At: 11200 + 11200},
	}
	for _, chunk := range []int{1, 7, 320, 1000, len(sig)} {
		d, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		var got []Event
		for i := 0; i < len(sig); i += chunk {
			got = append(got, d.Process(sig[i:min(len(sig), i+chunk)])...)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("chunk %d: events %+v, want %+v", chunk, got, want)
		}
		if d.Speaking() || d.Level() != Floor {
			t.Errorf("chunk %d: still speaking (%v) or level %v after silence", chunk, d.Speaking(), d.Level())
		}
	}
}

func TestSpeechThenSilence(t *testing.T) {
	clip := audiotest.Speech(t, "Turn on the kitchen light please")
	hang := 700 * time.Millisecond
	d, err := New(Config{Hang: hang})
	if err != nil {
		t.Fatal(err)
	}
	var events []Event
	for i := 0; i < len(clip.Samples); i += 960 {
		events = append(events, d.Process(clip.Samples[i:min(len(clip.Samples), i+960)])...)
	}
	if len(events) != 2 || events[0].Kind != SpeechStart || events[1].Kind != SpeechEnd {
		t.Fatalf("events %+v, want one start then one end", events)
	}
	start, end := events[0], events[1]
	t.Logf("words: %d samples; start since %d at %d; end since %d at %d", clip.Words, start.Since, start.At, end.Since, end.At)
	if got, want := end.At-end.Since, int64(hang.Seconds()*16000); got != want {
		t.Errorf("hang %d samples, want %d (700 ms at 16 kHz)", got, want)
	}
	// The words end no later than espeak-ng's file (which has a little
	// quiet tail of its own), and no more than 0.5 s before it; the end is
	// declared inside the padding (counted in samples, no clock involved).
	if end.Since > int64(clip.Words) || end.Since < int64(clip.Words)-8000 {
		t.Errorf("speech ends at sample %d, espeak-ng's words end at %d", end.Since, clip.Words)
	}
	if end.At > int64(len(clip.Samples)) {
		t.Errorf("end declared at %d, after the clip (%d)", end.At, len(clip.Samples))
	}
	if start.Since > 8000 {
		t.Errorf("speech found only at sample %d", start.Since)
	}
}

func TestQuietAndShortSoundsAreIgnored(t *testing.T) {
	d, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	quiet := audiotest.ToneAmp(440, 16000, time.Second, 0.003) // about -53 dBFS
	if ev := d.Process(quiet); ev != nil {
		t.Errorf("quiet tone: %+v", ev)
	}
	click := append(audiotest.Tone(440, 16000, 40*time.Millisecond), audiotest.Silence(16000, 100*time.Millisecond)...)
	if ev := d.Process(click); ev != nil {
		t.Errorf("40 ms click (MinSpeech 60 ms): %+v", ev)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{{Frame: time.Nanosecond}, {Hang: -time.Second}, {Threshold: 3}} {
		if _, err := New(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}
