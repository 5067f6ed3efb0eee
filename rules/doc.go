// Package rules decides requests against rules written as data: the YAML
// files of envoyproxy/ratelimit, loaded unchanged, with optional keys for
// ratekit's algorithms, and reloaded while the program runs.
//
// A file holds one domain and its descriptors, each a key, an optional
// value (a '*' in it matches any run of bytes) and a rate_limit, nested
// to any depth:
//
//	domain: api
//	descriptors:
//	  - key: remote_address
//	    rate_limit:
//	      unit: second
//	      requests_per_unit: 10
//	  - key: path
//	    value: /login*
//	    rate_limit:
//	      unit: minute
//	      requests_per_unit: 5
//	      algorithm: tokenbucket   # ratekit's: any algorithm, with burst, period, ...
//	      burst: 10
//
// Parse and Load read files into a Config, strictly and all or nothing:
// every mistake is a *ConfigError naming the file, the line and the
// field. Config.Match finds the rule of a descriptor as
// envoyproxy/ratelimit does. Rules decides a request (a domain, its descriptors, a
// cost) on any store, through any wrapper, each descriptor counted at its
// own key: by default an epoch-aligned fixed window per unit, as envoy
// counts, so that an existing file decides as it did. Load the
// configuration and give it to New before deciding (until a
// configuration is in force, decisions fail with ErrNoConfig); Watch then
// reloads the file or directory when it changes: a bad new configuration,
// or a directory emptied of files, keeps the old one in force.
//
// docs/rules.md describes the format, the matching, what a change of
// rules does to the counts, and reloading.
package rules
