package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/switchboard/switchboard/persistence"
)

// runPostbacksList prints undelivered outbox rows (partner postbacks and buyer webhooks,
// every recipient's, or one publisher's or buyer's) as JSON, newest first: what an operator
// looks at before retrying dead letters.
func runPostbacksList(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("postbacks list")
	dbURL := databaseFlag(f)
	status := f.String("status", strings.Join(persistence.PostbackFailures, ","), "delivery states listed, separated by commas: "+
		strings.Join(persistence.PostbackStates, ", "))
	pub := f.Int64("publisher", 0, "only this publisher's postbacks (0: every publisher's, and buyers' webhooks)")
	buyer := f.Int64("buyer", 0, "only this buyer's webhooks (0: every buyer's, and partners' postbacks)")
	limit := f.Int("limit", 100, "rows at most (1-1000)")
	before := f.Int64("before-id", 0, "rows with an id below this one (the next page)")
	if err := f.parse(args); err != nil {
		return err
	}
	states, ok := persistence.ParsePostbackStates(*status)
	if !ok {
		return fmt.Errorf("--status must be one or more of %s, separated by commas", strings.Join(persistence.PostbackStates, ", "))
	}
	if *limit < 1 || *limit > 1000 {
		return errors.New("--limit must be from 1 to 1000")
	}
	if *pub != 0 && *buyer != 0 {
		return errors.New("give --publisher or --buyer, not both")
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := db.Outbox.ListPostbacks(ctx, persistence.PostbackFilter{PublisherID: *pub, BuyerID: *buyer, States: states,
		BeforeID: *before, Limit: *limit})
	if err != nil {
		return err
	}
	next := int64(0)
	if len(list) == *limit {
		next = list[len(list)-1].ID
	}
	if list == nil {
		list = []persistence.PostbackDelivery{}
	}
	return printJSON(out, map[string]any{"postbacks": list, "next_before_id": next})
}

// runPostbacksRetry makes dead-lettered postbacks and webhooks owed again (retrying, due now,
// with a fresh 24 h retry window) and wakes every server's worker.
func runPostbacksRetry(ctx context.Context, args []string, out io.Writer) error {
	f := newFlags("postbacks retry")
	dbURL := databaseFlag(f)
	var ids []int64
	f.Func("id", "a dead postback's id; repeatable or comma-separated", func(v string) error {
		for _, s := range strings.Split(v, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil || id <= 0 {
				return fmt.Errorf("%q is not a postback id", s)
			}
			ids = append(ids, id)
		}
		return nil
	})
	all := f.Bool("all", false, "every dead postback and webhook (of --publisher or --buyer when given)")
	pub := f.Int64("publisher", 0, "only this publisher's postbacks (0: every publisher's, and buyers' webhooks)")
	buyer := f.Int64("buyer", 0, "only this buyer's webhooks (0: every buyer's, and partners' postbacks)")
	if err := f.parse(args); err != nil {
		return err
	}
	if (len(ids) > 0) == *all {
		return errors.New("give either --id or --all")
	}
	if *pub != 0 && *buyer != 0 {
		return errors.New("give --publisher or --buyer, not both")
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	retried, err := db.Outbox.RetryPostbacks(ctx, *pub, *buyer, ids)
	if err != nil {
		return err
	}
	if retried == nil {
		retried = []int64{}
	}
	return printJSON(out, map[string]any{"retried": retried, "count": len(retried)})
}
