package scriptproto

import (
	"context"
	"strconv"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/cmdargs"
)

// RueidisAPI is the Client of rueidis and of valkey-go, its fork: one API
// under two sets of type names. C is the library's command (Completed), R
// its result, M its message and PM a pointer to one. An adapter fills in
// the library's functions; RueidisAPI copies keys and arguments into
// strings (internal/cmdargs: one allocation per call, three per batch),
// which the library may hold as long as it likes.
type RueidisAPI[C, R, M any, PM interface {
	*M
	ToInt64() (int64, error)
}] struct {
	// Send and SendMulti are the client's Do and DoMulti.
	Send      func(context.Context, C) R
	SendMulti func(context.Context, ...C) []R
	// Build returns the command name payload numkeys keys... argv...,
	// marked read-only when name is.
	Build func(name Name, payload, numkeys string, keys, argv []string) C
	// ToArray is the result's ToArray.
	ToArray func(R) ([]M, error)
	// IsBadReply reports whether an error of ToArray is about the reply's
	// shape (a nil reply, a parse error) rather than the server's or the
	// network's.
	IsBadReply func(error) bool
}

// Do implements Client.
func (a RueidisAPI[C, R, M, PM]) Do(ctx context.Context, c Cmd, reply []int64) ([]int64, error) {
	keys, argv := cmdargs.Call(c.Keys, c.Args)
	return a.decode(a.Send(ctx, a.Build(c.Name, c.Payload(), strconv.Itoa(len(keys)), keys, argv)), reply)
}

// DoMulti implements Client.
func (a RueidisAPI[C, R, M, PM]) DoMulti(ctx context.Context, cmds []Cmd, out []core.ScriptResult) {
	keys, argv := cmdargs.Batch(len(cmds), func(i int) ([]string, []int64) { return cmds[i].Keys, cmds[i].Args })
	built := make([]C, len(cmds))
	for i, c := range cmds {
		built[i] = a.Build(c.Name, c.Payload(), strconv.Itoa(len(keys[i])), keys[i], argv[i])
	}
	for i, res := range a.SendMulti(ctx, built...) {
		out[i].Reply, out[i].Err = a.decode(res, out[i].Reply)
	}
}

func (a RueidisAPI[C, R, M, PM]) decode(res R, reply []int64) ([]int64, error) {
	arr, err := a.ToArray(res)
	if err != nil {
		if a.IsBadReply(err) {
			return nil, BadReply(err)
		}
		return nil, err
	}
	return AppendInts[M, PM](arr, reply)
}
