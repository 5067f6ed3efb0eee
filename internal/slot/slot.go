// Package slot computes Redis Cluster hash slots, so that a store can refuse
// a multi-key command whose keys would land on different slots before the
// client sees it.
package slot

import "github.com/ratekit/ratekit/internal/keyspace"

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
