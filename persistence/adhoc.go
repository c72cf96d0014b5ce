package persistence

import "context"

// AdhocAccount is a buyer's sub-account; its id is a campaign's buyer_account_id.
type AdhocAccount struct {
	ID              int64  `json:"id"`
	BuyerName       string `json:"buyer_name"`
	BuyerIdentifier string `json:"buyer_identifier"`
}

// CreateAdhocAccount stores a new adhoc account of the buyer.
func (db *AccountStore) CreateAdhocAccount(ctx context.Context, buyerID int64, name, identifier string) (AdhocAccount, error) {
	out := AdhocAccount{BuyerName: name, BuyerIdentifier: identifier}
	err := db.Pool.QueryRow(ctx, `INSERT INTO adhoc_accounts (buyer_id, buyer_name, buyer_identifier) VALUES ($1, $2, $3)
		RETURNING id, buyer_name, buyer_identifier`, buyerID, name, identifier).Scan(&out.ID, &out.BuyerName, &out.BuyerIdentifier)
	return out, classify(err)
}
