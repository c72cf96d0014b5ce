package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard/switchboard/internal/fault"
)

// Campaign statuses (spec: States and transitions).
const (
	StatusActive       = 2
	StatusComplete     = 3
	StatusArchived     = 4
	StatusPaused       = 5
	StatusReconciled   = 6
	StatusSystemPaused = 7
)

// Campaign is a campaign as the buyer interface reads it. RedirectTestURL is filled by the
// caller, which knows the public URL.
type Campaign struct {
	ID                           int64                   `json:"id"`
	Name                         string                  `json:"name"`
	CPI                          Cents                   `json:"cpi"`
	DaysInField                  int                     `json:"days_in_field"`
	Incidence                    int                     `json:"incidence"`
	Status                       int                     `json:"status"`
	LengthOfInterview            int                     `json:"length_of_interview"`
	TotalRemaining               int64                   `json:"total_remaining"`
	SupplierLink                 string                  `json:"supplier_link"`
	MaxDailyCompletes            *int                    `json:"max_daily_completes"`
	ReentryInterval              *int                    `json:"reentry_interval"`
	CountryLanguageID            int                     `json:"country_language_id"`
	RetargetCount                int64                   `json:"retarget_count"`
	IsRetarget                   bool                    `json:"is_retarget"`
	IsMaidTargeted               bool                    `json:"is_maid_targeted"`
	SupportedDevices             []int                   `json:"supported_devices"`
	BuyerAccountID               *int64                  `json:"buyer_account_id"`
	ProjectID                    int64                   `json:"project_id"`
	WaveNumber                   int                     `json:"wave_number"`
	CustomCampaignQualifications []CampaignQualification `json:"custom_campaign_qualifications"`
	ExcludedSupplierIDs          []int64                 `json:"excluded_supplier_ids"`
	RedirectTestURL              string                  `json:"redirect_test_url"`
}

// CampaignDetail is the single-campaign read: the campaign with its quotas (and their
// qualifications), its relationships in either direction and its field statistics. The
// list read leaves the statistics out, to stay one cheap statement.
type CampaignDetail struct {
	Campaign
	CampaignQuotas        []Quota        `json:"campaign_quotas"`
	CampaignRelationships []Relationship `json:"campaign_relationships"`
	Stats                 CampaignStats  `json:"stats"`
}

// Nullable is an optional field that may also be set to null: Set says whether it was
// given at all, Valid whether it was given a value rather than null.
type Nullable[T any] struct {
	Set, Valid bool
	V          T
}

// Ptr returns the value as a pointer, nil for null or unset.
func (n Nullable[T]) Ptr() *T {
	if !n.Set || !n.Valid {
		return nil
	}
	v := n.V
	return &v
}

// UnmarshalJSON records that the field was given, and whether as null.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(b) == "null" {
		n.Valid = false
		var zero T
		n.V = zero
		return nil
	}
	n.Valid = true
	return json.Unmarshal(b, &n.V)
}

// CampaignFields are the writable campaign fields; nil (or unset) means not supplied.
// Validation of each value on its own is the caller's; CreateCampaign and UpdateCampaign
// check what needs the database (country language, adhoc account, project, status rules).
type CampaignFields struct {
	Name              *string
	CPIBid            *Cents
	DaysInField       *int
	Incidence         *int
	LengthOfInterview *int
	CountryLanguageID *int
	SupplierLink      *string
	MaxDailyCompletes Nullable[int]
	ReentryInterval   Nullable[int]
	IsRetarget        *bool
	SupportedDevices  *[]int
	BuyerAccountID    Nullable[int64]
	ProjectID         *int64 // create only: join that project as its next wave
	Status            *int   // update only
	// ExcludedSupplierIDs replaces the campaign's excluded supply partners: each must be a
	// publisher of SupplierEnvironment, the environment of the buyer's token (Suppliers).
	ExcludedSupplierIDs *[]int64
	SupplierEnvironment string
}

