// Package rueidisstore runs ratekit scripts through rueidis
// (github.com/redis/rueidis). It lives in store/rueidis and is named
// rueidisstore so that callers need no alias beside the client package:
//
//	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"localhost:6379"}})
//	store, err := rueidisstore.New(client)
//	lim, err := tokenbucket.New(store, cfg)
//
// The store is a *scriptproto.Runner: the protocol every ratekit Redis
// adapter shares (EVALSHA with its EVAL fallback, batches, slot and
// context checks), with its options (scriptproto.WithoutReadOnlyCommands
// for Redis before 7.0 and miniredis). rueidis pipelines concurrent
// commands on shared connections by itself (auto pipelining), so many
// goroutines deciding at once share network writes; a batch (AllowMany) is
// one DoMulti, one round trip per node. Single node, cluster (detected by
// the client) and sentinel work as the client supports them; out of
// cluster mode a batch's keys may span slots.
//
// Client options (rueidis.ClientOption) that matter to a limiter:
//   - DisableCache: true when the server lacks CLIENT TRACKING (Redis
//     before 6, many proxies, miniredis), or NewClient fails. ratekit
//     never uses client-side caching.
//   - ForceSingleClient: true to point a client at miniredis, which
//     answers CLUSTER SHARDS: rueidis would otherwise take it for a
//     cluster.
//   - Dialer.Timeout (5 s by default): how long a dial may take.
//   - ConnWriteTimeout (10 s by default): how long a command may wait for
//     its reply on a connection whose server stopped answering (a paused
//     process, a partition) before the connection fails. A call ends
//     sooner when its context does; a context with no deadline (a
//     net/http request's) waits that long, so bound the call (failsafe, or
//     httplimit's Timeout).
//   - DisableRetry: rueidis never retries EVALSHA or EVAL, which may
//     write, so every decision runs at most once and a lost reply is an
//     error; it retries the read-only EVALSHA_RO and EVAL_RO (a limiter's
//     Peek) after a network error, unless DisableRetry is set.
//   - AlwaysPipelining (false): every connection reads in the background,
//     so that one the server closed (a restart) is dropped at once and the
//     next call dials. Without it, a connection that has only carried one
//     call at a time, from contexts with a deadline (httplimit's and
//     failsafe's calls have one) or that cannot end, has no background
//     reader and is found closed by the next call on it, which fails: one
//     failed call for each connection the client keeps to the node
//     (PipelineMultiplex: 4 to one node by default), and so, behind
//     failsafe, which probes once a RetryInterval, up to one RetryInterval
//     each before decisions come from a restarted server. The hand-off to
//     the background goroutines costs a lone caller some microseconds per
//     call (BenchmarkTokenBucket/serial against
//     BenchmarkTokenBucketAlwaysPipelining/serial); calls that overlap on
//     a connection start them anyway.
package rueidisstore

import (
	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/store/scriptproto"
)

// New returns the store that runs scripts with c: a client in cluster
// mode is a cluster, any other one node (scriptproto.SingleNode). It sends
// nothing. A nil c is an error wrapping core.ErrInvalidConfig.
func New(c rueidis.Client, opts ...scriptproto.Option) (*scriptproto.Runner, error) {
	return scriptproto.NewRueidis("rueidis", c, opts...)
}
