//go:build race

package testmain

// raceDetector is true in a binary built with -race, where every goroutine
// runs several times slower: raft's heartbeats, timed for a real machine,
// then miss under a load that runs several clusters at once.
const raceDetector = true
