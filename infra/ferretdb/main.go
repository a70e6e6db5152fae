// Command ferretdb-embedded runs FerretDB 1.24 in-process so that machines without
// MongoDB (CI, laptops without Docker) still speak the MongoDB wire protocol.
// The upstream `cmd/ferretdb` binary panics on a build-info version check when built
// with `go install`, which is why the project embeds the library instead.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP address to listen on")
	handler := flag.String("handler", "sqlite", "backend: sqlite or postgresql")
	sqliteURL := flag.String("sqlite-url", "", "SQLite directory URI, e.g. file:/tmp/ferret/ (trailing slash, folder must exist)")
	postgresURL := flag.String("postgresql-url", "", "PostgreSQL URL for the postgresql backend")
	logLevel := flag.String("log-level", "warn", "debug, info, warn or error")
	maxCommands := flag.Int("max-concurrent-commands", 16, "commands run at once (see gate.go); 0 = no gate")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb-embedded: bad -log-level %q\n", *logLevel)
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	// With the gate, FerretDB listens on a private loopback port and the gate on -listen.
	ferretListen := *listen
	var public net.Listener
	if *maxCommands > 0 {
		var err error
		if public, err = net.Listen("tcp", *listen); err != nil {
			fmt.Fprintf(os.Stderr, "ferretdb-embedded: %v\n", err)
			os.Exit(1)
		}
		private, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintf(os.Stderr, "ferretdb-embedded: %v\n", err)
			os.Exit(1)
		}
		ferretListen = private.Addr().String()
		private.Close()
	}

	if *handler == "postgresql" {
		if err := installEqualityIndexes(*postgresURL); err != nil {
			fmt.Fprintf(os.Stderr, "ferretdb-embedded: %v\n", err)
			os.Exit(1)
		}
	}

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:      ferretdb.ListenerConfig{TCP: ferretListen},
		Logger:        logger,
		Handler:       *handler,
		SQLiteURL:     *sqliteURL,
		PostgreSQLURL: *postgresURL,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb-embedded: %v\n", err)
		os.Exit(1)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if *handler == "postgresql" {
		go maintainTables(ctx, *postgresURL, logger)
	}

	if public != nil {
		var commands *ownCommands
		if *handler == "postgresql" {
			if commands, err = newOwnCommands(ctx, *postgresURL); err != nil {
				fmt.Fprintf(os.Stderr, "ferretdb-embedded: %v\n", err)
				os.Exit(1)
			}
		}
		g := newGate(ferretListen, *maxCommands, commands, logger)
		go func() {
			if err := g.serve(public); err != nil && ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "ferretdb-embedded: gate: %v\n", err)
				os.Exit(1)
			}
		}()
		go func() { <-ctx.Done(); public.Close() }()
		fmt.Printf("mongodb://%s/\n", *listen)
	} else {
		fmt.Println(f.MongoDBURI())
	}
	if err := f.Run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb-embedded: %v\n", err)
		os.Exit(1)
	}
}
