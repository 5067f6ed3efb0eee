package goredisstore

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// redial shortens what a *redis.Client's pool does after its server
// restarts (the package doc says it for users). go-redis counts the dials
// that failed; once PoolSize have, it stops dialing: a call that needs a
// connection fails at once with the last dial error, and a goroutine of
// the pool dials once a second until one connects. So for up to a second
// after a restart the pool fails calls that the server would answer.
//
// A call of the store that meets a dial error (a *net.OpError of a dial,
// which go-redis returns before it writes anything: with MaxRetries -1
// the command never ran; go-redis itself retries such an error as safe)
// dials the server itself, with the client's Dialer: at most one such
// dial at a time and one per DialerRetryTimeout, each in the caller's
// goroutine, bounded by its context and DialTimeout; the calls that meet a
// dial error meanwhile return it. When that dial connects, the server is
// back: the call runs again on a spare client the store makes from the
// client's Options, and so does every call that meets a dial error after
// it, until the spare is retired: when the client gives a connection again
// (a call ends without a dial error), when the spare meets a dial error
// itself (the server went away again), or spareLife after it was made.
// A retired spare is closed once no call uses it.
type redial struct {
	c *redis.Client

	active atomic.Bool // spare != nil, read on every call

	mu      sync.Mutex
	opt     *redis.Options // c's, read only; read at the first dial error
	every   time.Duration  // between two of the store's dials
	probing bool           // a dial of the store's is under way
	next    time.Time      // no dial of the store's before
	spare   *spare         // the spare in use, nil when none
}

// spareLife bounds a spare's life: twice the interval of go-redis' own
// probe, after which the client's pool dials again if the server answers.
const spareLife = 2 * time.Second

// spare is a client the store made, with the calls that use it.
type spare struct {
	c       *redis.Client
	users   int
	retired bool
}

// isDialError reports whether err is a failed dial, which go-redis returns
// before it sends anything.
func isDialError(err error) bool {
	if err == nil {
		return false // before op, which escapes: no allocation per call
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// get returns the spare to run a call on that met a dial error, or nil
// when the server does not answer (or it is not the time to ask); put
// gives it back.
func (r *redial) get(ctx context.Context) *spare {
	r.mu.Lock()
	if s := r.spare; s != nil {
		s.users++
		r.mu.Unlock()
		return s
	}
	if r.opt == nil {
		// Not in New: a client go-redis did not build (a zero
		// redis.Client) has no Options, and its calls fail first.
		r.opt = r.c.Options()
		r.every = r.opt.DialerRetryTimeout
		if r.every <= 0 {
			r.every = 100 * time.Millisecond // go-redis' default
		}
	}
	now := time.Now()
	if r.probing || now.Before(r.next) {
		r.mu.Unlock()
		return nil
	}
	r.probing, r.next = true, now.Add(r.every)
	r.mu.Unlock()

	up := r.dial(ctx)

	r.mu.Lock()
	defer r.mu.Unlock()
	r.probing = false
	if !up {
		return nil
	}
	if r.spare == nil {
		s := &spare{c: redis.NewClient(spareOptions(r.opt))}
		r.spare = s
		r.active.Store(true)
		time.AfterFunc(spareLife, func() { r.retire(s) })
	}
	r.spare.users++
	return r.spare
}

// dial reports whether a dial to the server connects.
func (r *redial) dial(ctx context.Context) bool {
	if r.opt.DialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.opt.DialTimeout)
		defer cancel()
	}
	conn, err := r.opt.Dialer(ctx, r.opt.Network, r.opt.Addr)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// put ends a call's use of s; failedDial says whether s met a dial error,
// which retires it.
func (r *redial) put(s *spare, failedDial bool) {
	r.mu.Lock()
	s.users--
	if failedDial {
		r.retireLocked(s)
	}
	done := s.retired && s.users == 0
	r.mu.Unlock()
	if done {
		_ = s.c.Close()
	}
}

// retire retires s (nil: the spare in use, if any) and closes it if no
// call uses it.
func (r *redial) retire(s *spare) {
	r.mu.Lock()
	if s == nil {
		s = r.spare
	}
	if s == nil || s.retired {
		r.mu.Unlock()
		return
	}
	r.retireLocked(s)
	done := s.users == 0
	r.mu.Unlock()
	if done {
		_ = s.c.Close()
	}
}

// retireLocked marks s retired; r.mu is held.
func (r *redial) retireLocked(s *spare) {
	s.retired = true
	if r.spare == s {
		r.spare = nil
		r.active.Store(false)
	}
}

// spareOptions returns a copy of opt, a built client's Options, for a
// spare: redis.NewClient fills in defaults again, and some of the values
// it filled in would become others (MaxRetries 0, which -1 became, would
// become 3; a ReadTimeout of 0, which -1 became, 5 s), so those go back
// to what gives them. A spare has no client-side cache and no maintenance
// notifications (nothing it runs is cached, and it lives a second or two;
// its own copy of their state would race with the client's), and opens no
// idle connections ahead.
func spareOptions(opt *redis.Options) *redis.Options {
	o := *opt
	if o.MaxRetries == 0 {
		o.MaxRetries = -1
	}
	for _, d := range []*time.Duration{&o.MinRetryBackoff, &o.MaxRetryBackoff} {
		if *d == 0 {
			*d = -1
		}
	}
	for _, d := range []*time.Duration{&o.ReadTimeout, &o.WriteTimeout} {
		switch *d {
		case 0:
			*d = -1
		case -1:
			*d = -2
		}
	}
	o.MinIdleConns = 0
	o.ClientSideCache, o.ClientSideCacheConfig = nil, nil
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return &o
}
