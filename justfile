# Developer recipes. Each is a plain cargo command you can also run by hand.

db := env_var_or_default("SUPERVISE_DB", "supervise.db")

# Format check, lints, tests: what CI runs.
check: fmt-check lint test

# The README's test command.
test:
    cargo test --workspace --locked

fmt-check:
    cargo fmt --all -- --check

lint:
    cargo clippy --workspace --all-targets --locked -- -D warnings

# The full benchmark (about 2.5 minutes): every scenario, pinned, medians of 3, with 1M
# archived rows for the flatness check. Figures go in docs/PERFORMANCE.md.
bench:
    cargo build --release -p supervise-server -p supervise-bench
    cargo run --release -p supervise-bench -- --all --pin --repeat 3 --preload 1000000

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
