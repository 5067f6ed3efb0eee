package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/denycache"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

// Bounds of a request, beyond which it is refused with InvalidArgument
// before anything is matched or counted: a client is hostile.
const (
	maxDescriptors = 64   // Envoy sends one per rate limit action of a route
	maxEntries     = 16   // entries of one descriptor
	maxEntryLen    = 1024 // bytes of one key or value
)

// service answers Envoy's RLS v3 ShouldRateLimit from the rules in force.
type service struct {
	rlsv3.UnimplementedRateLimitServiceServer

	settings  settings
	rules     *rules.Rules
	stats     *stats
	log       *slog.Logger
	stopWatch func()

	// results holds the rules.Result of finished calls, for the next
	// ones: a decision's statuses are not allocated at every call.
	results sync.Pool
}

// newService loads the rules from the runtime directory and keeps them
// in force as it changes (rules.Rules.Watch). A first load that fails
// stops the start, unless FORCE_START_WITHOUT_INITIAL_CONFIG.
func newService(s settings, store core.ScriptRunner, st *stats, h *healthState, log *slog.Logger) (*service, error) {
	svc := &service{settings: s, stats: st, log: log, stopWatch: func() {}}
	svc.results.New = func() any { return new(rules.Result) }
	// The store of the rules whose failure_mode is local: this process's
	// memory, on the settings' clock.
	var localOpts []memory.Option
	if s.clock != nil {
		localOpts = append(localOpts, memory.WithClock(s.clock))
	}
	local, err := memory.New(localOpts...)
	if err != nil {
		return nil, err
	}
	dir := runtimeDir(s)
	if s.ConfigType == "GRPC_XDS_SOTW" {
		dir = "xDS " + s.XDSServerURL
	}
	if s.HealthyWithAtLeastOneConfigLoaded {
		h.set(componentConfig, false)
	}
	first := make(chan error, 1)
	var once sync.Once
	svc.rules, err = rules.New(store, nil, rules.Options{
		// A rule with a failure_mode gets half of the decision's time per
		// store call, so that its mode answers before the request's
		// deadline; the others return the store's error (Unavailable).
		Failsafe: failsafe.Config{
			Timeout: s.DecisionTimeout / 2,
			OnError: func(string, error) { st.inc(statRedisError) },
			Logger:  log,
		},
		LocalStore: local,
		Prefix:     s.CacheKeyPrefix,
		Atomic:     s.StopCacheKeyIncrementWhenOverlimit,
		QuotaMode:  s.GlobalQuotaMode,
		Clock:      s.clock,
		Wrap:       localCache(s),
		OnLoad: func(cfg *rules.Config, err error) {
			if err != nil {
				st.inc(statConfigLoadError)
				log.Error("Error loading new configuration", "from", dir, "err", err)
			} else {
				st.inc(statConfigLoadSuccess)
				if s.HealthyWithAtLeastOneConfigLoaded {
					h.set(componentConfig, len(cfg.Domains()) > 0)
				}
				log.Info("Successfully loaded new configuration", "from", dir, "domains", len(cfg.Domains()), "rules", len(cfg.Rules()))
			}
			once.Do(func() { first <- err })
		},
	})
	if err != nil {
		local.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if s.ConfigType == "GRPC_XDS_SOTW" {
			watchXDS(ctx, s, svc.rules, log)
			return
		}
		err := svc.rules.Watch(ctx, dir, rules.WatchOptions{
			LoadOptions: loadOptions(s),
			Interval:    s.RuntimePollInterval,
		})
		once.Do(func() { first <- err }) // Watch refused to start
	}()
	svc.stopWatch = func() { cancel(); <-done; local.Close() }
	if s.ForceStartWithoutInitialConfig && s.ConfigType == "GRPC_XDS_SOTW" {
		// envoyproxy/ratelimit starts at once too: the management server
		// (Envoy Gateway) may come up after the service.
		log.Warn("starting before the first configuration (FORCE_START_WITHOUT_INITIAL_CONFIG): calls fail until one loads", "from", dir)
		return svc, nil
	}
	if err := <-first; err != nil {
		if !s.ForceStartWithoutInitialConfig {
			svc.stopWatch()
			return nil, fmt.Errorf("rules in %s (RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY): %w", dir, err)
		}
		log.Error("starting without a configuration (FORCE_START_WITHOUT_INITIAL_CONFIG): every call fails until one loads", "dir", dir)
	}
	return svc, nil
}

func (svc *service) close() { svc.stopWatch() }

// localCacheEntryBytes is what one remembered denial is taken to cost, to
// turn LOCAL_CACHE_SIZE_IN_BYTES into a number of keys.
const localCacheEntryBytes = 128

