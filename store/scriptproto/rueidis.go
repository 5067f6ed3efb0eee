package scriptproto

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/cmdargs"
)

// RueidisClient is what a Runner needs of a client of rueidis
// (github.com/redis/rueidis) or of valkey-go (github.com/valkey-io/valkey-go),
// its fork: one API under two sets of type names. rueidis.Client and
// valkey.Client have it, and [NewRueidis] infers the type parameters from
// either: C is the library's command (Completed), R its result, B its
// command builder and MO its ClientMode.
type RueidisClient[C, R, B any, MO ~string] interface {
	B() B
	Do(ctx context.Context, cmd C) R
	DoMulti(ctx context.Context, multi ...C) []R
	Mode() MO
}

// NewRueidis returns a Runner over c, a rueidis.Client or a valkey.Client,
// for the client library lib: the whole adapter of store/rueidis and
// store/valkey. The Runner is one node (SingleNode) when the client is
// not in cluster mode (standalone or sentinel); keys and arguments are
// copied into one buffer per call (three allocations per batch), which the
// client may hold as long as it likes. Commands EVALSHA_RO and EVAL_RO are
// marked read-only, so that the client may retry them. opts come after
// the Runner's own. A nil c is an error wrapping core.ErrInvalidConfig.
func NewRueidis[C any, R rueidisResult[M], M any, PM rueidisMessage[M], B rueidisBuilder[A], A rueidisCommand[A, C], MO ~string](lib string, c RueidisClient[C, R, B, MO], opts ...Option) (*Runner, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: %s: a nil client", core.ErrInvalidConfig, lib)
	}
	// ClientModeCluster is "cluster" in both libraries.
	own := []Option{SingleNode(c.Mode() != "cluster")}
	return New(lib, rueidisClient[C, R, M, PM, B, A, MO]{c}, append(own, opts...)...)
}

// The type parameters of NewRueidis beside RueidisClient's: the library's
// result R has the message M, and *M (PM) reads it; the builder B begins
// a command A, which builds a C.
type (
	rueidisResult[M any]  interface{ ToMessage() (M, error) }
	rueidisMessage[M any] interface {
		*M
		IsNil() bool
		ToArray() ([]M, error)
		ToInt64() (int64, error)
	}
	rueidisBuilder[A any]    interface{ Arbitrary(token ...string) A }
	rueidisCommand[A, C any] interface {
		Keys(keys ...string) A
		Args(args ...string) A
		Build() C
		ReadOnly() C
	}
)

// rueidisClient is the Client of a RueidisClient.
type rueidisClient[C any, R rueidisResult[M], M any, PM rueidisMessage[M], B rueidisBuilder[A], A rueidisCommand[A, C], MO ~string] struct {
	c RueidisClient[C, R, B, MO]
}

// Do implements Client.
func (k rueidisClient[C, R, M, PM, B, A, MO]) Do(ctx context.Context, c Cmd, reply []int64) ([]int64, error) {
	keys, argv := cmdargs.Call(c.Keys, c.Args)
	return k.decode(k.c.Do(ctx, k.build(c, keys, argv)), reply)
}

// DoMulti implements Client.
func (k rueidisClient[C, R, M, PM, B, A, MO]) DoMulti(ctx context.Context, cmds []Cmd, out []core.ScriptResult) {
	keys, argv := cmdargs.Batch(len(cmds), func(i int) ([]string, []int64) { return cmds[i].Keys, cmds[i].Args })
	built := make([]C, len(cmds))
	for i, c := range cmds {
		built[i] = k.build(c, keys[i], argv[i])
	}
	for i, res := range k.c.DoMulti(ctx, built...) {
		out[i].Reply, out[i].Err = k.decode(res, out[i].Reply)
	}
}

// build returns c as the library's command, its keys and arguments given
// as copies.
func (k rueidisClient[C, R, M, PM, B, A, MO]) build(c Cmd, keys, argv []string) C {
	a := k.c.B().Arbitrary(c.Name.String(), c.Payload(), strconv.Itoa(len(keys))).Keys(keys...).Args(argv...)
	if c.Name.ReadOnly() {
		return a.ReadOnly()
	}
	return a.Build()
}

// decode appends the integers of res to reply. A nil reply, or one that
// is not an array of integers, is a bad reply; any other error (the
// server's, the network's) is the client's own.
func (k rueidisClient[C, R, M, PM, B, A, MO]) decode(res R, reply []int64) ([]int64, error) {
	m, err := res.ToMessage()
	if err != nil {
		if PM(&m).IsNil() {
			return nil, BadReply(err)
		}
		return nil, err
	}
	arr, err := PM(&m).ToArray()
	if err != nil {
		return nil, BadReply(err)
	}
	for i := range arr {
		n, err := PM(&arr[i]).ToInt64()
		if err != nil {
			return nil, fmt.Errorf("%w: reply element %d is not an integer", core.ErrUnexpectedReply, i)
		}
		reply = append(reply, n)
	}
	return reply, nil
}
