// Command clock is the agenthost plugin that offers get_current_time, as
// the voice protocol's seed documents describe it: params
// {"format": "simple" | "detailed"}; "simple" answers "2025-01-22 14:30:25".
// The answers are internal/timefmt's, the same as the host's built-in; the
// time zone is configurable (plugins.config.clock.timezone).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"
	_ "time/tzdata" // IANA zones even where /usr/share/zoneinfo is missing

	"github.com/agenthost/agenthost/internal/timefmt"
	"github.com/agenthost/agenthost/plugins/sdk"
)

const version = "1.0.0"

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
			Name:        timefmt.Name,
			Description: timefmt.Description,
			Schema:      timefmt.Schema,
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

// getCurrentTime answers in the configured zone; the SDK has checked
// format against the schema.
func (c *clock) getCurrentTime(_ context.Context, p sdk.Params) (any, error) {
	s, err := timefmt.Format(c.now().In(c.loc.Load()), p.StringOr("format", "simple"))
	if err != nil {
		return nil, sdk.InvalidParams("%v", err)
	}
	return s, nil
}