// localCache is LOCAL_CACHE_SIZE_IN_BYTES: envoyproxy/ratelimit's local
// cache of keys over their limit, which answers OVER_LIMIT with no call to
// the store until the key's window ends. denycache does the same, exactly:
// a key is denied locally until the store's RetryAfter, no later.
func localCache(s settings) func(core.Limiter) (core.Limiter, error) {
	if s.LocalCacheSizeInBytes == 0 {
		return nil
	}
	opts := []denycache.Option{denycache.WithMaxKeys(max(1, s.LocalCacheSizeInBytes/localCacheEntryBytes))}
	if s.clock != nil {
		opts = append(opts, denycache.WithClock(s.clock))
	}
	return func(l core.Limiter) (core.Limiter, error) { return denycache.New(l, opts...) }
}

// ShouldRateLimit decides a request as envoyproxy/ratelimit does: one
// status per descriptor, in order, and the overall code. A request it
// cannot decide gets an error, never OK: InvalidArgument for a malformed
// one (nothing counted), Unavailable when the store failed or took longer
// than RATEKIT_DECISION_TIMEOUT, so that Envoy's failure_mode_deny applies.
func (svc *service) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	descriptors, err := requestDescriptors(req)
	if err != nil {
		svc.stats.inc(statServiceError)
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	hits := int64(req.GetHitsAddend())
	if hits == 0 {
		hits = 1 // envoy: a request's hits_addend of 0 means 1
	}
	ctx, cancel := context.WithTimeout(ctx, svc.settings.DecisionTimeout)
	defer cancel()
	res := svc.results.Get().(*rules.Result)
	defer svc.putResult(res)
	if err := svc.rules.DecideTo(ctx, res, req.GetDomain(), descriptors, hits); err != nil {
		return nil, svc.decideError(err)
	}
	return svc.response(req, res), nil
}

// putResult keeps res for another call, holding no rule of the
// configuration it was decided by (which a reload may replace).
func (svc *service) putResult(res *rules.Result) {
	clear(res.Statuses)
	svc.results.Put(res)
}

func (svc *service) decideError(err error) error {
	switch {
	case errors.Is(err, core.ErrStore), errors.Is(err, context.DeadlineExceeded):
		svc.stats.inc(statRedisError)
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, rules.ErrNoConfig):
		svc.stats.inc(statServiceError)
		return status.Error(codes.Unavailable, "no rate limit configuration loaded")
	case errors.Is(err, rules.ErrRequest):
		svc.stats.inc(statServiceError)
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	default:
		svc.stats.inc(statServiceError)
		return status.Error(codes.Internal, err.Error())
	}
}

// requestDescriptors checks a request and converts its descriptors.
func requestDescriptors(req *rlsv3.RateLimitRequest) ([]rules.Descriptor, error) {
	if req.GetDomain() == "" {
		return nil, errors.New("rate limit domain must not be empty")
	}
	if len(req.GetDomain()) > maxEntryLen {
		return nil, fmt.Errorf("rate limit domain longer than %d bytes", maxEntryLen)
	}
	ds := req.GetDescriptors()
	if len(ds) == 0 {
		return nil, errors.New("rate limit descriptor list must not be empty")
	}
	if len(ds) > maxDescriptors {
		return nil, fmt.Errorf("%d descriptors, more than %d", len(ds), maxDescriptors)
	}
	out := make([]rules.Descriptor, len(ds))
	// Every descriptor's entries in one array, as many as the bounds let
	// a request have.
	n := 0
	for _, d := range ds {
		n += min(len(d.GetEntries()), maxEntries)
	}
	entries := make([]rules.Entry, 0, n)
	for i, d := range ds {
		es := d.GetEntries()
		if len(es) == 0 {
			return nil, fmt.Errorf("descriptor %d has no entries", i)
		}
		if len(es) > maxEntries {
			return nil, fmt.Errorf("descriptor %d has %d entries, more than %d", i, len(es), maxEntries)
		}
		start := len(entries)
		for j, e := range es {
			if e.GetKey() == "" {
				return nil, fmt.Errorf("descriptor %d entry %d has an empty key", i, j)
			}
			if len(e.GetKey()) > maxEntryLen || len(e.GetValue()) > maxEntryLen {
				return nil, fmt.Errorf("descriptor %d entry %d is longer than %d bytes", i, j, maxEntryLen)
			}
			entries = append(entries, rules.Entry{Key: e.GetKey(), Value: e.GetValue()})
		}
		out[i].Entries = entries[start:len(entries):len(entries)]
		if l := d.GetLimit(); l != nil {
			u := rules.Unit(l.GetUnit())
			if u < rules.Second || u > rules.Year {
				return nil, fmt.Errorf("descriptor %d: limit override has unit %v", i, l.GetUnit())
			}
			out[i].Limit = &rules.Override{RequestsPerUnit: l.GetRequestsPerUnit(), Unit: u}
		}
		if h := d.GetHitsAddend(); h != nil {
			v := h.GetValue()
			if v > math.MaxUint32 {
				return nil, fmt.Errorf("descriptor %d: hits_addend %d is more than %d", i, v, uint64(math.MaxUint32))
			}
			n := int64(v)
			out[i].Hits = &n
		}
	}
	return out, nil
}

