package persistence

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// campaignEdit is a campaign's writable columns as UpdateCampaign reads them, under lock,
// applies a request's fields to them and writes them back.
type campaignEdit struct {
	name     string
	bid      *int64
	days     int
	inc, loi int
	cl       int
	link     string
	maxDaily *int
	reentry  *int
	retarget bool
	devices  []int
	account  *int64
	status   int
	excluded []int64
	// reprice: the bid, incidence or length of interview changed, so the price is set anew
	// from the rate card.
	reprice bool
}

// UpdateCampaign applies the supplied fields to one of the buyer's campaigns in one
// transaction and enforces the status rules of docs/rules.md §4: only 2, 3 and 5 may be
// requested, 2 needs a quota, 4 and 6 accept no status change.
func (db *CampaignStore) UpdateCampaign(ctx context.Context, buyerID, id int64, f CampaignFields) (CampaignDetail, error) {
	var out CampaignDetail
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		c, err := lockCampaignEdit(ctx, tx, buyerID, id)
		if err != nil {
			return err
		}
		if err := c.apply(ctx, tx, buyerID, f); err != nil {
			return err
		}
		newStatus, err := nextStatus(ctx, tx, id, c.status, f.Status)
		if err != nil {
			return err
		}
		if err := c.write(ctx, tx, id, newStatus); err != nil {
			return err
		}
		if err := statusChanged(ctx, tx, id, c.status, newStatus); err != nil {
			return err
		}
		if err := NotifyCampaigns(ctx, tx, id); err != nil {
			return err
		}
		out, err = campaignDetail(ctx, tx, buyerID, id)
		return err
	})
	return out, err
}

// lockCampaignEdit locks one of the buyer's campaigns for an update and reads its writable
// columns. Another buyer's campaign is not found.
func lockCampaignEdit(ctx context.Context, tx pgx.Tx, buyerID, id int64) (*campaignEdit, error) {
	c := &campaignEdit{}
	err := tx.QueryRow(ctx, `SELECT name, cpi_bid_cents, days_in_field, incidence, length_of_interview, country_language_id,
			supplier_link, max_daily_completes, reentry_interval, is_retarget, supported_devices::int[], buyer_account_id, status::int,
			excluded_supplier_ids
			FROM campaigns WHERE id = $1 AND buyer_id = $2 FOR NO KEY UPDATE`, id, buyerID).
		Scan(&c.name, &c.bid, &c.days, &c.inc, &c.loi, &c.cl, &c.link, &c.maxDaily, &c.reentry, &c.retarget, &c.devices, &c.account, &c.status, &c.excluded)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fault.NotFound("campaign not found")
	} else if err != nil {
		return nil, err
	}
	return c, nil
}

// apply sets the fields f supplies, checking those that name other rows (the country
// language, the adhoc account, the excluded suppliers) in tx.
func (c *campaignEdit) apply(ctx context.Context, tx pgx.Tx, buyerID int64, f CampaignFields) error {
	if f.Name != nil {
		c.name = *f.Name
	}
	if f.CPIBid != nil {
		v := int64(*f.CPIBid)
		c.bid, c.reprice = &v, true
	}
	if f.DaysInField != nil {
		c.days = *f.DaysInField
	}
	if f.Incidence != nil {
		c.reprice = c.reprice || *f.Incidence != c.inc
		c.inc = *f.Incidence
	}
	if f.LengthOfInterview != nil {
		c.reprice = c.reprice || *f.LengthOfInterview != c.loi
		c.loi = *f.LengthOfInterview
	}
	if f.CountryLanguageID != nil && *f.CountryLanguageID != c.cl {
		if err := checkCountryLanguage(ctx, tx, *f.CountryLanguageID); err != nil {
			return err
		}
		c.cl = *f.CountryLanguageID
	}
	if f.SupplierLink != nil {
		c.link = *f.SupplierLink
	}
	if f.MaxDailyCompletes.Set {
		c.maxDaily = f.MaxDailyCompletes.Ptr()
	}
	if f.ReentryInterval.Set {
		c.reentry = f.ReentryInterval.Ptr()
	}
	if f.IsRetarget != nil {
		c.retarget = *f.IsRetarget
	}
	if f.SupportedDevices != nil {
		c.devices = normalizeDevices(*f.SupportedDevices)
	}
	if c.devices == nil {
		c.devices = []int{}
	}
	if f.BuyerAccountID.Set {
		if err := checkAdhocAccount(ctx, tx, buyerID, f.BuyerAccountID); err != nil {
			return err
		}
		c.account = f.BuyerAccountID.Ptr()
	}
	var err error
	c.excluded, err = checkSuppliers(ctx, tx, f, c.excluded)
	return err
}

