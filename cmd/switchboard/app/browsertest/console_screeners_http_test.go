package browsertest

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/persistence"
)

// TestConsoleScreenerFormHTTP: the screener form creates a custom question with its answers
// and attaches it with the answers that qualify, as the API's three routes do; each refusal
// shows the API's message for the same input next to its field and stores nothing (no
// question, no answer, no attachment: one transaction); a read-only session gets no form
// (403) and its post stores nothing.
func TestConsoleScreenerFormHTTP(t *testing.T) {
	w := newWorld(t)
	id, _ := w.campaign("Screened commuters")
	c := w.console()
	c.signIn(w.buyer.Email, w.buyer.Token)
	path := fmt.Sprintf("/console/campaigns/%d/screeners/new", id)
	expectConsolePage(t, c.do("GET", fmt.Sprintf("/console/campaigns/%d/edit", id), nil, nil), http.StatusOK,
		fmt.Sprintf(`href="%s" id="new-screener"`, path))
	form := c.do("GET", path, nil, nil)
	expectConsolePage(t, form, http.StatusOK, `id="question_text"`, `id="answer-type-0" name="answer_type" value="0" checked`,
		`id="answer-6"`, `id="qualifies-1" name="qualifies" value="1"`)
	csrf := csrfOf(t, form)
	post := func(v url.Values) []byte {
		v.Set("csrf", csrf)
		return c.do("POST", path, v, nil).Body
	}
	stored := func() string {
		return fmt.Sprint(w.count(`SELECT count(*) FROM qualifications WHERE buyer_id = $1`, w.buyer.ID),
			w.count(`SELECT count(*) FROM qualification_answers a JOIN qualifications q USING (question_id) WHERE q.buyer_id = $1`, w.buyer.ID),
			w.count(`SELECT count(*) FROM campaign_qualifications WHERE campaign_id = $1`, id))
	}

	// A question of the buyer's made with the API, to ask the API for its refusal of an answer
	// and of an attachment.
	apiQ := w.buyer.Do(t, "POST", "/api/v1/custom_qualifications", map[string]any{"question_text": "Asked by the API",
		"answer_type": 0, "country_language_id": 1}).Expect(t, http.StatusCreated).Object(t)
	apiQID := int(apiQ["question_id"].(float64))
	answers := fmt.Sprintf("/api/v1/custom_qualifications/%d/custom_qualification_answers", apiQID)
	w.buyer.Do(t, "POST", answers, map[string]any{"option_text": "Yes"}).Expect(t, http.StatusCreated)
	before := stored()

	long := strings.Repeat("x", 1001)
	valid := func() url.Values {
		return url.Values{"question_text": {"Do you commute by train?"}, "answer_type": {"1"}, "answer-1": {"Every day"},
			"answer-2": {"Some days"}, "answer-3": {"Never"}, "qualifies": {"1", "2"}}
	}
	question := func(change map[string]any, drop ...string) string {
		body := map[string]any{"question_text": "Do you commute by train?", "answer_type": 1, "country_language_id": 1}
		for k, v := range change {
			body[k] = v
		}
		for _, k := range drop {
			delete(body, k)
		}
		return w.apiRefusal("POST", "/api/v1/custom_qualifications", body)
	}
	for _, tc := range []struct {
		what, field string
		form        func(url.Values)
		api         string
	}{
		{"no question", "question_text", func(v url.Values) { v.Set("question_text", " ") }, question(map[string]any{"question_text": " "})},
		{"no answer type", "answer_type", func(v url.Values) { v.Del("answer_type") }, question(nil, "answer_type")},
		{"answer type 2", "answer_type", func(v url.Values) { v.Set("answer_type", "2") }, question(map[string]any{"answer_type": 2})},
		{"a long name", "name", func(v url.Values) { v.Set("name", long[:256]) }, question(map[string]any{"name": long[:256]})},
		{"a long answer", "answer-2", func(v url.Values) { v.Set("answer-2", long) },
			w.apiRefusal("POST", answers, map[string]any{"option_text": long})},
		{"an empty answer that qualifies", "answer-4", func(v url.Values) { v.Add("qualifies", "4") },
			w.apiRefusal("POST", answers, map[string]any{"option_text": ""})},
		{"no answer qualifies", "answers", func(v url.Values) { v.Del("qualifies") },
			w.apiRefusal("POST", fmt.Sprintf("/api/v1/campaigns/%d/campaign_qualifications", id), map[string]any{"question_id": apiQID})},
	} {
		v := valid()
		tc.form(v)
		body := post(v)
		if got := fieldError(body, tc.field); got != template.HTMLEscapeString(tc.api) {
			t.Fatalf("%s: the form shows %q next to %s, the API answers %q\n%s", tc.what, got, tc.field, tc.api, body)
		}
		if !strings.Contains(string(body), "There is a problem") || !strings.Contains(string(body), `value="Every day"`) {
			t.Fatalf("%s: no error summary, or the refused form lost what was typed", tc.what)
		}
		if s := stored(); s != before {
			t.Fatalf("%s: questions, answers and attachments %s after the refusal, want %s", tc.what, s, before)
		}
	}

	// Created: the question with its three answers, attached with the first two.
	expectSeeOther(t, c.do("POST", path, func() url.Values { v := valid(); v.Set("csrf", csrf); return v }(), nil),
		fmt.Sprintf("/console/campaigns/%d/edit?done=screener-created", id))
	var qid int
	var text string
	var kind int
	if err := w.s.DB.Pool.QueryRow(context.Background(), `SELECT question_id, question_text, answer_type FROM qualifications
		WHERE buyer_id = $1 AND question_id <> $2`, w.buyer.ID, apiQID).Scan(&qid, &text, &kind); err != nil {
		t.Fatal(err)
	}
	got := w.buyer.Do(t, "GET", fmt.Sprintf("/api/v1/campaigns/%d", id), nil).Expect(t, 200).Object(t)
	if want := fmt.Sprintf("[map[id:%%v pre_codes:[1 2] question_id:%d]]", qid); text != "Do you commute by train?" || kind != 1 ||
		!strings.HasSuffix(fmt.Sprint(got["custom_campaign_qualifications"]), fmt.Sprintf("pre_codes:[1 2] question_id:%d]]", qid)) {
		t.Fatalf("stored %q (%d), attached %v; want %s", text, kind, got["custom_campaign_qualifications"], want)
	}
	if n := w.count(`SELECT count(*) FROM qualification_answers WHERE question_id = $1 AND option_text = ANY($2)`, qid,
		[]string{"Every day", "Some days", "Never"}); n != 3 {
		t.Fatalf("%d answers stored, want 3", n)
	}
	expectConsolePage(t, c.do("GET", fmt.Sprintf("/console/campaigns/%d/edit?done=screener-created", id), nil, nil), http.StatusOK,
		"Screener created and attached.", fmt.Sprintf(`id="detach-%d"`, qid))

	// Read-only: no link, no form, no post.
	_, readToken, err := w.s.DB.Accounts.IssueScopedBuyerToken(context.Background(), w.buyer.Email, w.s.Env, persistence.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	ro := w.console()
	ro.signIn(w.buyer.Email, readToken)
	if body := string(ro.do("GET", fmt.Sprintf("/console/campaigns/%d", id), nil, nil).Expect(t, 200).Body); strings.Contains(body, "screeners/new") {
		t.Fatal("the campaign page links a read-only session to the screener form")
	}
	before = stored()
	expectConsolePage(t, ro.do("GET", path, nil, nil), http.StatusForbidden, "This session is read-only")
	v := valid()
	v.Set("csrf", ro.csrf())
	expectConsolePage(t, ro.do("POST", path, v, nil), http.StatusForbidden, "This session is read-only")
	if s := stored(); s != before {
		t.Fatalf("a read-only session's post stored %s, was %s", s, before)
	}
}
