package rules

import (
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/core"
)

// interner keeps the storage keys of recent descriptors, so that a key
// built again in a buffer is a string already made: a decision on a key
// seen before allocates none. Each of its shards forgets all its keys
// when it holds internShardKeys: at most 64 Ki keys of internMaxLen
// bytes are held.
type interner struct {
	seed   maphash.Seed
	once   sync.Once
	shards [internShards]internShard
}

const (
	internShards    = 64
	internShardKeys = 1024
	// internMaxLen is the longest key kept: a client's values are
	// hostile, and a longer key costs an allocation, not memory held.
	internMaxLen = 512
)

type internShard struct {
	mu sync.RWMutex
	m  map[string]string
}

// get returns b as a string.
func (in *interner) get(b []byte) string {
	if len(b) > internMaxLen {
		return string(b)
	}
	in.once.Do(func() { in.seed = maphash.MakeSeed() })
	sh := &in.shards[maphash.Bytes(in.seed, b)%internShards]
	sh.mu.RLock()
	s, ok := sh.m[string(b)]
	sh.mu.RUnlock()
	if ok {
		return s
	}
	s = string(b)
	sh.mu.Lock()
	if sh.m == nil || len(sh.m) >= internShardKeys {
		sh.m = make(map[string]string, 64)
	}
	sh.m[s] = s
	sh.mu.Unlock()
	return s
}

// overrides keeps the parameters of the limits requests gave
// (Descriptor.Limit), built once each, up to maxOverrides of them.
type overrides struct {
	mu sync.RWMutex
	m  map[Override]core.Params
}

const maxOverrides = 4096

// params returns o's parameters: an epoch-aligned fixed window, as a
// rule of the same requests_per_unit and unit; nil for 0 requests per
// unit (every request is over the limit).
func (c *overrides) params(o Override) (core.Params, error) {
	if o.Unit.Duration() == 0 {
		return nil, fmt.Errorf("%w: a descriptor's limit has no unit (%d)", ErrRequest, o.Unit)
	}
	if o.RequestsPerUnit == 0 {
		return nil, nil
	}
	c.mu.RLock()
	p, ok := c.m[o]
	c.mu.RUnlock()
	if ok {
		return p, nil
	}
	p, err := fixedwindow.NewParams(fixedwindow.Config{Limit: int64(o.RequestsPerUnit), Window: o.Unit.Duration(), Aligned: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRequest, err)
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[Override]core.Params{}
	}
	if len(c.m) < maxOverrides {
		c.m[o] = p
	}
	c.mu.Unlock()
	return p, nil
}
