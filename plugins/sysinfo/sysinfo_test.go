package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/plugins/sdk"
)

// fakeSystem writes a /proc and /sys of a Raspberry Pi into a temp folder.
func fakeSystem(t *testing.T, withThermal bool) *sysinfo {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/uptime", "277935.42 1067231.48\n")
	write("proc/loadavg", "0.52 0.34 0.28 1/213 12345\n")
	write("proc/meminfo", "MemTotal:        3884376 kB\nMemFree:          512000 kB\nMemAvailable:    2913282 kB\nBuffers:           10000 kB\n")
	if withThermal {
		write("sys/class/thermal/thermal_zone0/temp", "48312\n")
		write("sys/class/thermal/thermal_zone0/type", "cpu-thermal\n")
		write("sys/class/thermal/thermal_zone1/temp", "garbage\n")
	}
	s := newSysinfo()
	s.procDir, s.sysDir = filepath.Join(dir, "proc"), filepath.Join(dir, "sys")
	s.statfs = func(p string) (DiskUsage, error) {
		return DiskUsage{Total: 32 << 30, Free: 22 << 30, Available: 20 << 30}, nil
	}
	s.hostname = func() (string, error) { return "raspberrypi", nil }
	s.interfaces = func() ([]Interface, error) {
		return []Interface{{Name: "wlan0", Addresses: []string{"192.168.1.20", "2001:db8::20"}}}, nil
	}
	return s
}

func info(t *testing.T, s *sysinfo, params string) string {
	t.Helper()
	v, err := s.getSystemInfo(context.Background(), sdk.MustParams(params))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAllFields(t *testing.T) {
	got := info(t, fakeSystem(t, true), `{}`)
	want := `{"hostname":"raspberrypi",` +
		`"uptime":{"seconds":277935,"text":"3 days, 5 hours, 12 minutes"},` +
		`"load":{"1m":0.52,"5m":0.34,"15m":0.28,"cpus":CPUS},` +
		`"memory":{"total_mb":3793,"available_mb":2845,"used_percent":25},` +
		`"disk":{"path":"/","total_gb":32,"free_gb":20,"used_percent":33.3},` +
		`"temperature":[{"zone":"cpu-thermal","celsius":48.3}],` +
		`"network":[{"interface":"wlan0","addresses":["192.168.1.20","2001:db8::20"]}]}`
	want = strings.Replace(want, "CPUS", strconv.Itoa(runtime.NumCPU()), 1)
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSelectedFieldsAndNoThermal(t *testing.T) {
	s := fakeSystem(t, false)
	if got := info(t, s, `{"fields":["temperature","hostname"]}`); got != `{"hostname":"raspberrypi","temperature":"not reported"}` {
		t.Errorf("got %s", got)
	}
	if got := info(t, s, `{"fields":[]}`); !strings.HasPrefix(got, `{"hostname":"raspberrypi","uptime":`) {
		t.Errorf("empty fields means all: %s", got)
	}
}

func TestFieldErrorsAreReported(t *testing.T) {
	s := fakeSystem(t, false)
	os.Remove(filepath.Join(s.procDir, "loadavg"))
	s.statfs = func(string) (DiskUsage, error) {
		return DiskUsage{}, errors.New("statfs /data: no such file or directory")
	}
	got := info(t, s, `{"fields":["load","disk","hostname"]}`)
	if !strings.Contains(got, `"load":"not available: open `) || !strings.Contains(got, `"disk":"not available: statfs /data: no such file or directory"`) || !strings.Contains(got, `"hostname":"raspberrypi"`) {
		t.Errorf("got %s", got)
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Second:              "less than a minute",
		time.Minute:                   "1 minute",
		61 * time.Minute:              "1 hour, 1 minute",
		2 * time.Hour:                 "2 hours",
		24*time.Hour + 3*time.Minute:  "1 day, 3 minutes",
		50*time.Hour + 59*time.Minute: "2 days, 2 hours, 59 minutes",
		400 * 24 * time.Hour:          "400 days",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("%v: got %q, want %q", d, got, want)
		}
	}
}

func TestConfigure(t *testing.T) {
	s := newSysinfo()
	dir := t.TempDir()
	if err := s.configure(json.RawMessage(`{"disk_path":"` + dir + `"}`)); err != nil {
		t.Fatal(err)
	}
	if *s.diskPath.Load() != dir {
		t.Errorf("disk path = %s", *s.diskPath.Load())
	}
	for cfg, want := range map[string]string{
		`{"disk_path":"data"}`:           "must be an absolute path",
		`{"disk_path":"/nonexistent/x"}`: "no such file or directory",
		`{"disk":"/"}`:                   `unknown option "disk"`,
	} {
		if err := s.configure(json.RawMessage(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
	if err := s.configure(json.RawMessage(`{}`)); err != nil || *s.diskPath.Load() != "/" {
		t.Errorf("default: %v %s", err, *s.diskPath.Load())
	}
}

// The real readers work on this machine (whatever it reports).
func TestRealSystem(t *testing.T) {
	s := newSysinfo()
	var m map[string]any
	if err := json.Unmarshal([]byte(info(t, s, `{}`)), &m); err != nil {
		t.Fatal(err)
	}
	for _, f := range Fields {
		if _, ok := m[f]; !ok {
			t.Errorf("no %s", f)
		}
		if str, ok := m[f].(string); ok && strings.HasPrefix(str, "not available") {
			t.Errorf("%s: %s", f, str)
		}
	}
}
