//! One suite, two backends: every `PlanStore` must pass it. PostgreSQL runs
//! against the server this machine kind provides (127.0.0.1:5432, trust
//! auth, database `test`; override with MEMPLAN_TEST_POSTGRES), each run in a
//! schema of its own that is dropped afterwards.

mod common;

use app::api::{NewPlan, StoredPlan, PAGE_SIZE};
use app::store::{self, PlanStore, StoreError};
use cost_model::Plan;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};
use std::str::FromStr;

fn plan_with(model: &str, gpu: &str) -> Plan {
    Plan {
        model: cost_model::presets::preset(model).expect("preset").spec(),
        gpu: cost_model::gpu::gpu(gpu).expect("gpu"),
        ..Plan::default()
    }
}

fn row(id: &str, title: &str, plan: Plan, at: i64) -> StoredPlan {
    NewPlan::new(title, "notes\nline two", "ana", plan, None)
        .expect("valid")
        .into_stored(id.to_string(), at)
}

async fn suite(s: &dyn PlanStore) {
    // Insert and read back, field for field.
    let a = row(
        "AAAAAAAAAAA1",
        "Llama 8B baseline",
        plan_with("llama-3.1-8b", "h100-sxm-80gb"),
        1,
    );
    s.insert(&a).await.unwrap();
    assert_eq!(s.get("AAAAAAAAAAA1").await.unwrap(), Some(a.clone()));
    assert_eq!(s.get("AAAAAAAAAAA2").await.unwrap(), None);

    // An id is never reused or overwritten.
    let mut clash = row("AAAAAAAAAAA1", "other", Plan::default(), 2);
    clash.notes = "overwrite attempt".into();
    assert!(matches!(s.insert(&clash).await, Err(StoreError::Conflict)));
    assert_eq!(s.get("AAAAAAAAAAA1").await.unwrap(), Some(a.clone()));

    // Newest first; search by title, model or GPU, case-insensitively;
    // LIKE wildcards are literal.
    let b = row(
        "BBBBBBBBBBB1",
        "Qwen 7B 100% LoRA",
        plan_with("qwen2.5-7b", "a100-sxm4-80gb"),
        3,
    );
    let c = row(
        "CCCCCCCCCCC1",
        "Mistral on A100",
        plan_with("mistral-7b", "a100-sxm4-80gb"),
        4,
    );
    s.insert(&b).await.unwrap();
    s.insert(&c).await.unwrap();
    let ids = |v: Vec<StoredPlan>| v.into_iter().map(|p| p.id).collect::<Vec<_>>();
    let (all, n) = s.list("", 0, 10).await.unwrap();
    assert_eq!(
        (ids(all), n),
        (
            vec![
                "CCCCCCCCCCC1".to_string(),
                "BBBBBBBBBBB1".into(),
                "AAAAAAAAAAA1".into()
            ],
            3
        )
    );
    let (hits, n) = s.list("a100", 0, 10).await.unwrap();
    assert_eq!(
        (ids(hits), n),
        (vec!["CCCCCCCCCCC1".to_string(), "BBBBBBBBBBB1".into()], 2)
    );
    let (hits, _) = s.list("LLAMA", 0, 10).await.unwrap();
    assert_eq!(ids(hits), vec!["AAAAAAAAAAA1".to_string()]);
    let (hits, _) = s.list("qwen2.5", 0, 10).await.unwrap();
    assert_eq!(ids(hits), vec!["BBBBBBBBBBB1".to_string()]);
    let (hits, _) = s.list("100%", 0, 10).await.unwrap();
    assert_eq!(ids(hits), vec!["BBBBBBBBBBB1".to_string()]);
    let (hits, n) = s.list("_", 0, 10).await.unwrap();
    assert_eq!((hits.len(), n), (0, 0), "`_` is not a wildcard");

    // Pages through the service layer, with text that needs escaping.
    for i in 0..(PAGE_SIZE + 3) {
        let new = NewPlan::new(
            &format!("<script>alert({i})</script>"),
            "",
            "",
            Plan::default(),
            None,
        )
        .unwrap();
        store::save(s, new).await.unwrap();
    }
    let p1 = store::list(s, "", 1).await.unwrap();
    let p2 = store::list(s, "", 2).await.unwrap();
    assert_eq!(p1.total, PAGE_SIZE as u64 + 6);
    assert_eq!(p1.plans.len(), PAGE_SIZE as usize);
    assert_eq!(p2.plans.len(), 6);
    assert_eq!(
        p1.plans[0].title,
        format!("<script>alert({})</script>", PAGE_SIZE + 2)
    );
    assert_eq!(p2.plans.last().unwrap().id, "AAAAAAAAAAA1");
    assert_eq!(p1.pages(), 2);
    let far = store::list(s, "", 99).await.unwrap();
    assert!(far.plans.is_empty());

    // The service layer validates, stores and loads back the same plan.
    let mut plan = plan_with("llama-2-13b", "a100-sxm4-40gb");
    plan.training.micro_batch = 3;
    let id = store::save(
        s,
        NewPlan::new("t", "", "", plan.clone(), Some("AAAAAAAAAAA1")).unwrap(),
    )
    .await
    .unwrap();
    let back = store::load(s, &id).await.unwrap().unwrap();
    assert_eq!(back.plan, plan);
    assert_eq!(back.forked_from.as_deref(), Some("AAAAAAAAAAA1"));
    assert!(store::load(s, "not-an-id").await.unwrap().is_none());

    // A plan saved under schema version 1 loads, migrated, after the change.
    let v1 = include_str!("../../cost-model/tests/fixtures/plan-v1.json");
    let mut old = row(
        "VVVVVVVVVVV1",
        "saved in 2026 under schema 1",
        Plan::default(),
        5,
    );
    old.plan_json = v1.to_string();
    old.schema_version = 1;
    s.insert(&old).await.unwrap();
    // Verifications attach to a plan, list oldest first without bodies, keep
    // the compressed upload.
    let opts = cost_model::trace::ParseOptions::default();
    let text = "timestamp, index, memory.used [MiB], memory.total [MiB]\n1700000000, 0, 1000 MiB, 81559 MiB\n";
    let t1 = store::attach_trace(s, "AAAAAAAAAAA1", text.as_bytes(), "a.csv", &opts)
        .await
        .unwrap();
    let t2 = store::attach_trace(s, "AAAAAAAAAAA1", text.as_bytes(), "b.csv", &opts)
        .await
        .unwrap();
    let listed = store::list_traces(s, "AAAAAAAAAAA1").await.unwrap();
    assert_eq!(
        listed.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
        vec![t1.id.clone(), t2.id]
    );
    assert_eq!(listed[0].report.gpus[0].peak_used_mib, Some(1000.0));
    assert!(listed[0].report.verdict.is_some());
    let gz = s.trace_body(&t1.id).await.unwrap().unwrap();
    let mut raw = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw).unwrap();
    assert_eq!(raw, text);
    assert!(matches!(
        store::attach_trace(s, "ZZZZZZZZZZZZ", text.as_bytes(), "", &opts).await,
        Err(store::ServiceError::NotFound(_))
    ));
    assert!(store::list_traces(s, "BBBBBBBBBBB1")
        .await
        .unwrap()
        .is_empty());

    let back = store::load(s, "VVVVVVVVVVV1").await.unwrap().unwrap();
    assert_eq!(back.saved_schema_version, 1);
    assert_eq!(back.plan.version, cost_model::plan::PLAN_VERSION);
    assert_eq!(
        back.plan.parallel.offload,
        cost_model::plan::Offload::OPTIMIZER_CPU
    );
}

