package pluginmgr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/statefile"
)

// descCache keeps plugin descriptions on disk, one file per binary named by
// the plugin and the binary's sha256, so a lazy plugin is registered without
// starting it. An entry that does not read back exactly as written is
// ignored (and rebuilt by describing the binary again), never trusted.
type descCache struct {
	dir string // "" = no cache
}

// cacheFormat is the version of an entry's layout.
const cacheFormat = 1

type cacheEntry struct {
	Format   int            `json:"format"`
	Plugin   string         `json:"plugin"`
	SHA256   string         `json:"sha256"`
	Version  string         `json:"version,omitempty"`
	Services []cacheService `json:"services"`
}

type cacheService struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Timeout     time.Duration   `json:"timeout,omitempty"`
}

var hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (c descCache) path(name, hash string) string {
	return filepath.Join(c.dir, name+"-"+hash+".json")
}

// sweep removes the temporaries a writer killed mid-write left (the
// daemon's start: no temporary of ours outlives it).
func (c descCache) sweep() {
	if c.dir != "" {
		statefile.Sweep(c.dir)
	}
}

// get returns the cached description of the binary name/hash, or why there
// is none usable.
func (c descCache) get(name, hash string) ([]services.Service, string, error) {
	if c.dir == "" {
		return nil, "", fs.ErrNotExist
	}
	b, err := os.ReadFile(c.path(name, hash))
	if err != nil {
		return nil, "", err
	}
	var e cacheEntry
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, "", fmt.Errorf("unreadable: %w", err)
	}
	switch {
	case e.Format != cacheFormat:
		return nil, "", fmt.Errorf("format %d, want %d", e.Format, cacheFormat)
	case e.Plugin != name || e.SHA256 != hash:
		return nil, "", fmt.Errorf("it describes %s %s", e.Plugin, e.SHA256)
	case len(e.Services) == 0:
		return nil, "", errors.New("no services")
	}
	out := make([]services.Service, 0, len(e.Services))
	for _, s := range e.Services {
		if s.Name == "" || (len(s.Parameters) > 0 && !json.Valid(s.Parameters)) || s.Timeout < 0 {
			return nil, "", fmt.Errorf("service %q is malformed", s.Name)
		}
		out = append(out, services.Service{Name: s.Name, Description: s.Description, Parameters: s.Parameters, Timeout: s.Timeout})
	}
	return out, e.Version, nil
}

// put records a description and removes the entries of the plugin's other
// binaries. Failing to write only costs a start later, so errors are returned
// for the log.
func (c descCache) put(name, hash, version string, svcs []services.Service) error {
	if c.dir == "" || !hexDigest.MatchString(hash) {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	e := cacheEntry{Format: cacheFormat, Plugin: name, SHA256: hash, Version: version}
	for _, s := range svcs {
		e.Services = append(e.Services, cacheService{Name: s.Name, Description: s.Description, Parameters: s.Parameters, Timeout: s.Timeout})
	}
	if err := statefile.Write(c.path(name, hash), e); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(c.dir, name+"-*.json"))
	for _, p := range old {
		if p != c.path(name, hash) && hexDigest.MatchString(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), name+"-"), ".json")) {
			os.Remove(p)
		}
	}
	return nil
}
