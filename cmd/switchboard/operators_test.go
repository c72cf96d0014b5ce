package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestOperatorCreate: the token is printed once and signs the operator in; only its hash
// is stored.
func TestOperatorCreate(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	if err := dispatch(ctx, []string{"operator", "create", "--database-url", url}, &bytes.Buffer{}); err == nil {
		t.Fatal("operator create without --name succeeded")
	}
	var out bytes.Buffer
	if err := dispatch(ctx, []string{"operator", "create", "--name", "Ops Olive", "--database-url", url}, &out); err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID    int64  `json:"id"`
		Name  string `json:"name"`
		Token string `json:"operator_token"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.ID == 0 || got.Name != "Ops Olive" || len(got.Token) != 48 {
		t.Fatalf("%s (%v)", out.Bytes(), err)
	}
	db, err := openDB(ctx, url, newLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	o, err := db.AuthenticateOperator(ctx, got.Token)
	if err != nil || o.ID != got.ID {
		t.Fatalf("operator %+v, %v", o, err)
	}
	if _, err := db.AuthenticateOperator(ctx, got.Token[:47]+"x"); err == nil {
		t.Fatal("a wrong token signed in")
	}
	var plain int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM operators WHERE encode(token_hash, 'escape') = $1`, got.Token).Scan(&plain); err != nil || plain != 0 {
		t.Fatalf("token stored as is (%d, %v)", plain, err)
	}
}
