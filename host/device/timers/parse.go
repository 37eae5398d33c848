package timers

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agenthost/agenthost/internal/clip"
)

// Bounds of what can be set.
const (
	// MaxLength is the longest timer.
	MaxLength = 7 * 24 * time.Hour
	// MaxLabel bounds a label, in characters.
	MaxLabel = 64
	// MaxAhead is how far ahead an alarm's date may be.
	MaxAhead = 366 * 24 * time.Hour
)

var units = map[string]time.Duration{
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
}

// ParseDuration reads a timer's length: numbers with units, as in "5m",
// "1h30m", "90s", "1.5h" or "1 hour 30 minutes"; a bare number is seconds.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.ToLower(strings.TrimSpace(s))
	bad := func() (time.Duration, error) {
		return 0, fmt.Errorf("duration %q is not a length like 5m, 1h30m, 90s or \"10 minutes\"", clipped(s))
	}
	if in == "" {
		return bad()
	}
	if n, err := strconv.ParseFloat(in, 64); err == nil {
		return checkLength(time.Duration(n * float64(time.Second)))
	}
	var total time.Duration
	rest := in
	for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(rest) {
		i := 0
		for i < len(rest) && (rest[i] == '.' || (rest[i] >= '0' && rest[i] <= '9')) {
			i++
		}
		num, err := strconv.ParseFloat(rest[:i], 64)
		if i == 0 || err != nil {
			return bad()
		}
		rest = strings.TrimLeft(rest[i:], " ")
		j := 0
		for j < len(rest) && unicode.IsLetter(rune(rest[j])) {
			j++
		}
		unit, ok := units[rest[:j]]
		if !ok {
			return bad()
		}
		rest = strings.TrimLeft(rest[j:], " ,")
		rest = strings.TrimPrefix(rest, "and ")
		if num > float64(MaxLength/unit)+1 {
			return checkLength(MaxLength + 1)
		}
		total += time.Duration(num * float64(unit))
	}
	return checkLength(total)
}

func checkLength(d time.Duration) (time.Duration, error) {
	switch {
	case d < time.Second:
		return 0, fmt.Errorf("a timer must be at least 1 second long (got %s)", d)
	case d > MaxLength:
		return 0, fmt.Errorf("a timer can be at most %s long (7 days); set an alarm for later times", MaxLength)
	}
	return d.Round(time.Second), nil
}

// ParseClock reads an alarm's time of day, "HH:MM" on the 24-hour clock.
func ParseClock(s string) (hour, minute int, err error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hour, err1 := strconv.Atoi(h)
	minute, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(m) != 2 || len(h) < 1 || len(h) > 2 || hour < 0 || hour > 23 || minute < 0 || minute > 59 {
		return 0, 0, fmt.Errorf("time %q is not a time of day like 07:30 or 18:05 (24-hour clock, HH:MM)", clipped(s))
	}
	return hour, minute, nil
}

// DayNames are the days an alarm may repeat on, as set_alarm takes them.
var DayNames = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// weekday maps a day name to time.Weekday.
func weekday(name string) (time.Weekday, bool) {
	for i, n := range DayNames {
		if n == name {
			return time.Weekday((i + 1) % 7), true
		}
	}
	return 0, false
}

// ParseDays checks days names and returns them in week order, without
// repeats.
func ParseDays(days []string) ([]string, error) {
	seen := map[string]bool{}
	for _, d := range days {
		d = strings.ToLower(strings.TrimSpace(d))
		if _, ok := weekday(d); !ok {
			return nil, fmt.Errorf("day %q is not one of %s", clipped(d), strings.Join(DayNames, ", "))
		}
		seen[d] = true
	}
	var out []string
	for _, n := range DayNames {
		if seen[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// CleanLabel trims a label and checks its length; control characters
// become spaces.
func CleanLabel(s string) (string, error) {
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s))
	if n := len([]rune(s)); n > MaxLabel {
		return "", fmt.Errorf("the label is %d characters long; at most %d", n, MaxLabel)
	}
	return s, nil
}

func clipped(s string) string { return clip.String(s, 40) }
