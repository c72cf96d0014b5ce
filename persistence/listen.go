package persistence

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Listener is one dedicated connection LISTENing on a channel, outside the pool: a LISTEN
// holds its connection for as long as it lasts. internal/mirror owns the loop around it
// (reconnecting with backoff, reloading after a reconnect what lost notifications named).
type Listener struct {
	conn *pgx.Conn
}

// ListenOn opens a connection and LISTENs on channel.
func (db *FeedStore) ListenOn(ctx context.Context, channel string) (*Listener, error) {
	conn, err := pgx.ConnectConfig(ctx, db.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, classify(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		conn.Close(context.Background()) //nolint:errcheck
		return nil, classify(err)
	}
	return &Listener{conn: conn}, nil
}

// Next waits for the next notification and returns its payload. An error means the
// connection is lost (or ctx ended): close the listener and open another.
func (l *Listener) Next(ctx context.Context) (string, error) {
	n, err := l.conn.WaitForNotification(ctx)
	if err != nil {
		return "", classify(err)
	}
	return n.Payload, nil
}

// Close ends the connection.
func (l *Listener) Close() { l.conn.Close(context.Background()) } //nolint:errcheck
