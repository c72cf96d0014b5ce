package persistence

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// Retargeting types.
const (
	RetargetTransaction = 0
	RetargetRespondent  = 1
	RetargetDevice      = 2
	RetargetHashedMAID  = 3
)

// RetargetEntry is one requested retargeting record.
type RetargetEntry struct {
	ID            string
	ReplacementID *string
}

// AddRetargets stores retargeting records on one of the buyer's campaigns (replacing
// records of the same type and id), expiring at expires, and returns the campaign. Type 0
// and 1 ids are resolved to participants through the buyer's sessions and respondents when
// they are known; type 3 ids (hashed ad ids) are stored upper-cased.
func (db *CampaignStore) AddRetargets(ctx context.Context, buyerID, campaignID int64, typ int, entries []RetargetEntry, expires time.Time) (Campaign, error) {
	// Later entries for the same id win; the upsert must not see one id twice.
	index := make(map[string]int, len(entries))
	ids := make([]string, 0, len(entries))
	repl := make([]*string, 0, len(entries))
	for _, e := range entries {
		id := e.ID
		if typ == RetargetHashedMAID {
			id = strings.ToUpper(id)
		}
		if i, ok := index[id]; ok {
			repl[i] = e.ReplacementID
			continue
		}
		index[id] = len(ids)
		ids = append(ids, id)
		repl = append(repl, e.ReplacementID)
	}
	var out Campaign
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockCampaign(ctx, tx, buyerID, campaignID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO campaign_retargets (campaign_id, retargeting_type, identifier, replacement_id, participant_id, expires_at)
			SELECT $1, $2::smallint, u.id, u.repl,
			  CASE $2::smallint
			    WHEN 0 THEN (SELECT s.participant_id FROM sessions s WHERE s.tid = u.id AND s.buyer_id = $3 AND NOT s.is_test)
			    WHEN 1 THEN (SELECT r.participant_id FROM respondents r WHERE r.respondent_id = u.id AND r.buyer_id = $3)
			  END, $4
			FROM unnest($5::text[], $6::text[]) AS u(id, repl)
			ON CONFLICT (campaign_id, retargeting_type, identifier) DO UPDATE
			SET replacement_id = EXCLUDED.replacement_id, participant_id = EXCLUDED.participant_id, expires_at = EXCLUDED.expires_at`,
			campaignID, typ, buyerID, expires, ids, repl)
		if err != nil {
			return err
		}
		if typ == RetargetHashedMAID {
			if _, err := tx.Exec(ctx, `UPDATE campaigns SET is_maid_targeted = true, updated_at = now() WHERE id = $1`, campaignID); err != nil {
				return err
			}
		}
		if err := NotifyCampaigns(ctx, tx, campaignID); err != nil {
			return err
		}
		out, err = campaignRow(ctx, tx, buyerID, campaignID)
		return err
	})
	return out, err
}

// RemoveRetargets deletes retargeting records of one type from one of the buyer's
// campaigns and returns the campaign. Ids without a record are ignored.
func (db *CampaignStore) RemoveRetargets(ctx context.Context, buyerID, campaignID int64, typ int, ids []string) (Campaign, error) {
	if typ == RetargetHashedMAID {
		for i := range ids {
			ids[i] = strings.ToUpper(ids[i])
		}
	}
	var out Campaign
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockCampaign(ctx, tx, buyerID, campaignID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM campaign_retargets WHERE campaign_id = $1 AND retargeting_type = $2 AND identifier = ANY($3)`,
			campaignID, typ, ids); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE campaigns SET updated_at = now(), is_maid_targeted =
			EXISTS (SELECT 1 FROM campaign_retargets WHERE campaign_id = $1 AND retargeting_type = 3) WHERE id = $1`, campaignID); err != nil {
			return err
		}
		if err := NotifyCampaigns(ctx, tx, campaignID); err != nil {
			return err
		}
		var err error
		out, err = campaignRow(ctx, tx, buyerID, campaignID)
		return err
	})
	return out, err
}

// ExclusionResult reports which ids were excluded and which were not found.
type ExclusionResult struct {
	PlayerIDsExcluded      []string `json:"player_ids_excluded"`
	PlayerIDsNotFound      []string `json:"player_ids_not_found"`
	TransactionIDsExcluded []string `json:"transaction_ids_excluded"`
	TransactionIDsNotFound []string `json:"transaction_ids_not_found"`
}

// ExcludeFromCampaign excludes participants from one of the buyer's campaigns: player ids
// are the buyer's {RESPONDENT_ID} values, transaction ids the tids of the buyer's sessions
// (the participant of that session is excluded). Ids of other buyers are not found.
func (db *CampaignStore) ExcludeFromCampaign(ctx context.Context, buyerID, campaignID int64, playerIDs, transactionIDs []string) (ExclusionResult, error) {
	playerIDs, transactionIDs = uniqueStrings(playerIDs), uniqueStrings(transactionIDs)
	res := ExclusionResult{PlayerIDsExcluded: []string{}, PlayerIDsNotFound: []string{},
		TransactionIDsExcluded: []string{}, TransactionIDsNotFound: []string{}}
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockCampaign(ctx, tx, buyerID, campaignID); err != nil {
			return err
		}
		players, err := lookupParticipants(ctx, tx, `SELECT respondent_id, participant_id FROM respondents
			WHERE buyer_id = $1 AND respondent_id = ANY($2)`, buyerID, playerIDs)
		if err != nil {
			return err
		}
		sessions, err := lookupParticipants(ctx, tx, `SELECT tid, participant_id FROM sessions
			WHERE buyer_id = $1 AND tid = ANY($2) AND NOT is_test`, buyerID, transactionIDs)
		if err != nil {
			return err
		}
		var pids []int64
		for _, id := range playerIDs {
			if p, ok := players[id]; ok {
				pids = append(pids, p)
				res.PlayerIDsExcluded = append(res.PlayerIDsExcluded, id)
			} else {
				res.PlayerIDsNotFound = append(res.PlayerIDsNotFound, id)
			}
		}
		for _, id := range transactionIDs {
			if p, ok := sessions[id]; ok {
				pids = append(pids, p)
				res.TransactionIDsExcluded = append(res.TransactionIDsExcluded, id)
			} else {
				res.TransactionIDsNotFound = append(res.TransactionIDsNotFound, id)
			}
		}
		if len(pids) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO campaign_exclusions (campaign_id, participant_id)
			SELECT $1, p FROM unnest($2::bigint[]) AS p ON CONFLICT DO NOTHING`, campaignID, pids); err != nil {
			return err
		}
		return NotifyCampaigns(ctx, tx, campaignID)
	})
	if err != nil {
		return ExclusionResult{}, err
	}
	return res, nil
}

