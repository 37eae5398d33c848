package services

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/agenthost/agenthost/internal/clip"
	"github.com/agenthost/agenthost/proto/voice"
)

// Bounds on what the registry publishes, so that one provider cannot make
// the register larger than the server takes (a voice server drops a frame
// over its limit, 1 MiB for the simulator, and with it every service).
const (
	// DefaultMaxDescription bounds one service's description
	// (services.max_description); a longer one is cut, with "…".
	DefaultMaxDescription = 8 << 10
	// DefaultMaxRegister bounds the register payload (services.max_register).
	DefaultMaxRegister = 512 << 10
)

// bounds are the limits in force; zero values take the defaults.
type bounds struct {
	description, register int
}

func newBounds(description, register int) bounds {
	if description <= 0 {
		description = DefaultMaxDescription
	}
	if register <= 0 {
		register = DefaultMaxRegister
	}
	return bounds{description, register}
}

// cut shortens s's description to the bound and says so; "" when it fits.
func (b bounds) cut(id string, s *Service) string {
	n := len(s.Description)
	if n <= b.description {
		return ""
	}
	s.Description = clip.String(s.Description, b.description-len("…"))
	return fmt.Sprintf("service %s of %s: its description of %d bytes is cut to services.max_description (%s)",
		quoteShort(s.Name), id, n, SizeText(b.description))
}

// registerOverhead is the size of an empty register payload.
var registerOverhead = func() int {
	p, _ := voice.MarshalMCP(voice.MCPRegister, voice.Register{Services: map[string]voice.ServiceDef{}})
	return len(p)
}()

// entrySize is what one service adds to the register payload (without the
// comma between entries), markers escaped as MarshalMCP escapes them.
func entrySize(name string, def voice.ServiceDef) int {
	k, _ := json.Marshal(name)
	v, _ := json.Marshal(def)
	return len(voice.EscapeJSONMarkers(k)) + 1 + len(voice.EscapeJSONMarkers(v))
}

// fit keeps, from candidates in rank order (each provider's by name), every
// service that still fits the register bound, and says why it left out the
// others: the stated rule, so that which services a full register loses
// never depends on who answered first.
func (b bounds) fit(cands []Entry) (kept []Entry, leftOut []string, why map[string]string) {
	why = map[string]string{}
	total := registerOverhead
	for _, e := range cands {
		add := entrySize(e.Name, voice.ServiceDef{Description: e.Service.Description, Parameters: e.Service.Parameters})
		if len(kept) > 0 {
			add++ // the comma
		}
		if total+add <= b.register {
			total += add
			kept = append(kept, e)
			continue
		}
		msg := fmt.Sprintf("service %s of %s is left out of the register: it does not fit services.max_register (%s; services are kept "+
			"in rank order: built-ins, plugins, MCP servers as configured, each provider's by name); raise the bound or leave other services out "+
			"(services.deny, an MCP server's excluded_tools)", quoteShort(e.Name), e.Provider.ID(), SizeText(b.register))
		leftOut = append(leftOut, msg)
		why[e.Name] = msg
	}
	return kept, leftOut, why
}

// byName sorts one provider's entries by name.
func byName(es []Entry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
}

// SetBounds applies new bounds (a configuration reload): see
// RegistryOptions.MaxDescription and MaxRegister.
func (r *Registry) SetBounds(maxDescription, maxRegister int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bounds = newBounds(maxDescription, maxRegister)
	for id, m := range r.members {
		if entries, cuts, err := r.entriesOf(id, m.offered); err == nil {
			m.services, m.cuts = entries, cuts
		}
	}
	r.publish()
}

// LeftOut says which services do not fit services.max_register and are
// left out of the set, one message each, in rank order; empty when all fit.
func (r *Registry) LeftOut() []string {
	return append([]string(nil), r.snap.Load().leftOut...)
}

// LeftOutWhy says why a service of this name is left out of the register
// (services.max_register); "" when it is not.
func (r *Registry) LeftOutWhy(name string) string {
	return r.snap.Load().leftWhy[name]
}
