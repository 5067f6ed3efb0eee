package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/httplimit"
	"github.com/ratekit/ratekit/internal/logpace"
)

// The demo's log is paced as ratekit's own (httplimit, grpclimit): a
// store that is down fails every request, and the page polls two state
// endpoints twice a second, so the server's failures (slog.LevelError)
// are logged at most once every logpace.Every for each kind, each line's
// "suppressed" attribute counting the lines of its kind left out since
// the one before. A bad request (slog.LevelDebug) is logged every time.

// pacers holds one logpace.Pacer for each kind of line: a message and the
// route it was met on (both from a fixed set, so the map stays small).
type pacers struct {
	mu sync.Mutex
	m  map[string]*logpace.Pacer
}

// allow reports whether a line of kind may be logged at now and, when it
// may, how many lines of that kind were left out since the last one.
func (p *pacers) allow(kind string, now time.Time) (ok bool, suppressed int64) {
	p.mu.Lock()
	pc := p.m[kind]
	if pc == nil {
		if p.m == nil {
			p.m = map[string]*logpace.Pacer{}
		}
		pc = new(logpace.Pacer)
		p.m[kind] = pc
	}
	p.mu.Unlock()
	return pc.Allow(now)
}

// logLine logs msg, met while answering r, with r's method and path and
// attrs: at slog.LevelError paced for msg on r's route, every line below.
func (s *server) logLine(r *http.Request, level slog.Level, msg string, attrs ...slog.Attr) {
	if !s.log.Enabled(r.Context(), level) {
		return
	}
	attrs = append([]slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path)}, attrs...)
	if level >= slog.LevelError {
		ok, suppressed := s.paced.allow(msg+"\x00"+r.Pattern, s.clock.Now())
		if !ok {
			return
		}
		attrs = append(attrs, slog.Int64("suppressed", suppressed))
	}
	s.log.LogAttrs(r.Context(), level, msg, attrs...)
}

// keyAttr is a key for a log line: the key when it is no longer than a
// key demoKey takes, its length otherwise (a refused key can be a
// megabyte long).
func keyAttr(k string) slog.Attr {
	if len(k) > httplimit.DefaultMaxLen {
		return slog.Int("key_bytes", len(k))
	}
	return slog.String("key", k)
}

// requestKey is the key r names, for its log lines: its ?key= on a path
// that takes one (params), or else its X-Demo-Key; none when it names
// neither (a path about no key, such as /api/config).
func requestKey(r *http.Request, params []string) []slog.Attr {
	if slices.Contains(params, "key") {
		return []slog.Attr{keyAttr(r.URL.Query().Get("key"))}
	}
	if _, ok := r.Header["X-Demo-Key"]; ok {
		return []slog.Attr{keyAttr(r.Header.Get("X-Demo-Key"))}
	}
	return nil
}

// goredisLog is go-redis's logger (redis.SetLogger) for the demo: its
// lines (one for each call that cannot dial while Redis is down) go to
// the demo's log at slog.LevelWarn, paced as the demo's own errors.
type goredisLog struct {
	log   *slog.Logger
	clock core.Clock
	pacer logpace.Pacer
}

// Printf logs one go-redis line, unless it is paced out.
func (g *goredisLog) Printf(ctx context.Context, format string, v ...any) {
	if !g.log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	ok, suppressed := g.pacer.Allow(g.clock.Now())
	if !ok {
		return
	}
	g.log.LogAttrs(ctx, slog.LevelWarn, "demo: go-redis: "+fmt.Sprintf(format, v...), slog.Int64("suppressed", suppressed))
}
