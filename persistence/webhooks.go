package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// PostbackWebhook is the outbox kind of a buyer webhook event: a POST of a JSON body to the
// buyer's webhook URL, signed at delivery with the buyer's api_secret (router/payout).
const PostbackWebhook = "webhook"

// Webhook event types (docs/buyer-integration.md, "Webhooks").
const (
	// EventStatusChanged: a campaign's status changed (by its buyer, or by the service:
	// completed, system paused, archived). Data: old_status, new_status, reason when the
	// service made the change.
	EventStatusChanged = "campaign.status_changed"
	// EventQuotaFilled: a quota's completes reached its num_respondents. Data: quota_id,
	// completes, num_respondents.
	EventQuotaFilled = "quota.filled"
	// EventCampaignCompleted: a campaign moved to 3 Complete. Data: reason.
	EventCampaignCompleted = "campaign.completed"
)

// Reasons a webhook event gives for a change the buyer did not request.
const (
	ReasonBuyer       = "buyer"        // the buyer changed it (API)
	ReasonQuotasFull  = "quotas_full"  // every quota is full (docs/rules.md §4)
	ReasonNoCallbacks = "no_callbacks" // the last entries got no callback: a broken end link
	ReasonArchived    = "archived"     // complete or reconciled long enough (docs/rules.md §4)
)

// MaxWebhookURL is the longest webhook URL accepted, in bytes.
const MaxWebhookURL = 2048

// ValidateWebhookURL checks a webhook URL a buyer registers: absolute http or https with a
// host, no user information (credentials would be stored and logged with it), no fragment,
// at most MaxWebhookURL bytes. The error names the field "url".
func ValidateWebhookURL(s string) error {
	if len(s) > MaxWebhookURL {
		return fault.Invalid("url", "must be at most %d bytes", MaxWebhookURL)
	}
	if strings.TrimSpace(s) != s || strings.ContainsAny(s, " \t\r\n") {
		return fault.Invalid("url", "must not contain white space")
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || !isHTTPURL(s):
		return fault.Invalid("url", "must be an absolute http or https URL")
	case u.User != nil:
		return fault.Invalid("url", "must not carry credentials")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fault.Invalid("url", "must not have a fragment")
	}
	return nil
}

// BuyerWebhook returns buyer's webhook URL, "" when none.
func (db *AccountStore) BuyerWebhook(ctx context.Context, buyerID int64) (string, error) {
	var u *string
	err := db.Pool.QueryRow(ctx, `SELECT webhook_url FROM buyers WHERE id = $1`, buyerID).Scan(&u)
	if err != nil {
		return "", classify(err)
	}
	if u == nil {
		return "", nil
	}
	return *u, nil
}

// SetBuyerWebhook registers u as buyer's webhook URL, or removes it when u is "". Events
// already stored keep the URL they were stored with.
func (db *AccountStore) SetBuyerWebhook(ctx context.Context, buyerID int64, u string) error {
	if u != "" {
		if err := ValidateWebhookURL(u); err != nil {
			return err
		}
	}
	tag, err := db.Pool.Exec(ctx, `UPDATE buyers SET webhook_url = NULLIF($2, '') WHERE id = $1`, buyerID, u)
	if err != nil {
		return classify(err)
	}
	if tag.RowsAffected() == 0 {
		return fault.NotFound("no such buyer")
	}
	return nil
}

// SetBuyerWebhookByEmail is SetBuyerWebhook for the buyer registered with email (the CLI).
func (db *AccountStore) SetBuyerWebhookByEmail(ctx context.Context, email, u string) (Buyer, error) {
	var b Buyer
	err := db.Pool.QueryRow(ctx, `SELECT id, customer_id, email, name FROM buyers WHERE email = $1`,
		strings.ToLower(strings.TrimSpace(email))).Scan(&b.ID, &b.CustomerID, &b.Email, &b.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return Buyer{}, fault.NotFound("no buyer with that email")
	} else if err != nil {
		return Buyer{}, classify(err)
	}
	return b, db.SetBuyerWebhook(ctx, b.ID, u)
}

