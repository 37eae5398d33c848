// Command clock is the agenthost plugin that offers get_current_time, as
// the voice protocol's seed documents describe it: params
// {"format": "simple" | "detailed"}; "simple" answers "2025-01-22 14:30:25".
// The time zone is configurable (plugins.config.clock.timezone).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"
	_ "time/tzdata" // IANA zones even where /usr/share/zoneinfo is missing

	"github.com/agenthost/agenthost/plugins/sdk"
)

const version = "1.0.0"

// getCurrentTimeSchema is the seed's schema for get_current_time, verbatim.
const getCurrentTimeSchema = `{
  "type": "object",
  "properties": {
    "format": {
      "type": "string",
      "enum": ["simple", "detailed"],
      "description": "simple = short, detailed = full info"
    }
  }
}`

// Config is plugins.config.clock.
type Config struct {
	// Timezone is an IANA time zone name such as "Europe/Berlin"; empty or
	// "Local" means the system's zone (TZ, /etc/localtime).
	Timezone string `json:"timezone"`
}

// clock holds the plugin's state.
type clock struct {
	loc atomic.Pointer[time.Location]
	now func() time.Time
}

func newClock() *clock {
	c := &clock{now: time.Now}
	c.loc.Store(time.Local)
	return c
}

func (c *clock) plugin() sdk.Plugin {
	return sdk.Plugin{
		Name:    "clock",
		Version: version,
		Services: []sdk.Service{{
			Name:        "get_current_time",
			Description: "Retrieve current date and time",
			Schema:      getCurrentTimeSchema,
			Handler:     c.getCurrentTime,
		}},
		Configure: c.configure,
	}
}

func (c *clock) configure(raw json.RawMessage) error {
	var cfg Config
	if err := sdk.DecodeConfig(raw, &cfg); err != nil {
		return err
	}
	loc := time.Local
	if cfg.Timezone != "" && cfg.Timezone != "Local" {
		l, err := time.LoadLocation(cfg.Timezone)
		if err != nil {
			return fmt.Errorf("timezone %q is not a known IANA time zone name (like \"Europe/Berlin\" or \"Asia/Shanghai\")", cfg.Timezone)
		}
		loc = l
	}
	c.loc.Store(loc)
	return nil
}

func (c *clock) getCurrentTime(_ context.Context, p sdk.Params) (any, error) {
	t := c.now().In(c.loc.Load())
	if p.StringOr("format", "simple") == "detailed" {
		return detailed(t), nil
	}
	return simple(t), nil
}

// simple is the seed's format: "2025-01-22 14:30:25".
func simple(t time.Time) string {
	return t.Format("2006-01-02 15:04:05")
}

// detailed is a full, readable description of t, e.g.
// "Wednesday, 22 January 2025, 14:30:25 CST (UTC+08:00, Asia/Shanghai);
// ISO 8601: 2025-01-22T14:30:25+08:00; day 22 of the year, ISO week 4".
func detailed(t time.Time) string {
	zone := t.Format("MST") + " (UTC" + t.Format("-07:00")
	if name := t.Location().String(); name != "Local" && name != "UTC" && name != t.Format("MST") {
		zone += ", " + name
	}
	zone += ")"
	_, week := t.ISOWeek()
	return fmt.Sprintf("%s, %d %s %d, %s %s; ISO 8601: %s; day %d of the year, ISO week %d",
		t.Weekday(), t.Day(), t.Month(), t.Year(), t.Format("15:04:05"), zone,
		t.Format(time.RFC3339), t.YearDay(), week)
}
