//! [`Store::verify_trail`]: which reader checks the chain, by backend (SQLite's in place,
//! [`verify_sqlite`]; PostgreSQL's through the pool, [`super::verify`]).

use super::backend::Location;
use super::verify::TrailCheck;
use super::{Store, verify_sqlite};
use crate::error::{StoreError, StoreResult};

impl Store {
    /// Recomputes the chain in `seq` order, in one read snapshot, and reports the first row
    /// that does not follow; checks that `head` (when given) is a hash of the chain; and
    /// checks the proposal, decision and grant rows against the events that created and
    /// ended them. SQLite reads on a connection of its own through the C API, the rows in
    /// place, on a blocking thread ([`verify_sqlite`]); PostgreSQL a page at a time
    /// through the pool.
    pub async fn verify_trail(&self, head: Option<&str>) -> StoreResult<TrailCheck> {
        if let Location::File(path) = &self.inner.location {
            let path = path.clone();
            let head = head.map(str::to_owned);
            let busy =
                i32::try_from(self.inner.options.busy_timeout.as_millis()).unwrap_or(i32::MAX);
            // The path must still name the file this store opened, before and after the
            // check reads it by name.
            self.check_identity()?;
            let check = tokio::task::spawn_blocking(move || {
                verify_sqlite::verify(&path, head.as_deref(), busy)
            })
            .await
            .map_err(|e| StoreError::Database(format!("the chain check stopped: {e}")))?;
            self.check_identity()?;
            return check;
        }
        self.verify_trail_pooled(head).await
    }
}
