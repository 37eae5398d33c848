// Command sysinfo is the agenthost plugin that offers get_system_info: the
// device's uptime, load average, memory, disk usage of a configured path,
// temperature (where the board reports it, as a Raspberry Pi does under
// /sys/class/thermal), host name and IP addresses.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/plugins/sdk"
)

const version = "1.0.0"

// Fields are the facts get_system_info can report, in answer order.
var Fields = []string{"hostname", "uptime", "load", "memory", "disk", "temperature", "network"}

const getSystemInfoSchema = `{
  "type": "object",
  "properties": {
    "fields": {
      "type": "array",
      "items": {
        "type": "string",
        "enum": ["hostname", "uptime", "load", "memory", "disk", "temperature", "network"]
      },
      "description": "Which facts to report; all of them when omitted"
    }
  }
}`

// Config is plugins.config.sysinfo.
type Config struct {
	// DiskPath is the path whose file system "disk" reports; default "/".
	DiskPath string `json:"disk_path"`
}

// DiskUsage is what statfs tells about a file system.
type DiskUsage struct {
	Total, Free, Available uint64 // bytes
}

type sysinfo struct {
	diskPath atomic.Pointer[string]

	// Where to read from; tests point these elsewhere.
	procDir, sysDir string
	statfs          func(path string) (DiskUsage, error)
	hostname        func() (string, error)
	interfaces      func() ([]Interface, error)
}

// Interface is a network interface and its addresses.
type Interface struct {
	Name      string   `json:"interface"`
	Addresses []string `json:"addresses"`
}

func newSysinfo() *sysinfo {
	s := &sysinfo{procDir: "/proc", sysDir: "/sys", statfs: statfs, hostname: os.Hostname, interfaces: netInterfaces}
	root := "/"
	s.diskPath.Store(&root)
	return s
}

func (s *sysinfo) plugin() sdk.Plugin {
	return sdk.Plugin{
		Name:    "sysinfo",
		Version: version,
		Services: []sdk.Service{{
			Name:        "get_system_info",
			Description: "Get information about this device: host name, uptime, load, memory, disk usage, temperature and IP addresses",
			Schema:      getSystemInfoSchema,
			Handler:     s.getSystemInfo,
		}},
		Configure: s.configure,
	}
}

func (s *sysinfo) configure(raw json.RawMessage) error {
	var cfg Config
	if err := sdk.DecodeConfig(raw, &cfg); err != nil {
		return err
	}
	p := cfg.DiskPath
	if p == "" {
		p = "/"
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("disk_path %q must be an absolute path", p)
	}
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("disk_path %q: %v", p, err)
	}
	s.diskPath.Store(&p)
	return nil
}

// notReported is the value of a fact the device does not report.
const notReported = "not reported"

