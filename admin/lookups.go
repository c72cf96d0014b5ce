package admin

import (
	"context"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// questionCatalog is the question catalog as buyers read it (persistence CatalogStore).
type questionCatalog interface {
	CountryLanguages(ctx context.Context) ([]persistence.CountryLanguage, error)
	Qualifications(ctx context.Context, buyerID int64, countryLanguageID int) ([]persistence.Qualification, error)
	QualificationsWithAnswers(ctx context.Context, buyerID int64, countryLanguageID int) ([]persistence.Qualification, error)
	Qualification(ctx context.Context, buyerID int64, questionID, countryLanguageID int) (persistence.Qualification, error)
	QuestionTexts(ctx context.Context, buyerID int64, countryLanguageID int, qids []int) (map[int]persistence.QuestionText, error)
}

// supplierList lists the supply partners of an environment (persistence AccountStore).
type supplierList interface {
	Suppliers(ctx context.Context, env string) ([]persistence.Supplier, error)
}

// lookupAPI serves the lookups a campaign is written with: country languages,
// qualifications and suppliers.
type lookupAPI struct {
	catalog  questionCatalog
	partners supplierList
	env      string
}

func (a *lookupAPI) countryLanguages(ctx *fasthttp.RequestCtx, _ persistence.Buyer) error {
	out, err := a.catalog.CountryLanguages(dbContext(ctx))
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

// suppliers lists the supply partners of the token's environment, which a campaign's
// excluded_supplier_ids name (docs/rules.md §5.5).
func (a *lookupAPI) suppliers(ctx *fasthttp.RequestCtx, _ persistence.Buyer) error {
	out, err := a.partners.Suppliers(dbContext(ctx), a.env)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

func (a *lookupAPI) qualifications(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	cl, err := queryInt(ctx, "country_language_id", true)
	if err != nil {
		return err
	}
	out, err := a.catalog.Qualifications(dbContext(ctx), b.ID, *cl)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}

func (a *lookupAPI) qualification(ctx *fasthttp.RequestCtx, b persistence.Buyer) error {
	qid, err := pathID(ctx, "question_id")
	if err != nil || qid > maxInt32 {
		return fault.NotFound("qualification not found")
	}
	cl, err := queryInt(ctx, "country_language_id", true)
	if err != nil {
		return err
	}
	out, err := a.catalog.Qualification(dbContext(ctx), b.ID, int(qid), *cl)
	if err != nil {
		return err
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
	return nil
}
