package rules

import (
	"fmt"
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
	shards [internShards]internShard
}

const (
	internShardBits = 6
	internShards    = 1 << internShardBits
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
	sh := &in.shards[shardOf(b)]
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

// shardOf spreads keys over the shards by their last 8 bytes and
// length, which is where keys differ (the values), at the cost of a
// multiplication: a full hash here cost as much as the map's own. Keys
// chosen to fall in one shard only make it forget sooner.
func shardOf(b []byte) int {
	var x uint64
	for _, c := range b[max(len(b)-8, 0):] {
		x = x<<8 | uint64(c)
	}
	x = (x ^ uint64(len(b))) * 0x9e3779b97f4a7c15
	return int(x >> (64 - internShardBits))
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
