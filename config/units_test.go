package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	good := map[string]Size{
		"0": 0, "4096": 4096, "1500B": 1500, "1500 bytes": 1500, "1 byte": 1,
		"64KiB": 64 << 10, "64kib": 64 << 10, "1MiB": 1 << 20, "2GiB": 2 << 30,
		"64KB": 64000, "64kB": 64000, "1MB": 1e6, "1GB": 1e9, " 8 KiB ": 8 << 10,
	}
	for in, want := range good {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "KiB", "-1", "1.5MiB", "64 kilobytes", "1TiB", "1e3", "0x10", "99999999999999999999", "9000000000GiB", "1 MiB B"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded", in)
		} else if !strings.Contains(err.Error(), "64KiB") {
			t.Errorf("ParseSize(%q) error %q does not show the form", in, err)
		}
	}
}

func TestSizeString(t *testing.T) {
	for n, want := range map[Size]string{
		0: "0B", 1: "1B", 1500: "1500B", 1024: "1KiB", 64 << 10: "64KiB", 1 << 20: "1MiB",
		3 << 30: "3GiB", 64000: "64KB", 1e6: "1MB", 1536: "1536B", 2e9: "2GB", 1024000: "1000KiB",
	} {
		if got := n.String(); got != want {
			t.Errorf("Size(%d).String() = %q, want %q", n, got, want)
		}
	}
}

func TestDurationString(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 4 * time.Minute: "4m", 90 * time.Second: "1m30s", 500 * time.Millisecond: "500ms",
		time.Hour + time.Second: "1h1s", 1500 * time.Millisecond: "1s500ms", 1500 * time.Microsecond: "1ms500us",
		-2 * time.Second: "-2s", 7: "7ns",
	} {
		got := Duration(d).String()
		if got != want {
			t.Errorf("Duration(%v).String() = %q, want %q", d, got, want)
		}
		back, err := ParseDuration(got)
		if err != nil || back.D() != d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", got, back, err, d)
		}
	}
	if _, err := ParseDuration("ten"); err == nil || !strings.Contains(err.Error(), "10s") {
		t.Errorf("ParseDuration(ten) = %v", err)
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"64KiB", "1MiB", "1500", "64KB", "1 byte", "", "9223372036854775807", "8589934591GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d < 0", s, n)
		}
		back, err := ParseSize(n.String())
		if err != nil || back != n {
			t.Fatalf("round trip of %q: %d -> %q -> %d, %v", s, n, n.String(), back, err)
		}
	})
}

func FuzzDurationString(f *testing.F) {
	for _, d := range []int64{0, 1, -1, int64(time.Hour), 1<<63 - 1, -1 << 63} {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d int64) {
		s := Duration(d).String()
		back, err := ParseDuration(s)
		if err != nil || int64(back) != d {
			t.Fatalf("%d -> %q -> %d, %v", d, s, back, err)
		}
	})
}
