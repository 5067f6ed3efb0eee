package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gostats "github.com/lyft/gostats"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ratekit/ratekit/rules"
)

// Stat names, as envoyproxy/ratelimit emits them (src/stats/manager_impl.go),
// so that dashboards and alerts keep working.
const (
	statPrefix            = "ratelimit.service."
	statRulePrefix        = statPrefix + "rate_limit."
	statConfigLoadSuccess = statPrefix + "config_load_success"
	statConfigLoadError   = statPrefix + "config_load_error"
	statGlobalShadowMode  = statPrefix + "global_shadow_mode"
	statRedisError        = statPrefix + "call.should_rate_limit.redis_error"
	statServiceError      = statPrefix + "call.should_rate_limit.service_error"

	// statLimitPrefix begins ratekit's own counters, which envoyproxy/ratelimit
	// has no name for: statLimitPrefix + <stats key> + "." + <limit> +
	// ".over_limit" counts the hits denied by one limit of a rule of
	// several (also), the limit named by its name or its rate
	// ("1000_per_day", "5_per_30s").
	statLimitPrefix = "ratekit.rate_limit."
)

// stats holds every counter by its statsd name. Counters are created on
// first use and never removed, as envoyproxy/ratelimit's are.
type stats struct {
	mu       sync.RWMutex
	counters map[string]*atomic.Uint64
	rules    sync.Map // stats key -> *ruleStats
}

func newStats() *stats {
	return &stats{counters: map[string]*atomic.Uint64{}}
}

