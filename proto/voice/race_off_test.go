//go:build !race

package voice

const raceDetector = false
