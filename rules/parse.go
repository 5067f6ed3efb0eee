package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrConfig is what every error of Parse and Load wraps: a configuration
// that does not load. Nothing of it is used.
var ErrConfig = errors.New("rules: invalid configuration")

// ConfigError is one thing wrong in a configuration file. Parse and Load
// return every one they find, joined (errors.Join); each wraps ErrConfig.
type ConfigError struct {
	// File is the name of the file, as given to Parse or relative to the
	// directory given to Load.
	File string
	// Line is the line of the file, from 1; 0 when the error is about the
	// file as a whole (a domain given twice, an empty file).
	Line int
	// Field is where in the file, as a path of YAML keys:
	// "descriptors[0].rate_limit.unit"; "" for the file as a whole.
	Field string
	// Msg says what is wrong, in envoyproxy/ratelimit's words where it
	// has some.
	Msg string
}

// Error returns "file:line: field: msg".
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// File is one configuration file: a name for errors, and its contents.
type File struct {
	Name string
	Data []byte
}

// LoadOptions say how Parse and Load put files together.
type LoadOptions struct {
	// MergeDomains merges the files of one domain into it, as
	// envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG does; otherwise a domain
	// in a second file is an error. A descriptor given twice is an error
	// either way.
	MergeDomains bool
	// IncludeDotFiles makes Load and Watch read the names that begin with
	// '.' too, files and directories, which they skip otherwise. It is
	// envoyproxy/ratelimit's default (RUNTIME_IGNOREDOTFILES=false: its
	// runtime loader, lyft/goruntime, reads every file under the
	// directory); skipping them is what a Kubernetes ConfigMap volume
	// needs, whose ..data and ..<timestamp> entries hold every file a
	// second time (RUNTIME_IGNOREDOTFILES=true there).
	IncludeDotFiles bool
}

// maxErrors is how many errors Parse reports before it stops looking.
const maxErrors = 50

