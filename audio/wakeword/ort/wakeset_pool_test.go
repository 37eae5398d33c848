package ort_test

import (
	"sync"

	"github.com/agenthost/agenthost/audio/wakeword/ort"
)

// onTwo calls work for each of items in order on two goroutines (the
// machine's two cores). Each goroutine has its own ONNX runtime, opened by
// open the first time work asks for it and closed at the end.
func onTwo[T any](items []T, open func() *ort.Runtime, work func(rt func() *ort.Runtime, item T)) {
	next := make(chan T)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r *ort.Runtime
			defer func() {
				if r != nil {
					r.Close()
				}
			}()
			rt := func() *ort.Runtime {
				if r == nil {
					r = open()
				}
				return r
			}
			for it := range next {
				work(rt, it)
			}
		}()
	}
	for _, it := range items {
		next <- it
	}
	close(next)
	wg.Wait()
}

// indices is 0, 1, …, n-1.
func indices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