func lookupParticipants(ctx context.Context, tx pgx.Tx, sql string, buyerID int64, ids []string) (map[string]int64, error) {
	out := map[string]int64{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, sql, buyerID, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var p int64
		if err := rows.Scan(&id, &p); err != nil {
			return nil, err
		}
		out[id] = p
	}
	return out, rows.Err()
}

func uniqueStrings(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Relationship excludes two campaigns from each other: a respondent who entered one is not
// offered the other.
type Relationship struct {
	ID                int64 `json:"id"`
	CampaignID        int64 `json:"campaign_id"`
	RelatedCampaignID int64 `json:"related_campaign_id"`
}

func relationshipsOf(ctx context.Context, q querier, campaignID int64) ([]Relationship, error) {
	rows, err := q.Query(ctx, `SELECT id, campaign_id, related_campaign_id FROM campaign_relationships
		WHERE campaign_id = $1 OR related_campaign_id = $1 ORDER BY id`, campaignID)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Relationship])
	if out == nil {
		out = []Relationship{}
	}
	return out, err
}

// CreateRelationship relates two of the buyer's campaigns. Either campaign being unknown or
// another buyer's, or the pair being related already (in either order), is a 422.
func (db *CampaignStore) CreateRelationship(ctx context.Context, buyerID, campaignID, relatedID int64) (Relationship, error) {
	var out Relationship
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		// Both rows are locked in id order so that two requests relating the same pair
		// in opposite orders cannot deadlock.
		rows, err := tx.Query(ctx, `SELECT id FROM campaigns WHERE id = ANY($1) AND buyer_id = $2 ORDER BY id FOR NO KEY UPDATE`,
			[]int64{campaignID, relatedID}, buyerID)
		if err != nil {
			return err
		}
		owned, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		has := func(id int64) bool {
			for _, o := range owned {
				if o == id {
					return true
				}
			}
			return false
		}
		if !has(campaignID) {
			return fault.Invalid("campaign_id", "is not a campaign of this buyer")
		}
		if !has(relatedID) {
			return fault.Invalid("related_campaign_id", "is not a campaign of this buyer")
		}
		err = tx.QueryRow(ctx, `INSERT INTO campaign_relationships (buyer_id, campaign_id, related_campaign_id)
			VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING id, campaign_id, related_campaign_id`, buyerID, campaignID, relatedID).
			Scan(&out.ID, &out.CampaignID, &out.RelatedCampaignID)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.Invalid("related_campaign_id", "is already related to campaign %d", campaignID)
		} else if err != nil {
			return err
		}
		return NotifyCampaigns(ctx, tx, campaignID, relatedID)
	})
	return out, err
}

// DeleteRelationship removes one of the buyer's campaign relationships.
func (db *CampaignStore) DeleteRelationship(ctx context.Context, buyerID, id int64) error {
	return db.Tx(ctx, func(tx pgx.Tx) error {
		var a, b int64
		err := tx.QueryRow(ctx, `DELETE FROM campaign_relationships WHERE id = $1 AND buyer_id = $2
			RETURNING campaign_id, related_campaign_id`, id, buyerID).Scan(&a, &b)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.NotFound("campaign relationship not found")
		} else if err != nil {
			return err
		}
		return NotifyCampaigns(ctx, tx, a, b)
	})
}

// RetargetIdentifier returns the {RETARGET_IDENTIFIER} of a participant for a campaign: the
// replacement_id, else the identifier, of the unexpired retargeting record that names the
// participant (types 0 and 1, resolved to participant_id), its device identifier (type 2) or
// that identifier's hash (type 3); "" when none does.
func (db *CampaignStore) RetargetIdentifier(ctx context.Context, campaignID, participantID int64, deviceID, deviceHash string) (string, error) {
	var out string
	err := db.Pool.QueryRow(ctx, `SELECT COALESCE(NULLIF(replacement_id, ''), identifier) FROM campaign_retargets
		WHERE campaign_id = $1 AND expires_at > now() AND (
			(retargeting_type IN (0, 1) AND participant_id = $2)
			OR (retargeting_type = 2 AND $3 <> '' AND identifier = $3)
			OR (retargeting_type = 3 AND $4 <> '' AND upper(identifier) = $4))
		ORDER BY retargeting_type, id LIMIT 1`, campaignID, participantID, deviceID, deviceHash).Scan(&out)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return out, classify(err)
}
