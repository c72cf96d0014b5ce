package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/pagekit"
	"github.com/switchboard/switchboard/persistence"
)

// fieldKind says how a form value enters the JSON body of the API route.
type fieldKind uint8

const (
	kindText     fieldKind = iota // a JSON string as typed
	kindNumber                    // a JSON number when it reads as one, else the text: the API names the field's type
	kindOptional                  // a number; empty: null when editing (none), left out when creating
	kindBid                       // the CPI bid, a decimal string; empty: left out (the rate card's price, or the price kept)
)

// formField is one input of the campaign form, named as the API names its field.
type formField struct {
	Name, Label, Hint, Type string
	Value, Error            string
	kind                    fieldKind
}

// campaignFields are the campaign form's inputs, in order; the country language, devices and
// suppliers are laid out apart.
var campaignFields = []formField{
	{Name: "name", Label: "Name", Type: "text", kind: kindText},
	{Name: "length_of_interview", Label: "Length of interview (minutes)", Type: "number", kind: kindNumber},
	{Name: "incidence", Label: "Incidence (%)", Type: "number", kind: kindNumber},
	{Name: "cpi", Label: "CPI bid (USD)", Hint: "Empty: the rate card's price; when editing, the price stays.", Type: "text", kind: kindBid},
	{Name: "days_in_field", Label: "Days in field", Hint: "Empty: 5.", Type: "number", kind: kindNumber},
	{Name: "max_daily_completes", Label: "Completes per day, at most", Hint: "Empty: no cap.", Type: "number", kind: kindOptional},
	{Name: "reentry_interval", Label: "Re-entry interval (minutes)", Hint: "Empty: a participant never re-enters; 0: no limit.", Type: "number", kind: kindOptional},
	{Name: "supplier_link", Label: "Supplier link", Hint: "Your survey's URL; {ID} becomes the session's id, {RESPONDENT_ID} the participant's.", Type: "text", kind: kindText},
}

// choice is one checkbox or option of a form.
type choice struct {
	ID, Value, Text string
	Checked         bool
}

// devices are the supported_devices choices (none checked: every device).
var devices = []choice{{Value: "0", Text: "Tablet"}, {Value: "1", Text: "Phone"}, {Value: "2", Text: "Desktop"}}

// campaignForm is the campaign form page: new, edit or clone. On the edit page it also
// lists the campaign's quotas, custom screeners and the exclusion form.
type campaignForm struct {
	consoleBase
	Mode      string // "new", "edit" or "clone"
	Action    string
	Heading   string
	C         persistence.CampaignDetail // edit: the campaign; clone: the one copied
	Fields    []formField
	Languages []choice
	LangError string
	Devices   []choice
	DevError  string
	Suppliers []choice
	SupError  string
	// The edit page's other sections.
	Quotas      []quotaRow
	Screeners   []screenerRow
	Attachable  []screenerRow // the buyer's custom questions of the campaign's country language not attached
	Exclusion   exclusionForm
	ScreenerErr map[int]string // by question id
}

// formNotices are the confirmations the workspace's redirects name (?done=...).
var formNotices = map[string]string{
	"created": "Campaign created, paused. Add its quotas, then activate it.", "saved": "Campaign saved.",
	"cloned": "Campaign cloned, paused, with its quotas and screeners.", "quota-added": "Quota added.",
	"quota-saved": "Quota saved.", "screener": "Screener attached.", "detached": "Screener removed.",
	"screener-created": "Screener created and attached.",
}

// jsonNumber matches what a JSON number is; anything else goes into the body as text.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// numberOrText is a posted value as a JSON number when it reads as one, else the text: the
// API then refuses it as it refuses the same JSON.
func numberOrText(v string) any {
	if jsonNumber.MatchString(v) {
		return json.Number(v)
	}
	return v
}

