package supply

import (
	"strconv"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/internal/pagekit"
	"github.com/switchboard/switchboard/router/payout"
)

// DemoPartnerPath is the path of the demo supply partner's redirect URL (serve --demo): the
// page a demo participant lands on after a survey.
const DemoPartnerPath = "/demo/partner/return"

// DemoPartner is the demo's supply partner as its return page knows it.
type DemoPartner struct {
	Secret   string // its api_secret, which signs the redirects it receives
	Currency string // its in-app currency's name
}

// demoPartnerPage is what the return page shows of one redirect.
type demoPartnerPage struct {
	pagekit.Base
	Status, Reward, TID, Attempts string
	Valid                         bool
	Meaning                       string
}

// demoMeaning says what each status of a partner redirect tells the partner.
var demoMeaning = map[string]string{
	outcome.Complete:     "The participant completed the survey: the partner credits the reward.",
	outcome.OverQuota:    "The survey had no room for the participant (or the entry was refused): a small reward for the time spent, or none without a tid.",
	outcome.Disqualified: "The participant did not qualify for the survey: a small reward for the time spent, or none after a pre-screener.",
	outcome.QualityTerm:  "The buyer removed the participant for data quality: no reward.",
	StatusProfiled:       "The participant answered the profiler: ask for their offers again.",
}

// maxDemoField bounds what the page echoes of one query parameter.
const maxDemoField = 255

// RegisterDemoPartner mounts GET DemoPartnerPath: the page the demo partner shows a
// participant Switchboard sends back, saying what the redirect carried (status, reward, tid,
// attempts) and whether its sech verifies with the partner's api_secret. It stands for a
// partner's own page, so that the demo's participant does not end on a 404; a real
// deployment has no such route.
func RegisterDemoPartner(mux *httpio.Mux, p DemoPartner, log *zap.Logger) {
	mux.Handle("GET", DemoPartnerPath, func(ctx *fasthttp.RequestCtx) {
		args := ctx.QueryArgs()
		field := func(name string) string {
			v := args.Peek(name)
			if len(v) > maxDemoField || !utf8.Valid(v) {
				return "(malformed)"
			}
			return string(v)
		}
		page := &demoPartnerPage{Base: pagekit.Base{Lang: pagekit.DefaultLang, Title: "Back at the demo partner"},
			Status: field("status"), TID: field("tid"), Attempts: field("attempts"),
			Valid: payout.VerifySech(string(ctx.URI().QueryString()), p.Secret)}
		page.Reward = field("reward")
		if _, err := strconv.ParseInt(page.Reward, 10, 64); err == nil {
			page.Reward += " " + p.Currency
		}
		switch m, ok := demoMeaning[page.Status]; {
		case ok:
			page.Meaning = m
		case page.Status == "":
			page.Meaning = "This page expects the parameters Switchboard adds when it sends a participant back."
		default:
			page.Meaning = "Switchboard sends no such status."
		}
		pagekit.Render(ctx, log, fasthttp.StatusOK, "demo_partner", "", page)
	})
}
