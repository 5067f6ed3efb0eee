package scriptproto

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/cmdargs"
)

// RueidisClient is what a Runner needs of a client of rueidis
// (github.com/redis/rueidis) or of valkey-go (github.com/valkey-io/valkey-go),
// its fork: one API under two sets of type names. rueidis.Client and
// valkey.Client have it, and [NewRueidis] infers the type parameters from
// either: C is the library's command (Completed), R its result, B its
// command builder, MO its ClientMode and N the client of one node
// (Nodes, through which the Runner loads function libraries).
type RueidisClient[C, R, B any, MO ~string, N RueidisNode[C, R, B]] interface {
	B() B
	Do(ctx context.Context, cmd C) R
	DoMulti(ctx context.Context, multi ...C) []R
	Mode() MO
	Nodes() map[string]N
}

// RueidisNode is what a Runner needs of the client of one node of a
// [RueidisClient]: rueidis.Client and valkey.Client again.
type RueidisNode[C, R, B any] interface {
	B() B
	Do(ctx context.Context, cmd C) R
}

// NewRueidis returns a Runner over c, a rueidis.Client or a valkey.Client,
// for the client library lib: the whole adapter of store/rueidis and
// store/valkey. The Runner is one node (SingleNode) when the client is
// not in cluster mode (standalone or sentinel); keys and arguments are
// copied into one buffer per call (three allocations per batch), which the
// client may hold as long as it likes. Commands EVALSHA_RO and EVAL_RO are
// marked read-only, so that the client may retry them. opts come after
// the Runner's own. A nil c is an error wrapping core.ErrInvalidConfig.
func NewRueidis[C any, R rueidisResult[M], M any, PM rueidisInt[M], B rueidisBuilder[A], A rueidisCommand[A, C], MO ~string, N RueidisNode[C, R, B]](lib string, c RueidisClient[C, R, B, MO, N], opts ...Option) (*Runner, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: %s: a nil client", core.ErrInvalidConfig, lib)
	}
	// ClientModeCluster is "cluster" in both libraries.
	own := []Option{SingleNode(c.Mode() != "cluster")}
	return New(lib, rueidisClient[C, R, M, PM, B, A, MO, N]{c}, append(own, opts...)...)
}

// The type parameters of NewRueidis beside RueidisClient's: the library's
// result R holds an array of messages M, and *M (PM) reads one as an
// integer; the builder B begins a command A, which builds a C.
type (
	rueidisResult[M any] interface {
		ToArray() ([]M, error)
		Error() error
	}
	rueidisInt[M any] interface {
		*M
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
type rueidisClient[C any, R rueidisResult[M], M any, PM rueidisInt[M], B rueidisBuilder[A], A rueidisCommand[A, C], MO ~string, N RueidisNode[C, R, B]] struct {
	c RueidisClient[C, R, B, MO, N]
}

// Load implements Loader: FUNCTION LOAD on every node the client knows,
// one after the other (a replica answers READONLY, which the Runner
// passes over).
func (k rueidisClient[C, R, M, PM, B, A, MO, N]) Load(ctx context.Context, code string) []error {
	nodes := k.c.Nodes()
	errs := make([]error, 0, len(nodes))
	for _, n := range nodes {
		errs = append(errs, n.Do(ctx, n.B().Arbitrary("FUNCTION", "LOAD").Args(code).Build()).Error())
	}
	return errs
}

// Do implements Client.
func (k rueidisClient[C, R, M, PM, B, A, MO, N]) Do(ctx context.Context, c Cmd, reply []int64) ([]int64, error) {
	head, keys, argv := cmdargs.Call(c.Name.String(), c.Payload(), c.Keys, c.Args)
	return k.decode(k.c.Do(ctx, k.build(c.Name, head, keys, argv)), reply)
}

// DoMulti implements Client.
func (k rueidisClient[C, R, M, PM, B, A, MO, N]) DoMulti(ctx context.Context, cmds []Cmd, out []core.ScriptResult) {
	heads, keys, argv := cmdargs.Batch(len(cmds), func(i int) (string, string, []string, []int64) {
		return cmds[i].Name.String(), cmds[i].Payload(), cmds[i].Keys, cmds[i].Args
	})
	built := make([]C, len(cmds))
	for i, c := range cmds {
		built[i] = k.build(c.Name, heads[i], keys[i], argv[i])
	}
	for i, res := range k.c.DoMulti(ctx, built...) {
		out[i].Reply, out[i].Err = k.decode(res, out[i].Reply)
	}
}

// build returns the library's command of name from its tokens, as
// cmdargs made them.
func (k rueidisClient[C, R, M, PM, B, A, MO, N]) build(name Name, head, keys, argv []string) C {
	a := k.c.B().Arbitrary(head...).Keys(keys...).Args(argv...)
	if name.ReadOnly() {
		return a.ReadOnly()
	}
	return a.Build()
}

// decode appends the integers of res to reply. A nil reply, or one that
// is not an array of integers, is a bad reply; any other error (the
// server's, the network's) is the client's own.
func (k rueidisClient[C, R, M, PM, B, A, MO, N]) decode(res R, reply []int64) ([]int64, error) {
	arr, err := res.ToArray()
	if err != nil {
		// The result's own error is the server's or the network's, or
		// the library's nil (an error whose IsNil says so); without one,
		// the reply is not an array.
		var null interface{ IsNil() bool }
		if own := res.Error(); own != nil && !(errors.As(own, &null) && null.IsNil()) {
			return nil, err
		}
		return nil, BadReply(err)
	}
	reply = slices.Grow(reply, len(arr)) // one allocation for a batch's long reply
	for i := range arr {
		n, err := PM(&arr[i]).ToInt64()
		if err != nil {
			return nil, fmt.Errorf("%w: reply element %d is not an integer", core.ErrUnexpectedReply, i)
		}
		reply = append(reply, n)
	}
	return reply, nil
}
