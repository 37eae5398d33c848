package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sort"

	"github.com/agenthost/agenthost/host/services"
	"github.com/agenthost/agenthost/internal/clip"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server's lists: tools (reduced to the register's subset), resources and prompts.

// listTools takes the server's tools (all pages), reduces them, and stores
// the result; it reports whether the registered set changed. Problems are
// logged when they are new.
func (s *Session) listTools(ctx context.Context) (bool, error) {
	var tools []*mcp.Tool
	params := &mcp.ListToolsParams{}
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page == maxPages {
			return false, fmt.Errorf("more than %d pages of tools", maxPages)
		}
		res, err := s.cs.ListTools(ctx, params)
		if err != nil {
			return false, err
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			return false, fmt.Errorf("the server repeats the page cursor %q", clip.String(res.NextCursor, 40))
		}
		seen[res.NextCursor] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	svcs, left := s.reduceTools(tools)
	canonical, _ := json.Marshal(svcs)
	names := make([]string, len(svcs))
	for i, sv := range svcs {
		names[i] = sv.Name
	}
	s.mu.Lock()
	prevLeft := s.status.LeftOut
	changed := !bytes.Equal(canonical, s.canonical)
	s.svcs, s.canonical = svcs, canonical
	s.status.Tools, s.status.LeftOut = names, left
	s.mu.Unlock()
	for _, l := range left {
		known := false
		for _, p := range prevLeft {
			known = known || p == l
		}
		if !known {
			s.log.Warn("an MCP tool is left out", "tool", l.Tool, "reason", l.Reason)
		}
	}
	return changed, nil
}

// reduceTools turns tools into services, sorted by name, and lists those
// left out with the reason.
func (s *Session) reduceTools(tools []*mcp.Tool) ([]services.Service, []LeftOut) {
	var svcs []services.Service
	var left []LeftOut
	taken := map[string]bool{}
	for _, t := range tools {
		if t == nil {
			continue
		}
		if !s.wanted(t.Name) {
			continue
		}
		if !services.ValidName(t.Name) || !services.ValidName(s.o.Server.Prefix+t.Name) {
			left = append(left, LeftOut{Tool: clip.String(t.Name, 80), Reason: fmt.Sprintf("the name (with prefix %q) must be 1 to 64 letters, digits, '_', '.' or '-'", s.o.Server.Prefix)})
			continue
		}
		if taken[t.Name] {
			left = append(left, LeftOut{Tool: t.Name, Reason: "the server lists this name twice"})
			continue
		}
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			left = append(left, LeftOut{Tool: t.Name, Reason: "inputSchema: " + err.Error()})
			continue
		}
		params, err := ReduceSchema(raw)
		if err != nil {
			left = append(left, LeftOut{Tool: t.Name, Reason: err.Error()})
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		if desc == "" && t.Annotations != nil {
			desc = t.Annotations.Title
		}
		taken[t.Name] = true
		svcs = append(svcs, services.Service{Name: t.Name, Description: desc, Parameters: params, Timeout: s.o.Server.Timeout.D()})
	}
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].Name < svcs[j].Name })
	sort.Slice(left, func(i, j int) bool { return left[i].Tool < left[j].Tool })
	return svcs, left
}

// wanted applies allowed_tools and excluded_tools.
func (s *Session) wanted(name string) bool {
	match := func(patterns []string) bool {
		for _, p := range patterns {
			if ok, err := path.Match(p, name); p == name || (err == nil && ok) {
				return true
			}
		}
		return false
	}
	if len(s.o.Server.AllowedTools) > 0 && !match(s.o.Server.AllowedTools) {
		return false
	}
	return !match(s.o.Server.ExcludedTools)
}

// listOthers lists resources, resource templates and prompts for Status,
// when the server has them. Failures are logged, not fatal.
func (s *Session) listOthers(ctx context.Context) {
	res := s.cs.InitializeResult()
	if res == nil || res.Capabilities == nil {
		return
	}
	caps := res.Capabilities
	var resources, templates []Resource
	var prompts []Prompt
	if caps.Resources != nil {
		for r, err := range s.cs.Resources(ctx, nil) {
			if err != nil {
				s.log.Info("resources/list failed", "err", s.scrub(err))
				break
			}
			resources = append(resources, Resource{URI: r.URI, Name: r.Name, MIMEType: r.MIMEType})
			if len(resources) >= 1000 {
				break
			}
		}
		for r, err := range s.cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				s.log.Debug("resources/templates/list failed", "err", s.scrub(err))
				break
			}
			templates = append(templates, Resource{URI: r.URITemplate, Name: r.Name, MIMEType: r.MIMEType})
			if len(templates) >= 1000 {
				break
			}
		}
	}
	if caps.Prompts != nil {
		for p, err := range s.cs.Prompts(ctx, nil) {
			if err != nil {
				s.log.Info("prompts/list failed", "err", s.scrub(err))
				break
			}
			pr := Prompt{Name: p.Name, Description: p.Description}
			for _, a := range p.Arguments {
				if a != nil {
					pr.Arguments = append(pr.Arguments, a.Name)
				}
			}
			prompts = append(prompts, pr)
			if len(prompts) >= 1000 {
				break
			}
		}
	}
	s.mu.Lock()
	s.status.Resources, s.status.ResourceTemplates, s.status.Prompts = resources, templates, prompts
	s.mu.Unlock()
}
