package services

import (
	"fmt"
	"strings"
)

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

// Reserve keeps p's names for p (see ReservingProvider) without putting
// its services in the set: the host reserves the device's names even when
// services.builtins is off. A p that does not reserve does nothing.
func (r *Registry) Reserve(p Provider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reserveLocked(p.ID(), p.Services(), p) {
		r.publish()
	}
}

// reserveLocked records svcs' names, bare and under id's prefix, as id's
// when p reserves them (folded: see fold); it reports whether any is new.
// r.mu held.
func (r *Registry) reserveLocked(id string, svcs []Service, p Provider) bool {
	if !isReserving(p) {
		return false
	}
	added := false
	for _, s := range svcs {
		for _, name := range []string{fold(s.Name), fold(r.prefixFor(id) + s.Name)} {
			if _, ok := r.reserved[name]; !ok {
				r.reserved[name] = id
				added = true
			}
		}
	}
	return added
}

// fold is the form in which reserved names are compared: a name that
// differs from one only in case, or in '-' and '.' for '_', reads as the
// same to a model (Mute_Microphone beside mute_microphone).
func fold(name string) string {
	return strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToLower(name))
}

// reservedMessage says that a provider offered a name reserved for another,
// and how to register its service under another name.
func (r *Registry) reservedMessage(name, keeper, loser, svc string) string {
	key := namePart(loser)
	fix := fmt.Sprintf("set services.prefixes.%s: %q in the config to register it as %q", key, key+"_", key+"_"+svc)
	if p := r.prefixFor(loser); p != "" {
		fix = fmt.Sprintf("its prefix %q still clashes: choose another services.prefixes.%s in the config", p, key)
	}
	return fmt.Sprintf("service %q is reserved for the %s's own service, which no other provider may take; %s's is not registered (%s)",
		name, keeper, loser, fix)
}
