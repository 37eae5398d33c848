package linewriter

import (
	"strings"
	"testing"
)

func TestLinesSplitAcrossWritesAndBounded(t *testing.T) {
	var got []string
	w := New(8, func(b []byte) { got = append(got, string(b)) })
	for _, s := range []string{"ab", "c\r\nde", "f\n\n0123456789abcdefXY", "Z\nlast"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	w.Flush()
	want := []string{"abc", "def", "", "01234567", "89abcdef", "XYZ", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("lines %q, want %q", got, want)
	}
}

func TestAnEndlessLineNeverGrowsTheBuffer(t *testing.T) {
	n := 0
	w := New(16, func(b []byte) {
		if len(b) > 16 {
			t.Fatalf("a piece of %d bytes", len(b))
		}
		n++
	})
	chunk := []byte(strings.Repeat("x", 1000))
	for range 100 {
		w.Write(chunk)
		if len(w.buf) > 16 {
			t.Fatalf("the writer holds %d bytes", len(w.buf))
		}
	}
	w.Flush()
	if n != 100000/16 {
		t.Fatalf("%d pieces", n)
	}
}

func FuzzWriter(f *testing.F) {
	f.Add([]byte("a\nb\r\nccc"), 3)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		max = (max%64+64)%64 + 1
		var total int
		w := New(max, func(b []byte) {
			if len(b) > max {
				t.Fatalf("a piece of %d bytes over %d", len(b), max)
			}
			total += len(b)
		})
		w.Write(in)
		w.Flush()
		if total > len(in) {
			t.Fatalf("passed on %d bytes of %d", total, len(in))
		}
	})
}
