package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/pagekit"
	"github.com/switchboard/switchboard/persistence"
)

// The console's screener form: a new custom screener question of the campaign's country
// language, its answers, attached to the campaign with the answers that qualify. It makes
// the API's three calls (POST /custom_qualifications, POST …/custom_qualification_answers
// for each answer, POST /campaigns/{id}/campaign_qualifications) through those routes' own
// code in one transaction (persistence.InOneTx): a refusal of any of them stores nothing and
// shows the API's message next to the field it names.

// screenerAnswerRows is how many answers the screener form offers (rows left empty are not
// answers).
const screenerAnswerRows = 6

// screenerAnswer is one answer row of the screener form.
type screenerAnswer struct {
	N          int // 1-based row
	Text       string
	Qualifies  bool
	Error      string
	InputID    string // "answer-N"
	QualifyID  string // "qualifies-N"
	QualifyVal string
}

// screenerForm is the screener form page and the refusal of its last post.
type screenerForm struct {
	consoleBase
	C                         persistence.CampaignDetail
	Language                  string
	Name, QuestionText        string
	AnswerType                string // "0", "1" or what was posted
	NameErr, TextErr, TypeErr string
	AnswersErr                string // the qualifying answers (pre_code_values)
	Answers                   []screenerAnswer
}

// screenerFormOf is the empty screener form of the campaign of the path.
func (a *workspacePages) screenerFormOf(ctx *fasthttp.RequestCtx, s *consoleSession) (*screenerForm, error) {
	c, err := campaignOf(ctx, a.store, s)
	if err != nil {
		return nil, err
	}
	f := &screenerForm{consoleBase: s.base("New screener for " + c.Name), C: c, AnswerType: "0"}
	langs, err := a.catalog.CountryLanguages(dbContext(ctx))
	if err != nil {
		return nil, err
	}
	for _, l := range langs {
		if l.ID == c.CountryLanguageID {
			f.Language = l.Abbr
		}
	}
	for n := 1; n <= screenerAnswerRows; n++ {
		f.Answers = append(f.Answers, screenerAnswer{N: n, InputID: fmt.Sprintf("answer-%d", n),
			QualifyID: fmt.Sprintf("qualifies-%d", n), QualifyVal: strconv.Itoa(n)})
	}
	return f, nil
}

// fill sets the form's values to what was posted.
func (f *screenerForm) fill(ctx *fasthttp.RequestCtx) {
	args := ctx.PostArgs()
	f.Name, f.QuestionText = string(args.Peek("name")), string(args.Peek("question_text"))
	f.AnswerType = string(args.Peek("answer_type"))
	checked := pagekit.PostValues(ctx, "qualifies")
	for i := range f.Answers {
		r := &f.Answers[i]
		r.Text = string(args.Peek(r.InputID))
		for _, v := range checked {
			r.Qualifies = r.Qualifies || v == r.QualifyVal
		}
	}
}

// questionBody is the JSON body of POST /custom_qualifications of what was posted, in the
// campaign's country language.
func (f *screenerForm) questionBody() []byte {
	question := map[string]any{"question_text": f.QuestionText, "country_language_id": f.C.CountryLanguageID}
	if f.Name != "" {
		question["name"] = f.Name
	}
	if v := strings.TrimSpace(f.AnswerType); v != "" { // none chosen: left out, as the API names it
		question["answer_type"] = numberOrText(v)
	}
	b, _ := json.Marshal(question) // strings and numbers: no error
	return b
}

// body is the JSON body of POST …/custom_qualification_answers of the row; false for a row
// left empty (no text, not checked), which is no answer.
func (r screenerAnswer) body() ([]byte, bool) {
	if strings.TrimSpace(r.Text) == "" && !r.Qualifies {
		return nil, false
	}
	b, _ := json.Marshal(map[string]any{"option_text": r.Text})
	return b, true
}

// attachBody is the JSON body of POST /campaigns/{id}/campaign_qualifications attaching
// question qid with the qualifying pre_codes (none: left out, as the API names it).
func attachBody(qid int, codes []int) []byte {
	attach := map[string]any{"question_id": qid}
	if len(codes) > 0 {
		list := make([]string, len(codes))
		for i, c := range codes {
			list[i] = strconv.Itoa(c)
		}
		attach["pre_code_values"] = strings.Join(list, ",")
	}
	b, _ := json.Marshal(attach)
	return b
}

// screenerRefusal is a refusal of the screener form: the API's error and the form's field it
// belongs to.
type screenerRefusal struct {
	err    error
	target string // "question", "answer-N" or "answers"
}

func (r *screenerRefusal) Error() string { return r.err.Error() }
func (r *screenerRefusal) Unwrap() error { return r.err }

// refuse shows the API's refusal err next to its field; false for an error that is not a
// refusal of the input.
func (f *screenerForm) refuse(err error) bool {
	target := "question"
	var r *screenerRefusal
	if errors.As(err, &r) {
		err, target = r.err, r.target
	}
	fe := fault.As(err)
	if fe == nil || fe.Kind != fault.KindInvalid {
		return false
	}
	id := "question_text"
	switch {
	case strings.HasPrefix(target, "answer-"):
		id = target
		for i := range f.Answers {
			if f.Answers[i].InputID == target {
				f.Answers[i].Error = fe.Message
			}
		}
	case target == "answers" || baseField(fe.Field) == "pre_code_values":
		id, f.AnswersErr = "answer-1", fe.Message
	case fe.Field == "name":
		id, f.NameErr = "name", fe.Message
	case fe.Field == "answer_type":
		id, f.TypeErr = "answer-type-0", fe.Message
	default:
		f.TextErr = fe.Message
	}
	f.Errors = append(f.Errors, pagekit.FieldError{Field: id, Message: fe.Message})
	return true
}

func (a *workspacePages) consoleNewScreener(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	f, err := a.screenerFormOf(ctx, s)
	if err != nil {
		return err
	}
	a.render(ctx, fasthttp.StatusOK, "screener_form", f)
	return nil
}

// consoleCreateScreener stores the posted question, its answers and its attachment to the
// campaign through the API routes' own code, all or nothing.
func (a *workspacePages) consoleCreateScreener(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	f, err := a.screenerFormOf(ctx, s)
	if err != nil {
		return err
	}
	f.fill(ctx)
	err = a.tx.InOneTx(dbContext(ctx), func(tx context.Context) error {
		q, err := a.screeners.newScreenerQuestion(tx, s.Buyer, f.questionBody())
		if err != nil {
			return &screenerRefusal{err: err, target: "question"}
		}
		var codes []int
		for _, r := range f.Answers {
			body, ok := r.body()
			if !ok {
				continue
			}
			ans, err := a.screeners.addScreenerAnswer(tx, s.Buyer, int64(q.QuestionID), body)
			if err != nil {
				return &screenerRefusal{err: err, target: r.InputID}
			}
			if r.Qualifies {
				codes = append(codes, ans.PreCode)
			}
		}
		if _, err := a.screeners.attachScreener(tx, s.Buyer, f.C.ID, attachBody(q.QuestionID, codes)); err != nil {
			return &screenerRefusal{err: err, target: "answers"}
		}
		return nil
	})
	if err != nil {
		if !f.refuse(err) {
			return err
		}
		a.render(ctx, fasthttp.StatusUnprocessableEntity, "screener_form", f)
		return nil
	}
	a.seeOther(ctx, fmt.Sprintf("%s/campaigns/%d/edit?done=screener-created", ConsolePrefix, f.C.ID))
	return nil
}
