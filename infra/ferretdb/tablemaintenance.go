package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// maintainTables stands in for autovacuum where the server runs without it, as some of the
// servers this project runs on do. Without ANALYZE, PostgreSQL never learns that an `_id`
// matches one row and plans for a large share of the table. Without VACUUM, every update's dead
// row stays in the table and its indexes. When the server runs autovacuum, it does nothing.
//
// Every 5 s it analyzes the FerretDB tables that were never analyzed and have rows: while they
// are small, when an ANALYZE reads few rows. It analyzes again a table that changed by more than
// autovacuum's default threshold since (10% of its rows + 50), at most every 10 minutes: each
// ANALYZE reads a sample of 30,000 rows whatever the table's size, about 0.5 s of one core per
// table of delivery-sized documents, and a table the webhooks worker appends 2,000 rows a second
// to crosses the threshold every tick, so at autovacuum's pace three such tables took 1.7 s of
// the two cores every 30 s (docs/benchmarks.md, "Table maintenance under load"). PostgreSQL
// scales the row counts of its statistics with the table's size between analyzes, so the
// plans (an index scan for every equality FerretDB pushes down) do not change. It vacuums, with
// an analyze, those with more dead rows than autovacuum's vacuum threshold (20% + 50) on every
// tick: the tables that get them (subscriptions, open deliveries) are small.
func maintainTables(ctx context.Context, postgresURL string, logger *slog.Logger) {
	config, err := pgxpool.ParseConfig(postgresURL)
	if err != nil {
		logger.Warn("table maintenance: not started", "error", err)
		return
	}
	config.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, config)
	if err != nil {
		logger.Warn("table maintenance: not started", "error", err)
		return
	}
	defer pool.Close()

	var autovacuum string
	if err := pool.QueryRow(ctx, `SELECT current_setting('autovacuum')`).Scan(&autovacuum); err != nil || autovacuum == "on" {
		return
	}

	ticker := time.NewTicker(5 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		rows, err := pool.Query(ctx, `
			SELECT format('%I.%I', schemaname, relname),
			       n_dead_tup > 50 + 0.2 * n_live_tup
			  FROM pg_stat_user_tables
			 WHERE schemaname <> 'public'
			   AND ((last_analyze IS NULL AND last_autoanalyze IS NULL AND n_mod_since_analyze > 0)
			     OR (n_mod_since_analyze > 50 + 0.1 * n_live_tup
			         AND greatest(last_analyze, last_autoanalyze) < now() - interval '10 minutes')
			     OR n_dead_tup > 50 + 0.2 * n_live_tup)`)
		if err != nil {
			logger.Warn("table maintenance: cannot read table statistics", "error", err)
			continue
		}
		type chore struct {
			table  string
			vacuum bool
		}
		chores, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chore, error) {
			var c chore
			err := row.Scan(&c.table, &c.vacuum)
			return c, err
		})
		if err != nil {
			logger.Warn("table maintenance: cannot read table statistics", "error", err)
			continue
		}
		for _, c := range chores {
			statement := "ANALYZE " + c.table
			if c.vacuum {
				statement = "VACUUM (ANALYZE) " + c.table
			}
			if _, err := pool.Exec(ctx, statement); err != nil && ctx.Err() == nil {
				logger.Warn("table maintenance: "+statement+" failed", "error", err)
			}
		}
	}
}
