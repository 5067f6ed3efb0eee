// Command memory makes decisions on the memory store; TestFIPSOnly runs it
// under GODEBUG=fips140=only. It prints "ok" or fails.
package main

import (
	"fmt"
	"os"

	"github.com/ratekit/ratekit/store/memory"
	"github.com/ratekit/ratekit/testkit/faulttest/testdata/fips/fipscheck"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "memory:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func run() error {
	if err := fipscheck.Enforced(); err != nil {
		return err
	}
	s, err := memory.New()
	if err != nil {
		return err
	}
	defer s.Close()
	return fipscheck.Run(s, "fips:")
}
