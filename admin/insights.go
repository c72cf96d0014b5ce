package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// resultStore is the insights projects and the results exports of a buyer's campaigns
// (persistence InsightStore).
type resultStore interface {
	InsightsProjects(ctx context.Context, buyerID int64, projectType string, page int) ([]persistence.InsightsProject, int, error)
	InsightsProject(ctx context.Context, buyerID, projectID int64) (persistence.InsightsProject, error)
	CampaignResultLayout(ctx context.Context, buyerID, projectID, campaignID int64) (persistence.ResultLayout, error)
	OpenCampaignResults(ctx context.Context, l persistence.ResultLayout) (*persistence.CSVExport, error)
	OpenDemographicsExport(ctx context.Context, buyerID, campaignID int64, f persistence.DemographicsFilter) (*persistence.CSVExport, error)
}

// insightsAPI serves the insights interface and the demographics export (exports.go).
type insightsAPI struct {
	store     resultStore
	publicURL string             // base of the results links
	exports   *httpio.CSVStreams // shared with the statements
}

// InsightsPrefix is the path prefix of the insights interface (results of projects).
const InsightsPrefix = "/insights_api"

// insightsRoutes lists the insights routes. The results and columns routes are served both
// in the link form handed out in responses (/insights_api/projects/:project_id/...) and in
// the reference form without the projects segment.
func (a *insightsAPI) insightsRoutes() []Route {
	r := func(path string, h handler) Route { return Route{Method: "GET", Pattern: InsightsPrefix + path, h: h} }
	csvRoute := func(path string, h handler) Route {
		return Route{Method: "GET", Pattern: InsightsPrefix + path, h: h, CSV: true}
	}
	return []Route{
		r("/projects", a.insightsProjects),
		r("/projects/{project_id}", a.insightsProject),
		r("/projects/{project_id}/campaigns/{campaign_id}/columns", a.insightsColumns),
		csvRoute("/projects/{project_id}/campaigns/{campaign_id}", a.insightsResults),
		r("/{project_id}/campaigns/{campaign_id}/columns", a.insightsColumns),
		csvRoute("/{project_id}/campaigns/{campaign_id}", a.insightsResults),
	}
}

// JSON:API shapes of the insights interface (docs/rules.md §8).

type jsonAPIDocument struct {
	Data any `json:"data"`
}

type projectsListResource struct {
	ID         string              `json:"id"`
	Type       string              `json:"type"`
	Attributes projectsListContent `json:"attributes"`
}

type projectsListContent struct {
	Page     int `json:"page"`
	Pages    int `json:"pages"`
	Projects struct {
		Data []projectResource `json:"data"`
	} `json:"projects"`
}

type projectResource struct {
	ID         string            `json:"id"`
	Type       string            `json:"type"`
	Attributes projectAttributes `json:"attributes"`
}

type projectAttributes struct {
	ID          int64              `json:"id"`
	Name        string             `json:"name"`
	ProjectType string             `json:"project_type"`
	Campaigns   []campaignResource `json:"campaigns"`
}

type campaignResource struct {
	ID         string             `json:"id"`
	Type       string             `json:"type"`
	Attributes campaignAttributes `json:"attributes"`
	Links      campaignLinks      `json:"links"`
}

type campaignAttributes struct {
	ID         int64   `json:"id"`
	Status     string  `json:"status"`
	CompleteAt *string `json:"complete_at"`
	WaveNumber int     `json:"wave_number"`
}

type campaignLinks struct {
	ResultsURL *string `json:"results_url"`
	ColumnsURL *string `json:"columns_url"`
}

type columnsResource struct {
	ID         string            `json:"id"`
	Type       string            `json:"type"`
	Attributes columnsAttributes `json:"attributes"`
}

type columnsAttributes struct {
	Columns orderedColumns `json:"columns"`
}

// orderedColumns is the columns map, encoded as a JSON object whose keys keep column order
// (the CSV header order).
type orderedColumns []persistence.ResultColumn

