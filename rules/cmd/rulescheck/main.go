// Command rulescheck checks a rate limit configuration, the YAML of
// envoyproxy/ratelimit with ratekit's optional keys (docs/rules.md), as
// package rules loads it, and prints every place where it is wrong:
//
//	rulescheck [-merge_domain_configs] [-dump] PATH
//	rulescheck [-merge_domain_configs] [-dump] -config_dir DIR
//
// PATH is a file or a directory (every file below it but names that begin
// with '.'). Each error is a line "file:line: field: what is wrong". It
// exits 0 when the configuration loads, 1 when it does not, 2 on bad
// arguments. -dump prints each rule as envoyproxy/ratelimit's /rlconfig
// does. The flags are those of envoyproxy/ratelimit's config_check_cmd.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ratekit/ratekit/rules"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rulescheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("config_dir", "", "the directory of the configuration (or give a path as the argument)")
	merge := fs.Bool("merge_domain_configs", false, "merge files of the same domain (MERGE_DOMAIN_CONFIG)")
	dump := fs.Bool("dump", false, "print every rule when the configuration loads")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rulescheck [-merge_domain_configs] [-dump] PATH | -config_dir DIR")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	path := *dir
	switch {
	case path == "" && fs.NArg() == 1:
		path = fs.Arg(0)
	case path == "" || fs.NArg() != 0:
		fs.Usage()
		return 2
	}
	cfg, err := rules.Load(path, rules.LoadOptions{MergeDomains: *merge})
	if err != nil {
		errs := configErrors(err)
		for _, e := range errs {
			fmt.Fprintln(stdout, e)
		}
		n := len(errs)
		fmt.Fprintf(stdout, "%s: %d error(s): the configuration does not load\n", path, n)
		return 1
	}
	if *dump {
		fmt.Fprint(stdout, cfg.Dump())
	}
	fmt.Fprintf(stdout, "%s: ok, %d domain(s), %d rule(s)\n", path, len(cfg.Domains()), len(cfg.Rules()))
	return 0
}

// configErrors returns the errors err holds: each *rules.ConfigError of
// Load's errors.Join, or err itself (a path that cannot be read, say,
// whose error wraps both rules.ErrConfig and the file system's).
func configErrors(err error) []error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	errs := joined.Unwrap()
	for _, e := range errs {
		var ce *rules.ConfigError
		if !errors.As(e, &ce) {
			return []error{err}
		}
	}
	return errs
}
