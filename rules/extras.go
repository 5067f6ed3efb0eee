package rules

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// DefaultAlgorithm is the algorithm of a rule that names none: an
// epoch-aligned fixed window (fixedwindow.Config.Aligned) of the rule's
// unit, as envoyproxy/ratelimit counts, so that a file of its format
// decides as it does.
const DefaultAlgorithm = "fixedwindow"

// extras are ratekit's optional keys of a rate_limit.
type extras struct {
	first     string // the first one given, for errors
	algorithm string
	algNode   *yaml.Node
	period    time.Duration
	burst     int64
	burstNode *yaml.Node
	carry     string
	carryNode *yaml.Node
	calendar  *time.Location
	calNode   *yaml.Node
	penalty   time.Duration
	// Where calendar and penalty are, for Limit.
	calendarAt, penaltyAt fieldAt
}

func (e *extras) set() bool { return e.first != "" }

func (e *extras) mark(key string) {
	if e.first == "" {
		e.first = key
	}
}

// extra reads one of ratekit's keys of a rate_limit.
func (p *parser) extra(e *extras, kv keyValue) {
	e.mark(kv.key)
	switch kv.key {
	case "algorithm":
		e.algorithm, _ = p.str(kv.val, kv.fieldPos)
		e.algNode = kv.val
		if _, ok := algorithms.Lookup(e.algorithm); !ok {
			p.errorf(kv.val, kv.fieldPos, "unknown algorithm '%s': one of %s", e.algorithm, strings.Join(algorithms.Names(), ", "))
		}
	case "period":
		e.period = p.duration(kv.val, kv.fieldPos)
	case "penalty":
		e.penaltyAt = fieldAt{kv.val.Line, kv.fieldPos}
		if e.penalty = p.duration(kv.val, kv.fieldPos); e.penalty > 0 {
			// The engine's bound, checked here so that what parses loads.
			if _, err := params.Micros("penalty", e.penalty); err != nil {
				p.errorf(kv.val, kv.fieldPos, "%s", strings.TrimPrefix(err.Error(), core.ErrInvalidConfig.Error()+": "))
			}
		}
	case "burst":
		e.burst, _ = p.int(kv.val, kv.fieldPos, 1, 1<<50)
		e.burstNode = kv.val
	case "carry":
		e.carry, _ = p.str(kv.val, kv.fieldPos)
		e.carryNode = kv.val
		if !contains(carries(), e.carry) {
			p.errorf(kv.val, kv.fieldPos, "carry is one of %s, got '%s'", strings.Join(carries(), ", "), e.carry)
		}
	case "calendar":
		name, _ := p.str(kv.val, kv.fieldPos)
		e.calNode = kv.val
		e.calendarAt = fieldAt{kv.val.Line, kv.fieldPos}
		loc, err := time.LoadLocation(name)
		if err != nil || name == "" {
			p.errorf(kv.val, kv.fieldPos, "calendar names a time zone (\"UTC\", \"Europe/Paris\"), got '%s'", name)
			break
		}
		e.calendar = loc
	}
}

func carries() []string {
	return []string{ratekit.CarryUsed.String(), ratekit.CarryAvailable.String()}
}

// duration reads a positive Go duration: "30s", "1m30s".
func (p *parser) duration(n *yaml.Node, path string) time.Duration {
	d, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil || d <= 0 {
		p.errorf(n, path, "a positive duration is needed (\"30s\", \"5m\"), got %s", show(n))
		return 0
	}
	return d
}

// limit builds the limit s: RequestsPerUnit per its window, by the
// algorithm it names; a Limit without Params for 0 requests per unit
// (every request is over it).
func (p *parser) limit(s *limitSpec) (Limit, bool) {
	e, path := &s.ex, s.path
	l := Limit{Name: s.name, Algorithm: DefaultAlgorithm, RequestsPerUnit: s.rpu, Penalty: e.penalty, calendarAt: e.calendarAt, penaltyAt: e.penaltyAt}
	if e.algorithm != "" {
		l.Algorithm = e.algorithm
	}
	u, valid := parseUnit(s.unit)
	if e.period > 0 {
		if s.unitNode != nil {
			p.errorf(s.unitNode, join(path, "unit"), "give unit or period, not both")
			return l, false
		}
		l.Window = e.period
	} else {
		if !valid {
			at := s.unitNode
			if at == nil {
				at = s.node
			}
			p.errorf(at, join(path, "unit"), "invalid rate limit unit '%s'", s.unit)
			return l, false
		}
		l.Unit, l.Window = u, u.Duration()
	}
	bucket := l.Algorithm == "tokenbucket" || l.Algorithm == "gcra" || l.Algorithm == "leakybucket"
	if e.burstNode != nil && !bucket {
		p.errorf(e.burstNode, join(path, "burst"), "burst is for tokenbucket, gcra and leakybucket, not %s", l.Algorithm)
		return l, false
	}
	if e.carryNode != nil && !bucket {
		p.errorf(e.carryNode, join(path, "carry"), "carry is for tokenbucket, gcra and leakybucket, not %s", l.Algorithm)
		return l, false
	}
	if e.calNode != nil && (l.Algorithm != "fixedwindow" || (l.Unit != Day && l.Unit != Week && l.Unit != Month)) {
		p.errorf(e.calNode, join(path, "calendar"), "calendar is for a fixedwindow of unit day, week or month")
		return l, false
	}
	if s.rpu == 0 {
		return l, true
	}
	rpu := int64(s.rpu)
	burst := rpu
	if e.burst > 0 {
		burst = e.burst
	}
	carry := int64(0)
	if e.carry == ratekit.CarryAvailable.String() {
		carry = 1
	}
	var err error
	if e.calendar != nil {
		period := map[Unit]fixedwindow.Period{Day: fixedwindow.Day, Week: fixedwindow.Week, Month: fixedwindow.Month}[l.Unit]
		l.Params, err = fixedwindow.NewCalendarParams(fixedwindow.CalendarConfig{Limit: rpu, Period: period, Location: e.calendar})
		l.calendar = true
	} else {
		w := int64(l.Window)
		var values algorithms.Params
		switch l.Algorithm {
		case "fixedwindow":
			values = algorithms.Params{"limit": rpu, "window": w, "aligned": 1}
		case "slidinglog", "slidingcounter":
			values = algorithms.Params{"limit": rpu, "window": w}
		case "tokenbucket":
			values = algorithms.Params{"capacity": burst, "refill_rate": rpu, "refill_interval": w, "carry": carry}
		case "leakybucket":
			values = algorithms.Params{"capacity": burst, "leak_rate": rpu, "per": w, "carry": carry}
		case "gcra":
			values = algorithms.Params{"rate": rpu, "period": w, "burst": burst, "carry": carry}
		default:
			p.errorf(e.algNode, join(path, "algorithm"), "no rules for the algorithm '%s'", l.Algorithm)
			return l, false
		}
		a, _ := algorithms.Lookup(l.Algorithm)
		l.Params, err = a.NewParams(values)
	}
	if err != nil {
		msg := err.Error()
		if errors.Is(err, core.ErrInvalidConfig) {
			msg = strings.TrimPrefix(strings.TrimPrefix(msg, core.ErrInvalidConfig.Error()), ": ")
		}
		p.errorf(s.node, path, "%s", fmt.Sprintf("%s: %s", l.Algorithm, msg))
		return l, false
	}
	return l, true
}
