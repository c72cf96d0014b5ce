package persistence

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// Listen delivers the payloads of NOTIFYs on channel to fn until ctx ends. It holds one
// dedicated connection, reconnecting with exponential backoff when it drops. Notifications
// sent while it was disconnected are lost, so after every (re)connect it calls resync, which
// should reload whatever the notifications would have announced.
func (db *DB) Listen(ctx context.Context, channel string, fn func(payload string), resync func()) {
	backoff := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, db.Pool.Config().ConnConfig.Copy())
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize())
		}
		if err != nil {
			if conn != nil {
				conn.Close(context.Background()) //nolint:errcheck
			}
			if ctx.Err() != nil {
				return
			}
			db.log.Warn("listen connection failed", zap.String("channel", channel), zap.Duration("retry_in", backoff), zap.Error(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		if !first {
			db.log.Info("listen connection restored", zap.String("channel", channel))
		}
		first = false
		backoff = 100 * time.Millisecond
		resync()
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				if ctx.Err() == nil {
					db.log.Warn("listen connection lost", zap.String("channel", channel), zap.Error(err))
				}
				break
			}
			fn(n.Payload)
		}
		conn.Close(context.Background()) //nolint:errcheck
	}
}
