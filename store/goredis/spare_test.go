package goredisstore_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	goredisstore "github.com/ratekit/ratekit/store/goredis"
)

// The spare client the store makes after a restart (redial.go) has the
// client's options as go-redis filled them in, whatever the caller set:
// redis.NewClient fills in defaults again, and a value it filled in that
// it would change again (MaxRetries -1 became 0, which would become 3)
// is given back as what gives it. Only what a spare leaves out differs.
// A newer go-redis that fills in another default this way fails this.
func TestSpareOptionsAreTheClients(t *testing.T) {
	differ := map[string]bool{
		// A spare's own, on purpose (see spareOptions).
		"MinIdleConns": true, "ClientSideCache": true, "ClientSideCacheConfig": true, "MaintNotificationsConfig": true,
		// Set by NewClient to the client's own.
		"PushNotificationProcessor": true,
	}
	for name, o := range map[string]*redis.Options{
		"defaults": {},
		"off": {MaxRetries: -1, MinRetryBackoff: -1, MaxRetryBackoff: -1, ReadTimeout: -1, WriteTimeout: -1,
			ConnMaxIdleTime: -1, DialTimeout: -1, PoolTimeout: -1},
		"no deadlines": {ReadTimeout: -2, WriteTimeout: -2},
		"set": {MaxRetries: 2, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: time.Second, ReadTimeout: time.Second,
			WriteTimeout: 2 * time.Second, DialerRetries: 1, DialerRetryTimeout: time.Millisecond, PoolSize: 3, MinIdleConns: 2,
			MaxIdleConns: 3, ConnMaxLifetime: time.Hour, ConnMaxLifetimeJitter: time.Minute, DB: 2, Protocol: 2, Password: "x"},
		"write timeout off": {ReadTimeout: time.Second, WriteTimeout: -1},
	} {
		c := redis.NewClient(o)
		spare := redis.NewClient(goredisstore.SpareOptions(c.Options()))
		want, got := reflect.ValueOf(c.Options()).Elem(), reflect.ValueOf(spare.Options()).Elem()
		for i := range want.NumField() {
			f := want.Type().Field(i)
			if !f.IsExported() || differ[f.Name] {
				continue
			}
			w, g := want.Field(i), got.Field(i)
			if f.Type.Kind() == reflect.Func {
				if w.Pointer() != g.Pointer() {
					t.Errorf("%s: %s is another function", name, f.Name)
				}
				continue
			}
			if !reflect.DeepEqual(w.Interface(), g.Interface()) {
				t.Errorf("%s: %s is %v on the spare, %v on the client", name, f.Name, g.Interface(), w.Interface())
			}
		}
		if s := spare.Options(); s.MinIdleConns != 0 || s.ClientSideCache != nil || s.ClientSideCacheConfig != nil || s.MaintNotificationsConfig.Mode != "disabled" {
			t.Errorf("%s: the spare has MinIdleConns %d, a client-side cache (%v, %v) or maintenance notifications (%v)", name, s.MinIdleConns, s.ClientSideCache, s.ClientSideCacheConfig, s.MaintNotificationsConfig.Mode)
		}
		c.Close()
		spare.Close()
	}
}
