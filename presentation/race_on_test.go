//go:build race

package presentation

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts through a pool mean nothing.
const raceEnabled = true