// nextStatus is the status campaign id moves to from status when requested is asked for
// (nil: none), by the rules of docs/rules.md §4, or the 422 naming status that refuses it.
func nextStatus(ctx context.Context, tx pgx.Tx, id int64, status int, requested *int) (int, error) {
	if requested != nil && *requested != status {
		switch {
		case *requested != StatusActive && *requested != StatusComplete && *requested != StatusPaused:
			return 0, fault.Invalid("status", "must be 2 (active), 3 (complete) or 5 (paused)")
		case status == StatusArchived || status == StatusReconciled:
			return 0, fault.Invalid("status", "cannot change: the campaign is %s", statusName(status))
		}
		if *requested == StatusActive {
			var quotas int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM campaign_quotas WHERE campaign_id = $1`, id).Scan(&quotas); err != nil {
				return 0, err
			}
			if quotas == 0 {
				return 0, fault.Invalid("status", "cannot be 2 (active): the campaign has no quota")
			}
		}
		return *requested, nil
	} else if requested != nil && *requested != StatusActive && *requested != StatusComplete && *requested != StatusPaused {
		return 0, fault.Invalid("status", "must be 2 (active), 3 (complete) or 5 (paused)")
	}
	return status, nil
}

// write stores c as campaign id's columns, in newStatus, priced anew from the rate card
// when c.reprice.
func (c *campaignEdit) write(ctx context.Context, tx pgx.Tx, id int64, newStatus int) error {
	cpiSQL := `cpi_cents`
	args := []any{id, c.name, c.bid, c.days, c.inc, c.loi, c.cl, c.link, c.maxDaily, c.reentry, c.retarget, c.devices, c.account, newStatus, c.excluded}
	if c.reprice {
		rate, err := RateCardCents(ctx, tx, c.loi, c.inc)
		if err != nil {
			return err
		}
		var b *Cents
		if c.bid != nil {
			v := Cents(*c.bid)
			b = &v
		}
		cpiSQL = `$16`
		args = append(args, int64(Price(rate, b)))
	}
	_, err := tx.Exec(ctx, `UPDATE campaigns SET name = $2, cpi_bid_cents = $3, days_in_field = $4, incidence = $5,
			length_of_interview = $6, country_language_id = $7, supplier_link = $8, max_daily_completes = $9,
			reentry_interval = $10, is_retarget = $11, supported_devices = $12::smallint[], buyer_account_id = $13,
			excluded_supplier_ids = $15, cpi_cents = `+cpiSQL+`, updated_at = now(),
			status_changed_at = CASE WHEN status <> $14 THEN now() ELSE status_changed_at END,
			completed_at = CASE WHEN status = $14 THEN completed_at WHEN $14 = 3 THEN now() ELSE NULL END,
			status = $14
			WHERE id = $1`, args...)
	return err
}

// statusChanged follows campaign id's move from status to newStatus: its first activation
// publishes its draft project, and a change is told to the buyer's webhook.
func statusChanged(ctx context.Context, tx pgx.Tx, id int64, status, newStatus int) error {
	if newStatus == StatusActive && status != StatusActive {
		// The first activation of any of its campaigns publishes a draft project
		// (docs/rules.md §4).
		if _, err := tx.Exec(ctx, `UPDATE projects SET is_draft = false
				WHERE id = (SELECT project_id FROM campaigns WHERE id = $1) AND is_draft`, id); err != nil {
			return err
		}
	}
	if newStatus != status {
		if err := EnqueueWebhookEvents(ctx, tx, statusEvents(id, status, newStatus, "")); err != nil {
			return err
		}
	}
	return nil
}

// statusName is status as the errors about it name it.
func statusName(s int) string {
	switch s {
	case StatusActive:
		return "active"
	case StatusComplete:
		return "complete"
	case StatusArchived:
		return "archived"
	case StatusPaused:
		return "paused"
	case StatusReconciled:
		return "reconciled"
	case StatusSystemPaused:
		return "system paused"
	}
	return fmt.Sprintf("in status %d", s)
}