// Parse parses files, in order, into one Config, all or nothing: a file
// of the format of envoyproxy/ratelimit, each holding one domain and its
// descriptors, with ratekit's optional keys (docs/rules.md). It is strict
// as envoyproxy/ratelimit is, and more: a key unknown at its place, a key
// given twice, a value of the wrong type or out of range, a bad unit, a
// descriptor given twice, a domain given twice (unless merged) are errors.
// Every error is a *ConfigError naming the file, the line and the field,
// and all of them, of every file, are returned, joined (up to 50). No
// files at all (an empty directory to Load) is an error too.
func Parse(files []File, opts LoadOptions) (*Config, error) {
	if len(files) == 0 {
		// A configuration of no files limits nothing: far more likely a
		// mistake (an emptied directory) than a wish to fail open.
		return nil, fmt.Errorf("%w: no configuration files: a configuration has at least one", ErrConfig)
	}
	p := &parser{cfg: &Config{domains: map[string]*node{}}, opts: opts, seen: map[string]bool{}}
	for _, f := range files {
		p.file(f)
		if len(p.errs) >= maxErrors {
			break
		}
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return p.cfg, nil
}

// parser builds a Config from files, collecting errors.
type parser struct {
	cfg  *Config
	opts LoadOptions
	name string          // the file being parsed
	seen map[string]bool // the domains given
	errs []error
}

func (p *parser) errorf(n *yaml.Node, field, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &ConfigError{File: p.name, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// file parses one file into p.cfg.
func (p *parser) file(f File) {
	p.name = f.Name
	before := len(p.errs)
	dec := yaml.NewDecoder(bytes.NewReader(f.Data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if err == nil {
		var more yaml.Node
		if err := dec.Decode(&more); err != io.EOF {
			line := 0
			if err == nil {
				line = more.Line
			}
			p.errs = append(p.errs, &ConfigError{File: p.name, Line: line, Msg: "a file holds one YAML document, this one holds more"})
			return
		}
	}
	switch {
	case err == io.EOF:
		p.errorf(nil, "", "config file cannot have empty domain")
		return
	case err != nil:
		msg := err.Error()
		line := 0
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = msg[len(m[0]):]
		} else {
			msg = strings.TrimPrefix(msg, "yaml: ")
		}
		p.errs = append(p.errs, &ConfigError{File: p.name, Line: line, Msg: "error loading config file: " + msg})
		return
	}
	root := resolve(doc.Content[0])
	if isNull(root) {
		p.errorf(root, "", "config file cannot have empty domain")
		return
	}
	if root.Kind != yaml.MappingNode {
		p.errorf(root, "", "a file is a mapping of domain and descriptors, this one is a %s", kindName(root))
		return
	}
	var domain string
	var domainNode, descs *yaml.Node
	for _, kv := range p.fields(root, "", rootKeys) {
		switch kv.key {
		case "domain":
			domain, _ = p.str(kv.val, kv.key)
			domainNode = kv.val
		case "descriptors":
			descs = kv.val
		}
	}
	// A domain given twice is an error even when the file that gave it
	// first has errors of its own: every error is reported.
	if domain != "" && !p.opts.MergeDomains {
		if _, ok := p.seen[domain]; ok {
			p.errorf(domainNode, "domain", "duplicate domain '%s' in config file", domain)
			return
		}
		p.seen[domain] = true
	}
	if len(p.errs) > before {
		return
	}
	if domain == "" {
		p.errorf(domainNode, "domain", "config file cannot have empty domain")
		return
	}
	dom := p.cfg.domains[domain]
	if dom == nil {
		dom = &node{children: map[string]*node{}}
	}
	// A file is loaded whole or not at all, even when merged: its
	// descriptors go into a copy of the domain's top level.
	top := &node{children: make(map[string]*node, len(dom.children)), wildcards: append([]wildcard(nil), dom.wildcards...)}
	for k, v := range dom.children {
		top.children[k] = v
	}
	rules := len(p.cfg.rules)
	p.descriptors(top, domain, domain+".", "descriptors", descs, false)
	if len(p.errs) > before {
		p.cfg.rules = p.cfg.rules[:rules]
		return
	}
	p.cfg.domains[domain] = top
}

var (
	rootKeys       = []string{"domain", "descriptors"}
	descriptorKeys = []string{"key", "value", "descriptors", "rate_limit", "shadow_mode", "quota_mode",
		"detailed_metric", "value_to_metric", "share_threshold", "metadata"}
	rateLimitKeys = []string{"unit", "requests_per_unit", "unlimited", "name", "replaces",
		// ratekit's
		"algorithm", "period", "burst", "carry", "calendar", "penalty", "also", "failure_mode"}
	alsoKeys     = []string{"unit", "requests_per_unit", "name", "algorithm", "period", "burst", "carry", "calendar", "penalty"}
	replacesKeys = []string{"name"}
)

// keyValue is one key of a mapping and its value.
type keyValue struct {
	key      string
	keyNode  *yaml.Node
	val      *yaml.Node
	fieldPos string // the field path of the value
}

// fields returns n's keys and values, reporting a key that is not a
// string, not in allowed, or given twice. A merge key (<<) brings in the
// keys of the mappings it names that n does not give itself.
func (p *parser) fields(n *yaml.Node, path string, allowed []string) []keyValue {
	var out []keyValue
	seen := map[string]*yaml.Node{}
	var merged []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merged = append(merged, v)
			continue
		}
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			p.errorf(k, path, "config error, key is not of type string: %s", k.Value)
			continue
		}
		field := join(path, k.Value)
		if !contains(allowed, k.Value) {
			p.errorf(k, field, "config error, unknown key '%s'", k.Value)
			continue
		}
		if first, ok := seen[k.Value]; ok {
			p.errorf(k, field, "key '%s' given twice (first at line %d)", k.Value, first.Line)
			continue
		}
		seen[k.Value] = k
		out = append(out, keyValue{key: k.Value, keyNode: k, val: v, fieldPos: field})
	}
	for _, m := range merged {
		maps := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			maps = nil
			for _, c := range m.Content {
				maps = append(maps, resolve(c))
			}
		}
		for _, mm := range maps {
			if mm.Kind != yaml.MappingNode {
				p.errorf(mm, path, "a merge key (<<) takes a mapping or a list of mappings")
				continue
			}
			for _, kv := range p.fields(mm, path, allowed) {
				if _, ok := seen[kv.key]; !ok {
					seen[kv.key] = kv.keyNode
					out = append(out, kv)
				}
			}
		}
	}
	return out
}