// newForm lays out the campaign form of mode with the values of c (zero for a new one).
func (a *workspacePages) newForm(ctx *fasthttp.RequestCtx, s *consoleSession, mode string, c persistence.CampaignDetail) (*campaignForm, error) {
	f := &campaignForm{consoleBase: s.base("New campaign"), Mode: mode, C: c, Heading: "New campaign",
		Action: ConsolePrefix + "/campaigns/new"}
	switch mode {
	case "edit":
		f.Title, f.Heading = "Edit "+c.Name, "Edit campaign"
		f.Action = fmt.Sprintf("%s/campaigns/%d/edit", ConsolePrefix, c.ID)
	case "clone":
		f.Title, f.Heading = "Clone "+c.Name, "Clone campaign"
		f.Action = fmt.Sprintf("%s/campaigns/%d/clone", ConsolePrefix, c.ID)
	}
	f.Fields = append([]formField(nil), campaignFields...)
	if mode != "new" {
		name := c.Name
		if mode == "clone" {
			name = "Copy of " + c.Name
		}
		values := map[string]string{"name": name, "length_of_interview": strconv.Itoa(c.LengthOfInterview),
			"incidence": strconv.Itoa(c.Incidence), "days_in_field": strconv.Itoa(c.DaysInField), "supplier_link": c.SupplierLink}
		if c.MaxDailyCompletes != nil {
			values["max_daily_completes"] = strconv.Itoa(*c.MaxDailyCompletes)
		}
		if c.ReentryInterval != nil {
			values["reentry_interval"] = strconv.Itoa(*c.ReentryInterval)
		}
		for i := range f.Fields {
			f.Fields[i].Value = values[f.Fields[i].Name]
		}
		for i, fl := range f.Fields {
			switch {
			case fl.Name != "cpi":
			case mode == "clone":
				f.Fields[i].Value = c.CPI.String()
			default:
				f.Fields[i].Hint = "Now $" + c.CPI.String() + ". Empty: the price stays."
			}
		}
	}
	langs, err := a.catalog.CountryLanguages(dbContext(ctx))
	if err != nil {
		return nil, err
	}
	cl := c.CountryLanguageID
	if cl == 0 {
		cl = 1
	}
	for _, l := range langs {
		f.Languages = append(f.Languages, choice{Value: strconv.Itoa(l.ID), Text: l.Abbr, Checked: l.ID == cl})
	}
	f.Devices = append([]choice(nil), devices...)
	for i := range f.Devices {
		f.Devices[i].ID = "device-" + f.Devices[i].Value
		for _, d := range c.SupportedDevices {
			f.Devices[i].Checked = f.Devices[i].Checked || strconv.Itoa(d) == f.Devices[i].Value
		}
	}
	sup, err := a.suppliers.Suppliers(dbContext(ctx), a.env)
	if err != nil {
		return nil, err
	}
	for _, p := range sup {
		v := strconv.FormatInt(p.ID, 10)
		ch := choice{ID: "supplier-" + v, Value: v, Text: p.Name}
		for _, x := range c.ExcludedSupplierIDs {
			ch.Checked = ch.Checked || x == p.ID
		}
		f.Suppliers = append(f.Suppliers, ch)
	}
	return f, nil
}

// fill sets the form's values to what was posted.
func (f *campaignForm) fill(ctx *fasthttp.RequestCtx) {
	args := ctx.PostArgs()
	for i := range f.Fields {
		f.Fields[i].Value = string(args.Peek(f.Fields[i].Name))
	}
	check := func(list []choice, name string) {
		posted := pagekit.PostValues(ctx, name)
		for i := range list {
			list[i].Checked = false
			for _, v := range posted {
				list[i].Checked = list[i].Checked || v == list[i].Value
			}
		}
	}
	check(f.Languages, "country_language_id")
	check(f.Devices, "supported_devices")
	check(f.Suppliers, "excluded_supplier_ids")
}

