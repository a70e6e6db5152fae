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
// row stays in the table and its indexes. Every 30 s it analyzes the FerretDB tables that
// changed by more than autovacuum's default thresholds since their last analyze (10% of their
// rows + 50) and vacuums those with more dead rows than its vacuum threshold (20% + 50). When
// the server runs autovacuum, it does nothing.
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

	ticker := time.NewTicker(30 * time.Second)
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
			   AND (n_mod_since_analyze > 50 + 0.1 * n_live_tup OR n_dead_tup > 50 + 0.2 * n_live_tup)`)
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
