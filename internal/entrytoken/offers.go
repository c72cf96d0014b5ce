package entrytoken

import (
	"encoding/base64"
	"encoding/binary"
)

// Offers signs the offer tokens of one answer: tokens whose claims differ only in the
// campaign. Their payloads share everything up to the campaign (the format puts it last), so
// Prepare encodes that start and runs its whole blocks through the CMAC once; each token then
// costs copying that encoding, the few bytes its campaign id adds and the one or two CMAC
// blocks they end. An answer of 30 offers signs 30 payloads of 4–5 blocks with 34–64 block
// encryptions (one per token when the campaign fits the last block) instead of about 140.
//
// The zero value is ready for Prepare; an Offers is reused from answer to answer, and it is
// not safe for concurrent use.
type Offers struct {
	cur     *secretKey
	n       int                      // length of the shared start of the payload
	enc     int                      // bytes of it encoded in encoded (a multiple of 3)
	mac     int                      // bytes of it the chaining value covers (a multiple of 16)
	shared  [maxPayload]byte         // the shared start
	encoded [maxPayload/3*4 + 4]byte // base64url of shared[:enc]
	x       [TagSize]byte            // the chaining value after shared[:mac]
	work    [TagSize]byte            // the CMAC's working block (heap memory: see cmac.sum)
}

// Prepare makes o sign tokens of c (whatever c.CampaignID says) under k's current key.
func (k *Key) Prepare(o *Offers, c Claims) {
	o.cur = k.ring.Load().cur
	o.n = len(appendShared(o.shared[:0], o.cur.id, &c))
	o.enc = o.n - o.n%3
	base64.RawURLEncoding.Encode(o.encoded[:], o.shared[:o.enc])
	// The campaign's at least one byte follows, so every whole block of the shared start is
	// one CMAC absorbs before the last.
	o.mac = o.n - o.n%16
	clear(o.work[:])
	o.cur.tok.absorb(o.work[:], o.shared[:o.mac])
	o.x = o.work
}

// AppendToken appends the token of the prepared claims with campaignID to dst: the token
// Key.AppendToken makes of them. It allocates nothing when dst has room for MaxTokenLen more
// bytes.
func (o *Offers) AppendToken(dst []byte, campaignID int64) []byte {
	// The rest of the payload after the encoded start: at most 2 bytes of the shared start
	// (enc is n rounded down to 3) and the campaign.
	var rest [2 + binary.MaxVarintLen64]byte
	r := binary.AppendUvarint(append(rest[:0], o.shared[o.enc:o.n]...), uint64(campaignID))
	// The CMAC's tail: what of the shared start the chaining value does not cover (at most
	// 15 bytes), then the campaign.
	var tail [16 + binary.MaxVarintLen64]byte
	t := append(append(tail[:0], o.shared[o.mac:o.n]...), r[o.n-o.enc:]...)
	o.work = o.x
	var tag [TagSize]byte
	o.cur.tok.finish(&tag, o.work[:], t)
	dst = append(dst, o.encoded[:o.enc/3*4]...)
	dst = base64.RawURLEncoding.AppendEncode(dst, r)
	dst = append(dst, '.')
	return base64.RawURLEncoding.AppendEncode(dst, tag[:])
}
