package repository

import bolt "go.etcd.io/bbolt"

// digestRegistrations adds to a source's digest what RegisterReceiver,
// ExpireReceiver and RegisterPaced recorded: the receivers' sessions,
// pacing and activity, then the source's pacing. Each part is written only
// when there is something, so a repository from before registrations
// digests as it did. The markers' lengths (22 and 6) tell them from "end"
// (3), the only field that may follow otherwise.
func digestRegistrations(d *digester, source string, b *bolt.Bucket, receivers []ReceiverPosition) error {
	var registered []ReceiverPosition
	for _, p := range receivers {
		if p.Session != "" || p.Paced || p.Active || p.RegisteredUnixNano != 0 || p.ExpiredUnixNano != 0 {
			registered = append(registered, p)
		}
	}
	if len(registered) > 0 {
		d.str("receiver-registrations")
		d.u64(uint64(len(registered)))
		for _, p := range registered {
			d.str(p.Receiver)
			d.str(p.Session)
			d.u64(boolU64(p.Paced))
			d.u64(boolU64(p.Active))
			d.u64(uint64(p.RegisteredUnixNano))
			d.u64(uint64(p.ExpiredUnixNano))
		}
	}
	mode, err := readPacing(source, b)
	if err != nil {
		return err
	}
	if mode != PacingNone {
		d.str("pacing")
		d.u64(uint64(mode))
	}
	return nil
}

func boolU64(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}
