package mcpservers

import (
	"fmt"
	"log/slog"
	"reflect"
	"sync"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcpclient"
	"github.com/agenthost/agenthost/host/part"
	"github.com/agenthost/agenthost/host/services"
)

// Set is the MCP servers the configuration asks for: mcp.servers and the
// servers of mcp.servers_file, as last read. The registry's prefixes and
// order follow it; a reload reads the file again (Diff) and takes the new
// set (Reload), and PrefixChanged then tells the providers whose prefix
// the reload changed.
type Set struct {
	log *slog.Logger

	mu           sync.Mutex
	file, confs  map[string]mcpclient.ServerConfig
	old, current map[string]string // the prefixes before and after the last reload
}

// NewSet reads cfg's servers file and logs what it ignored.
func NewSet(cfg *config.Config, log *slog.Logger) *Set {
	file, warnings, err := serversFile(cfg.MCP.ServersFile)
	if err != nil {
		warnings = append(warnings, err.Error()+"; its servers are not started")
	}
	confs, more := configs(cfg, file)
	for _, w := range append(warnings, more...) {
		log.Warn("configuration: " + w)
	}
	p := Prefixes(cfg, confs)
	return &Set{log: log, file: file, confs: confs, old: p, current: p}
}

// Configs are the servers the configuration asks for.
func (s *Set) Configs() map[string]mcpclient.ServerConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confs
}

// Diff reads next's mcp.servers_file again: the change is
// "mcp.servers_file" when what it holds changed. A file that cannot be read
// or parsed is refused like a YAML with a mistake: the servers it gave stay
// (the last good read), and the log says why.
func (s *Set) Diff(next *config.Config) part.Changes {
	s.mu.Lock()
	defer s.mu.Unlock()
	file, warnings, err := serversFile(next.MCP.ServersFile)
	if err != nil {
		s.log.Error("the MCP servers file was not reloaded; the running servers stay. Fix the file and reload again", "err", err)
		return nil
	}
	if reflect.DeepEqual(file, s.file) {
		return nil
	}
	for _, w := range warnings {
		s.log.Warn("configuration: " + w)
	}
	s.file = file
	return part.Changes{"mcp.servers_file"}
}

// Live implements part.Live.
func (s *Set) Live() []string { return []string{"mcp.servers", "mcp.servers_file"} }

// Reload takes next's servers when mcp.servers or the file changed.
func (s *Set) Reload(prev, next *config.Config, changed part.Changes) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.confs
	if changed.Touched("mcp.servers", "mcp.servers_file") {
		confs, warnings := configs(next, s.file)
		for _, w := range warnings {
			s.log.Warn("configuration: " + w)
		}
		s.confs = confs
	}
	s.old, s.current = Prefixes(prev, old), Prefixes(next, s.confs)
}

// PrefixChanged reports whether the last reload changed the services
// prefix of the provider id.
func (s *Set) PrefixChanged(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return services.PrefixOf(s.old, id) != services.PrefixOf(s.current, id)
}

// serversFile reads mcp.servers_file ("" = none): its servers, and
// warnings about what was ignored.
func serversFile(path string) (map[string]mcpclient.ServerConfig, []string, error) {
	if path == "" {
		return nil, nil, nil
	}
	file, warnings, err := mcpclient.LoadServersFile(path)
	if err != nil {
		return nil, warnings, fmt.Errorf("mcp.servers_file: %w", err)
	}
	return file, warnings, nil
}

// Read returns the servers cfg asks for (mcp.servers and the servers of
// mcp.servers_file), what was ignored, and why the file cannot be read.
func Read(cfg *config.Config) (map[string]mcpclient.ServerConfig, []string, error) {
	file, warnings, err := serversFile(cfg.MCP.ServersFile)
	confs, more := configs(cfg, file)
	return confs, append(warnings, more...), err
}
