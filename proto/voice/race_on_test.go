//go:build race

package voice

// raceDetector: under -race, sync.Pool drops a quarter of what is put back,
// so code that takes its buffers from a pool allocates now and then.
const raceDetector = true
