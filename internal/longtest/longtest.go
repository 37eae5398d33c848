// Package longtest says whether the long, measured tests run: the wake
// set, the world rooms, the long no-false-wakes runs. A plain `go test
// ./...` runs their short versions (a few clips or rooms instead of the
// whole set) so that it passes within Go's 10-minute default on a busy
// machine; AGENTHOST_LONG_TESTS=1 (scripts/test.sh sets it) runs them
// whole. docs/testing.md says what each part takes.
package longtest

import "os"

// Env is the environment variable that turns the long tests on.
const Env = "AGENTHOST_LONG_TESTS"

// Enabled says whether Env is set to 1.
func Enabled() bool { return os.Getenv(Env) == "1" }

// Pick is all when the long tests are on, else n of its items spread
// evenly over it (the first, the last, and between), in order.
func Pick[T any](all []T, n int) []T {
	if Enabled() || n <= 0 || len(all) <= n {
		return all
	}
	if n == 1 {
		return all[:1]
	}
	out := make([]T, 0, n)
	for i := range n {
		out = append(out, all[i*(len(all)-1)/(n-1)])
	}
	return out
}

// Scale is long when the long tests are on, else short: a length, a
// count or a duration of the test's material.
func Scale[T any](short, long T) T {
	if Enabled() {
		return long
	}
	return short
}
