// Package slot computes Redis Cluster hash slots, so that every store, the
// memory store included, refuses a script whose keys would land on
// different slots, with the same error, before any client sees it.
package slot

import (
	"errors"
	"fmt"

	"github.com/ratekit/ratekit/internal/keyspace"
)

// ErrCrossSlot is what every store's error wraps (beside core.ErrStore)
// when a script's keys are in different cluster slots.
var ErrCrossSlot = errors.New("keys in different cluster slots")

// Check returns nil when keys share one slot, and otherwise an error
// wrapping ErrCrossSlot that names them.
func Check(keys []string) error {
	if len(keys) < 2 || Same(keys) {
		return nil
	}
	return fmt.Errorf("%w: %q", ErrCrossSlot, keys)
}

// Count is the number of Redis Cluster hash slots.
const Count = 16384

// Of returns key's hash slot: CRC16 (XMODEM) of its hash tag, modulo 16384.
func Of(key string) int {
	return int(crc16(keyspace.Tag(key)) % Count)
}

// Same reports whether all keys share one slot.
func Same(keys []string) bool {
	if len(keys) < 2 {
		return true
	}
	s := Of(keys[0])
	for _, k := range keys[1:] {
		if Of(k) != s {
			return false
		}
	}
	return true
}

func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for j := 0; j < 8; j++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
