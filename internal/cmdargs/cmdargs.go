// Package cmdargs formats a script call's keys and arguments as the
// strings that string-based clients (rueidis, valkey-go) send, with as few
// allocations as it can: the strings of one call, or of one batch, share
// one buffer, which is never written again once they are made. A client
// may therefore hold them for as long as it likes, and the caller may
// reuse its own key buffers as soon as the call returns: keys are copied.
package cmdargs

import (
	"strconv"
	"unsafe"
)

const (
	frameStrs  = 16
	frameBytes = 256
	maxInt     = 20 // len("-9223372036854775808")
)

// frame is one call's strings and their bytes in one allocation.
type frame struct {
	strs [frameStrs]string
	buf  [frameBytes]byte
}

// Call returns a copy of keys and args as decimal strings. A call whose
// strings fit in a frame (ratekit's own scripts do) costs one allocation;
// a larger one two.
func Call(keys []string, args []int64) (k, a []string) {
	need := maxInt * len(args)
	for _, key := range keys {
		need += len(key)
	}
	n := len(keys) + len(args)
	var all []string
	var buf []byte
	if n <= frameStrs && need <= frameBytes {
		f := new(frame)
		all, buf = f.strs[:n:n], f.buf[:0:frameBytes]
	} else {
		all, buf = make([]string, n), make([]byte, 0, need)
	}
	fill(all, buf, keys, args)
	return all[:len(keys):len(keys)], all[len(keys):]
}

// Batch is Call for the n calls of a batch, all in one buffer: three
// allocations for the whole batch. part(i) returns call i's keys and
// arguments; Batch calls it twice for each call.
func Batch(n int, part func(i int) ([]string, []int64)) (keys, args [][]string) {
	strs, need := 0, 0
	for i := 0; i < n; i++ {
		k, a := part(i)
		strs += len(k) + len(a)
		need += maxInt * len(a)
		for _, key := range k {
			need += len(key)
		}
	}
	all := make([]string, strs)
	buf := make([]byte, 0, need)
	both := make([][]string, 2*n)
	keys, args = both[:n:n], both[n:]
	for i := 0; i < n; i++ {
		k, a := part(i)
		m := len(k) + len(a)
		buf = fill(all[:m], buf, k, a)
		keys[i], args[i] = all[:len(k):len(k)], all[len(k):m:m]
		all = all[m:]
	}
	return keys, args
}

// fill writes keys then args into out, appending their bytes to buf, which
// has room for all of them (so strings made earlier never move).
func fill(out []string, buf []byte, keys []string, args []int64) []byte {
	for i, k := range keys {
		if k == "" {
			continue
		}
		start := len(buf)
		buf = append(buf, k...)
		out[i] = unsafe.String(&buf[start], len(k))
	}
	for i, a := range args {
		start := len(buf)
		buf = strconv.AppendInt(buf, a, 10)
		out[len(keys)+i] = unsafe.String(&buf[start], len(buf)-start)
	}
	return buf
}
