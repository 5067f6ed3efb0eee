package main

import (
	"slices"
	"testing"
)

// Every job is in exactly one unit, and a job with beside set shares its
// unit with that job, so that they always run next to each other; jobs
// joined through another (rules beside Params beside the plain limiter)
// share one unit.
func TestUnitsGroupJobsBeside(t *testing.T) {
	plain := caseKey{"ratekit/rueidis", "tokenbucket", "open", 1}
	params := caseKey{"ratekit/rueidis", "tokenbucket", "params", 1}
	jobs := []job{
		{key: plain},
		{key: caseKey{"ratekit/rueidis", "tokenbucket", "open", 256}},
		{key: caseKey{"ratekit/rueidis+coalesce", "tokenbucket", "open", 1}, beside: plain},
		{key: caseKey{"redis_rate", "tokenbucket", "open", 1}},
		{key: caseKey{"orphan", "tokenbucket", "open", 1}, beside: caseKey{"missing", "", "", 1}},
		{key: caseKey{"ratekit/rueidis", "tokenbucket", "rules", 1}, beside: params},
		{key: params, beside: plain},
	}
	var seen []int
	for _, u := range units(jobs) {
		seen = append(seen, u...)
		if slices.Contains(u, 0) && !slices.Equal(u, []int{0, 2, 5, 6}) {
			t.Fatalf("the plain limiter's unit is %v, want [0 2 5 6]", u)
		}
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []int{0, 1, 2, 3, 4, 5, 6}) {
		t.Fatalf("units hold jobs %v, want each of 0-6 once", seen)
	}
}

// The memory store's other algorithms and the in-process peers run in
// the unit of the memory store's token bucket, at their goroutines.
func TestInProcessCasesShareAUnit(t *testing.T) {
	jobs := []job{
		{key: inProcessUnit(1)},
		{key: inProcessUnit(16)},
		{key: caseKey{"ratekit/memory", "fixedwindow", "open", 1}, beside: inProcessUnit(1)},
		{key: caseKey{"sethvargo", "tokenbucket", "open", 16}, beside: inProcessUnit(16)},
		{key: caseKey{"x/time/rate", "tokenbucket", "open", 1}, beside: inProcessUnit(1)},
		{key: caseKey{"redis_rate", "tokenbucket", "open", 1}},
	}
	got := units(jobs)
	want := [][]int{{0, 2, 4}, {1, 3}, {5}}
	if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
		t.Fatalf("units %v, want %v", got, want)
	}
}

// A unit's sample is the mean of its slices; errors add up.
func TestMeanSample(t *testing.T) {
	got := meanSample([]sample{{ops: 100, p99: 4, errors: 1}, {ops: 300, p99: 8, errors: 2}})
	if got.ops != 200 || got.p99 != 6 || got.errors != 3 {
		t.Fatalf("meanSample = %+v, want ops 200, p99 6, errors 3", got)
	}
}

// A script's ceiling is read against the guide's measured around it, in
// each round, and the median over rounds is taken.
func TestGuideRatio(t *testing.T) {
	cs := []ceiling{{p16: 90, guide: 100}, {p16: 120, guide: 100}, {p16: 50, guide: 50}}
	if got := guideRatio(cs); got != 1.0 {
		t.Fatalf("guideRatio = %v, want 1 (the median of 0.9, 1.2 and 1)", got)
	}
}
