package audiotest

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Hostile media for the decoder's tests (the media plugin's and the
// daemon's): files whose headers ask the decoder for what no sound needs.

// LyingWAV writes a 16-bit PCM WAV of silence whose header says rate and
// channels; dataSize, when not 0, is the data size its header claims.
func LyingWAV(t testing.TB, path string, rate, channels, frames int, dataSize uint32) {
	t.Helper()
	data := make([]byte, 2*channels*frames)
	if dataSize == 0 {
		dataSize = uint32(len(data))
	}
	var h []byte
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, 36+dataSize)
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16)
	h = binary.LittleEndian.AppendUint16(h, 1) // PCM
	h = binary.LittleEndian.AppendUint16(h, uint16(channels))
	h = binary.LittleEndian.AppendUint32(h, uint32(rate))
	h = binary.LittleEndian.AppendUint32(h, uint32(rate*2*channels))
	h = binary.LittleEndian.AppendUint16(h, uint16(2*channels))
	h = binary.LittleEndian.AppendUint16(h, 16)
	h = append(h, "data"...)
	h = binary.LittleEndian.AppendUint32(h, dataSize)
	if err := os.WriteFile(path, append(h, data...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// LyingFLAC writes a FLAC whose header (STREAMINFO) says 48 kHz and whose
// frames, after one second of a tone at that rate, say 1 Hz: the format
// check passes it, and resampling those frames to 48 kHz would take GiBs
// (4.4 GiB measured): only the memory bound stops it.
func LyingFLAC(t testing.TB, dir string) string {
	t.Helper()
	run := func(name string, args ...string) {
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	good, slow := filepath.Join(dir, "good.flac"), filepath.Join(dir, "slow.flac")
	wav := filepath.Join(dir, "good.wav")
	run("sox", "-n", "-r", "48000", "-c", "1", "-b", "16", wav, "synth", "1", "sine", "440", "vol", "0.5")
	run("flac", "--silent", "-f", "-o", good, wav)
	raw := filepath.Join(dir, "slow.raw")
	pcm := make([]byte, 8000)
	for i := range pcm {
		pcm[i] = byte(i * 37)
	}
	if err := os.WriteFile(raw, pcm, 0o644); err != nil {
		t.Fatal(err)
	}
	run("flac", "--silent", "-f", "--force-raw-format", "--endian=little", "--sign=signed", "--channels=1",
		"--bps=16", "--sample-rate=1", "-o", slow, raw)
	a, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(slow)
	if err != nil {
		t.Fatal(err)
	}
	// b's frames start after "fLaC" and its metadata blocks.
	i := 4
	for {
		last, n := b[i]&0x80 != 0, int(b[i+1])<<16|int(b[i+2])<<8|int(b[i+3])
		i += 4 + n
		if last {
			break
		}
	}
	path := filepath.Join(dir, "lie.flac")
	if err := os.WriteFile(path, append(a, b[i:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
