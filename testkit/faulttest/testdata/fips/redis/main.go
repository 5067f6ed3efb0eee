// Command redis makes decisions through every Redis store on the
// redis-server at the address given as its argument; TestFIPSOnly runs it
// under GODEBUG=fips140=only. It prints "ok" or fails. The stores run
// scripts as EVALSHA (scriptproto.WithoutFunctions), which names each by
// its SHA-1, so that the test can tell from the server's counts whether
// the hash was right; a function's name holds the same hash.
package main

import (
	"fmt"
	"os"

	"github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	goredisstore "github.com/ratekit/ratekit/store/goredis"
	redigostore "github.com/ratekit/ratekit/store/redigo"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
	"github.com/ratekit/ratekit/store/scriptproto"
	valkeystore "github.com/ratekit/ratekit/store/valkey"
	"github.com/ratekit/ratekit/testkit/faulttest/testdata/fips/fipscheck"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: redis host:port")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "redis:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func run(addr string) error {
	if err := fipscheck.Enforced(); err != nil {
		return err
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	goredisStore, err := goredisstore.New(rdb, scriptproto.WithoutFunctions())
	if err != nil {
		return err
	}
	if err := fipscheck.Run(goredisStore, "goredis:"); err != nil {
		return fmt.Errorf("goredis: %w", err)
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		return err
	}
	defer rc.Close()
	rueidisStore, err := rueidisstore.New(rc, scriptproto.WithoutFunctions())
	if err != nil {
		return err
	}
	if err := fipscheck.Run(rueidisStore, "rueidis:"); err != nil {
		return fmt.Errorf("rueidis: %w", err)
	}
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
	defer pool.Close()
	redigoStore, err := redigostore.New(pool, scriptproto.WithoutFunctions())
	if err != nil {
		return err
	}
	if err := fipscheck.Run(redigoStore, "redigo:"); err != nil {
		return fmt.Errorf("redigo: %w", err)
	}
	vc, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		return err
	}
	defer vc.Close()
	valkeyStore, err := valkeystore.New(vc, scriptproto.WithoutFunctions())
	if err != nil {
		return err
	}
	if err := fipscheck.Run(valkeyStore, "valkey:"); err != nil {
		return fmt.Errorf("valkey: %w", err)
	}
	return nil
}
