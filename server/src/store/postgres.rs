//! PostgreSQL store, for teams that outgrow one machine: chosen when the
//! database URL starts with `postgres://`. Each save is one committed
//! statement (autocommit), durable before its response is sent.

use super::{backend, like_pattern};
use anyhow::Context;
use app::api::{StoredPlan, StoredTrace};
use app::store::{PlanStore, StoreError};
use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{PgPool, Row};
use std::str::FromStr;

pub struct PgStore {
    pool: PgPool,
}

const COLUMNS: &str = "id, title, notes, author, created_at_ms, forked_from, schema_version, \
                       model_version, model, gpu, num_gpus, plan_json";

impl PgStore {
    /// Connects and migrates.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        let opts = PgConnectOptions::from_str(url)
            .with_context(|| format!("bad PostgreSQL URL {}", super::redact(url)))?;
        Self::connect_with(opts).await
    }

    /// Connects with explicit options (tests put each run in its own schema).
    pub async fn connect_with(opts: PgConnectOptions) -> anyhow::Result<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            // A server that is down is reported within seconds, not after 30.
            .acquire_timeout(std::time::Duration::from_secs(5))
            .connect_with(opts)
            .await
            .context("cannot connect to PostgreSQL")?;
        sqlx::migrate!("migrations/postgres")
            .run(&pool)
            .await
            .context("PostgreSQL migrations failed")?;
        Ok(PgStore { pool })
    }
}

fn row_to_plan(r: &PgRow) -> Result<StoredPlan, sqlx::Error> {
    Ok(StoredPlan {
        id: r.try_get("id")?,
        title: r.try_get("title")?,
        notes: r.try_get("notes")?,
        author: r.try_get("author")?,
        created_at_ms: r.try_get("created_at_ms")?,
        forked_from: r.try_get("forked_from")?,
        schema_version: r.try_get::<i32, _>("schema_version")? as u32,
        model_version: r.try_get::<i32, _>("model_version")? as u32,
        model: r.try_get("model")?,
        gpu: r.try_get("gpu")?,
        num_gpus: r.try_get::<i32, _>("num_gpus")? as u32,
        plan_json: r.try_get("plan_json")?,
    })
}

fn to_i32(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

#[async_trait]
impl PlanStore for PgStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn insert(&self, p: &StoredPlan) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO plans (id, title, notes, author, created_at_ms, forked_from, \
             schema_version, model_version, model, gpu, num_gpus, plan_json) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(&p.id)
        .bind(&p.title)
        .bind(&p.notes)
        .bind(&p.author)
        .bind(p.created_at_ms)
        .bind(&p.forked_from)
        .bind(to_i32(p.schema_version))
        .bind(to_i32(p.model_version))
        .bind(&p.model)
        .bind(&p.gpu)
        .bind(to_i32(p.num_gpus))
        .bind(&p.plan_json)
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(())
    }

    async fn get(&self, id: &str) -> Result<Option<StoredPlan>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM plans WHERE id = $1");
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
        let filter = "($1 = '' OR title ILIKE $2 ESCAPE '\\' OR model ILIKE $2 ESCAPE '\\' \
                      OR gpu ILIKE $2 ESCAPE '\\')";
        let pattern = like_pattern(query);
        let sql = format!(
            "SELECT {COLUMNS} FROM plans WHERE {filter} ORDER BY seq DESC LIMIT $3 OFFSET $4"
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
             body_gz, report_json) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
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
             FROM traces WHERE plan_id = $1 ORDER BY seq",
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
        sqlx::query_scalar("SELECT body_gz FROM traces WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)
    }
}
