package wakeword_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/agenthost/agenthost/audio/wakeword"
)

// TestLongAudioIsWrittenAsChunksOfASecond: audio longer than MaxChunk (an
// audio.frame of 1.5 s) goes out as chunks of at most MaxChunk at following
// positions, which the reader takes back whole and in order; a chunk heard
// while the speaker sounded, or taken for its own sound alone, says so.
func TestLongAudioIsWrittenAsChunksOfASecond(t *testing.T) {
	pcm := make([]int16, 5*wakeword.MaxChunk/2)
	for i := range pcm {
		pcm[i] = int16(i)
	}
	var pipe bytes.Buffer
	if _, err := wakeword.WriteChunk(&pipe, 1000, pcm, wakeword.Heard{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := wakeword.WriteChunk(&pipe, 41000, pcm[:100], wakeword.Heard{Sounding: true}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := wakeword.WriteChunk(&pipe, 41100, pcm[:50], wakeword.Heard{Sounding: true, OwnSound: true}, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	var all []int16
	var buf []byte
	for {
		pos, chunk, heard, b, err := wakeword.ReadChunk(&pipe, nil, buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		buf = b
		got = append(got, fmt.Sprintf("%d+%d", pos, len(chunk)))
		if heard.Sounding {
			got[len(got)-1] += " sounding"
		}
		if heard.OwnSound {
			got[len(got)-1] += " own"
		}
		all = append(all, chunk...)
	}
	if want := "[1000+16000 17000+16000 33000+8000 41000+100 sounding 41100+50 sounding own]"; fmt.Sprint(got) != want {
		t.Fatalf("chunks %v, want %s", got, want)
	}
	for i := range pcm {
		if all[i] != pcm[i] {
			t.Fatalf("sample %d is %d, want %d", i, all[i], pcm[i])
		}
	}
}