// response builds the RLS response from a decision, counting its stats.
func (svc *service) response(req *rlsv3.RateLimitRequest, res *rules.Result) *rlsv3.RateLimitResponse {
	n := len(res.Statuses)
	resp := &rlsv3.RateLimitResponse{
		OverallCode: rlsv3.RateLimitResponse_OK,
		Statuses:    make([]*rlsv3.RateLimitResponse_DescriptorStatus, n),
	}
	// The messages of every status in three arrays, not three
	// allocations per status.
	statuses := make([]rlsv3.RateLimitResponse_DescriptorStatus, n)
	limits := make([]rlsv3.RateLimitResponse_RateLimit, n)
	resets := make([]durationpb.Duration, n)
	if !res.Allowed {
		resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	var closest *rlsv3.RateLimitResponse_DescriptorStatus // for the headers: least remaining, a denial first
	closestOver := false
	for i := range res.Statuses {
		st := &res.Statuses[i]
		out := &statuses[i]
		out.Code, out.LimitRemaining = rlsv3.RateLimitResponse_Code(st.Code), st.Remaining
		if st.Checked {
			out.CurrentLimit = &limits[i]
			out.CurrentLimit.Name = st.Name
			out.CurrentLimit.RequestsPerUnit = st.RequestsPerUnit
			out.CurrentLimit.Unit = rlsv3.RateLimitResponse_RateLimit_Unit(st.Unit)
			out.DurationUntilReset = &resets[i]
			out.DurationUntilReset.Seconds = int64(ceilSeconds(st.ResetAfter) / time.Second)
			svc.count(st)
		}
		if st.DomainNotFound {
			svc.stats.inc(statRulePrefix + sanitizeStatName(req.GetDomain()) + ".domain_not_found")
		}
		resp.Statuses[i] = out
		if out.CurrentLimit != nil && !closestOver {
			over := out.Code == rlsv3.RateLimitResponse_OVER_LIMIT
			if over || closest == nil || out.LimitRemaining < closest.LimitRemaining {
				closest, closestOver = out, over
			}
		}
	}
	if !res.Allowed && svc.settings.GlobalShadowMode {
		resp.OverallCode = rlsv3.RateLimitResponse_OK
		svc.stats.inc(statGlobalShadowMode)
	}
	if svc.settings.ResponseHeadersEnabled && closest != nil {
		resp.ResponseHeadersToAdd = []*corev3.HeaderValue{
			{Key: svc.settings.HeaderLimit, Value: strconv.FormatUint(uint64(closest.CurrentLimit.RequestsPerUnit), 10)},
			{Key: svc.settings.HeaderRemaining, Value: strconv.FormatUint(uint64(closest.LimitRemaining), 10)},
			{Key: svc.settings.HeaderReset, Value: strconv.FormatInt(closest.DurationUntilReset.GetSeconds(), 10)},
		}
	}
	if svc.settings.ResponseMetadata {
		resp.DynamicMetadata = responseMetadata(req, res)
	}
	return resp
}

// count adds one descriptor's decision to its rule's stats, as
// envoyproxy/ratelimit counts them: from the window's count before and
// after the request (a denied request is counted there, not in ratekit).
func (svc *service) count(st *rules.Status) {
	if svc.settings.DisableStats || st.StatsKey == "" {
		return
	}
	hits := uint64(st.Hits)
	limit := uint64(st.RequestsPerUnit)
	before := limit - min(limit, uint64(st.Remaining))
	if st.Code == rules.OK && !st.Shadow {
		before -= min(before, hits) // Remaining is after this request's hits
	}
	shadow := st.Rule != nil && st.Rule.ShadowMode
	svc.stats.rule(st.StatsKey).record(hits, before, before+hits, limit, svc.settings.NearLimitRatio, shadow)
	if st.Rule != nil && len(st.Rule.Limits) > 1 && (st.Code == rules.OverLimit || st.Shadow) {
		// Which of the rule's limits denied: envoy's names cannot say.
		svc.stats.counter(limitStat(st.StatsKey, &st.Rule.Limits[st.Limit])).Add(hits)
	}
}

// ceilSeconds rounds d up to whole seconds, as envoy's duration_until_reset
// is (the window's length less the seconds elapsed in it).
func ceilSeconds(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + time.Second - 1) / time.Second * time.Second
}

// dumpConfig writes the rules in force, one line per rule, in
// envoyproxy/ratelimit's /rlconfig format.
func (svc *service) dumpConfig(w io.Writer) {
	cfg := svc.rules.Config()
	if cfg == nil {
		return
	}
	for _, r := range cfg.Rules() {
		unit := "UNKNOWN"
		if r.Unit != rules.UnitUnknown {
			unit = rlsv3.RateLimitResponse_RateLimit_Unit(r.Unit).String()
		}
		fmt.Fprintf(w, "%s: unit=%s requests_per_unit=%d, shadow_mode: %t, quota_mode: %t\n",
			r.Path, unit, r.RequestsPerUnit, r.ShadowMode, r.QuotaMode)
	}
}
