package main

import (
	"fmt"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ratekit/ratekit/rules"
)

// responseMetadata is RESPONSE_DYNAMIC_METADATA's dynamic_metadata, as
// envoyproxy/ratelimit builds it (ratelimitToMetadata): the domain, each
// descriptor's entries ("key=value"), override and hits_addend, the
// request's hits_addend, and whether any rule is in quota mode.
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
	quota := false
	for _, st := range res.Statuses {
		if st.Rule != nil && st.Rule.QuotaMode {
			quota = true
		}
	}
	fields["quotaModeEnabled"] = structpb.NewBoolValue(quota)
	return &structpb.Struct{Fields: fields}
}
