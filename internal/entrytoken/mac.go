package entrytoken

// MAC returns HMAC-SHA256, under the current service key, of a message in the given domain: the
// hosted pages derive their per-form CSRF values with it. The message starts with 0xff,
// which neither the derivations of the token key (0xfe, cmac.go) and of the key id (0xfd)
// nor a token payload (the version, 3; tags are AES-CMAC under the derived key anyway) starts with, then the domain,
// so a MAC is never a token tag or key and MACs of different domains never collide.
func (k *Key) MAC(domain string, parts ...string) [32]byte {
	n := 2 + len(domain)
	for _, p := range parts {
		n += 1 + len(p)
	}
	b := make([]byte, 0, n)
	b = append(b, 0xff)
	b = append(b, domain...)
	for _, p := range parts {
		b = append(b, 0)
		b = append(b, p...)
	}
	return k.ring.Load().cur.mac(b)
}
