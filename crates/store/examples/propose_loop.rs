//! Files N distinct egress proposals through the store, one transaction each, on the
//! database given (a file or a `postgres://` URL): the store's share of `propose`, for an
//! instruction count under callgrind (docs/PERFORMANCE.md), where a shared machine's noise
//! does not reach.
//!
//! `cargo run --release -p supervise-store --example propose_loop -- DB N`

use supervise_store::{Actor, Kind, NewProposal, ProposalLimits, Store, StoreOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let db = args.next().expect("usage: propose_loop DB N");
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let store = Store::open(
        &db,
        StoreOptions {
            durable: false,
            limits: ProposalLimits {
                max_pending_per_bottle: None,
                ..ProposalLimits::default()
            },
            ..StoreOptions::default()
        },
    )
    .await
    .expect("open");
    let bottle = store
        .add_bottle("loop", "127.0.0.2".parse().unwrap(), &Actor::cli("bench"))
        .await
        .expect("bottle");
    for i in 0..n {
        store
            .propose(NewProposal {
                bottle_id: bottle.id,
                kind: Kind::Egress,
                change: serde_json::json!({ "host": format!("h{i}.example") }),
                justification: "propose_loop".into(),
                quorum: None,
            })
            .await
            .expect("propose");
    }
    store.close().await;
}
