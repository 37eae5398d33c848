// Package timefmt owns the get_current_time service as the voice protocol's
// seed documents define it: its name, description and schema, and its two
// answer formats. The host's built-in and the clock plugin both answer with
// it, so the server hears the same thing from either.
package timefmt

import (
	"fmt"
	"strings"
	"time"
)

// Name, Description and Schema describe the service, as in the seeds.
const (
	Name        = "get_current_time"
	Description = "Retrieve current date and time"
	// Schema is the seeds' parameter schema, verbatim.
	Schema = `{
  "type": "object",
  "properties": {
    "format": {
      "type": "string",
      "enum": ["simple", "detailed"],
      "description": "simple = short, detailed = full info"
    }
  }
}`
)

// SimpleLayout gives the seeds' example, "2025-01-22 14:30:25".
const SimpleLayout = "2006-01-02 15:04:05"

// Simple formats t as the seeds do: "2025-01-22 14:30:25".
func Simple(t time.Time) string { return t.Format(SimpleLayout) }

// Detailed formats t as one sentence a voice model can read out or pick from:
// "Wednesday, 22 January 2025, 14:30:25 CST (UTC+08:00, Asia/Shanghai), ISO week 4".
// The zone's abbreviation is left out where it is only an offset ("+04"),
// and the location's name where it has none ("", "Local") or repeats it ("UTC").
func Detailed(t time.Time) string {
	abbr := t.Format("MST")
	var zone []string
	if !strings.HasPrefix(abbr, "+") && !strings.HasPrefix(abbr, "-") {
		zone = append(zone, abbr)
	}
	paren := "UTC" + t.Format("-07:00")
	if name := t.Location().String(); name != "" && name != "Local" && name != "UTC" && name != abbr {
		paren += ", " + name
	}
	zone = append(zone, "("+paren+")")
	_, week := t.ISOWeek()
	return fmt.Sprintf("%s, %d %s %d, %s %s, ISO week %d",
		t.Weekday(), t.Day(), t.Month(), t.Year(), t.Format("15:04:05"), strings.Join(zone, " "), week)
}

// Format answers get_current_time's format parameter: "simple" (also the
// default, "") or "detailed".
func Format(t time.Time, format string) (string, error) {
	switch format {
	case "", "simple":
		return Simple(t), nil
	case "detailed":
		return Detailed(t), nil
	}
	return "", fmt.Errorf("format must be \"simple\" or \"detailed\" (got %q)", format)
}