// descriptors loads the list n of descriptors into at, whose place in
// the domain is parent ("domain.key_value.").
// toMetric says whether a descriptor above has value_to_metric set.
func (p *parser) descriptors(at *node, domain, parent, path string, n *yaml.Node, toMetric bool) {
	if n == nil || isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, path, "descriptors is a list of descriptors, this is a %s", kindName(n))
		return
	}
	for i, c := range n.Content {
		c = resolve(c)
		field := fmt.Sprintf("%s[%d]", path, i)
		if c.Kind != yaml.MappingNode {
			p.errorf(c, field, "config error, yaml file contains list of type other than map: %s", c.Value)
			continue
		}
		p.descriptor(at, domain, parent, field, c, toMetric)
	}
}

// descriptor loads the descriptor n into at.
func (p *parser) descriptor(at *node, domain, parent, path string, n *yaml.Node, aboveToMetric bool) {
	before := len(p.errs)
	var key, value string
	var valueNode, rl, children *yaml.Node
	var shadow, quota, detailed, toMetric, share bool
	var metadata map[string]any
	for _, kv := range p.fields(n, path, descriptorKeys) {
		switch kv.key {
		case "key":
			key, _ = p.str(kv.val, kv.fieldPos)
		case "value":
			value, _ = p.str(kv.val, kv.fieldPos)
			valueNode = kv.val
		case "descriptors":
			children = kv.val
		case "rate_limit":
			if !isNull(kv.val) {
				rl = kv.val
			}
		case "shadow_mode":
			shadow = p.bool(kv.val, kv.fieldPos)
		case "quota_mode":
			quota = p.bool(kv.val, kv.fieldPos)
		case "detailed_metric":
			detailed = p.bool(kv.val, kv.fieldPos)
		case "value_to_metric":
			toMetric = p.bool(kv.val, kv.fieldPos)
		case "share_threshold":
			share = p.bool(kv.val, kv.fieldPos)
		case "metadata":
			if isNull(kv.val) {
				break
			}
			if kv.val.Kind != yaml.MappingNode {
				p.errorf(kv.val, kv.fieldPos, "error parsing metadata: a mapping is needed, this is a %s", kindName(kv.val))
				break
			}
			if err := kv.val.Decode(&metadata); err != nil {
				p.errorf(kv.val, kv.fieldPos, "error parsing metadata: %v", err)
			}
		}
	}
	if len(p.errs) > before {
		return
	}
	if key == "" {
		p.errorf(n, join(path, "key"), "descriptor has empty key")
		return
	}
	final := key
	if value != "" {
		final += "_" + value
	}
	full := parent + final
	if _, ok := at.children[final]; ok {
		p.errorf(n, path, "duplicate descriptor composite key '%s'", full)
		return
	}
	wild := strings.Contains(final, "*")
	if share && !wild {
		f := join(path, "share_threshold")
		if valueNode != nil {
			f = join(path, "value")
		}
		p.errorf(n, f, "share_threshold can only be used with wildcard values (containing '*'), but found key '%s'", final)
		return
	}
	nd := &node{children: map[string]*node{}, share: share, toMetric: toMetric}
	if share {
		nd.pattern = final
	}
	if rl != nil {
		r := &Rule{Domain: domain, Path: full, File: p.name, Line: n.Line,
			ShadowMode: shadow, QuotaMode: quota, DetailedMetric: detailed, ValueToMetric: toMetric,
			ShareThreshold: share, Metadata: metadata, plainStats: !detailed && !toMetric && !aboveToMetric}
		if !p.rateLimit(r, join(path, "rate_limit"), rl) {
			return
		}
		for _, l := range r.Limits {
			r.params = append(r.params, l.Params)
		}
		r.index = len(p.cfg.rules)
		p.cfg.rules = append(p.cfg.rules, r)
		nd.rule = r
	}
	p.descriptors(nd, domain, full+".", join(path, "descriptors"), children, toMetric || aboveToMetric)
	if len(p.errs) > before {
		return
	}
	if wild {
		at.wildcards = append(at.wildcards, wildcard{key: final, parts: strings.Split(final, "*")})
	}
	at.children[final] = nd
}