#[tokio::test]
async fn sqlite_store_passes_the_suite() {
    let (s, dir) = common::sqlite_store().await;
    assert_eq!(s.backend(), "sqlite");
    suite(&*s).await;
    // The file is in WAL mode with full synchronous writes.
    let path = dir.path().join("plans.db");
    let mut c = sqlx::SqliteConnection::connect(&format!("sqlite:{}", path.display()))
        .await
        .unwrap();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    // Rows cannot be changed behind the app's back either.
    let r = sqlx::query("UPDATE plans SET title = 'x'")
        .execute(&mut c)
        .await;
    assert!(r.unwrap_err().to_string().contains("immutable"));
    let r = sqlx::query("DELETE FROM plans").execute(&mut c).await;
    assert!(r.is_err());
}

#[tokio::test]
async fn sqlite_store_reopens_an_existing_file() {
    let (s, dir) = common::sqlite_store().await;
    let id = store::save(
        &*s,
        NewPlan::new("kept", "", "", Plan::default(), None).unwrap(),
    )
    .await
    .unwrap();
    drop(s);
    let path = dir.path().join("plans.db");
    let again = server::store::connect(path.to_str().unwrap())
        .await
        .unwrap();
    assert_eq!(
        store::load(&*again, &id).await.unwrap().unwrap().title,
        "kept"
    );
}

#[tokio::test]
async fn sqlite_failure_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let url = format!("sqlite:{}/plans.db", file.display());
    let err = format!(
        "{:#}",
        server::store::connect(&url).await.err().expect("fails")
    );
    assert!(
        err.contains("cannot create the database directory"),
        "{err}"
    );
    // A file that is not a database fails at migration time, with its path.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![7u8; 4096]).unwrap();
    let err = format!(
        "{:#}",
        server::store::connect(junk.to_str().unwrap())
            .await
            .err()
            .expect("fails")
    );
    assert!(err.contains("junk.db"), "{err}");
}

fn postgres_url() -> String {
    std::env::var("MEMPLAN_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

#[tokio::test]
async fn postgres_store_passes_the_suite() {
    let url = postgres_url();
    let schema = format!("memplan_test_{}", std::process::id());
    let mut admin = PgConnection::connect(&url).await.unwrap_or_else(|e| {
        panic!("PostgreSQL at {url} is needed for this test (set MEMPLAN_TEST_POSTGRES): {e}")
    });
    sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .execute(&mut admin)
        .await
        .unwrap();
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&mut admin)
        .await
        .unwrap();
    let opts = PgConnectOptions::from_str(&url)
        .unwrap()
        .options([("search_path", schema.as_str())]);
    let result = async {
        let s = server::store::PgStore::connect_with(opts.clone())
            .await
            .expect("migrates");
        assert_eq!(s.backend(), "postgres");
        suite(&s).await;
        // Migrations are idempotent: a second boot finds nothing to do.
        server::store::PgStore::connect_with(opts)
            .await
            .expect("boots again");
    };
    // Drop the schema even when the suite fails.
    let outcome = tokio::spawn(result).await;
    let r = sqlx::query(&format!("UPDATE {schema}.plans SET title = 'x'"))
        .execute(&mut admin)
        .await;
    let immutable = r.map_err(|e| e.to_string());
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(&mut admin)
        .await
        .unwrap();
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
    assert!(immutable.unwrap_err().contains("immutable"));
}
