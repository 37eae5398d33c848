package supervise

import "sync"

// Hold keeps the running child from an idle stop, as a call in flight
// would, until release is called (a plugin playing sound is busy without a
// call). ok is false when no child runs or it is being retired; a retire
// waits for a hold as for a call, up to its grace.
func (s *Supervisor) Hold() (release func(), ok bool) {
	s.mu.Lock()
	l := s.cur
	s.mu.Unlock()
	if l == nil || !l.acquire() {
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { s.release(l) }) }, true
}
