package main

import (
	"context"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ratekit/ratekit/rules"
)

// watch reads dir every interval and, whenever what it holds changed,
// loads it and hands the result to loaded (a configuration, or why it did
// not load), until ctx ends. It compares contents, not events: a
// Kubernetes ConfigMap's symlink swap, an edit in place, a file added or
// removed are all seen (envoyproxy/ratelimit#150, #355, #379 missed some),
// whatever RUNTIME_WATCH_ROOT says.
func watch(ctx context.Context, dir string, interval time.Duration, opts rules.LoadOptions, loaded func(*rules.Config, error)) {
	last := fingerprint(dir)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fp := fingerprint(dir)
		if fp == last {
			continue
		}
		last = fp
		loaded(rules.Load(dir, opts))
	}
}

// fingerprint is a digest of the names and contents of the files under
// dir, following symlinks, as rules.Load reads them.
func fingerprint(dir string) [sha256.Size]byte {
	h := sha256.New()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // a symlinked root (RUNTIME_ROOT=.../current) is walked too
	}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			h.Write([]byte("error " + path + "\x00"))
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 || d.Type().IsRegular() {
			b, err := os.ReadFile(path)
			h.Write([]byte(path + "\x00"))
			if err == nil {
				h.Write(b)
			}
			h.Write([]byte{0})
		}
		return nil
	})
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}
