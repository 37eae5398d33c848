package services

import (
	"bytes"
	"encoding/json"
	"sync/atomic"
)

// Params that passed once pass at once. A voice server calls a service with
// the same params again and again ({} or {"format":"simple"}), and decoding
// and validating them was most of the dispatcher's own work per call (and
// most of its allocations). What validation says depends only on the bytes
// and the compiled schema, so each entry remembers the last params that
// passed; an entry compiled again (a Put, a Reconfigure) starts afresh.

// maxRemembered bounds the params an entry remembers, in bytes.
const maxRemembered = 256

// validated is an entry's memory of the last params that passed.
type validated struct{ last atomic.Pointer[string] }

// passed reports whether raw are the params that passed last.
func (v *validated) passed(raw []byte) bool {
	if v == nil {
		return false
	}
	p := v.last.Load()
	return p != nil && *p == string(raw)
}

// remember notes params that passed.
func (v *validated) remember(raw []byte) {
	if v == nil || len(raw) > maxRemembered {
		return
	}
	s := string(raw)
	v.last.Store(&s)
}

// checkParams is validateParams, at once for the params that passed last.
func checkParams(e Entry, raw json.RawMessage) (json.RawMessage, string) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		t = json.RawMessage(`{}`)
	}
	if e.valid.passed(t) {
		return t, ""
	}
	params, msg := validateParams(e, raw)
	if msg == "" {
		e.valid.remember(params)
	}
	return params, msg
}
