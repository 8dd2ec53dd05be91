//! SQLite store: the embedded default. WAL journal with `synchronous = FULL`,
//! so a save is on disk before its response is sent.

use super::{backend, like_pattern};
use anyhow::Context;
use app::api::{StoredPlan, StoredTrace};
use app::store::{PlanStore, StoreError};
use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Row, SqlitePool};
use std::path::Path;
use std::time::Duration;

pub struct SqliteStore {
    pool: SqlitePool,
}

const COLUMNS: &str = "id, title, notes, author, created_at_ms, forked_from, schema_version, \
                       model_version, model, gpu, num_gpus, plan_json";

impl SqliteStore {
    /// Opens (creating when missing) the database file and migrates it.
    pub async fn open(path: &str) -> anyhow::Result<Self> {
        if let Some(dir) = Path::new(path)
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir).with_context(|| {
                format!("cannot create the database directory {}", dir.display())
            })?;
        }
        let opts = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(opts)
            .await
            .with_context(|| format!("cannot open the SQLite database {path}"))?;
        sqlx::migrate!("migrations/sqlite")
            .run(&pool)
            .await
            .with_context(|| format!("SQLite migrations failed on {path}"))?;
        Ok(SqliteStore { pool })
    }
}

fn row_to_plan(r: &SqliteRow) -> Result<StoredPlan, sqlx::Error> {
    Ok(StoredPlan {
        id: r.try_get("id")?,
        title: r.try_get("title")?,
        notes: r.try_get("notes")?,
        author: r.try_get("author")?,
        created_at_ms: r.try_get("created_at_ms")?,
        forked_from: r.try_get("forked_from")?,
        schema_version: r.try_get::<i64, _>("schema_version")? as u32,
        model_version: r.try_get::<i64, _>("model_version")? as u32,
        model: r.try_get("model")?,
        gpu: r.try_get("gpu")?,
        num_gpus: r.try_get::<i64, _>("num_gpus")? as u32,
        plan_json: r.try_get("plan_json")?,
    })
}

#[async_trait]
impl PlanStore for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn insert(&self, p: &StoredPlan) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO plans (id, title, notes, author, created_at_ms, forked_from, \
             schema_version, model_version, model, gpu, num_gpus, plan_json) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&p.id)
        .bind(&p.title)
        .bind(&p.notes)
        .bind(&p.author)
        .bind(p.created_at_ms)
        .bind(&p.forked_from)
        .bind(p.schema_version as i64)
        .bind(p.model_version as i64)
        .bind(&p.model)
        .bind(&p.gpu)
        .bind(p.num_gpus as i64)
        .bind(&p.plan_json)
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(())
    }

    async fn get(&self, id: &str) -> Result<Option<StoredPlan>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM plans WHERE id = ?");
        let row = sqlx::query(&sql)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        row.as_ref().map(row_to_plan).transpose().map_err(backend)
    }

    async fn list(
        &self,
        query: &str,
        offset: u64,
        limit: u32,
    ) -> Result<(Vec<StoredPlan>, u64), StoreError> {
        let filter = "(?1 = '' OR title LIKE ?2 ESCAPE '\\' OR model LIKE ?2 ESCAPE '\\' \
                      OR gpu LIKE ?2 ESCAPE '\\')";
        let pattern = like_pattern(query);
        let sql = format!(
            "SELECT {COLUMNS} FROM plans WHERE {filter} ORDER BY seq DESC LIMIT ?3 OFFSET ?4"
        );
        let rows = sqlx::query(&sql)
            .bind(query)
            .bind(&pattern)
            .bind(limit as i64)
            .bind(offset.min(i64::MAX as u64) as i64)
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        let count_sql = format!("SELECT COUNT(*) FROM plans WHERE {filter}");
        let total: i64 = sqlx::query_scalar(&count_sql)
            .bind(query)
            .bind(&pattern)
            .fetch_one(&self.pool)
            .await
            .map_err(backend)?;
        let plans = rows
            .iter()
            .map(row_to_plan)
            .collect::<Result<_, _>>()
            .map_err(backend)?;
        Ok((plans, total.max(0) as u64))
    }

    async fn insert_trace(&self, t: &StoredTrace) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO traces (id, plan_id, created_at_ms, filename, format, raw_bytes, \
             body_gz, report_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&t.id)
        .bind(&t.plan_id)
        .bind(t.created_at_ms)
        .bind(&t.filename)
        .bind(&t.format)
        .bind(t.raw_bytes.min(i64::MAX as u64) as i64)
        .bind(&t.body_gz)
        .bind(&t.report_json)
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(())
    }

    async fn traces(&self, plan_id: &str) -> Result<Vec<StoredTrace>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, plan_id, created_at_ms, filename, format, raw_bytes, report_json \
             FROM traces WHERE plan_id = ? ORDER BY seq",
        )
        .bind(plan_id)
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        rows.iter()
            .map(|r| {
                Ok(StoredTrace {
                    id: r.try_get("id")?,
                    plan_id: r.try_get("plan_id")?,
                    created_at_ms: r.try_get("created_at_ms")?,
                    filename: r.try_get("filename")?,
                    format: r.try_get("format")?,
                    raw_bytes: r.try_get::<i64, _>("raw_bytes")?.max(0) as u64,
                    body_gz: Vec::new(),
                    report_json: r.try_get("report_json")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(backend)
    }

    async fn trace_body(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        sqlx::query_scalar("SELECT body_gz FROM traces WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)
    }
}