// WebhookEvent is one event to store for a campaign's buyer.
type WebhookEvent struct {
	CampaignID int64
	Type       string         // an Event constant
	Data       map[string]any // the buyer-visible details, JSON-encoded as "data"
}

// webhookInsert is the INSERT that stores the events of relation src (columns campaign_id
// bigint, type text, data jsonb) in the outbox, one per event whose campaign's buyer has a
// webhook URL (the others are not stored), each under a fresh event_id. The body is built
// here, once: its bytes are what the delivery signs and the buyer receives. It returns 1 per
// row stored.
func webhookInsert(src string) string {
	return `INSERT INTO postback_outbox (tid, kind, buyer_id, url, body)
	SELECT e.id, 'webhook', b.id, b.webhook_url, convert_to(jsonb_build_object(
		'event_id', e.id, 'type', e.type,
		'occurred_at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
		'campaign_id', e.campaign_id, 'data', e.data)::text, 'UTF8')
	FROM (SELECT ev.campaign_id, ev.type, ev.data, 'evt_' || replace(gen_random_uuid()::text, '-', '') AS id
		FROM ` + src + ` ev) e
	JOIN campaigns c ON c.id = e.campaign_id JOIN buyers b ON b.id = c.buyer_id
	WHERE b.webhook_url IS NOT NULL
	RETURNING 1`
}

// quotaFilledSQL is two CTEs, f and w, of a statement whose CTE q added completes to quotas
// and returned their id, campaign_id, completes, num_respondents and is_click_balanced as
// updated, with added, the completes added: w stores a quota.filled event for every quota
// (not click-balanced) whose completes reached num_respondents in this statement. The
// statement wakes the workers itself (or leaves the event to their next poll, within 1 s).
var quotaFilledSQL = `f AS (
	SELECT q.campaign_id, '` + EventQuotaFilled + `' AS type,
		jsonb_build_object('quota_id', q.id, 'completes', q.completes, 'num_respondents', q.num_respondents) AS data
	FROM q WHERE NOT q.is_click_balanced AND q.added > 0
	AND q.completes >= q.num_respondents AND q.completes - q.added < q.num_respondents
), w AS (
	` + webhookInsert("f") + `
)`

// EnqueueWebhookEvents stores events inside the caller's transaction (the one making the
// change they announce: a transactional outbox, so none is lost and none announces a change
// that rolled back), for the campaigns whose buyer has a webhook URL, and wakes the workers
// when tx commits.
func EnqueueWebhookEvents(ctx context.Context, tx pgx.Tx, events []WebhookEvent) error {
	if len(events) == 0 {
		return nil
	}
	ids, types, data := make([]int64, len(events)), make([]string, len(events)), make([]string, len(events))
	for i, e := range events {
		d := e.Data
		if d == nil {
			d = map[string]any{}
		}
		raw, err := json.Marshal(d)
		if err != nil {
			return fault.Internal(err)
		}
		ids[i], types[i], data[i] = e.CampaignID, e.Type, string(raw)
	}
	_, err := tx.Exec(ctx, `WITH ev AS (
			SELECT * FROM unnest($1::bigint[], $2::text[], $3::jsonb[]) AS ev(campaign_id, type, data)
		), w AS (`+webhookInsert("ev")+`)
		SELECT count(pg_notify($4, '')) FROM (SELECT 1 FROM w LIMIT 1) n`, ids, types, data, PostbackChannel)
	return err
}

// statusEvents are the events of campaign id moving from status old to status to: a status
// change, and a completion when to is 3 Complete. reason is "" when the buyer asked.
func statusEvents(id int64, old, to int, reason string) []WebhookEvent {
	d := map[string]any{"old_status": old, "new_status": to}
	if reason != "" {
		d["reason"] = reason
	}
	out := []WebhookEvent{{CampaignID: id, Type: EventStatusChanged, Data: d}}
	if to == StatusComplete {
		if reason == "" {
			reason = ReasonBuyer
		}
		out = append(out, WebhookEvent{CampaignID: id, Type: EventCampaignCompleted, Data: map[string]any{"reason": reason}})
	}
	return out
}
