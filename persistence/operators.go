package persistence

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// OperatorListing is an operator as `switchboard operator list` shows it: never its token.
type OperatorListing struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	// Sessions counts its live web console sessions.
	Sessions int64 `json:"console_sessions"`
}

// ListOperators returns every operator of the web console, oldest first.
func (db *OperatorStore) ListOperators(ctx context.Context) ([]OperatorListing, error) {
	rows, err := db.Pool.Query(ctx, `SELECT o.id, o.name, o.role, o.created_at,
			(SELECT count(*) FROM console_sessions s WHERE s.operator_id = o.id AND s.expires_at > now())
		FROM operators o ORDER BY o.id`)
	if err != nil {
		return nil, classify(err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (OperatorListing, error) {
		var o OperatorListing
		err := r.Scan(&o.ID, &o.Name, &o.Role, &o.CreatedAt, &o.Sessions)
		return o, err
	})
	return list, classify(err)
}

// RevokeOperator deletes the operator id, so that its token no longer signs in, and ends its
// web console sessions in the same transaction (every process looks sessions up in the
// database on each request, so they end at once everywhere). It returns the operator and
// how many live sessions ended; an unknown id is fault.NotFound.
func (db *OperatorStore) RevokeOperator(ctx context.Context, id int64) (Operator, int64, error) {
	var o Operator
	var ended int64
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE operator_id = $1 AND expires_at > now()`, id)
		if err != nil {
			return err
		}
		ended = tag.RowsAffected()
		err = tx.QueryRow(ctx, `DELETE FROM operators WHERE id = $1 RETURNING id, name`, id).Scan(&o.ID, &o.Name)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.NotFound("no operator with that id")
		}
		return err
	})
	return o, ended, classify(err)
}
