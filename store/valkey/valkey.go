// Package valkeystore runs ratekit scripts through valkey-go
// (github.com/valkey-io/valkey-go), the Valkey project's client, a fork of
// rueidis. It lives in store/valkey and is named valkeystore so that it
// never clashes with the client's package, valkey:
//
//	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{"localhost:6379"}})
//	store, err := valkeystore.New(client)
//	lim, err := tokenbucket.New(store, cfg)
//
// valkey-go has the API of rueidis under other type names, and the store
// is the same: a *scriptproto.Runner built by scriptproto.NewRueidis, with
// the same auto pipelining, topologies and client options (DisableCache,
// ForceSingleClient, Dialer.Timeout, ConnWriteTimeout, DisableRetry,
// AlwaysPipelining), which store/rueidis's package doc describes.
package valkeystore

import (
	"github.com/valkey-io/valkey-go"

	"github.com/ratekit/ratekit/store/scriptproto"
)

// New returns the store that runs scripts with c: a client in cluster
// mode is a cluster, any other one node (scriptproto.SingleNode). It sends
// nothing. A nil c is an error wrapping core.ErrInvalidConfig.
func New(c valkey.Client, opts ...scriptproto.Option) (*scriptproto.Runner, error) {
	return scriptproto.NewRueidis("valkey", c, opts...)
}
