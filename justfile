# Developer recipes. Each is a plain cargo command you can also run by hand.

db := env_var_or_default("SUPERVISE_DB", "supervise.db")
target := env_var_or_default("CARGO_TARGET_DIR", "target")

# Format check, lints, tests: what CI runs.
check: fmt-check lint test

# The README's test command.
test:
    cargo test --workspace --locked

fmt-check:
    cargo fmt --all -- --check

lint:
    cargo clippy --workspace --all-targets --locked -- -D warnings

# The full benchmark (about 8 to 9 minutes): every scenario on SQLite, then on PostgreSQL (a
# throwaway durable cluster the bench starts and removes; pgbench for its baseline; SQLite
# only, loudly, when PostgreSQL is not installed), pinned, medians of 3, with 1M archived
# rows on SQLite for the flatness check. Figures go in docs/PERFORMANCE.md. The binary is
# run as built (not `cargo run -p supervise-bench`, which would build it again with the
# features of the bench alone).
bench:
    cargo build --release -p supervise-server -p supervise-cli -p supervise-bench
    {{target}}/release/supervise-bench --all --pin --repeat 3 --preload 1000000 --backends sqlite,postgres

# The benchmark's seconds-long smoke pass (what CI runs; no speed assertions).
bench-smoke:
    cargo run --release -p supervise-bench -- --quick

# The official MCP conformance scenarios that apply to this server (needs npm).
conformance:
    bash scripts/conformance.sh

# Run the server on the embedded default with a bottle for 127.0.0.1.
serve:
    cargo run --release -p supervise-server -- --bottle demo=127.0.0.1

# Remove the local database (and its WAL files). Asks nothing: only for dev databases.
db-reset:
    rm -f {{db}} {{db}}-wal {{db}}-shm
