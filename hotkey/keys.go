package hotkey

// add returns key's slot, making one if there is room for it (after
// dropping idle keys, at most once per TTL), or nil when there is none.
// The map is copied on write so that AllowN reads it without a lock.
func (b *Budget) add(key string) *slot {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := *b.keys.Load()
	if s := m[key]; s != nil {
		return s
	}
	if len(m) >= b.maxKeys {
		now := b.now()
		if now-b.swept < b.ttl {
			return nil
		}
		b.swept = now
		m = b.sweep(m, now)
		if len(m) >= b.maxKeys {
			return nil
		}
	}
	next := make(map[string]*slot, len(m)+1)
	for k, s := range m {
		next[k] = s
	}
	s := newSlot(b.minLease)
	next[key] = s
	b.keys.Store(&next)
	return s
}

// sweep returns m without its idle slots: no live lease, no live denial,
// and no call holding the slot's lock. An evicted slot is marked dead, so
// a call that loaded it before goes back to the map; its expired lease's
// units are lost. Under b.mu.
func (b *Budget) sweep(m map[string]*slot, now int64) map[string]*slot {
	kept := make(map[string]*slot, len(m))
	for k, s := range m {
		select {
		case s.sem <- struct{}{}:
		default:
			kept[k] = s // busy
			continue
		}
		l, dn := s.cur.Load(), s.deny.Load()
		if l != nil && now < l.expires || dn != nil && now < dn.until {
			kept[k] = s
		} else {
			s.dead = true
			if l != nil {
				b.lost.Add(l.avail.Swap(0))
			}
		}
		s.unlock()
	}
	return kept
}