// rateLimit reads the rate_limit n into r, reporting whether it is right.
func (p *parser) rateLimit(r *Rule, path string, n *yaml.Node) bool {
	before := len(p.errs)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, path, "rate_limit is a mapping, this is a %s", kindName(n))
		return false
	}
	first := limitSpec{node: n, path: path}
	var replNodes []*yaml.Node
	var also *yaml.Node
	for _, kv := range p.fields(n, path, rateLimitKeys) {
		switch kv.key {
		case "unlimited":
			r.Unlimited = p.bool(kv.val, kv.fieldPos)
		case "name":
			r.Name, _ = p.str(kv.val, kv.fieldPos)
			first.name = r.Name
		case "replaces":
			r.Replaces, replNodes = p.replaces(kv.val, kv.fieldPos)
		case "also":
			also = kv.val
			first.ex.mark(kv.key)
		case "failure_mode":
			first.ex.mark(kv.key)
			r.FailureMode, _ = p.str(kv.val, kv.fieldPos)
			r.failureAt = fieldAt{kv.val.Line, kv.fieldPos}
			if !contains(FailureModes(), r.FailureMode) {
				p.errorf(kv.val, kv.fieldPos, "failure_mode is one of %s, got '%s'", strings.Join(FailureModes(), ", "), r.FailureMode)
			}
		default:
			p.limitField(&first, kv)
		}
	}
	if len(p.errs) > before {
		return false
	}
	for i, name := range r.Replaces {
		field := fmt.Sprintf("%s[%d].name", join(path, "replaces"), i)
		if name == "" {
			p.errorf(replNodes[i], field, "should not have an empty replaces entry")
			return false
		}
		if name == r.Name {
			p.errorf(replNodes[i], field, "replaces should not contain name of same descriptor")
			return false
		}
	}
	if r.Unlimited {
		if first.unitNode != nil {
			if _, valid := parseUnit(first.unit); valid {
				p.errorf(first.unitNode, join(path, "unit"), "should not specify rate limit unit when unlimited")
			} else {
				p.errorf(first.unitNode, join(path, "unit"), "invalid rate limit unit '%s'", first.unit)
			}
			return false
		}
		if first.ex.set() {
			p.errorf(n, path, "an unlimited rule takes none of ratekit's keys (%s)", first.ex.first)
			return false
		}
		return true
	}
	l, ok := p.limit(&first)
	if !ok {
		return false
	}
	r.Unit, r.RequestsPerUnit, r.Window, r.Algorithm = l.Unit, l.RequestsPerUnit, l.Window, l.Algorithm
	if also == nil || isNull(also) {
		if l.Params != nil {
			r.Limits = []Limit{l}
		}
		return true
	}
	// Several limits, decided at once.
	field := join(path, "also")
	if also.Kind != yaml.SequenceNode || len(also.Content) == 0 {
		p.errorf(also, field, "also is a list of limits, each a mapping of unit (or period) and requests_per_unit")
		return false
	}
	if l.Params == nil {
		p.errorf(n, join(path, "requests_per_unit"), "a rule of several limits (also) has at least 1 request per unit in each")
		return false
	}
	r.Limits = []Limit{l}
	for i, c := range also.Content {
		c = resolve(c)
		spec := limitSpec{node: c, path: fmt.Sprintf("%s[%d]", field, i)}
		if c.Kind != yaml.MappingNode {
			p.errorf(c, spec.path, "a limit of also is a mapping, this is a %s", kindName(c))
			return false
		}
		for _, kv := range p.fields(c, spec.path, alsoKeys) {
			p.limitField(&spec, kv)
		}
		if len(p.errs) > before {
			return false
		}
		l, ok := p.limit(&spec)
		if !ok {
			return false
		}
		if l.Params == nil {
			p.errorf(c, join(spec.path, "requests_per_unit"), "a rule of several limits (also) has at least 1 request per unit in each")
			return false
		}
		for _, o := range r.Limits {
			if l.Name != "" && o.Name == l.Name {
				p.errorf(spec.nameNode, join(spec.path, "name"), "two limits of one rule are named '%s'", l.Name)
				return false
			}
		}
		r.Limits = append(r.Limits, l)
	}
	if len(r.Limits) > maxRuleLimits {
		p.errorf(also, field, "a rule has at most %d limits, this one %d", maxRuleLimits, len(r.Limits))
		return false
	}
	return true
}

