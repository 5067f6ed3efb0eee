package main

import (
	"fmt"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ratekit/ratekit/rules"
)

// responseMetadata is RESPONSE_DYNAMIC_METADATA's dynamic_metadata, as
// envoyproxy/ratelimit builds it (ratelimitToMetadata, at the version
// whose quota mode ratekit follows, with the descriptors' metadata):
//
//   - "domain": the request's domain;
//   - "descriptors": for each of the request's descriptors, in order,
//     "entries" (a list of "key=value"), "limit" (its override, in
//     protobuf's text format) and "hitsAddend" when it has them;
//   - "hitsAddend": the request's, when not 0;
//   - "metadata": the metadata of the rules of the descriptors that
//     passed (OK, a shadow_mode denial too; not an unlimited, replaced or
//     overridden rule's), merged in the request's order: a key already
//     there stays, unless both values are mappings, which are merged the
//     same way; absent when none has any.
//
// envoyproxy/ratelimit merges into the first rule's own metadata, so that
// what one request adds is seen by the next (a data race); here every
// response gets its own copy.
//
// envoyproxy/ratelimit also loses the metadata of a rule whose stats name
// the request gives (detailed_metric, value_to_metric): it rebuilds the
// rule without it. Here a rule's metadata does not depend on its stats
// name (docs/server.md, "Where it differs").
func responseMetadata(req *rlsv3.RateLimitRequest, res *rules.Result) *structpb.Struct {
	fields := map[string]*structpb.Value{"domain": structpb.NewStringValue(req.GetDomain())}
	ds := make([]*structpb.Value, 0, len(req.GetDescriptors()))
	for _, d := range req.GetDescriptors() {
		entries := make([]*structpb.Value, len(d.GetEntries()))
		for i, e := range d.GetEntries() {
			entries[i] = structpb.NewStringValue(fmt.Sprintf("%s=%s", e.GetKey(), e.GetValue()))
		}
		f := map[string]*structpb.Value{"entries": structpb.NewListValue(&structpb.ListValue{Values: entries})}
		if d.GetLimit() != nil {
			f["limit"] = structpb.NewStringValue(d.GetLimit().String())
		}
		if h := d.GetHitsAddend(); h != nil {
			f["hitsAddend"] = structpb.NewNumberValue(float64(h.GetValue()))
		}
		ds = append(ds, structpb.NewStructValue(&structpb.Struct{Fields: f}))
	}
	fields["descriptors"] = structpb.NewListValue(&structpb.ListValue{Values: ds})
	if h := req.GetHitsAddend(); h != 0 {
		fields["hitsAddend"] = structpb.NewNumberValue(float64(h))
	}
	passed := map[string]*structpb.Value{}
	if res != nil {
		for _, st := range res.Statuses {
			if st.Code != rules.OK || st.Rule == nil || st.Unlimited || st.Replaced || st.Override || len(st.Rule.Metadata) == 0 {
				continue
			}
			mergeMetadata(passed, metadataStruct(st.Rule.Metadata).GetFields())
		}
	}
	if len(passed) > 0 {
		fields["metadata"] = structpb.NewStructValue(&structpb.Struct{Fields: passed})
	}
	return &structpb.Struct{Fields: fields}
}

// mergeMetadata adds src's keys that dest lacks, and merges the mappings
// both hold, as envoyproxy/ratelimit's mergeMetadata does. src is a fresh
// copy, which dest may take parts of.
func mergeMetadata(dest, src map[string]*structpb.Value) {
	for k, v := range src {
		d, ok := dest[k]
		if !ok {
			dest[k] = v
			continue
		}
		if ds, ss := d.GetStructValue(), v.GetStructValue(); ds != nil && ss != nil {
			mergeMetadata(ds.Fields, ss.Fields)
		}
	}
}

// metadataStruct is a rule's metadata (as YAML decoded it) as a Struct:
// a mapping's keys written with %v, as envoyproxy/ratelimit's
// parseMetadata does, and a value of another type than
// structpb.NewValue's (a YAML timestamp) as its %v.
func metadataStruct(m map[string]any) *structpb.Struct {
	fields := make(map[string]*structpb.Value, len(m))
	for k, v := range m {
		fields[k] = metadataValue(v)
	}
	return &structpb.Struct{Fields: fields}
}

func metadataValue(v any) *structpb.Value {
	switch v := v.(type) {
	case map[string]any:
		return structpb.NewStructValue(metadataStruct(v))
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = e
		}
		return structpb.NewStructValue(metadataStruct(m))
	case []any:
		l := make([]*structpb.Value, len(v))
		for i, e := range v {
			l[i] = metadataValue(e)
		}
		return structpb.NewListValue(&structpb.ListValue{Values: l})
	}
	if pv, err := structpb.NewValue(v); err == nil {
		return pv
	}
	return structpb.NewStringValue(fmt.Sprint(v))
}
