package services

import "strings"

// Who owns a name: the rank of a provider, and the names a restarting one holds.

// rank is id's place in the order: an exact entry, else its kind's entry,
// else after every entry.
func (r *Registry) rank(id string) int {
	kind := -1
	for i, e := range r.order {
		if e == id {
			return i
		}
		if kind < 0 && strings.HasSuffix(e, ":") && strings.HasPrefix(id, e) {
			kind = i
		}
	}
	if kind >= 0 {
		return kind
	}
	return len(r.order)
}

// SetOrder ranks the providers anew (a configuration reload): see
// RegistryOptions.Order.
func (r *Registry) SetOrder(order []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.order = append([]string(nil), order...)
	for id, m := range r.members {
		m.rank = r.rank(id)
	}
	r.publish()
}

// Hold takes p's services out of the set while p restarts, keeping their
// names p's: a provider ranked after p cannot take them until p is Put
// again (it is back) or removed (it gave up). A p that is not the
// registered instance of its ID does nothing.
func (r *Registry) Hold(p Provider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[p.ID()]
	if !ok || m.p != p || m.held {
		return
	}
	m.held = true
	r.publish()
}

// HeldBy names the restarting provider that keeps name out of the set, or
// "" when none does.
func (r *Registry) HeldBy(name string) string {
	return r.snap.Load().held[name]
}