func (s *sysinfo) getSystemInfo(_ context.Context, p sdk.Params) (any, error) {
	want := p.Strings("fields")
	if len(want) == 0 {
		want = Fields
	}
	out := orderedMap{}
	for _, f := range Fields {
		if !contains(want, f) {
			continue
		}
		var v any
		var err error
		switch f {
		case "hostname":
			v, err = s.hostname()
		case "uptime":
			v, err = s.uptime()
		case "load":
			v, err = s.load()
		case "memory":
			v, err = s.memory()
		case "disk":
			v, err = s.disk()
		case "temperature":
			v = s.temperature()
		case "network":
			v, err = s.interfaces()
		}
		if err != nil {
			v = "not available: " + err.Error()
		}
		out = append(out, kv{f, v})
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Uptime is the "uptime" fact.
type Uptime struct {
	Seconds int64  `json:"seconds"`
	Text    string `json:"text"`
}

func (s *sysinfo) uptime() (Uptime, error) {
	b, err := os.ReadFile(filepath.Join(s.procDir, "uptime"))
	if err != nil {
		return Uptime{}, err
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return Uptime{}, errors.New("empty /proc/uptime")
	}
	secs, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return Uptime{}, fmt.Errorf("bad /proc/uptime: %v", err)
	}
	return Uptime{Seconds: int64(secs), Text: humanDuration(time.Duration(secs) * time.Second)}, nil
}

// humanDuration says d the way a person would: "3 days, 4 hours, 12 minutes".
func humanDuration(d time.Duration) string {
	days := int64(d / (24 * time.Hour))
	hours := int64(d/time.Hour) % 24
	mins := int64(d/time.Minute) % 60
	var parts []string
	add := func(n int64, unit string) {
		if n == 1 {
			parts = append(parts, "1 "+unit)
		} else if n > 1 {
			parts = append(parts, fmt.Sprintf("%d %ss", n, unit))
		}
	}
	add(days, "day")
	add(hours, "hour")
	add(mins, "minute")
	if len(parts) == 0 {
		return "less than a minute"
	}
	return strings.Join(parts, ", ")
}

// Load is the "load" fact.
type Load struct {
	One     float64 `json:"1m"`
	Five    float64 `json:"5m"`
	Fifteen float64 `json:"15m"`
	CPUs    int     `json:"cpus"`
}

func (s *sysinfo) load() (Load, error) {
	b, err := os.ReadFile(filepath.Join(s.procDir, "loadavg"))
	if err != nil {
		return Load{}, err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return Load{}, errors.New("bad /proc/loadavg")
	}
	var l Load
	for i, dst := range []*float64{&l.One, &l.Five, &l.Fifteen} {
		if *dst, err = strconv.ParseFloat(f[i], 64); err != nil {
			return Load{}, fmt.Errorf("bad /proc/loadavg: %v", err)
		}
	}
	l.CPUs = runtime.NumCPU()
	return l, nil
}

// Memory is the "memory" fact.
type Memory struct {
	TotalMB     uint64  `json:"total_mb"`
	AvailableMB uint64  `json:"available_mb"`
	UsedPercent float64 `json:"used_percent"`
}

func (s *sysinfo) memory() (Memory, error) {
	f, err := os.Open(filepath.Join(s.procDir, "meminfo"))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	kb := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		if n, err := strconv.ParseUint(fields[0], 10, 64); err == nil {
			kb[name] = n
		}
	}
	total, ok := kb["MemTotal"]
	if !ok || total == 0 {
		return Memory{}, errors.New("no MemTotal in /proc/meminfo")
	}
	avail, ok := kb["MemAvailable"]
	if !ok {
		avail = kb["MemFree"] + kb["Buffers"] + kb["Cached"]
	}
	return Memory{
		TotalMB:     total / 1024,
		AvailableMB: avail / 1024,
		UsedPercent: round1(100 * float64(total-min(avail, total)) / float64(total)),
	}, nil
}

// Disk is the "disk" fact.
type Disk struct {
	Path        string  `json:"path"`
	TotalGB     float64 `json:"total_gb"`
	FreeGB      float64 `json:"free_gb"`
	UsedPercent float64 `json:"used_percent"`
}

func (s *sysinfo) disk() (Disk, error) {
	p := *s.diskPath.Load()
	u, err := s.statfs(p)
	if err != nil {
		return Disk{}, err
	}
	d := Disk{Path: p, TotalGB: round1(float64(u.Total) / (1 << 30)), FreeGB: round1(float64(u.Available) / (1 << 30))}
	// Like df: used / (used + available to unprivileged users).
	if used := u.Total - min(u.Free, u.Total); used+u.Available > 0 {
		d.UsedPercent = round1(100 * float64(used) / float64(used+u.Available))
	}
	return d, nil
}

// Temperature is one thermal zone's reading.
type Temperature struct {
	Zone    string  `json:"zone"`
	Celsius float64 `json:"celsius"`
}

// temperature reads /sys/class/thermal/thermal_zone*/temp (millidegrees
// Celsius); it returns notReported when the board has none.
func (s *sysinfo) temperature() any {
	zones, _ := filepath.Glob(filepath.Join(s.sysDir, "class", "thermal", "thermal_zone*"))
	sort.Strings(zones)
	var out []Temperature
	for _, z := range zones {
		b, err := os.ReadFile(filepath.Join(z, "temp"))
		if err != nil {
			continue
		}
		milli, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			continue
		}
		name := filepath.Base(z)
		if t, err := os.ReadFile(filepath.Join(z, "type")); err == nil && strings.TrimSpace(string(t)) != "" {
			name = strings.TrimSpace(string(t))
		}
		out = append(out, Temperature{Zone: name, Celsius: round1(float64(milli) / 1000)})
	}
	if len(out) == 0 {
		return notReported
	}
	return out
}

func netInterfaces() ([]Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := []Interface{}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagLoopback != 0 || ifc.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		var ips []string
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || (ipn.IP.To4() == nil && ipn.IP.IsLinkLocalUnicast()) {
				continue
			}
			ips = append(ips, ipn.IP.String())
		}
		if len(ips) > 0 {
			out = append(out, Interface{Name: ifc.Name, Addresses: ips})
		}
	}
	return out, nil
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// orderedMap is a JSON object that keeps its keys in order.
type orderedMap []kv

type kv struct {
	k string
	v any
}

func (m orderedMap) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, e := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}
