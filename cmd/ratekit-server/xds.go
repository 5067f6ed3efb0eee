package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	sotw "github.com/envoyproxy/go-control-plane/pkg/client/sotw/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ratekit/ratekit/rules"
)

// watchXDS is CONFIG_TYPE=GRPC_XDS_SOTW: it subscribes to the
// RateLimitConfig resources of an xDS management server (an ADS
// state-of-the-world stream, as envoyproxy/ratelimit and Envoy Gateway
// use), loads each snapshot whole into r (acknowledged) or keeps the
// configuration in force (refused, with the error), and reconnects after
// CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL when the stream ends,
// until ctx ends.
func watchXDS(ctx context.Context, s settings, r *rules.Rules, log *slog.Logger) {
	opts := loadOptions(s)
	for ctx.Err() == nil {
		if err := streamXDS(ctx, s, r, opts); err != nil && ctx.Err() == nil {
			if s.XDSUseTLS && (strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:")) {
				log.Error("xDS management server: TLS failed", "url", s.XDSServerURL, "err", err,
					"check", "CONFIG_GRPC_XDS_SERVER_TLS_CACERT (the CA of the server's certificate), CONFIG_GRPC_XDS_SERVER_TLS_SAN (a name it holds) and CONFIG_GRPC_XDS_CLIENT_TLS_CERT/KEY (the certificate the server may require)")
			} else {
				log.Error("xDS management server", "url", s.XDSServerURL, "err", err)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(s.XDSRetryInterval):
		}
	}
}

func streamXDS(ctx context.Context, s settings, r *rules.Rules, opts rules.LoadOptions) error {
	creds := insecure.NewCredentials()
	if s.XDSUseTLS {
		cfg, err := xdsTLS(s)
		if err != nil {
			return err
		}
		creds = credentials.NewTLS(cfg)
	}
	dial := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if s.XDSMaxMsgSize > 0 {
		dial = append(dial, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(s.XDSMaxMsgSize)))
	}
	conn, err := grpc.NewClient(s.XDSServerURL, dial...)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := sotw.NewADSClient(ctx, xdsNode(s), resource.RateLimitConfigType)
	if err := client.InitConnect(conn); err != nil {
		return err
	}
	for {
		resp, err := client.Fetch()
		if err != nil {
			return err
		}
		files := make([]rules.File, 0, len(resp.Resources))
		for _, res := range resp.Resources {
			var conf rlsconfv3.RateLimitConfig
			if err = res.UnmarshalTo(&conf); err != nil {
				break
			}
			var f rules.File
			if f, err = xdsFile(&conf); err != nil {
				break
			}
			files = append(files, f)
		}
		if err == nil {
			_, err = r.Update(files, opts) // counted and logged by OnLoad
		}
		if err != nil {
			err = client.Nack(err.Error())
		} else {
			err = client.Ack()
		}
		if err != nil {
			return err
		}
	}
}

// xdsNode is the node ratekit-server says it is: CONFIG_GRPC_XDS_NODE_ID,
// with CONFIG_GRPC_XDS_NODE_METADATA's "key=value,..." as its metadata.
func xdsNode(s settings) *corev3.Node {
	meta := map[string]*structpb.Value{}
	for _, kv := range strings.Split(s.XDSNodeMetadata, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			meta[k] = structpb.NewStringValue(v)
		}
	}
	return &corev3.Node{Id: s.XDSNodeID, Metadata: &structpb.Struct{Fields: meta}}
}

// xdsFile writes an xDS RateLimitConfig as a rules file, in the YAML
// format (JSON, which YAML reads), field by field as envoyproxy/ratelimit
// converts it (ConfigXdsProtoToYaml), so that rules parses and checks it
// as any other file.
func xdsFile(conf *rlsconfv3.RateLimitConfig) (rules.File, error) {
	type rateLimit struct {
		Unit            string              `json:"unit,omitempty"`
		RequestsPerUnit *uint32             `json:"requests_per_unit,omitempty"`
		Unlimited       bool                `json:"unlimited,omitempty"`
		Name            string              `json:"name,omitempty"`
		Replaces        []map[string]string `json:"replaces,omitempty"`
	}
	type descriptor struct {
		Key            string        `json:"key"`
		Value          string        `json:"value,omitempty"`
		RateLimit      *rateLimit    `json:"rate_limit,omitempty"`
		Descriptors    []*descriptor `json:"descriptors,omitempty"`
		ShadowMode     bool          `json:"shadow_mode,omitempty"`
		DetailedMetric bool          `json:"detailed_metric,omitempty"`
	}
	var convert func([]*rlsconfv3.RateLimitDescriptor) []*descriptor
	convert = func(ds []*rlsconfv3.RateLimitDescriptor) []*descriptor {
		out := make([]*descriptor, len(ds))
		for i, d := range ds {
			out[i] = &descriptor{Key: d.GetKey(), Value: d.GetValue(), Descriptors: convert(d.GetDescriptors()),
				ShadowMode: d.GetShadowMode(), DetailedMetric: d.GetDetailedMetric()}
			if p := d.GetRateLimit(); p != nil {
				rl := &rateLimit{Unlimited: p.GetUnlimited(), Name: p.GetName()}
				if p.GetUnit() != rlsconfv3.RateLimitUnit_UNKNOWN {
					rl.Unit = strings.ToLower(p.GetUnit().String())
				}
				if !p.GetUnlimited() {
					rpu := p.GetRequestsPerUnit()
					rl.RequestsPerUnit = &rpu
				}
				for _, r := range p.GetReplaces() {
					rl.Replaces = append(rl.Replaces, map[string]string{"name": r.GetName()})
				}
				out[i].RateLimit = rl
			}
		}
		return out
	}
	data, err := json.Marshal(struct {
		Domain      string        `json:"domain"`
		Descriptors []*descriptor `json:"descriptors"`
	}{conf.GetDomain(), convert(conf.GetDescriptors())})
	if err != nil {
		return rules.File{}, err
	}
	return rules.File{Name: "xds:" + conf.GetName(), Data: data}, nil
}

// xdsTLS is CONFIG_GRPC_XDS_SERVER_USE_TLS: the management server's CA,
// this client's certificate, and the name to verify.
func xdsTLS(s settings) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: s.XDSServerTLSSAN, MinVersion: tls.VersionTLS12}
	if s.XDSClientTLSCert != "" {
		pair, err := tls.LoadX509KeyPair(s.XDSClientTLSCert, s.XDSClientTLSKey)
		if err != nil {
			return nil, fmt.Errorf("CONFIG_GRPC_XDS_CLIENT_TLS_CERT: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if s.XDSServerTLSCACert != "" {
		pool, err := certPool(s.XDSServerTLSCACert)
		if err != nil {
			return nil, fmt.Errorf("CONFIG_GRPC_XDS_SERVER_TLS_CACERT: %w", err)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