const campaignColumns = `c.id, c.name, c.cpi_cents, c.days_in_field, c.incidence, c.status::int, c.length_of_interview,
	COALESCE((SELECT sum(GREATEST(0, q.num_respondents - q.completes)) FROM campaign_quotas q
	  WHERE q.campaign_id = c.id AND NOT q.is_global), 0)::bigint,
	c.supplier_link, c.max_daily_completes, c.reentry_interval, c.country_language_id,
	(SELECT count(*) FROM campaign_retargets r WHERE r.campaign_id = c.id AND r.expires_at > now()),
	c.is_retarget, c.is_maid_targeted, c.supported_devices::int[], c.buyer_account_id, c.project_id, c.wave_number,
	COALESCE((SELECT json_agg(json_build_object('id', cq.id, 'question_id', cq.question_id, 'pre_codes', cq.pre_codes) ORDER BY cq.id)
	  FROM campaign_qualifications cq WHERE cq.campaign_id = c.id), '[]'::json),
	c.excluded_supplier_ids`

func scanCampaign(row pgx.Row) (Campaign, error) {
	var c Campaign
	var cpi int64
	err := row.Scan(&c.ID, &c.Name, &cpi, &c.DaysInField, &c.Incidence, &c.Status, &c.LengthOfInterview,
		&c.TotalRemaining, &c.SupplierLink, &c.MaxDailyCompletes, &c.ReentryInterval, &c.CountryLanguageID,
		&c.RetargetCount, &c.IsRetarget, &c.IsMaidTargeted, &c.SupportedDevices, &c.BuyerAccountID,
		&c.ProjectID, &c.WaveNumber, &c.CustomCampaignQualifications, &c.ExcludedSupplierIDs)
	c.CPI = Cents(cpi)
	if c.SupportedDevices == nil {
		c.SupportedDevices = []int{}
	}
	if c.CustomCampaignQualifications == nil {
		c.CustomCampaignQualifications = []CampaignQualification{}
	}
	if c.ExcludedSupplierIDs == nil {
		c.ExcludedSupplierIDs = []int64{}
	}
	return c, err
}

// querier is a pool or a transaction.
type querier interface {
	queryRower
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Campaigns lists the buyer's campaigns in id order, only those of countryLanguageID when
// it is not nil. One statement: every aggregate is computed by the database.
func (db *CampaignStore) Campaigns(ctx context.Context, buyerID int64, countryLanguageID *int) ([]Campaign, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+campaignColumns+` FROM campaigns c
		WHERE c.buyer_id = $1 AND ($2::int IS NULL OR c.country_language_id = $2) ORDER BY c.id`, buyerID, countryLanguageID)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out := []Campaign{}
	for rows.Next() {
		c, err := scanCampaign(rows)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, c)
	}
	return out, classify(rows.Err())
}

// MaxCampaignsPerPage bounds per_page of the paged campaign list.
const MaxCampaignsPerPage = 1000

// CampaignsPage lists one page (1-based, perPage campaigns, id order) of the buyer's
// campaigns, only those of countryLanguageID when it is not nil, and how many there are in
// all. Past the last page is an empty page. Both statements read one snapshot.
func (db *CampaignStore) CampaignsPage(ctx context.Context, buyerID int64, countryLanguageID *int, page, perPage int) ([]Campaign, int64, error) {
	out := []Campaign{}
	var total int64
	err := pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM campaigns c
			WHERE c.buyer_id = $1 AND ($2::int IS NULL OR c.country_language_id = $2)`, buyerID, countryLanguageID).Scan(&total); err != nil {
			return err
		}
		offset := int64(page-1) * int64(perPage)
		if offset >= total {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT `+campaignColumns+` FROM campaigns c
			WHERE c.buyer_id = $1 AND ($2::int IS NULL OR c.country_language_id = $2) ORDER BY c.id LIMIT $3 OFFSET $4`,
			buyerID, countryLanguageID, perPage, offset)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanCampaign(rows)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, classify(err)
	}
	return out, total, nil
}

// Campaign reads one of the buyer's campaigns with its quotas and relationships; another
// buyer's campaign is not found.
func (db *CampaignStore) Campaign(ctx context.Context, buyerID, id int64) (CampaignDetail, error) {
	d, err := campaignDetail(ctx, db.Pool, buyerID, id)
	return d, classify(err)
}

