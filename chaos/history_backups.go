package main

import "time"

// StoreBackup is a store that, at start, found its files damaged and moved
// them to a numbered backup, to rejoin its group empty (storegroup/open.go):
// what its host's log said.
type StoreBackup struct {
	Host        string    `json:"host"`
	Incarnation int       `json:"incarnation"`
	Store       string    `json:"store"`
	File        string    `json:"file,omitempty"`
	Why         string    `json:"why"`
	At          time.Time `json:"at"`
}

// AddBackups records the backups one host's log showed.
func (h *History) AddBackups(b []StoreBackup) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Backups = append(h.Backups, b...)
}
