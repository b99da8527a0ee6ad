//go:build race

package acp

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts through a pool mean nothing.
const raceEnabled = true
