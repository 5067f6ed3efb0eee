// Package cmdargs formats a script call's keys and arguments as the
// strings that string-based clients (rueidis, valkey-go) send, with as few
// allocations as it can: the strings of one call, or of one batch, share
// one buffer, which is never written again once they are made. A client
// may therefore hold them for as long as it likes, and the caller may
// reuse its own key buffers as soon as the call returns: keys are copied.
// The command's first tokens (its name, the script, the number of keys)
// go first in the same slice: a client that takes them as a variadic
// argument through an interface (rueidis' Arbitrary, called from generic
// code) then gets a slice that exists already, instead of one allocated
// for the call.
package cmdargs

import (
	"strconv"
	"unsafe"
)

const (
	frameStrs  = 20 // a policy of two limits fits
	frameBytes = 256
	maxInt     = 20 // len("-9223372036854775808")
)

// frame is one call's strings and their bytes in one allocation.
type frame struct {
	strs [frameStrs]string
	buf  [frameBytes]byte
}

// headLen is how many tokens a call starts with.
const headLen = 3

// Call returns the tokens a script call starts with (name, script and the
// number of keys), a copy of keys, and args as decimal strings, all in one
// slice of strings. A call whose strings fit in a frame (ratekit's own
// scripts do) costs one allocation; a larger one two.
func Call(name, script string, keys []string, args []int64) (head, k, a []string) {
	need := maxInt * (len(args) + 1)
	for _, key := range keys {
		need += len(key)
	}
	n := headLen + len(keys) + len(args)
	var all []string
	var buf []byte
	if n <= frameStrs && need <= frameBytes {
		f := new(frame)
		all, buf = f.strs[:n:n], f.buf[:0:frameBytes]
	} else {
		all, buf = make([]string, n), make([]byte, 0, need)
	}
	fill(all, buf, name, script, keys, args)
	return all[:headLen:headLen], all[headLen : headLen+len(keys) : headLen+len(keys)], all[headLen+len(keys):]
}

// Batch is Call for the n calls of a batch, all in one buffer: three
// allocations for the whole batch. part(i) returns call i's name,
// script, keys and arguments; Batch calls it twice for each call.
func Batch(n int, part func(i int) (name, script string, keys []string, args []int64)) (heads, keys, args [][]string) {
	strs, need := 0, 0
	for i := 0; i < n; i++ {
		_, _, k, a := part(i)
		strs += headLen + len(k) + len(a)
		need += maxInt * (len(a) + 1)
		for _, key := range k {
			need += len(key)
		}
	}
	all := make([]string, strs)
	buf := make([]byte, 0, need)
	three := make([][]string, 3*n)
	heads, keys, args = three[:n:n], three[n:2*n:2*n], three[2*n:]
	for i := 0; i < n; i++ {
		name, script, k, a := part(i)
		m := headLen + len(k) + len(a)
		buf = fill(all[:m], buf, name, script, k, a)
		heads[i], keys[i], args[i] = all[:headLen:headLen], all[headLen:headLen+len(k):headLen+len(k)], all[headLen+len(k):m:m]
		all = all[m:]
	}
	return heads, keys, args
}

// fill writes a call's tokens into out, appending the bytes of the number
// of keys, the keys and args to buf, which has room for all of them (so
// strings made earlier never move).
func fill(out []string, buf []byte, name, script string, keys []string, args []int64) []byte {
	start := len(buf)
	buf = strconv.AppendInt(buf, int64(len(keys)), 10)
	out[0], out[1], out[2] = name, script, unsafe.String(&buf[start], len(buf)-start)
	out = out[headLen:]
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