// maxRuleLimits is the most limits a rule has (ratekit.MaxPolicyLimits).
const maxRuleLimits = 16

// limitSpec is one limit as written: a rate_limit, or one of its also.
type limitSpec struct {
	node     *yaml.Node
	path     string
	name     string
	nameNode *yaml.Node
	unit     string
	unitNode *yaml.Node
	rpu      uint32
	ex       extras
}

// limitField reads one key of a limit.
func (p *parser) limitField(s *limitSpec, kv keyValue) {
	switch kv.key {
	case "unit":
		s.unit, _ = p.str(kv.val, kv.fieldPos)
		s.unitNode = kv.val
	case "requests_per_unit":
		if v, ok := p.int(kv.val, kv.fieldPos, 0, math.MaxUint32); ok {
			s.rpu = uint32(v)
		}
	case "name":
		s.name, _ = p.str(kv.val, kv.fieldPos)
		s.nameNode = kv.val
	default:
		p.extra(&s.ex, kv)
	}
}

// replaces reads a list of {name: ...}.
func (p *parser) replaces(n *yaml.Node, path string) ([]string, []*yaml.Node) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, path, "replaces is a list of {name: ...}, this is a %s", kindName(n))
		return nil, nil
	}
	out := make([]string, 0, len(n.Content))
	var nodes []*yaml.Node
	for i, c := range n.Content {
		c = resolve(c)
		field := fmt.Sprintf("%s[%d]", path, i)
		if c.Kind != yaml.MappingNode {
			p.errorf(c, field, "config error, yaml file contains list of type other than map: %s", c.Value)
			continue
		}
		name := ""
		for _, kv := range p.fields(c, field, replacesKeys) {
			name, _ = p.str(kv.val, kv.fieldPos)
		}
		out = append(out, name)
		nodes = append(nodes, c)
	}
	return out, nodes
}

// str reads a scalar as a string: its text, as envoyproxy/ratelimit's
// YAML library reads any scalar into a string field ("" for null).
func (p *parser) str(n *yaml.Node, path string) (string, bool) {
	if isNull(n) {
		return "", true
	}
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, path, "a string is needed, this is a %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

// bool reads a boolean: true or false, or YAML 1.1's yes, no, on, off,
// unquoted. A quoted string is refused, as envoyproxy/ratelimit's YAML
// library refuses it: "true" is a string, not a boolean.
func (p *parser) bool(n *yaml.Node, path string) bool {
	if isNull(n) {
		return false
	}
	if n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		p.errorf(n, path, "true or false is needed, got the quoted string %q: write it without quotes", n.Value)
		return false
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		p.errorf(n, path, "true or false is needed, got %s", show(n))
		return false
	}
	return b
}

// int reads an integer from lo to hi.
func (p *parser) int(n *yaml.Node, path string, lo, hi int64) (int64, bool) {
	var v int64
	if n.Kind != yaml.ScalarNode || isNull(n) || n.Decode(&v) != nil || v < lo || v > hi {
		p.errorf(n, path, "an integer from %d to %d is needed, got %s", lo, hi, show(n))
		return 0, false
	}
	return v, true
}

// resolve follows an alias to what it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return "scalar (" + strings.TrimPrefix(n.Tag, "!!") + ")"
	}
	return "node"
}

// show quotes a scalar, or names a node's kind.
func show(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		return "'" + n.Value + "'"
	}
	return "a " + kindName(n)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