// body is the JSON body of POST /campaigns (create) or PUT /campaigns/{id} of what was
// posted.
func (f *campaignForm) body(ctx *fasthttp.RequestCtx, create bool) []byte {
	out := map[string]any{}
	for _, fl := range f.Fields {
		v := strings.TrimSpace(string(ctx.PostArgs().Peek(fl.Name)))
		switch {
		case fl.kind == kindText:
			if v != "" || !create {
				out[fl.Name] = v
			}
		case v == "" && fl.kind == kindOptional && !create:
			out[fl.Name] = nil
		case v == "" && (create || fl.kind != kindNumber):
		case fl.kind == kindBid:
			out[fl.Name] = v
		default:
			out[fl.Name] = numberOrText(v)
		}
	}
	if v := pagekit.PostValues(ctx, "country_language_id"); len(v) > 0 {
		out["country_language_id"] = numberOrText(v[0])
	}
	list := func(name string) []any {
		l := []any{}
		for _, v := range pagekit.PostValues(ctx, name) {
			l = append(l, numberOrText(v))
		}
		return l
	}
	out["supported_devices"] = list("supported_devices")
	out["excluded_supplier_ids"] = list("excluded_supplier_ids")
	b, _ := json.Marshal(out) // strings, numbers and lists: no error
	return b
}

// refuse shows err, the API's refusal, next to the field it names, and the page's error
// summary; it reports false for an error that is not a refusal of the input (for consoleFail).
func (f *campaignForm) refuse(err error) bool {
	fe := fault.As(err)
	if fe == nil || fe.Kind != fault.KindInvalid && fe.Kind != fault.KindConflict {
		return false
	}
	field := baseField(fe.Field)
	target := "name"
	switch field {
	case "country_language_id":
		f.LangError, target = fe.Message, "country_language_id"
	case "supported_devices":
		f.DevError, target = fe.Message, "device-0"
	case "excluded_supplier_ids":
		f.SupError = fe.Message
		if len(f.Suppliers) > 0 {
			target = f.Suppliers[0].ID
		}
	default:
		for i := range f.Fields {
			if f.Fields[i].Name == field {
				f.Fields[i].Error, target = fe.Message, field
			}
		}
	}
	f.Errors = append(f.Errors, pagekit.FieldError{Field: target, Message: fe.Message})
	return true
}

// baseField is the top-level name of an API field path: "excluded_supplier_ids[2]" and
// "campaign_qualifications[0].pre_codes" are "excluded_supplier_ids" and
// "campaign_qualifications".
func baseField(path string) string {
	if i := strings.IndexAny(path, "[."); i >= 0 {
		return path[:i]
	}
	return path
}

func (a *workspacePages) consoleNewCampaign(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	f, err := a.newForm(ctx, s, "new", persistence.CampaignDetail{})
	if err != nil {
		return err
	}
	a.render(ctx, fasthttp.StatusOK, "campaign_form", f)
	return nil
}

// consoleCreateCampaign creates the campaign through POST /campaigns' own code.
func (a *workspacePages) consoleCreateCampaign(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	f, err := a.newForm(ctx, s, "new", persistence.CampaignDetail{})
	if err != nil {
		return err
	}
	c, err := a.campaigns.newCampaign(dbContext(ctx), s.Buyer, f.body(ctx, true))
	if err != nil {
		return a.refused(ctx, s, f, err)
	}
	a.seeOther(ctx, fmt.Sprintf("%s/campaigns/%d/edit?done=created", ConsolePrefix, c.ID))
	return nil
}

// refused re-renders form f with the refusal err (422), or hands err on.
func (a *workspacePages) refused(ctx *fasthttp.RequestCtx, s *consoleSession, f *campaignForm, err error) error {
	f.fill(ctx)
	if !f.refuse(err) {
		return err
	}
	if f.Mode == "edit" {
		if err := a.workspace(ctx, s, f); err != nil {
			return err
		}
	}
	a.render(ctx, fasthttp.StatusUnprocessableEntity, "campaign_form", f)
	return nil
}

func (a *workspacePages) consoleEditCampaign(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	f, err := a.editForm(ctx, s)
	if err != nil {
		return err
	}
	f.Notice = formNotices[string(ctx.QueryArgs().Peek("done"))]
	a.render(ctx, fasthttp.StatusOK, "campaign_form", f)
	return nil
}

