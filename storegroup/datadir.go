package storegroup

// DataDir is the store's data directory, for the daemon's own use (the
// admin server names it by the store's name in its answers instead of
// showing the path).
func (s *Store) DataDir() string { return s.cfg.DataDir }
