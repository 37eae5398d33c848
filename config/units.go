package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that reads and writes Go duration strings
// ("10s", "500ms", "1m30s") in the config file.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Seconds is a Duration that also reads a bare number, as seconds: the way
// desktop MCP clients write a server's timeout.
type Seconds Duration

// D returns s as a time.Duration.
func (s Seconds) D() time.Duration { return time.Duration(s) }

// MarshalText implements encoding.TextMarshaler.
func (s Seconds) MarshalText() ([]byte, error) { return Duration(s).MarshalText() }

// String formats d compactly ("4m", "1m30s", "500ms"); the result parses
// back to the same value with ParseDuration.
func (d Duration) String() string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	u := uint64(d)
	if d < 0 {
		b.WriteByte('-')
		u = -u
	}
	units := []struct {
		n    uint64
		name string
	}{
		{uint64(time.Hour), "h"}, {uint64(time.Minute), "m"}, {uint64(time.Second), "s"},
		{uint64(time.Millisecond), "ms"}, {uint64(time.Microsecond), "us"}, {1, "ns"},
	}
	for _, un := range units {
		if q := u / un.n; q > 0 {
			b.WriteString(strconv.FormatUint(q, 10))
			b.WriteString(un.name)
			u -= q * un.n
		}
	}
	return b.String()
}

// ParseDuration parses a Go duration string such as "10s" or "1m30s".
func ParseDuration(s string) (Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; write it like 10s, 500ms or 1m30s", s)
	}
	return Duration(d), nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// Size is a byte count that reads "64KiB", "1MiB", "64KB", "1500B" or a bare
// number of bytes. KiB/MiB/GiB are powers of 1024, KB/MB/GB powers of 1000;
// units are case-insensitive.
type Size int64

var sizeUnits = map[string]int64{
	"": 1, "b": 1, "byte": 1, "bytes": 1,
	"kb": 1000, "mb": 1000 * 1000, "gb": 1000 * 1000 * 1000,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
}

var errSizeSyntax = errors.New("bad size")

// ParseSize parses a size such as "64KiB", "1MiB", "64KB" or "4096".
func ParseSize(s string) (Size, error) {
	n, err := parseSize(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size; write it like 64KiB, 1MiB or 4096 (bytes)", s)
	}
	return n, nil
}

func parseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 || i > 19 {
		return 0, errSizeSyntax
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, errSizeSyntax
	}
	mult, ok := sizeUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, errSizeSyntax
	}
	if n > math.MaxInt64/mult {
		return 0, errSizeSyntax
	}
	return Size(n * mult), nil
}

// String formats n with the unit that gives the smallest whole number
// ("64KiB", "1MiB", "64KB", "2GB", "1500B"); the result parses back to n.
func (n Size) String() string {
	best, unit := int64(n), "B"
	if n > 0 {
		for _, u := range []struct {
			m    int64
			name string
		}{{1 << 30, "GiB"}, {1e9, "GB"}, {1 << 20, "MiB"}, {1e6, "MB"}, {1 << 10, "KiB"}, {1e3, "KB"}} {
			if int64(n)%u.m == 0 && int64(n)/u.m < best {
				best, unit = int64(n)/u.m, u.name
			}
		}
	}
	return strconv.FormatInt(best, 10) + unit
}

// MarshalText implements encoding.TextMarshaler.
func (n Size) MarshalText() ([]byte, error) { return []byte(n.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (n *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*n = v
	return nil
}

// MarshalYAML writes n as a size string.
func (n Size) MarshalYAML() (any, error) { return n.String(), nil }
