package pagekit

import (
	"strconv"

	"github.com/valyala/fasthttp"
)

// Kinds of question control.
const (
	KindSingle = "single" // radio group
	KindMulti  = "multi"  // checkboxes
	KindAge    = "age"    // number input
	KindZip    = "zip"    // postal code text input
	KindText   = "text"   // other text
)

// Question is one question of a form, as the "question" template renders it: a fieldset
// with a legend for choices, a labelled input otherwise; an error, when set, is tied to the
// control with aria-describedby.
type Question struct {
	T        Strings
	ID       int64
	Text     string
	Kind     string
	Required bool
	Options  []Option
	Value    string // text answer as typed
	Error    string
}

// Option is one answer of a choice question.
type Option struct {
	ID      string // the input's id
	Value   int32  // the pre_code
	Text    string
	Checked bool
}

// Choice reports a radio group or checkbox list.
func (q Question) Choice() bool { return q.Kind == KindSingle || q.Kind == KindMulti }

// Multi reports checkboxes.
func (q Question) Multi() bool { return q.Kind == KindMulti }

// AddOption appends an answer.
func (q *Question) AddOption(preCode int32, text string) {
	q.Options = append(q.Options, Option{ID: "q" + strconv.FormatInt(q.ID, 10) + "-" + strconv.FormatInt(int64(preCode), 10),
		Value: preCode, Text: text})
}

// FieldID is the id the error summary links to: the first option of a choice, the input
// otherwise.
func (q Question) FieldID() string {
	if q.Choice() && len(q.Options) > 0 {
		return q.Options[0].ID
	}
	return "q" + strconv.FormatInt(q.ID, 10)
}

// Name is the form field name of the question.
func (q Question) Name() string { return "q" + strconv.FormatInt(q.ID, 10) }

// Fill sets the question's state from posted values: checked options and the text.
func (q *Question) Fill(values []string) {
	if q.Choice() {
		for i := range q.Options {
			v := strconv.FormatInt(int64(q.Options[i].Value), 10)
			for _, s := range values {
				if s == v {
					q.Options[i].Checked = true
				}
			}
		}
		return
	}
	if len(values) > 0 {
		q.Value = values[0]
	}
}

// Summary lists the errors of questions for the page's error summary: "question: error".
func Summary(questions []Question) []FieldError {
	var out []FieldError
	for i := range questions {
		q := &questions[i]
		if q.Error != "" {
			out = append(out, FieldError{Field: q.FieldID(), Message: q.Text + " — " + q.Error})
		}
	}
	return out
}

// PostValues returns every value of a posted field (at most 64, each at most 1 KiB).
func PostValues(ctx *fasthttp.RequestCtx, name string) []string {
	var out []string
	for _, v := range ctx.PostArgs().PeekMulti(name) {
		if len(out) == 64 {
			break
		}
		if len(v) > 1024 {
			v = v[:1024]
		}
		out = append(out, string(v))
	}
	return out
}
