package rules

import (
	"bytes"
	"context"
	"fmt"
	"time"
)

// Update parses files (as Parse does) and puts the configuration in
// force (Set). When they do not parse, the configuration in force stays,
// and the error is returned: no files at all is such an error, as for
// Watch (an emptied directory keeps the configuration in force). Either way the load is counted (Loads) and
// reported (Options.OnLoad, Options.Logger).
func (r *Rules) Update(files []File, opts LoadOptions) (*Config, error) {
	cfg, err := Parse(files, opts)
	if err == nil {
		err = r.Set(cfg)
	}
	r.loaded(cfg, err)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// loaded counts and reports a load.
func (r *Rules) loaded(cfg *Config, err error) {
	if err != nil {
		r.failed.Add(1)
		cfg = nil
	} else {
		r.succeeded.Add(1)
	}
	if l := r.opts.Logger; l != nil {
		if err != nil {
			l.Error("rules: error loading new configuration; the configuration in force stays", "err", err)
		} else {
			l.Info("rules: loaded new configuration", "domains", len(cfg.domains), "rules", len(cfg.rules))
		}
	}
	if r.opts.OnLoad != nil {
		r.opts.OnLoad(cfg, err)
	}
}

// Loads returns how many loads (Update, Watch) put a configuration in
// force, and how many failed: envoyproxy/ratelimit's config_load_success
// and config_load_error.
func (r *Rules) Loads() (succeeded, failed uint64) {
	return r.succeeded.Load(), r.failed.Load()
}

// WatchOptions configure Watch.
type WatchOptions struct {
	LoadOptions
	// Interval is how often Watch reads the configuration, DefaultInterval
	// when zero.
	Interval time.Duration
}

// DefaultInterval is how often Watch reads a configuration by default.
const DefaultInterval = time.Second

// Watch keeps the configuration at path in force until ctx ends, and then
// returns ctx's error. It reads path (a file or a directory, as Load does)
// at once and then every Interval, and when what it reads differs from
// what it read last, loads it as Update does: a configuration that does
// not parse (or a directory with no files left) leaves the one in
// force, is counted and reported (when it
// still reads the same at the next tick: a file written in place may
// be read cut short), and is loaded again only once it changes.
//
// Watch reads contents instead of waiting for file system events, so
// that every way a file changes is seen: written in place, replaced by a
// rename, or a Kubernetes ConfigMap's ..data link swapped to a new
// directory (the events a watcher of the file misses,
// envoyproxy/ratelimit#150 and #379). A configuration is loaded only when two reads
// in a row agree, so that a load never mixes files from before and after
// a swap, nor takes a file being written.
func (r *Rules) Watch(ctx context.Context, path string, opts WatchOptions) error {
	every := opts.Interval
	if every < 0 {
		return fmt.Errorf("%w: WatchOptions.Interval %v is negative", ErrConfig, every)
	}
	if every == 0 {
		every = DefaultInterval
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var last []File    // what was loaded last, or failed to load
	var suspect []File // what failed to load once, to read again
	var lastErr error
	read := false // last holds what was read last
	for {
		files, err := readStable(path, opts.IncludeDotFiles)
		switch {
		case err != nil:
			// Unreadable (a swap in progress, a path not there yet): report
			// it once, and try again at the next tick.
			if lastErr == nil || lastErr.Error() != err.Error() {
				r.loaded(nil, err)
			}
			lastErr, last, read = err, nil, false
		case !read || !sameFiles(files, last):
			cfg, err := Parse(files, opts.LoadOptions)
			if err != nil && !sameFiles(files, suspect) {
				// A file being written in place reads as cut short: look
				// again at the next tick before calling it an error.
				suspect = files
				break
			}
			if err == nil {
				err = r.Set(cfg)
			}
			r.loaded(cfg, err)
			last, lastErr, suspect, read = files, err, nil, true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// readStable reads path until two reads in a row agree, up to a few
// times.
func readStable(path string, dot bool) ([]File, error) {
	files, err := readFiles(path, dot)
	for range 5 {
		if err != nil {
			return nil, err
		}
		again, err2 := readFiles(path, dot)
		if err2 == nil && sameFiles(files, again) {
			return files, nil
		}
		files, err = again, err2
	}
	return nil, fmt.Errorf("%w: %s changes faster than it can be read", ErrConfig, path)
}

func sameFiles(a, b []File) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}
