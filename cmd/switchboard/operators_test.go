package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/persistence"
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
	o, err := db.Operators.AuthenticateOperator(ctx, got.Token)
	if err != nil || o.ID != got.ID {
		t.Fatalf("operator %+v, %v", o, err)
	}
	if _, err := db.Operators.AuthenticateOperator(ctx, got.Token[:47]+"x"); err == nil {
		t.Fatal("a wrong token signed in")
	}
	var plain int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM operators WHERE encode(token_hash, 'escape') = $1`, got.Token).Scan(&plain); err != nil || plain != 0 {
		t.Fatalf("token stored as is (%d, %v)", plain, err)
	}
}

// TestOperatorListRevoke: operator list shows operators and their live console sessions,
// never tokens; operator revoke --id ends the operator's token and console sessions at once
// and leaves the other operators alone; an unknown or missing id is an error.
func TestOperatorListRevoke(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	create := func(name string) (int64, string) {
		var out bytes.Buffer
		if err := dispatch(ctx, []string{"operator", "create", "--name", name, "--database-url", url}, &out); err != nil {
			t.Fatal(err)
		}
		var got struct {
			ID    int64  `json:"id"`
			Token string `json:"operator_token"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		return got.ID, got.Token
	}
	olive, oliveToken := create("Ops Olive")
	pat, patToken := create("Ops Pat")
	db, err := openDB(ctx, url, newLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	session := func(id int64) string {
		s, _, err := db.Operators.CreateConsoleSession(ctx, persistence.ConsoleSignIn{OperatorID: id}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	oliveSessions := []string{session(olive), session(olive)}
	patSession := session(pat)

	var out bytes.Buffer
	if err := dispatch(ctx, []string{"operator", "list", "--database-url", url}, &out); err != nil {
		t.Fatal(err)
	}
	var list []persistence.OperatorListing
	if err := json.Unmarshal(out.Bytes(), &list); err != nil || len(list) != 2 ||
		list[0].ID != olive || list[0].Name != "Ops Olive" || list[0].Sessions != 2 || list[1].Sessions != 1 {
		t.Fatalf("operator list: %s (%v)", out.Bytes(), err)
	}
	if bytes.Contains(out.Bytes(), []byte(oliveToken)) || bytes.Contains(out.Bytes(), []byte("token")) {
		t.Fatalf("operator list shows a token: %s", out.Bytes())
	}

	for _, args := range [][]string{{}, {"--id", "0"}, {"--id", "999999"}} {
		if err := dispatch(ctx, append([]string{"operator", "revoke", "--database-url", url}, args...), &bytes.Buffer{}); err == nil {
			t.Errorf("operator revoke %v succeeded", args)
		}
	}
	out.Reset()
	if err := dispatch(ctx, []string{"operator", "revoke", "--id", strconv.FormatInt(olive, 10), "--database-url", url}, &out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte(`"console_sessions_ended": 2`)) {
		t.Fatalf("operator revoke: %s", out.Bytes())
	}
	if _, err := db.Operators.AuthenticateOperator(ctx, oliveToken); fault.KindOf(err) != fault.KindUnauthorized {
		t.Fatalf("revoked operator's token: %v", err)
	}
	for _, s := range oliveSessions {
		if _, err := db.Operators.ConsoleSessionOf(ctx, s); fault.KindOf(err) != fault.KindUnauthorized {
			t.Fatalf("revoked operator's console session: %v", err)
		}
	}
	if _, err := db.Operators.AuthenticateOperator(ctx, patToken); err != nil {
		t.Fatalf("other operator's token: %v", err)
	}
	if s, err := db.Operators.ConsoleSessionOf(ctx, patSession); err != nil || s.Operator.ID != pat {
		t.Fatalf("other operator's session: %+v %v", s, err)
	}
	if err := dispatch(ctx, []string{"operator", "revoke", "--id", strconv.FormatInt(olive, 10), "--database-url", url}, &bytes.Buffer{}); err == nil {
		t.Fatal("revoking twice succeeded")
	}
}