func campaignRow(ctx context.Context, q querier, buyerID, id int64) (Campaign, error) {
	c, err := scanCampaign(q.QueryRow(ctx, `SELECT `+campaignColumns+` FROM campaigns c WHERE c.id = $1 AND c.buyer_id = $2`, id, buyerID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Campaign{}, fault.NotFound("campaign not found")
	}
	return c, err
}

func campaignDetail(ctx context.Context, q querier, buyerID, id int64) (CampaignDetail, error) {
	c, err := campaignRow(ctx, q, buyerID, id)
	if err != nil {
		return CampaignDetail{}, err
	}
	d := CampaignDetail{Campaign: c}
	if d.CampaignQuotas, err = quotasOf(ctx, q, id, 0); err != nil {
		return CampaignDetail{}, err
	}
	if d.CampaignRelationships, err = relationshipsOf(ctx, q, id); err != nil {
		return CampaignDetail{}, err
	}
	if d.Stats, err = campaignStats(ctx, q, id); err != nil {
		return CampaignDetail{}, err
	}
	return d, nil
}

// lockCampaign locks one of the buyer's campaigns for a write that changes it or what hangs
// off it, and returns its country language. Another buyer's campaign is not found.
func lockCampaign(ctx context.Context, tx pgx.Tx, buyerID, id int64) (countryLanguageID int, err error) {
	err = tx.QueryRow(ctx, `SELECT country_language_id FROM campaigns WHERE id = $1 AND buyer_id = $2 FOR NO KEY UPDATE`,
		id, buyerID).Scan(&countryLanguageID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fault.NotFound("campaign not found")
	}
	return countryLanguageID, err
}

func checkCountryLanguage(ctx context.Context, tx pgx.Tx, id int) error {
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM country_languages WHERE id = $1)`, id).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fault.Invalid("country_language_id", "is not a known country language")
	}
	return nil
}

func checkAdhocAccount(ctx context.Context, tx pgx.Tx, buyerID int64, id Nullable[int64]) error {
	if !id.Set || !id.Valid {
		return nil
	}
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM adhoc_accounts WHERE id = $1 AND buyer_id = $2)`,
		id.V, buyerID).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fault.Invalid("buyer_account_id", "is not an adhoc account of this buyer")
	}
	return nil
}

