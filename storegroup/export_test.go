package storegroup

import (
	"errors"

	"github.com/hashicorp/raft"
)

// TransferLeadership hands this leader's leadership to the member to, for
// tests that move leadership back and forth without stopping a store.
func (s *Store) TransferLeadership(to Member) error {
	r := s.raftNode()
	if r == nil {
		return errors.New("raft is not running")
	}
	return r.LeadershipTransferToServer(raft.ServerID(to.Name), raft.ServerAddress(to.RaftAddr)).Error()
}