// counter returns the counter named name, creating it.
func (s *stats) counter(name string) *atomic.Uint64 {
	s.mu.RLock()
	c := s.counters[name]
	s.mu.RUnlock()
	if c != nil {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c = s.counters[name]; c == nil {
		c = new(atomic.Uint64)
		s.counters[name] = c
	}
	return c
}

func (s *stats) inc(name string) { s.counter(name).Add(1) }

// ruleStats are one rule's counters, under its stats key
// (domain.key[_value]...).
type ruleStats struct {
	totalHits, overLimit, nearLimit, withinLimit, shadowMode *atomic.Uint64
}

// rule returns the counters of the rule whose stats key is key.
func (s *stats) rule(key string) *ruleStats {
	if r, ok := s.rules.Load(key); ok {
		return r.(*ruleStats)
	}
	name := statRulePrefix + sanitizeStatName(key) + "."
	r := &ruleStats{
		totalHits:   s.counter(name + "total_hits"),
		overLimit:   s.counter(name + "over_limit"),
		nearLimit:   s.counter(name + "near_limit"),
		withinLimit: s.counter(name + "within_limit"),
		shadowMode:  s.counter(name + "shadow_mode"),
	}
	actual, _ := s.rules.LoadOrStore(key, r)
	return actual.(*ruleStats)
}

// sanitizeStatName is envoyproxy/ratelimit's utils.SanitizeStatName:
// statsd reserves ':' and '|'.
func sanitizeStatName(s string) string {
	return strings.NewReplacer(":", "_", "|", "_").Replace(s)
}

// record counts one descriptor's hits as envoyproxy/ratelimit's
// BaseRateLimiter does: before and after are the window's count before and
// after this request, limit its requests_per_unit.
func (r *ruleStats) record(hits, before, after, limit uint64, nearRatio float64, shadow bool) {
	r.totalHits.Add(hits)
	near := uint64(float64(float32(limit) * float32(nearRatio)))
	if after > limit {
		if before >= limit {
			r.overLimit.Add(hits)
		} else {
			r.overLimit.Add(after - limit)
			r.nearLimit.Add(limit - max(near, before))
		}
		if shadow {
			if before >= limit {
				r.shadowMode.Add(hits)
			} else {
				r.shadowMode.Add(after - limit)
			}
		}
		return
	}
	if after > near {
		if before >= near {
			r.nearLimit.Add(hits)
		} else {
			r.nearLimit.Add(after - near)
		}
	}
	r.withinLimit.Add(hits)
}

// snapshot returns every counter's name and value, sorted by name.
func (s *stats) snapshot() []statValue {
	s.mu.RLock()
	out := make([]statValue, 0, len(s.counters))
	for name, c := range s.counters {
		out = append(out, statValue{name, c.Load()})
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

type statValue struct {
	name  string
	value uint64
}

// writeText writes "name: value" lines, as envoyproxy/ratelimit's debug
// /stats does.
func (s *stats) writeText(w io.Writer) {
	for _, v := range s.snapshot() {
		fmt.Fprintf(w, "%s: %d\n", v.name, v.value)
	}
}

// Prometheus names: envoyproxy/ratelimit maps its statsd names to
// Prometheus with statsd_exporter and its default mapping
// (src/stats/prom/default_mapper.yaml); the same mapping is applied here.
var (
	ruleStatPattern = regexp.MustCompile(`^ratelimit\.service\.rate_limit\.([^.]*)\.([^.]*)(?:\.([^.]*))?(?:\..*)?\.(near_limit|over_limit|total_hits|within_limit|shadow_mode)$`)
	invalidPromName = regexp.MustCompile(`[^a-zA-Z0-9_]`)

	ruleStatLabels = []string{"domain", "key1", "key2"}

	// ratekit's own: the domain, the rest of the stats key, the limit.
	limitStatPattern = regexp.MustCompile(`^ratekit\.rate_limit\.([^.]*)\.(.*)\.([^.]*)\.over_limit$`)
	limitStatLabels  = []string{"domain", "key", "limit"}

	errorStatLabels = []string{"err_type"}
)

// promCollector exposes the stats to Prometheus under the names the
// default mapping gives them.
type promCollector struct{ stats *stats }

func (promCollector) Describe(chan<- *prometheus.Desc) {} // unchecked: names appear as rules load

func (c promCollector) Collect(ch chan<- prometheus.Metric) {
	descs := map[string]*prometheus.Desc{}
	desc := func(name string, labels []string) *prometheus.Desc {
		if d, ok := descs[name]; ok {
			return d
		}
		d := prometheus.NewDesc(name, "envoyproxy/ratelimit's statsd counter, by its default Prometheus mapping", labels, nil)
		descs[name] = d
		return d
	}
	for _, v := range c.stats.snapshot() {
		name, labelNames, labels := promName(v.name)
		m, err := prometheus.NewConstMetric(desc(name, labelNames), prometheus.CounterValue, float64(v.value), labels...)
		if err != nil {
			continue // cannot happen: names and labels are built above
		}
		ch <- m
	}
}

// promName maps a statsd name to its Prometheus name, its labels' names
// and their values.
func promName(name string) (string, []string, []string) {
	if m := limitStatPattern.FindStringSubmatch(name); m != nil {
		return "ratekit_rate_limit_over_limit", limitStatLabels, m[1:]
	}
	if m := ruleStatPattern.FindStringSubmatch(name); m != nil {
		return "ratelimit_service_rate_limit_" + m[4], ruleStatLabels, m[1:4]
	}
	switch name {
	case statRedisError:
		return "ratelimit_service_should_rate_limit_error", errorStatLabels, []string{"redis_error"}
	case statServiceError:
		return "ratelimit_service_should_rate_limit_error", errorStatLabels, []string{"service_error"}
	}
	return invalidPromName.ReplaceAllString(name, "_"), nil, nil
}

// limitStat returns the name of the counter of the hits limit l of a
// rule denies, at the rule's stats key.
func limitStat(statsKey string, l *rules.Limit) string {
	label := l.Name
	if label == "" {
		per := strings.ToLower(l.Unit.String())
		if l.Unit == rules.UnitUnknown {
			per = l.Window.String()
		}
		label = fmt.Sprintf("%d_per_%s", l.RequestsPerUnit, per)
	}
	return statLimitPrefix + sanitizeStatName(statsKey) + "." + strings.ReplaceAll(sanitizeStatName(label), ".", "_") + ".over_limit"
}

// flushLoop sends the counters' increments to sink every interval, as
// envoyproxy/ratelimit's gostats store does, until stop is closed.
func (s *stats) flushLoop(sink gostats.FlushableSink, interval time.Duration, stop <-chan struct{}) {
	last := map[string]uint64{}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			s.flush(sink, last)
			return
		case <-t.C:
			s.flush(sink, last)
		}
	}
}

func (s *stats) flush(sink gostats.FlushableSink, last map[string]uint64) {
	for _, v := range s.snapshot() {
		if d := v.value - last[v.name]; d > 0 {
			sink.FlushCounter(v.name, d)
			last[v.name] = v.value
		}
	}
	sink.Flush()
}
