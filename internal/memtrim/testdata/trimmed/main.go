// Command trimmed trims itself, then uses what a trim must not take away:
// type descriptors and itabs (interfaces, reflection, JSON) and, in a cgo
// build, C functions reached through the GOT. TestTrimKeepsRelocatedPages
// builds it as shipped (position-independent) and expects "ok".
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"

	"github.com/agenthost/agenthost/internal/memtrim"
)

func main() {
	memtrim.Trim()
	var v any = map[string]any{"n": 1.5, "s": []string{"a"}}
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	u, err := user.Current() // libc's getpwuid_r in a cgo build
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("ok %s %s %v\n", b, u.Username, error(os.ErrNotExist))
}
