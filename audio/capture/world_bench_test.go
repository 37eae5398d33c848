package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/audio/audiotest"
	"github.com/agenthost/agenthost/audio/echoroom"
)

// BenchmarkWorldEcho prints issue 24's echo figures on the world material
// (world_test.go), side by side: today's shipped canceller, the tuned one,
// and the programs named in AGENTHOST_AEC_COMPARE (name=command,…; each is
// called as `command FAR MIC OUT` on raw 16 kHz s16le files; see
// scripts/aec-world.sh, which builds WebRTC's AEC3 in a trixie root). Run
//
//	go test ./audio/capture/ -run '^$' -bench WorldEcho -benchtime 1x
//
// AGENTHOST_AEC_SET=tuning (or fresh, a second held-out set) measures that
// set instead of the held-out one; AGENTHOST_AEC_SCENES=1 adds a line per scene (echo removed,
// and in a delay-change room the time back to 20 dB after the change;
// near correlation, the lowest and the segment at 1 s's; and of that segment, the near speech's
// gain through the canceller and the rest of the output re it, dB: a near speech held down in
// part, or distorted, leaves a loud rest; an echo left, too). Each cell is the
// smallest figure over the row's scenes (the median in brackets); the
// correlation rows are the 10th percentile over the double-talk segments.
func BenchmarkWorldEcho(b *testing.B) {
	set := worldSets[1]
	for _, s := range worldSets {
		if s.name == os.Getenv("AGENTHOST_AEC_SET") {
			set = s
		}
	}
	scenes := worldScenes(b, set)
	type canceller struct {
		name string
		run  func(mic, far []int16) []int16
	}
	speex := func(o EchoOptions) func(mic, far []int16) []int16 {
		return func(mic, far []int16) []int16 { return cancel(b, mic, far, o) }
	}
	cs := []canceller{
		{"today", speex(todayEcho)},
		{"shipped", speex(EchoOptions{MaxDelay: DefaultMaxDelay})},
	}
	for _, item := range strings.Split(os.Getenv("AGENTHOST_AEC_SPEEX"), ";") {
		if name, opts, ok := strings.Cut(item, "="); ok {
			cs = append(cs, canceller{name, speex(speexOptions(b, opts))})
		}
	}
	if spec := os.Getenv("AGENTHOST_AEC_COMPARE"); spec != "" {
		dir := b.TempDir()
		for _, item := range strings.Split(spec, ",") {
			name, cmd, ok := strings.Cut(item, "=")
			if !ok {
				b.Fatalf("AGENTHOST_AEC_COMPARE: %q is not name=command", item)
			}
			cs = append(cs, canceller{name, func(mic, far []int16) []int16 {
				farPath := filepath.Join(dir, "far.raw")
				if err := audiotest.WriteRaw(farPath, far); err != nil {
					b.Fatal(err)
				}
				return external(b, cmd, dir, farPath, mic)
			}})
		}
	}
	res := make([][]worldResult, len(cs))
	for b.Loop() {
		for i, c := range cs {
			res[i] = res[i][:0]
			for _, sc := range scenes {
				res[i] = append(res[i], measureWorld(sc, c.run))
			}
		}
	}
	w := os.Stdout
	fmt.Fprintf(w, "\nEcho removed 2 s after the speaker starts, %s set (%d scenes); dB min (median), near corr p10\n", set.name, len(scenes))
	fmt.Fprintf(w, "%-36s %-7s", "condition", "target")
	for _, c := range cs {
		fmt.Fprintf(w, " %-16s", c.name)
	}
	fmt.Fprintln(w)
	for _, row := range worldRows {
		fmt.Fprintf(w, "%-36s %-7s", row.name, row.target)
		for i := range cs {
			_, s := worldCell(row, scenes, res[i])
			fmt.Fprintf(w, " %-16s", s)
		}
		fmt.Fprintln(w)
	}
	if os.Getenv("AGENTHOST_AEC_SCENES") != "" {
		for k, sc := range scenes {
			fmt.Fprintf(w, "%-44s", sc.name())
			for i := range cs {
				r := res[i][k]
				back := "       "
				if sc.room.Kind == echoroom.DelayChange {
					back = fmt.Sprintf(" %5.2fs", r.back)
				}
				fmt.Fprintf(w, " %5.1f dB%s %4.2f/%4.2f %5.1f/%5.1f", r.erle, back, percentile(r.corr, 0), r.first, -r.loss[0], r.rest[0])
			}
			fmt.Fprintln(w)
		}
	}
}

func fmtFloat(v float64, prec int) string { return fmt.Sprintf("%.*f", prec, v) }

// todayEcho is the canceller before issue 24.
var todayEcho = EchoOptions{Tail: 100 * time.Millisecond, MaxDelay: DefaultMaxDelay, SpeexResidual: true, Hold: true}

// speexOptions parses "tail:200ms,speexresidual,hold,noresidual" (for
// AGENTHOST_AEC_SPEEX="name=options;…", to compare settings).
func speexOptions(b *testing.B, spec string) EchoOptions {
	o := EchoOptions{MaxDelay: DefaultMaxDelay}
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, ":")
		var err error
		switch k {
		case "tail":
			o.Tail, err = time.ParseDuration(v)
		case "speexresidual":
			o.SpeexResidual = true
		case "hold":
			o.Hold = true
		case "noresidual":
			o.NoResidual = true
		default:
			err = fmt.Errorf("unknown option %q", k)
		}
		if err != nil {
			b.Fatalf("AGENTHOST_AEC_SPEEX: %v", err)
		}
	}
	return o
}
