package hotkey

// Stats counts a Budget's units since New. The units it allowed are
// Granted - Refunded - Lost - Held + Direct.
type Stats struct {
	// Keys is the number of keys holding a budget now.
	Keys int
	// Leases is the number of lease calls the store granted (at least one
	// unit each).
	Leases int64
	// Granted is the units those leases took from the shared limit.
	Granted int64
	// Refunded is the unused units given back to the store.
	Refunded int64
	// Lost is the unused units written off: of leases that expired, that
	// Reset dropped, or whose refund failed or had no Refund to go to.
	Lost int64
	// Held is the unused units of the leases held now, live or expired but
	// not yet written off (that happens at the key's next lease, at Close,
	// or when the key is dropped as idle).
	Held int64
	// Direct is the units the source allowed to requests it decided
	// itself: costs above Lease, keys past MaxKeys, calls after Close, and
	// a request of cost n > 1 the lease could not cover.
	Direct int64
}

// Stats returns the Budget's counts. Taken while requests are decided, the
// counts are each exact but not read at one instant.
func (b *Budget) Stats() Stats {
	if !b.built() {
		return Stats{}
	}
	m := *b.keys.Load()
	st := Stats{Keys: len(m)}
	for _, s := range m {
		if l := s.cur.Load(); l != nil {
			st.Held += l.avail.Load()
		}
	}
	st.Leases = b.leases.Load()
	st.Granted = b.granted.Load()
	st.Refunded = b.refunded.Load()
	st.Lost = b.lost.Load()
	st.Direct = b.direct.Load()
	return st
}
