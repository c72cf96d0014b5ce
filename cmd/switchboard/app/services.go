package app

import (
	"context"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/supply/partners"
	"github.com/switchboard/switchboard/supply/quality"
)

// newServices builds the services supply and the router share: the directory of publishers
// and service keys (it loads them) and the participant-quality service. It returns the
// catalog it read for the quality service's countries, which supply indexes too.
func (a *App) newServices(ctx context.Context, db *persistence.DB, cfg Config, log *zap.Logger) (*persistence.Catalog, error) {
	pcfg := cfg.Partners
	pcfg.Environment = cfg.Environment
	var err error
	if a.Partners, err = partners.New(ctx, pcfg, db.Accounts, db.Feed, log); err != nil {
		return nil, err
	}
	cat, err := db.Catalog.LoadCatalog(ctx)
	if err != nil {
		return nil, err
	}
	a.Quality, err = quality.New(cfg.Quality, quality.Deps{Store: db.Quality, Feed: db.Feed, Log: log.Named("quality"), Countries: cat.Countries})
	if err != nil {
		return nil, err
	}
	return cat, nil
}
