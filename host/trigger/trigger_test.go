package trigger

import "sync"

// recorder is a Handler that records what it receives and passes it on to
// ch, if set.
type recorder struct {
	mu  sync.Mutex
	got []string
	ch  chan string
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	r.got = append(r.got, e)
	r.mu.Unlock()
	if r.ch != nil {
		r.ch <- e
	}
}

func (r *recorder) Press()   { r.add("press") }
func (r *recorder) Release() { r.add("release") }

func (r *recorder) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}
