package ringcache

import (
	"testing"
)

// BenchmarkAnswer: a set and a get of a 12 KiB value (an offers answer of 30 offers) with a
// 600-byte head, in a cache of 64 MiB (the answer cache's default) holding 10,000 keys.
func BenchmarkAnswer(b *testing.B) {
	c := New(64 << 20)
	head, body := make([]byte, 600), make([]byte, 12<<10)
	dst := make([]byte, 0, 16<<10)
	const keys = 10000
	for k := range uint64(keys) {
		c.Set(k*0x9e3779b97f4a7c15, head, body)
	}
	b.Run("set", func(b *testing.B) {
		b.SetBytes(int64(len(head) + len(body)))
		b.ReportAllocs()
		k := uint64(0)
		for b.Loop() {
			c.Set(k*0x9e3779b97f4a7c15, head, body)
			k = (k + 1) % keys
		}
	})
	b.Run("get", func(b *testing.B) {
		b.SetBytes(int64(len(head) + len(body)))
		b.ReportAllocs()
		k := uint64(0)
		for b.Loop() {
			dst, _ = c.Get(dst[:0], k*0x9e3779b97f4a7c15)
			k = (k + 1) % keys
		}
	})
}
