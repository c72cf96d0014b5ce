package persistence

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/switchboard/switchboard/engine"
)

// EngineCampaigns loads the engine's definitions of the given campaigns, or of every active
// campaign when ids is nil. Campaigns that are not active come back with their status so the
// caller can drop them from the snapshot; ids that do not exist are simply absent.
//
// Each campaign is read whole in one snapshot (its quotas, conditions, relationships,
// retargets and exclusions agree), the whole market feedChunk campaigns per transaction: one
// snapshot held through a paced read of 100,000 campaigns (14 s while a process joined) kept
// every version of the quota rows the serving processes update on each entry, and their
// entries slowed. A campaign changed while the market is read is notified, and the caller
// reads the change epoch before it starts (CampaignEpoch), as it always did.
func (db *FeedStore) EngineCampaigns(ctx context.Context, ids []int64) ([]engine.Campaign, error) {
	m := db.Participants.meter()
	read := func(ids []int64) ([]engine.Campaign, error) {
		var out []engine.Campaign
		err := pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			var err error
			out, err = loadEngineCampaigns(ctx, tx, ids, &m)
			return err
		})
		return out, err
	}
	if ids != nil {
		out, err := read(ids)
		return out, classify(err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT id FROM campaigns WHERE status = 2 ORDER BY id`)
	if err != nil {
		return nil, classify(err)
	}
	active, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, classify(err)
	}
	out := make([]engine.Campaign, 0, len(active))
	for lo := 0; lo < len(active); lo += feedChunk {
		cs, err := read(active[lo:min(lo+feedChunk, len(active))])
		if err != nil {
			return nil, classify(err)
		}
		for _, c := range cs {
			if c.Status == engine.StatusActive { // not paused or closed since the list was read
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// feedChunk is how many campaigns one transaction of the whole market's engine feed reads:
// about a second of paced reading at 100,000 campaigns (a variable for tests).
var feedChunk = 8192

// loadEngineCampaigns reads, in tx, the engine's definitions of the campaigns ids (none
// when none of them exists): each campaign's row, then its quotas with their conditions,
// relationships, unexpired retargets and exclusions, every row paced by m.
func loadEngineCampaigns(ctx context.Context, tx pgx.Tx, ids []int64, m *loadMeter) ([]engine.Campaign, error) {
	// Without parallel workers: a load runs beside serving processes' requests, and a slice
	// of campaigns is small (a worker per slice took two more of the database's cores at
	// once).
	if len(ids) > feedSlice {
		if _, err := tx.Exec(ctx, `SET LOCAL max_parallel_workers_per_gather = 0`); err != nil {
			return nil, err
		}
	}
	out, index, err := readEngineCampaignRows(ctx, tx, ids, m)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}
	campIDs := make([]int64, len(out))
	for i := range out {
		campIDs[i] = out[i].ID
	}

	// Quotas with their conditions, in id order, a slice of campaigns at a time: each query
	// sorts its slice in memory (the whole market's sort spilled to disk, a burst of
	// PostgreSQL's CPU before the first row that no pacing of the reads could spread).
	var qs quotaScratch
	for lo := 0; lo < len(campIDs); lo += feedSlice {
		if err := qs.read(ctx, tx, campIDs[lo:min(lo+feedSlice, len(campIDs))], out, index, m); err != nil {
			return nil, err
		}
	}
	if err := readEngineRelated(ctx, tx, campIDs, out, index, m); err != nil {
		return nil, err
	}
	if err := readEngineRetargets(ctx, tx, campIDs, out, index, m); err != nil {
		return nil, err
	}

	// Exclusions.
	rows, err := tx.Query(ctx, `SELECT campaign_id, participant_id FROM campaign_exclusions WHERE campaign_id = ANY($1)`, campIDs)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		m.row(ctx)
		var campID, pid int64
		if err := rows.Scan(&campID, &pid); err != nil {
			rows.Close()
			return nil, err
		}
		c := &out[index[campID]]
		c.ExcludedParticipants = append(c.ExcludedParticipants, pid)
	}
	rows.Close()
	return out, rows.Err()
}

// readEngineCampaignRows reads the rows of the campaigns ids that exist, in id order, as
// the engine's campaigns without what hangs off them, and their index by id.
func readEngineCampaignRows(ctx context.Context, tx pgx.Tx, ids []int64, m *loadMeter) ([]engine.Campaign, map[int64]int, error) {
	// The field period starts when an active campaign last went active (status_changed_at).
	rows, err := tx.Query(ctx, `SELECT c.id, c.buyer_id, cl.country_id, c.status, c.cpi_cents,
		c.length_of_interview, c.incidence, c.supported_devices, COALESCE(c.max_daily_completes, 0),
		COALESCE(c.reentry_interval, -1), c.days_in_field, extract(epoch FROM c.status_changed_at)::bigint,
		NULLIF(c.excluded_supplier_ids, '{}')
		FROM campaigns c JOIN country_languages cl ON cl.id = c.country_language_id
		WHERE c.id = ANY($1) ORDER BY c.id`, ids)
	if err != nil {
		return nil, nil, err
	}
	var out []engine.Campaign
	index := map[int64]int{}
	for rows.Next() {
		m.row(ctx)
		var c engine.Campaign
		var devices []int16
		var status int16
		var cpi int64
		if err := rows.Scan(&c.ID, &c.BuyerID, &c.CountryID, &status, &cpi, &c.LOI, &c.Incidence,
			&devices, &c.MaxDailyCompletes, &c.ReentryMinutes, &c.DaysInField, &c.FieldStart, &c.ExcludedSuppliers); err != nil {
			rows.Close()
			return nil, nil, err
		}
		c.Status, c.CPICents = int(status), cpi
		codes := make([]int, len(devices))
		for i, d := range devices {
			codes[i] = int(d)
		}
		c.Devices = engine.DevicesFromCodes(codes)
		if c.ReentryMinutes < 0 {
			c.ReentryMinutes = engine.ReentryNever
		}
		index[c.ID] = len(out)
		out = append(out, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return out, index, nil
}

// readEngineRelated adds to out (indexed by id) the relationships of campIDs, both
// directions.
func readEngineRelated(ctx context.Context, tx pgx.Tx, campIDs []int64, out []engine.Campaign, index map[int64]int, m *loadMeter) error {
	rows, err := tx.Query(ctx, `SELECT campaign_id, related_campaign_id FROM campaign_relationships
		WHERE campaign_id = ANY($1) OR related_campaign_id = ANY($1)`, campIDs)
	if err != nil {
		return err
	}
	for rows.Next() {
		m.row(ctx)
		var a, b int64
		if err := rows.Scan(&a, &b); err != nil {
			rows.Close()
			return err
		}
		if i, ok := index[a]; ok {
			out[i].Related = append(out[i].Related, b)
		}
		if i, ok := index[b]; ok {
			out[i].Related = append(out[i].Related, a)
		}
	}
	rows.Close()
	return rows.Err()
}

// readEngineRetargets adds to out (indexed by id) the unexpired retargeting records of
// campIDs.
func readEngineRetargets(ctx context.Context, tx pgx.Tx, campIDs []int64, out []engine.Campaign, index map[int64]int, m *loadMeter) error {
	rows, err := tx.Query(ctx, `SELECT campaign_id, retargeting_type, COALESCE(participant_id, 0), identifier, expires_at
		FROM campaign_retargets WHERE campaign_id = ANY($1) AND expires_at > now()`, campIDs)
	if err != nil {
		return err
	}
	for rows.Next() {
		m.row(ctx)
		var campID, pid int64
		var kind int16
		var ident string
		var exp time.Time
		if err := rows.Scan(&campID, &kind, &pid, &ident, &exp); err != nil {
			rows.Close()
			return err
		}
		r := engine.Retarget{Kind: uint8(kind), ParticipantID: pid, ExpiresAt: exp.Unix()}
		if r.Kind == engine.RetargetDevice || r.Kind == engine.RetargetHashedDevice {
			r.Value = ident
		}
		c := &out[index[campID]]
		c.Retargets = append(c.Retargets, r)
	}
	rows.Close()
	return rows.Err()
}

// scanColumn decodes v, column i of rows' current row, into dst the slow way: through the
// connection's type map (what the in-place decoders decline).
func scanColumn(rows pgx.Rows, i int, v []byte, dst any) error {
	fd := rows.FieldDescriptions()[i]
	return rows.Conn().TypeMap().Scan(fd.DataTypeOID, fd.Format, v, dst)
}

// appendTextArray appends the elements of a one-dimensional text[] in PostgreSQL's binary
// form to dst, as slices of b. It reports false for anything else (a NULL element, more
// dimensions, a malformed value): the caller then decodes it the slow way.
func appendTextArray(dst [][]byte, b []byte) ([][]byte, bool) {
	n, b, ok := arrayElements(b)
	if !ok {
		return dst, false
	}
	for range n {
		if len(b) < 4 {
			return dst, false
		}
		l := int(int32(binary.BigEndian.Uint32(b)))
		if l < 0 || len(b)-4 < l {
			return dst, false
		}
		dst = append(dst, b[4:4+l])
		b = b[4+l:]
	}
	return dst, len(b) == 0
}

// arrayElements returns the element count and the elements of a one-dimensional array in
// PostgreSQL's binary form (none for an array of no dimensions, '{}'); ok is false for more
// dimensions or a malformed header.
func arrayElements(b []byte) (n int, elems []byte, ok bool) {
	if len(b) < 12 {
		return 0, nil, false
	}
	switch binary.BigEndian.Uint32(b) { // dimensions
	case 0:
		return 0, nil, len(b) == 12
	case 1:
	default:
		return 0, nil, false
	}
	if len(b) < 20 {
		return 0, nil, false
	}
	n = int(int32(binary.BigEndian.Uint32(b[12:])))
	return n, b[20:], n >= 0
}

// feedSlice is how many campaigns one query of the engine feed's quotas covers (a variable
// for tests).
var feedSlice = 2048

// quotaScratch is what reading the quotas of successive slices of campaigns reuses, and the
// slabs their conditions and codes are carved from. At 100,000 campaigns a condition's
// codes as an array of their own and a quota's conditions as a slice of their own were
// about 800,000 heap objects, alive as long as the engine holds the market and marked by
// every collector cycle; carved from slabs of thousands they are a few hundred.
type quotaScratch struct {
	texts []string // scanned into again for each row, when not binary
	raw   [][]byte // the texts of a row in the connection's buffer
	codes []int32  // a row's codes, when not binary

	codeSlab []int32            // the slab codes are carved from
	condSlab []engine.Condition // the slab quotas' conditions are carved from
	first    int                // where the current quota's conditions start in condSlab
}

// Slab sizes: codes (int32s) and conditions (variables for tests).
var (
	codeSlab = 16 << 10
	condSlab = 1 << 10
)

// carveCodes returns a copy of codes carved from the code slab, its capacity ending where
// it does (nothing can append into a neighbour's codes); empty codes are an empty slice.
func (qs *quotaScratch) carveCodes(codes []int32) []int32 {
	if len(codes) == 0 {
		return []int32{}
	}
	if cap(qs.codeSlab)-len(qs.codeSlab) < len(codes) {
		qs.codeSlab = make([]int32, 0, max(codeSlab, len(codes)))
	}
	start := len(qs.codeSlab)
	qs.codeSlab = append(qs.codeSlab, codes...)
	return qs.codeSlab[start:len(qs.codeSlab):len(qs.codeSlab)]
}

// addCondition appends cond to the conditions of q, the quota being read, which are a
// carving of the condition slab (moved to a new slab, with room, when it is full).
func (qs *quotaScratch) addCondition(q *engine.Quota, cond engine.Condition) {
	if len(qs.condSlab) == cap(qs.condSlab) {
		n := len(qs.condSlab) - qs.first
		slab := make([]engine.Condition, 0, max(condSlab, 2*n))
		qs.condSlab, qs.first = append(slab, qs.condSlab[qs.first:]...), 0
	}
	qs.condSlab = append(qs.condSlab, cond)
	q.Conditions = qs.condSlab[qs.first:len(qs.condSlab):len(qs.condSlab)]
}

// appendInt4Array appends the elements of a one-dimensional int4[] in PostgreSQL's binary
// form to dst. It reports false for anything else (a NULL element, more dimensions, a
// malformed value): the caller then decodes it the slow way.
func appendInt4Array(dst []int32, b []byte) ([]int32, bool) {
	n, b, ok := arrayElements(b)
	if !ok || len(b) != 8*n {
		return dst, false
	}
	for range n {
		if int32(binary.BigEndian.Uint32(b)) != 4 {
			return dst, false
		}
		dst = append(dst, int32(binary.BigEndian.Uint32(b[4:])))
		b = b[8:]
	}
	return dst, true
}

// read appends to out (whose campaign ids index maps to their position) the quotas of the
// campaigns ids, with their conditions, in id order, paced by m.
func (qs *quotaScratch) read(ctx context.Context, tx pgx.Tx, ids []int64, out []engine.Campaign, index map[int64]int, m *loadMeter) error {
	rows, err := tx.Query(ctx, `SELECT q.campaign_id, q.id, q.num_respondents, q.is_click_balanced, q.is_global,
		qq.question_id, qq.pre_codes, qq.text_values
		FROM campaign_quotas q LEFT JOIN quota_qualifications qq ON qq.quota_id = q.id
		WHERE q.campaign_id = ANY($1) ORDER BY q.campaign_id, q.id, qq.id`, ids)
	if err != nil {
		return err
	}
	// No descriptions when the query failed on its way (a cancelled context): Next reports it.
	fds := rows.FieldDescriptions()
	binaryCodes := len(fds) > 6 && fds[6].Format == pgtype.BinaryFormatCode
	binaryTexts := len(fds) > 7 && fds[7].Format == pgtype.BinaryFormatCode
	for rows.Next() {
		m.row(ctx)
		var campID, quotaID int64
		var num int
		var click, global bool
		var qid *int32
		// pre_codes and text_values are decoded in place (below): at 100,000 campaigns
		// about 9 million text values, nearly all repeats, which Scan would allocate one
		// string each, and a codes array per condition.
		if err := rows.Scan(&campID, &quotaID, &num, &click, &global, &qid, nil, nil); err != nil {
			rows.Close()
			return err
		}
		c := &out[index[campID]]
		if n := len(c.Quotas); n == 0 || c.Quotas[n-1].ID != quotaID {
			c.Quotas = append(c.Quotas, engine.Quota{ID: quotaID, NumRespondents: num, ClickBalanced: click, Global: global})
			qs.first = len(qs.condSlab)
		}
		if qid == nil {
			continue
		}
		var codes []int32
		if v := rows.RawValues()[6]; v != nil {
			var ok bool
			if qs.codes, ok = appendInt4Array(qs.codes[:0], v); !binaryCodes || !ok {
				if err := scanColumn(rows, 6, v, &qs.codes); err != nil {
					rows.Close()
					return err
				}
			}
			codes = qs.carveCodes(qs.codes)
		}
		v := rows.RawValues()[7]
		var ok bool
		if qs.raw, ok = appendTextArray(qs.raw[:0], v); !binaryTexts || !ok {
			if err := scanColumn(rows, 7, v, &qs.texts); err != nil {
				rows.Close()
				return err
			}
			qs.raw = qs.raw[:0]
			for _, t := range qs.texts {
				qs.raw = append(qs.raw, []byte(t))
			}
		}
		// Packed straight from the read buffer, as the engine holds them: no string per value.
		cond := engine.Condition{QuestionID: *qid, Codes: codes}
		cond.PackTexts(qs.raw)
		qs.addCondition(&c.Quotas[len(c.Quotas)-1], cond)
	}
	rows.Close()
	return rows.Err()
}
