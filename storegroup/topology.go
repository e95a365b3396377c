package storegroup

// Topology is every group of a deployment with its members, in the
// deployment's order: what each store must know of the others (whom it
// replicates with, whom it asks before creating its group, whose
// identities its leader records). The host daemon builds it from the
// deployment file, the test harness from the addresses it picked; both
// give each store its part with Place.
type Topology []PeerGroup

// Place fills cfg's identity fields for the store called name: Name,
// Group, Members (its group, in order) and OtherGroups (every other
// group). It reports false, leaving cfg unchanged, if no group has a
// member of that name.
func (t Topology) Place(cfg *Config, name string) bool {
	for _, g := range t {
		for _, m := range g.Members {
			if m.Name != name {
				continue
			}
			cfg.Name, cfg.Group, cfg.Members = name, g.Index, g.Members
			cfg.OtherGroups = nil
			for _, og := range t {
				if og.Index != g.Index {
					cfg.OtherGroups = append(cfg.OtherGroups, og)
				}
			}
			return true
		}
	}
	return false
}
