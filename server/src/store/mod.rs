//! Plan storage: the [`PlanStore`](app::store::PlanStore) implementations,
//! chosen from the database URL's scheme. Each backend has its own migrations,
//! run at boot; a failure there stops the server with the reason.

mod postgres;
mod sqlite;

pub use postgres::PgStore;
pub use sqlite::SqliteStore;

use app::store::{SharedStore, StoreError};
use std::sync::Arc;

/// Where plans are kept when neither `--database` nor `DATABASE_URL` is given.
pub const DEFAULT_DATABASE: &str = "sqlite:data/memplan.db";

/// Opens the store named by `url` and brings its schema up to date:
/// `postgres://…` / `postgresql://…` for PostgreSQL, `sqlite:PATH` (or a bare
/// path) for SQLite, whose parent directory is created when missing.
pub async fn connect(url: &str) -> anyhow::Result<SharedStore> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Arc::new(PgStore::connect(url).await?))
    } else {
        Ok(Arc::new(SqliteStore::open(sqlite_path(url)).await?))
    }
}

/// The file path of a SQLite URL (`sqlite:x.db`, `sqlite://x.db`, `x.db`).
pub fn sqlite_path(url: &str) -> &str {
    url.strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url)
}

/// A URL with any password replaced, for logs.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let cred = &url[s + 3..at];
            match cred.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// LIKE pattern matching `q` anywhere, with `%`, `_` and `\` taken literally
/// (both backends are given `ESCAPE '\'`).
pub(crate) fn like_pattern(q: &str) -> String {
    let mut p = String::with_capacity(q.len() + 2);
    p.push('%');
    for c in q.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

pub(crate) fn backend(e: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(d) = &e {
        if d.is_unique_violation() {
            return StoreError::Conflict;
        }
    }
    StoreError::Backend(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_choose_the_backend_and_hide_passwords() {
        assert_eq!(sqlite_path("sqlite:data/x.db"), "data/x.db");
        assert_eq!(sqlite_path("sqlite:///tmp/x.db"), "/tmp/x.db");
        assert_eq!(sqlite_path("plans.db"), "plans.db");
        assert_eq!(
            redact("postgres://me:secret@db:5432/plans"),
            "postgres://me:***@db:5432/plans"
        );
        assert_eq!(redact("postgres://db/plans"), "postgres://db/plans");
        assert_eq!(like_pattern("50%_a\\"), "%50\\%\\_a\\\\%");
    }
}