// checkSuppliers returns the excluded supply partners a write leaves the campaign with:
// f.ExcludedSupplierIDs sorted and de-duplicated when it is set (each a publisher of
// f.SupplierEnvironment, else 422 naming excluded_supplier_ids), else current.
func checkSuppliers(ctx context.Context, tx pgx.Tx, f CampaignFields, current []int64) ([]int64, error) {
	if f.ExcludedSupplierIDs == nil {
		if current == nil {
			current = []int64{}
		}
		return current, nil
	}
	ids := slices.Clone(*f.ExcludedSupplierIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if ids == nil {
		ids = []int64{}
	}
	if len(ids) == 0 {
		return ids, nil
	}
	var unknown *int64
	if err := tx.QueryRow(ctx, `SELECT min(x) FROM unnest($1::bigint[]) AS x
		WHERE NOT EXISTS (SELECT 1 FROM publishers p WHERE p.id = x AND p.environment = $2)`,
		ids, f.SupplierEnvironment).Scan(&unknown); err != nil {
		return nil, err
	}
	if unknown != nil {
		return nil, fault.Invalid("excluded_supplier_ids", "%d is not a supplier (GET /api/v1/suppliers lists them)", *unknown)
	}
	return ids, nil
}

// CreateCampaign stores a new campaign (status 5 Paused) in one transaction: its insights
// project (a new one_time project named after it, a draft until one of its campaigns is
// first activated, or the next wave of f.ProjectID), its
// price from the rate card and the bid, and the change notification. Name, incidence,
// length_of_interview, country_language_id and supplier_link must be set.
func (db *CampaignStore) CreateCampaign(ctx context.Context, buyerID int64, f CampaignFields) (CampaignDetail, error) {
	if f.Name == nil || f.Incidence == nil || f.LengthOfInterview == nil || f.CountryLanguageID == nil || f.SupplierLink == nil {
		return CampaignDetail{}, fault.Internal(errors.New("CreateCampaign: a required field is missing"))
	}
	var out CampaignDetail
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if err := checkCountryLanguage(ctx, tx, *f.CountryLanguageID); err != nil {
			return err
		}
		if err := checkAdhocAccount(ctx, tx, buyerID, f.BuyerAccountID); err != nil {
			return err
		}
		excluded, err := checkSuppliers(ctx, tx, f, []int64{})
		if err != nil {
			return err
		}
		var projectID int64
		wave := 1
		if f.ProjectID != nil {
			err := tx.QueryRow(ctx, `SELECT id FROM projects WHERE id = $1 AND buyer_id = $2 FOR UPDATE`, *f.ProjectID, buyerID).Scan(&projectID)
			if errors.Is(err, pgx.ErrNoRows) {
				return fault.Invalid("project_id", "is not a project of this buyer")
			} else if err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT COALESCE(max(wave_number), 0) + 1 FROM campaigns WHERE project_id = $1`, projectID).Scan(&wave); err != nil {
				return err
			}
			if wave > 1 {
				if _, err := tx.Exec(ctx, `UPDATE projects SET project_type = 'recurring' WHERE id = $1`, projectID); err != nil {
					return err
				}
			}
		} else if err := tx.QueryRow(ctx, `INSERT INTO projects (buyer_id, name, project_type, is_draft) VALUES ($1, $2, 'one_time', true) RETURNING id`,
			buyerID, *f.Name).Scan(&projectID); err != nil {
			return err
		}
		rate, err := RateCardCents(ctx, tx, *f.LengthOfInterview, *f.Incidence)
		if err != nil {
			return err
		}
		days := 5
		if f.DaysInField != nil {
			days = *f.DaysInField
		}
		devices := []int{}
		if f.SupportedDevices != nil {
			devices = normalizeDevices(*f.SupportedDevices)
		}
		isRetarget := f.IsRetarget != nil && *f.IsRetarget
		var bid *int64
		if f.CPIBid != nil {
			v := int64(*f.CPIBid)
			bid = &v
		}
		var id int64
		err = tx.QueryRow(ctx, `INSERT INTO campaigns (buyer_id, project_id, wave_number, name, cpi_cents, cpi_bid_cents,
			days_in_field, incidence, status, length_of_interview, supplier_link, max_daily_completes, reentry_interval,
			country_language_id, is_retarget, supported_devices, buyer_account_id, excluded_supplier_ids)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16::smallint[],$17,$18) RETURNING id`,
			buyerID, projectID, wave, *f.Name, int64(Price(rate, f.CPIBid)), bid, days, *f.Incidence, StatusPaused,
			*f.LengthOfInterview, *f.SupplierLink, f.MaxDailyCompletes.Ptr(), f.ReentryInterval.Ptr(),
			*f.CountryLanguageID, isRetarget, devices, f.BuyerAccountID.Ptr(), excluded).Scan(&id)
		if err != nil {
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

// normalizeDevices sorts and de-duplicates a supported_devices list.
func normalizeDevices(in []int) []int {
	var seen [3]bool
	out := []int{}
	for _, d := range in {
		if d >= 0 && d < len(seen) {
			seen[d] = true
		}
	}
	for d, ok := range seen {
		if ok {
			out = append(out, d)
		}
	}
	return out
}

// CampaignRoute is what entry needs to know of a campaign beyond the engine's definition.
type CampaignRoute struct {
	ID           int64
	BuyerID      int64
	Status       int
	SupplierLink string
	BuyerSecret  string
	CustomerID   string
	LOI          int
}

// CampaignRoute loads the supplier link and buyer of a campaign.
func (db *CampaignStore) CampaignRoute(ctx context.Context, id int64) (CampaignRoute, error) {
	var r CampaignRoute
	var status int16
	err := db.Pool.QueryRow(ctx, `SELECT c.id, c.buyer_id, c.status, c.supplier_link, b.api_secret, b.customer_id, c.length_of_interview
		FROM campaigns c JOIN buyers b ON b.id = c.buyer_id WHERE c.id = $1`, id).
		Scan(&r.ID, &r.BuyerID, &status, &r.SupplierLink, &r.BuyerSecret, &r.CustomerID, &r.LOI)
	r.Status = int(status)
	return r, classify(err)
}
