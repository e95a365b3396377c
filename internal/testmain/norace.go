//go:build !race

package testmain

// raceDetector is true in a binary built with -race (see race.go).
const raceDetector = false
