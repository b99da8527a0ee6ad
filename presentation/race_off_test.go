//go:build !race

package presentation

const raceEnabled = false
