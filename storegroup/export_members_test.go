package storegroup

// RaftAddresses returns raft's configuration as this store knows it: each
// server's ID and address.
func (s *Store) RaftAddresses() map[string]string {
	out := map[string]string{}
	r := s.raftNode()
	if r == nil {
		return out
	}
	f := r.GetConfiguration()
	if f.Error() != nil {
		return out
	}
	for _, srv := range f.Configuration().Servers {
		out[string(srv.ID)] = string(srv.Address)
	}
	return out
}
