package main

import (
	"fmt"
	"strings"
	"time"

	registry "github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
)

// param is one integer parameter of an algorithm, as the page shows it: a
// count, a duration in whole milliseconds, whose name ends in _ms, or a
// choice by its number.
type param struct {
	Name    string `json:"name"`
	Label   string `json:"label"`
	Default int64  `json:"default"`
	reg     registry.Param
}

// algorithm is one algorithm the demo offers: an entry of the registry.
type algorithm struct {
	Name   string  `json:"name"`
	Title  string  `json:"title"`
	State  string  `json:"state"` // what Remaining means, for the page
	Params []param `json:"params"`
	reg    registry.Algorithm
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// algorithms are the registry's, in its order; the first is the demo's
// starting point, at its defaults.
var algorithms = fromRegistry(registry.All)

func fromRegistry(all []registry.Algorithm) []algorithm {
	var out []algorithm
	for _, a := range all {
		d := algorithm{Name: a.Name, Title: a.Title, State: a.Remaining, reg: a}
		for _, p := range a.Params {
			label := strings.ToUpper(p.Name[:1]) + strings.ReplaceAll(p.Name[1:], "_", " ")
			dp := param{Name: p.Name, Label: label + " (" + a.Unit + ")", Default: p.Default, reg: p}
			switch p.Kind {
			case registry.Duration:
				dp.Name, dp.Label, dp.Default = p.Name+"_ms", label+" (ms)", p.Default/int64(time.Millisecond)
			case registry.Choice:
				var opts []string
				for i, c := range p.Choices() {
					opts = append(opts, fmt.Sprintf("%d %s", i, c))
				}
				dp.Label = label + " (" + strings.Join(opts, ", ") + ")"
			}
			d.Params = append(d.Params, dp)
		}
		out = append(out, d)
	}
	return out
}

// defaults returns every parameter at its default, by its page name.
func (a algorithm) defaults() map[string]int64 {
	p := make(map[string]int64, len(a.Params))
	for _, prm := range a.Params {
		p[prm.Name] = prm.Default
	}
	return p
}

// isDuration reports whether the parameter is a duration, given in ms.
func (p param) isDuration() bool { return p.reg.Kind == registry.Duration }

// build returns the algorithm's limiter for the page's parameters (every
// one of a.Params, by its page name), deciding at clock's time (nil: the
// store's).
func (a algorithm) build(r core.ScriptRunner, prefix string, p map[string]int64, clock core.Clock) (core.Limiter, error) {
	rp := registry.Params{}
	for _, prm := range a.Params {
		v := p[prm.Name]
		if prm.isDuration() {
			v = int64(ms(v))
		}
		rp[prm.reg.Name] = v
	}
	return a.reg.New(r, rp, clock, prefix)
}

func findAlgorithm(name string) (algorithm, error) {
	for _, a := range algorithms {
		if a.Name == name {
			return a, nil
		}
	}
	return algorithm{}, fmt.Errorf("unknown algorithm %q", name)
}
