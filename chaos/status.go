package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// storeStatus is the part of a store's /v1/status entry the harness reads.
type storeStatus struct {
	Name          string         `json:"name"`
	Group         int            `json:"group"`
	GroupID       string         `json:"group_id"`
	State         string         `json:"state"`
	Leader        string         `json:"leader"`
	AppliedIndex  uint64         `json:"applied_index"`
	SnapshotIndex uint64         `json:"snapshot_index"`
	HasState      bool           `json:"has_state"`
	CatchingUp    bool           `json:"catching_up"`
	WaitingToJoin bool           `json:"waiting_to_join"`
	Error         string         `json:"error"`
	Sources       []sourceStatus `json:"sources"`
	// Moved lists the members of the store's group that listen elsewhere
	// than its deployment file says (a replaced host's), MoveRefused the
	// members that refuse the store's own address, and why.
	Moved       []movedStatus `json:"moved"`
	MoveRefused string        `json:"move_refused"`
}

// movedStatus is a moved member in a store's /v1/status: where the store
// reaches it now, and whether its group's log records that.
type movedStatus struct {
	Name       string `json:"name"`
	ClientAddr string `json:"client_addr"`
	RaftAddr   string `json:"raft_addr"`
	Recorded   bool   `json:"recorded"`
}

// sourceStatus is the part of a source's entry in a store's /v1/status
// the harness reads.
type sourceStatus struct {
	Name           string           `json:"name"`
	HighSeq        uint64           `json:"high_seq"`
	Count          uint64           `json:"count"`
	TrimmedThrough uint64           `json:"trimmed_through"`
	Pacing         string           `json:"pacing"`
	Receivers      []receiverStatus `json:"receivers"`
}

// receiverStatus is the part of a named receiver's entry in a store's
// /v1/status the harness reads: the position the store recorded, how far
// the source's newest message is beyond it, and whether it is active and
// paced.
type receiverStatus struct {
	Name     string `json:"name"`
	Consumed uint64 `json:"consumed"`
	Lag      uint64 `json:"lag"`
	Active   bool   `json:"active"`
	Paced    bool   `json:"paced"`
}

var statusClient = &http.Client{Timeout: time.Second}

// status reads the host daemon's /v1/status.
func (h *host) status(ctx context.Context) ([]storeStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.adminAddr()+"/v1/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := statusClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("host %s status: %w", h.name, err)
	}
	defer resp.Body.Close()
	var st struct {
		Stores []storeStatus `json:"stores"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("host %s status: %w", h.name, err)
	}
	return st.Stores, nil
}
