package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// instructionCalls is how many calls of each script callgrind counts,
// after instructionWarmup that create the keys' state: 50 keys, pipelined
// 16 deep from one connection, as docs/design.md's "What a script costs"
// measured.
const (
	instructionCalls  = 3000
	instructionWarmup = 500
	instructionKeys   = 50
)

// measureInstructions counts the instructions the harness's own
// redis-server, run under callgrind, executes per call of each ceiling
// script (ceilingScripts), as EVALSHA and as FCALL, and writes a Markdown
// table to w. It needs valgrind (callgrind_control) and redis-benchmark;
// it measures no throughput, so a busy machine changes nothing but its
// duration.
func measureInstructions(ctx context.Context, o options, w io.Writer) error {
	for _, tool := range []string{"valgrind", "callgrind_control", "redis-benchmark"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("-instructions needs %s (apt-get install valgrind redis-tools): %w", tool, err)
		}
	}
	dir, err := os.MkdirTemp("", "ratekit-callgrind-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "callgrind.out")
	srv, err := startRedisUnder("valgrind", "--tool=callgrind", "--collect-atstart=yes", "--callgrind-out-file="+out)
	if err != nil {
		return err
	}
	defer srv.stop()
	t := ownTarget(srv)
	c := t.goredis(0)
	defer c.Close()
	scripts, err := ceilingScripts(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Instructions per call inside redis-server %s (callgrind; %d calls after %d, %d keys, -P 16 from one connection):\n\n", srv.version, instructionCalls, instructionWarmup, instructionKeys)
	fmt.Fprintf(w, "| script | EVALSHA | FCALL | FCALL / EVALSHA |\n|---|---|---|---|\n")
	pid := strconv.Itoa(srv.pid())
	for _, s := range scripts {
		sha, err := c.ScriptLoad(ctx, s.s.Lua()).Result()
		if err != nil {
			return fmt.Errorf("SCRIPT LOAD %s: %w", s.name, err)
		}
		fn, err := loadFunction(ctx, c, s.s)
		if err != nil {
			return fmt.Errorf("FUNCTION LOAD %s: %w", s.name, err)
		}
		var counts [2]float64
		for i, way := range [][2]string{{"EVALSHA", sha}, {"FCALL", fn}} {
			if way[1] == "" {
				continue
			}
			args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(srv.port), "-c", "1", "-P", "16", "-r", strconv.Itoa(instructionKeys), way[0], way[1], strconv.Itoa(s.keys)}
			for k := range s.keys {
				args = append(args, fmt.Sprintf("ins:%s:%d:{__rand_int__}", strings.ReplaceAll(s.name, " ", "-"), k))
			}
			args = append(args, s.args...)
			bench := func(n int) error {
				a := append([]string{"-n", strconv.Itoa(n), "-q"}, args...)
				if b, err := exec.CommandContext(ctx, "redis-benchmark", a...).CombinedOutput(); err != nil {
					return fmt.Errorf("redis-benchmark %s %s: %w: %s", way[0], s.name, err, b)
				}
				return nil
			}
			if err := bench(instructionWarmup); err != nil {
				return err
			}
			if b, err := exec.CommandContext(ctx, "callgrind_control", "-z", pid).CombinedOutput(); err != nil {
				return fmt.Errorf("callgrind_control -z: %w: %s", err, b)
			}
			if err := bench(instructionCalls); err != nil {
				return err
			}
			before, _ := filepath.Glob(out + ".*")
			if b, err := exec.CommandContext(ctx, "callgrind_control", "-d", pid).CombinedOutput(); err != nil {
				return fmt.Errorf("callgrind_control -d: %w: %s", err, b)
			}
			after, _ := filepath.Glob(out + ".*")
			var dump string
			for _, f := range after {
				if !slices.Contains(before, f) {
					dump = f
				}
			}
			ir, err := callgrindTotal(dump)
			if err != nil {
				return fmt.Errorf("%s %s: %w", way[0], s.name, err)
			}
			counts[i] = ir / instructionCalls
		}
		ratio := "–"
		if counts[1] > 0 {
			ratio = fmt.Sprintf("%.2f", counts[1]/counts[0])
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", s.name, thousands(counts[0]), thousands(counts[1]), ratio)
	}
	return nil
}

// callgrindTotal reads the instructions a callgrind dump counted.
func callgrindTotal(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("no callgrind dump: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		for _, p := range []string{"totals:", "summary:"} {
			if v, ok := strings.CutPrefix(line, p); ok {
				return strconv.ParseFloat(strings.TrimSpace(strings.Fields(v)[0]), 64)
			}
		}
	}
	return 0, fmt.Errorf("%s: no totals", path)
}

// thousands formats an instruction count to the nearest hundred, with
// commas: 76,300.
func thousands(v float64) string {
	if v == 0 {
		return "–"
	}
	n := int64(v/100+0.5) * 100
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
