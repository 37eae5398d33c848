package voice

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// benchStream returns n encoded frames: 60 ms PCM audio frames or MCP calls.
func benchStream(b *testing.B, kind string, n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var stream []byte
	for i := range n {
		var f Frame
		switch kind {
		case "audio":
			p := make([]byte, 1920)
			for j := range p {
				p[j] = byte(rng.UintN(256))
			}
			SanitizeAudio(p)
			f = Frame{Type: TypeAudio, Task: "abcd1234", Seq: i, Payload: p}
		case "mcp":
			f = MCPFrame([]byte(`{"type":"call","data":{"call_id":"call_0001","method":"get_current_time","params":{"format":"simple"}}}`))
		}
		stream = append(stream, mustFrame(b, f)...)
	}
	return stream
}

// BenchmarkDecode measures the decoder over a stream of frames; the
// "scan-baseline" variants time a bare bytes.Index scan for ##END over the
// same stream, the target being at least half its throughput.
// scripts/bench-codec.sh prints the ratios.
func BenchmarkDecode(b *testing.B) {
	for _, kind := range []string{"audio", "mcp"} {
		stream := benchStream(b, kind, 500)
		for _, api := range []string{"Decode", "Next"} {
			b.Run(kind+"-"+api, func(b *testing.B) {
				b.SetBytes(int64(len(stream)))
				b.ReportAllocs()
				r := bytes.NewReader(stream)
				d := NewDecoder(r)
				next := d.Decode
				if api == "Next" {
					next = d.Next
				}
				for b.Loop() {
					r.Reset(stream)
					d.Reset(r)
					n := 0
					for ; ; n++ {
						_, err := next()
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					if n != 500 {
						b.Fatalf("decoded %d frames, want 500", n)
					}
				}
				b.ReportMetric(500, "frames/op")
			})
		}
		b.Run(kind+"-scan-baseline", func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			end := []byte(EndMarker)
			for b.Loop() {
				n := 0
				for rest := stream; ; {
					i := bytes.Index(rest, end)
					if i < 0 {
						break
					}
					n++
					rest = rest[i+len(end):]
				}
				if n != 500 {
					b.Fatal(n)
				}
			}
		})
	}
}

// BenchmarkDecodeAllocsPerFrame reports allocations per decoded frame.
func BenchmarkDecodeAllocsPerFrame(b *testing.B) {
	stream := benchStream(b, "audio", 1)
	r := bytes.NewReader(stream)
	d := NewDecoder(readerFunc(func(p []byte) (int, error) {
		if r.Len() == 0 {
			r.Reset(stream)
		}
		return r.Read(p)
	}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(); err != nil { // the one allocation: the payload copy
			b.Fatal(err)
		}
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func BenchmarkEncodeAudio(b *testing.B) {
	f := Frame{Type: TypeAudio, Task: "abcd1234", Payload: make([]byte, 1920)}
	e := NewEncoder(io.Discard)
	b.SetBytes(int64(len(f.Payload)))
	b.ReportAllocs()
	for b.Loop() {
		f.Seq++
		if err := e.Encode(f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseMCPCall parses a call as the voice server sends it, by
// ParseMCP and by encoding/json alone (what ParseMCP did before it read
// calls itself).
func BenchmarkParseMCPCall(b *testing.B) {
	p := []byte(`{"type":"call","data":{"call_id":"call_0001","method":"get_current_time","params":{"format":"simple"}}}`)
	for _, v := range []struct {
		name  string
		parse func([]byte) (any, error)
	}{{"ParseMCP", ParseMCP}, {"encoding-json", parseMCPJSON}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.parse(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
