package bench

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/sign"
)

// runRemote sends to a server that is already running. With c.DatabaseURL it also
// reads that database's settings and runs the pgbench anchor there.
func runRemote(ctx context.Context, c *Config, r *Report, p *progress) error {
	r.Target = c.URL
	signer, err := sign.For(c.Provider, []string{c.Secret}, c.Options)
	if err != nil {
		return usagef("--provider %s: %v", c.Provider, err)
	}
	gen, err := newEventGen(c.TemplateFunc, c.Provider, c.Options)
	if err != nil {
		return err
	}
	var admin *pgxpool.Pool
	if c.DatabaseURL != "" {
		db, _ := config.ParseDatabaseURL(c.DatabaseURL, config.SourceFlag)
		r.Database = db.String()
		if db.Driver == config.DriverSQLite {
			r.Settings.Database = "sqlite"
		} else {
			if admin, err = connectAdmin(ctx, c.DatabaseURL); err != nil {
				return err
			}
			defer admin.Close()
			r.Settings.readPostgres(ctx, admin, "")
			r.Settings.checkpoint(ctx, admin)
		}
	}
	rn := &runner{c: c, signer: signer, gen: gen, cpu: newCPUMeter("bench (load generator)", c.DatabaseURL)}
	spec, answered := rn.spec(c.URL)
	p.track(c.Mode, "requests", answered.Load)
	res := runLoad(ctx, spec)
	p.untrack()
	r.setLoad(res)
	r.setRate(r.RequestRate, "req/s")
	if ctx.Err() != nil {
		return nil
	}
	if c.DatabaseURL == "" {
		why := "--url without --database-url: bench does not know the server's database"
		r.Pgbench, r.Naive = &PgbenchReport{Skipped: why}, &NaiveReport{Skipped: why}
		return nil
	}
	// The anchor's schema has the tables of the mode's generated config.
	cfg, _, err := generatedConfig(serverSpec{mode: c.Mode, provider: "stripe", workers: 1, dispatchers: 1})
	if err != nil {
		return err
	}
	anchorGen, err := newEventGen(c.TemplateFunc, "stripe", nil)
	if err != nil {
		return err
	}
	r.Pgbench = runPgbench(ctx, c, admin, c.DatabaseURL, cfg, anchorGen, &r.Settings)
	if ctx.Err() == nil {
		r.Naive = runNaive(ctx, c, admin, c.DatabaseURL, cfg, &r.Settings, p)
	}
	return nil
}
