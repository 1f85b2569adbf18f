//! A fleet of hosts writing at once to one database: HOSTS stores, each opened for a host of
//! its own (its own pool and writer connection, as each host's server has), each filing
//! one proposal per transaction for SECONDS; prints the fleet's commits per second. What
//! the fleet-wide write lock costs against PostgreSQL's own group commit (`pgbench -c N`,
//! docs/PERFORMANCE.md, "Fleet-wide writes").
//!
//! `cargo run --release -p supervise-store --example fleet_writers -- URL HOSTS SECONDS`

use std::time::{Duration, Instant};

use supervise_store::{Actor, Kind, NewProposal, ProposalLimits, Store, StoreOptions};

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let db = args.next().expect("usage: fleet_writers URL HOSTS SECONDS");
    let hosts: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(8);
    let seconds: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let mut stores = Vec::new();
    for n in 0..hosts {
        let store = Store::open(
            &db,
            StoreOptions {
                host: Some(format!("fleet-{n}")),
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
        stores.push((store, bottle));
    }
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let tasks: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(n, (store, bottle))| {
            let (store, bottle) = (store.clone(), bottle.id);
            tokio::spawn(async move {
                let mut done = 0u64;
                while Instant::now() < until {
                    store
                        .propose(NewProposal {
                            bottle_id: bottle,
                            kind: Kind::Egress,
                            change: serde_json::json!({ "host": format!("h{done}.f{n}.example") }),
                            justification: "fleet_writers".into(),
                            quorum: None,
                        })
                        .await
                        .expect("propose");
                    done += 1;
                }
                done
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("writer");
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "hosts {hosts}: {total} proposals in {secs:.2} s = {:.0} commits/s",
        total as f64 / secs
    );
    for (store, _) in stores {
        store.close().await;
    }
}
