package raftport

import (
	"context"
	"net"
)

// Member is a member of a store group: its name (also its raft server ID)
// and where it listens. The raft port checks its peers against the group's
// members; package storegroup configures a store with them (its Member is
// this type).
type Member struct {
	Name       string // unique store name, also its raft server ID
	RaftAddr   string // host:port of its raft transport
	ClientAddr string // host:port of its client server
}

// DialFunc opens a connection to address, as (*net.Dialer).DialContext does.
// It is the type of Config.Dial: a test harness passes one to carry a store's
// outgoing connections, so it can refuse and cut links between stores.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)
