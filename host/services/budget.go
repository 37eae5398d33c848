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
	// of one client (0: no bound).
	Max, PerClient               int
	MaxSetting, PerClientSetting string
}

// A Budget bounds the calls in flight of callers other than the voice
// server (MCP clients, the control socket), in all and per client. Their
// calls do not count against DispatchOptions.MaxInFlight, which is the
// voice server's alone, so they can never make its calls busy. A call
// holds its slot until its provider lets go, as with MaxInFlight.
type Budget struct {
	mu      sync.Mutex
	lim     BudgetLimits
	n       int
	clients map[string]int // only clients with calls in flight
}

// NewBudget returns a budget with the limits l.
func NewBudget(l BudgetLimits) *Budget {
	return &Budget{lim: l, clients: map[string]int{}}
}

// SetLimits replaces the bounds for the calls that start from now on.
func (b *Budget) SetLimits(l BudgetLimits) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lim = l
}

// take takes a slot for client, or says why it cannot.
func (b *Budget) take(client string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lim.Max > 0 && b.n >= b.lim.Max {
		return fmt.Sprintf("busy: %d calls of %s in flight (%s)", b.n, b.lim.Name, b.lim.MaxSetting)
	}
	if n := b.clients[client]; b.lim.PerClient > 0 && n >= b.lim.PerClient {
		return fmt.Sprintf("busy: %d calls of this %s in flight (%s)", n, b.lim.ClientName, b.lim.PerClientSetting)
	}
	b.n++
	b.clients[client]++
	return ""
}

// give gives client's slot back.
func (b *Budget) give(client string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n--
	if b.clients[client]--; b.clients[client] <= 0 {
		delete(b.clients, client)
	}
}