// formOf is the form of mode ("edit" or "clone") of the campaign of the path.
func (a *workspacePages) formOf(ctx *fasthttp.RequestCtx, s *consoleSession, mode string) (*campaignForm, error) {
	c, err := campaignOf(ctx, a.store, s)
	if err != nil {
		return nil, err
	}
	return a.newForm(ctx, s, mode, c)
}

// editForm is the edit page of the campaign of the path, with its workspace.
func (a *workspacePages) editForm(ctx *fasthttp.RequestCtx, s *consoleSession) (*campaignForm, error) {
	f, err := a.formOf(ctx, s, "edit")
	if err != nil {
		return nil, err
	}
	return f, a.workspace(ctx, s, f)
}

// consoleSaveCampaign changes the campaign through PUT /campaigns/{id}'s own code.
func (a *workspacePages) consoleSaveCampaign(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	f, err := a.formOf(ctx, s, "edit")
	if err != nil {
		return err
	}
	if _, err := a.campaigns.changeCampaign(dbContext(ctx), s.Buyer, f.C.ID, f.body(ctx, false)); err != nil {
		return a.refused(ctx, s, f, err)
	}
	a.seeOther(ctx, fmt.Sprintf("%s/campaigns/%d/edit?done=saved", ConsolePrefix, f.C.ID))
	return nil
}

func (a *workspacePages) consoleCloneForm(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	f, err := a.formOf(ctx, s, "clone")
	if err != nil {
		return err
	}
	a.render(ctx, fasthttp.StatusOK, "campaign_form", f)
	return nil
}

// consoleClone creates a campaign of the posted fields with a copy of the source's quotas
// (their targeting) and custom screeners, through the API's create routes' own code, in one
// transaction: a refusal of any of them stores none.
func (a *workspacePages) consoleClone(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	f, err := a.formOf(ctx, s, "clone")
	if err != nil {
		return err
	}
	src := f.C
	var id int64
	err = a.tx.InOneTx(dbContext(ctx), func(tx context.Context) error {
		c, err := a.campaigns.newCampaign(tx, s.Buyer, f.body(ctx, true))
		if err != nil {
			return err
		}
		id = c.ID
		for i, q := range src.CampaignQuotas {
			body, _ := json.Marshal(map[string]any{"name": q.Name, "num_respondents": q.NumRespondents,
				"is_click_balanced": q.IsClickBalanced, "is_global": q.IsGlobal, "campaign_qualifications": q.CampaignQualifications})
			if _, err := a.quotas.addQuota(tx, s.Buyer, id, body); err != nil {
				return copyRefused(fmt.Sprintf("quota %d", i+1), err)
			}
		}
		for _, sc := range src.CustomCampaignQualifications {
			codes := make([]string, len(sc.PreCodes))
			for i, c := range sc.PreCodes {
				codes[i] = strconv.Itoa(c)
			}
			body, _ := json.Marshal(map[string]any{"question_id": sc.QuestionID, "pre_code_values": strings.Join(codes, ",")})
			if _, err := a.screeners.attachScreener(tx, s.Buyer, id, body); err != nil {
				return copyRefused(fmt.Sprintf("screener %d", sc.QuestionID), err)
			}
		}
		return nil
	})
	if err != nil {
		return a.refused(ctx, s, f, err)
	}
	a.seeOther(ctx, fmt.Sprintf("%s/campaigns/%d/edit?done=cloned", ConsolePrefix, id))
	return nil
}

// copyRefused says which copied part of a clone the API refused (its quotas and screeners
// are not on the form): the refusal moves to the country language, the field that decides
// which targeting a campaign may have.
func copyRefused(what string, err error) error {
	fe := fault.As(err)
	if fe == nil || fe.Kind != fault.KindInvalid {
		return err
	}
	return &fault.Error{Kind: fault.KindInvalid, Field: "country_language_id",
		Message: "The copy of " + what + " was refused: " + fe.Message}
}
