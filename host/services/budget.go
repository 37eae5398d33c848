package services

import (
	"fmt"
	"sync"
)

// BudgetLimits are a Budget's bounds and the settings that set them (named
// in the busy errors).
type BudgetLimits struct {
	// Name is the callers in errors ("MCP clients"), ClientName one of
	// them ("MCP session").
	Name, ClientName string
	// Max bounds the calls in flight of all the callers, PerClient those
	// of one client, PerProvider those to one provider, so that one that
	// never answers cannot take the whole budget (0: no bound).
	Max, PerClient, PerProvider                      int
	MaxSetting, PerClientSetting, PerProviderSetting string
}

// A Budget bounds the calls in flight of callers other than the voice
// server (MCP clients, the control socket), in all and per client. Their
// calls do not count against DispatchOptions.MaxInFlight, which is the
// voice server's alone, so they can never make its calls busy. A call
// holds its slot until its provider lets go, as with MaxInFlight.
type Budget struct {
	mu        sync.Mutex
	lim       BudgetLimits
	n         int
	clients   map[string]int // only clients with calls in flight
	providers map[string]int // by provider ID, only those with calls in flight
}

// NewBudget returns a budget with the limits l.
func NewBudget(l BudgetLimits) *Budget {
	return &Budget{lim: l, clients: map[string]int{}, providers: map[string]int{}}
}

// SetLimits replaces the bounds for the calls that start from now on.
func (b *Budget) SetLimits(l BudgetLimits) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lim = l
}

// take takes a slot for client's call to provider, or says why it cannot.
func (b *Budget) take(client, provider string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lim.Max > 0 && b.n >= b.lim.Max {
		return fmt.Sprintf("busy: %d calls of %s in flight (%s)", b.n, b.lim.Name, b.lim.MaxSetting)
	}
	if n := b.clients[client]; b.lim.PerClient > 0 && n >= b.lim.PerClient {
		return fmt.Sprintf("busy: %d calls of this %s in flight (%s)", n, b.lim.ClientName, b.lim.PerClientSetting)
	}
	if n := b.providers[provider]; b.lim.PerProvider > 0 && n >= b.lim.PerProvider {
		return fmt.Sprintf("busy: %d calls of %s to %s in flight (%s)", n, b.lim.Name, provider, b.lim.PerProviderSetting)
	}
	b.n++
	b.clients[client]++
	b.providers[provider]++
	return ""
}

// give gives the slot of client's call to provider back.
func (b *Budget) give(client, provider string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n--
	if b.clients[client]--; b.clients[client] <= 0 {
		delete(b.clients, client)
	}
	if b.providers[provider]--; b.providers[provider] <= 0 {
		delete(b.providers, provider)
	}
}
