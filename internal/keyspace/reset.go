package keyspace

import "github.com/ratekit/ratekit/core"

const resetLua = `return {redis.call('DEL', unpack(KEYS))}`

// ResetScript deletes every key it is given and replies {deleted}. Every
// algorithm's Reset runs it.
var ResetScript = core.NewScript("reset", resetLua, resetTwin, false)

func resetTwin(tx core.Tx, keys []string, _ []int64, reply []int64) ([]int64, error) {
	var n int64
	for _, k := range keys {
		if tx.Del(k) {
			n++
		}
	}
	return append(reply, n), nil
}
