package timefmt_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	_ "time/tzdata" // the zones below on any machine

	"github.com/agenthost/agenthost/internal/timefmt"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var instant = time.Date(2025, 1, 22, 6, 30, 25, 0, time.UTC)

func TestSimpleIsTheSeeds(t *testing.T) {
	if got := timefmt.Simple(instant.In(zone(t, "Asia/Shanghai"))); got != "2025-01-22 14:30:25" {
		t.Errorf("got %q, want the seeds' %q", got, "2025-01-22 14:30:25")
	}
}

func TestDetailed(t *testing.T) {
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{instant.In(zone(t, "Asia/Shanghai")), "Wednesday, 22 January 2025, 14:30:25 CST (UTC+08:00, Asia/Shanghai), ISO week 4"},
		{instant.In(zone(t, "America/New_York")), "Wednesday, 22 January 2025, 01:30:25 EST (UTC-05:00, America/New_York), ISO week 4"},
		// An abbreviation that is only an offset is not spoken twice.
		{instant.In(zone(t, "Asia/Dubai")), "Wednesday, 22 January 2025, 10:30:25 (UTC+04:00, Asia/Dubai), ISO week 4"},
		{instant, "Wednesday, 22 January 2025, 06:30:25 UTC (UTC+00:00), ISO week 4"},
		{instant.In(time.FixedZone("CET", 3600)), "Wednesday, 22 January 2025, 07:30:25 CET (UTC+01:00), ISO week 4"},
		{instant.In(time.FixedZone("", -9000)), "Wednesday, 22 January 2025, 04:00:25 (UTC-02:30), ISO week 4"},
		// The ISO week of the last days of a year can be the next year's first.
		{time.Date(2024, 12, 30, 9, 0, 0, 0, zone(t, "Europe/Berlin")), "Monday, 30 December 2024, 09:00:00 CET (UTC+01:00, Europe/Berlin), ISO week 1"},
	} {
		if got := timefmt.Detailed(c.t); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for format, want := range map[string]string{
		"":         "2025-01-22 06:30:25",
		"simple":   "2025-01-22 06:30:25",
		"detailed": "Wednesday, 22 January 2025, 06:30:25 UTC (UTC+00:00), ISO week 4",
	} {
		if got, err := timefmt.Format(instant, format); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", format, got, err, want)
		}
	}
	if got, err := timefmt.Format(instant, "long"); err == nil || err.Error() != `format must be "simple" or "detailed" (got "long")` {
		t.Errorf("long: %q %v", got, err)
	}
}

func TestSchemaIsTheSeeds(t *testing.T) {
	const seed = `{"type":"object","properties":{"format":{"type":"string","enum":["simple","detailed"],"description":"simple = short, detailed = full info"}}}`
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(timefmt.Schema)); err != nil || b.String() != seed {
		t.Errorf("schema %s (%v)\nwant   %s", b.String(), err, seed)
	}
	if timefmt.Name != "get_current_time" || timefmt.Description != "Retrieve current date and time" {
		t.Errorf("name %q, description %q", timefmt.Name, timefmt.Description)
	}
}
