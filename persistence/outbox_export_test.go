package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// SendMarkBatch records the deliveries of ids on conn exactly as DeliveryMarks does, so that
// a test can look at that connection's prepared statements afterwards.
func SendMarkBatch(ctx context.Context, conn *pgx.Conn, ids []int64) error {
	return conn.SendBatch(ctx, markBatch(ids)).Close()
}

// SendClaimBatch claims on conn exactly as ClaimPostbacks does.
func SendClaimBatch(ctx context.Context, conn *pgx.Conn, limit int, lease time.Duration) ([]ClaimedPostback, error) {
	b, out, _ := claimBatch(Claim{Limit: limit, Lease: lease})
	err := conn.SendBatch(ctx, b).Close()
	return *out, err
}
