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

# Run the server on the embedded default with a bottle for 127.0.0.1.
serve:
    cargo run --release -p supervise-server -- --bottle demo=127.0.0.1

# Remove the local database (and its WAL files). Asks nothing: only for dev databases.
db-reset:
    rm -f {{db}} {{db}}-wal {{db}}-shm
