package mixer

import (
	"math"
	"time"
)

// SetPolicy changes how media yields while the mixer runs (a reload):
// Options.DuckDB, Ramp and MediaWhileActive, with their defaults and
// ranges. A stream already turned down moves to the new level over the
// new ramp. Out of range, nothing changes and the error says why.
func (m *Mixer) SetPolicy(duckDB float64, ramp time.Duration, mediaWhileActive string) error {
	m.mu.Lock()
	o := m.o
	o.DuckDB, o.Ramp, o.MediaWhileActive = duckDB, ramp, mediaWhileActive
	o, err := o.withDefaults()
	if err != nil {
		m.mu.Unlock()
		return err
	}
	// Only these fields: the others are read without m.mu.
	m.o.DuckDB, m.o.Ramp, m.o.MediaWhileActive = o.DuckDB, o.Ramp, o.MediaWhileActive
	m.step = 1 / max(1, o.Ramp.Seconds()*float64(o.Rate))
	m.duck = math.Pow(10, o.DuckDB/20)
	m.hold = int64(max(2*o.Frame, o.Ramp).Seconds() * float64(o.Rate))
	m.mu.Unlock()
	m.log.Info("mixer policy changed", "duck_db", o.DuckDB, "ramp", o.Ramp, "media_while_active", o.MediaWhileActive)
	m.signal()
	return nil
}