func (c orderedColumns) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, col := range c {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(col.ID)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(col.Title)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// resultsURL is where the results CSV of a campaign is read (the link form).
func (a *insightsAPI) resultsURL(projectID, campaignID int64) string {
	return a.publicURL + InsightsPrefix + "/projects/" + strconv.FormatInt(projectID, 10) +
		"/campaigns/" + strconv.FormatInt(campaignID, 10)
}

func (a *insightsAPI) projectResource(p persistence.InsightsProject) projectResource {
	out := projectResource{ID: strconv.FormatInt(p.ID, 10), Type: "project", Attributes: projectAttributes{
		ID: p.ID, Name: p.Name, ProjectType: p.ProjectType, Campaigns: make([]campaignResource, 0, len(p.Campaigns))}}
	for _, c := range p.Campaigns {
		r := campaignResource{ID: strconv.FormatInt(c.ID, 10), Type: "campaign", Attributes: campaignAttributes{
			ID: c.ID, Status: persistence.InsightsStatus(c.Status), WaveNumber: c.WaveNumber}}
		if c.CompletedAt != nil {
			s := c.CompletedAt.UTC().Format(time.RFC3339)
			r.Attributes.CompleteAt = &s
		}
		if c.HasResponses {
			results := a.resultsURL(p.ID, c.ID)
			columns := results + "/columns"
			r.Links = campaignLinks{ResultsURL: &results, ColumnsURL: &columns}
		}
		out.Attributes.Campaigns = append(out.Attributes.Campaigns, r)
	}
	return out
}

// insightsProjects lists one page of the buyer's projects.
func (a *insightsAPI) insightsProjects(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	page := 1
	if raw := ctx.QueryArgs().Peek("page"); len(raw) > 0 {
		n64, err := strconv.ParseInt(string(raw), 10, 64) // past the last page is an empty page
		if err != nil && !httpio.IsRangeError(err) {
			return fault.BadRequest("query parameter page must be an integer")
		}
		n := int(n64)
		if err != nil || n < 1 {
			return fault.BadRequest("query parameter page must be an integer from 1 to %d", int64(math.MaxInt64))
		}
		page = n
	}
	projectType := string(ctx.QueryArgs().Peek("project_type"))
	switch projectType {
	case "", "one_time", "recurring":
	default:
		return fault.BadRequest("query parameter project_type must be one_time or recurring")
	}
	projects, total, err := a.store.InsightsProjects(dbContext(ctx), b.ID, projectType, page)
	if err != nil {
		return err
	}
	pages := (total + persistence.InsightsPageSize - 1) / persistence.InsightsPageSize
	if pages < 1 {
		pages = 1
	}
	list := projectsListResource{ID: "projects_list_" + b.CustomerID, Type: "projects_list",
		Attributes: projectsListContent{Page: page, Pages: pages}}
	list.Attributes.Projects.Data = make([]projectResource, 0, len(projects))
	for _, p := range projects {
		list.Attributes.Projects.Data = append(list.Attributes.Projects.Data, a.projectResource(p))
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, jsonAPIDocument{Data: list})
	return nil
}

// insightsProject reads one project with its campaigns in wave order.
func (a *insightsAPI) insightsProject(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	pid, err := pathID(ctx, "project_id")
	if err != nil {
		return err
	}
	p, err := a.store.InsightsProject(dbContext(ctx), b.ID, pid)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, jsonAPIDocument{Data: a.projectResource(p)})
	return nil
}

// resultLayout reads the path's project and campaign and the campaign's column layout.
func (a *insightsAPI) resultLayout(ctx *fasthttp.RequestCtx, b persistence.Buyer) (persistence.ResultLayout, error) {
	pid, err := pathID(ctx, "project_id")
	if err != nil {
		return persistence.ResultLayout{}, err
	}
	cid, err := pathID(ctx, "campaign_id")
	if err != nil {
		return persistence.ResultLayout{}, err
	}
	return a.store.CampaignResultLayout(dbContext(ctx), b.ID, pid, cid)
}

// insightsColumns answers the columns map of a campaign's results, in column order.
func (a *insightsAPI) insightsColumns(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	l, err := a.resultLayout(ctx, b)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, jsonAPIDocument{Data: columnsResource{
		ID: "columns_" + strconv.FormatInt(l.CampaignID, 10), Type: "campaign_columns",
		Attributes: columnsAttributes{Columns: orderedColumns(l.Columns)}}})
	return nil
}

// insightsResults streams a campaign's results as CSV.
func (a *insightsAPI) insightsResults(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	l, err := a.resultLayout(ctx, b)
	if err != nil {
		return err
	}
	return a.streamCSV(ctx, "campaign_result_"+strconv.FormatInt(l.CampaignID, 10)+".csv", l.CampaignID,
		func(c exportContext) (*persistence.CSVExport, error) { return a.store.OpenCampaignResults(c, l) })
}
