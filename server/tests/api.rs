//! The JSON API and the saved-plan pages, answered in-process (`oneshot`).

mod common;

use common::{get, post_json, send};
use cost_model::Plan;
use serde_json::json;

fn save_body(title: &str) -> String {
    json!({"title": title, "notes": "first try", "author": "ana", "plan": Plan::default()})
        .to_string()
}

#[tokio::test]
async fn save_then_read_back_by_id_and_page() {
    let (app, _d) = common::app().await;
    let r = post_json(&app, "/api/v1/plans", save_body("8B on 8 × H100")).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let created = r.json();
    let id = created["id"].as_str().unwrap().to_string();
    assert!(app::api::is_plan_id(&id), "{id}");
    assert_eq!(created["url"], format!("/p/{id}"));
    assert_eq!(r.header("location"), format!("/p/{id}"));

    let r = get(&app, &format!("/api/v1/plans/{id}")).await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["title"], "8B on 8 × H100");
    assert_eq!(v["author"], "ana");
    assert_eq!(v["plan"], serde_json::to_value(Plan::default()).unwrap());
    assert_eq!(v["saved_schema_version"], cost_model::plan::PLAN_VERSION);
    assert_eq!(
        v["report"]["estimate"]["peak"]["device_used"],
        serde_json::to_value(
            cost_model::estimate(&Plan::default())
                .unwrap()
                .peak
                .device_used
        )
        .unwrap()
    );

    let page = get(&app, &format!("/p/{id}")).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body
            .contains(r#"data-testid="saved-title">8B on 8 × H100<"#),
        "{}",
        page.body
    );
    assert!(page.body.contains("first try"));
    assert!(page.body.contains(&format!("fork={id}")), "fork link");
    assert!(page.body.contains(r#"data-testid="verdict""#));
    assert!(!page.body.contains("model-version-note"));

    let list = get(&app, "/api/v1/plans").await.json();
    assert_eq!(list["total"], 1);
    assert_eq!(list["plans"][0]["id"], id.as_str());
    assert_eq!(list["plans"][0]["fits"], true);
    let team = get(&app, "/plans").await;
    assert_eq!(team.status, 200);
    assert!(
        team.body.contains(&format!("href=\"/p/{id}\"")),
        "{}",
        team.body
    );
}

#[tokio::test]
async fn bad_requests_say_what_and_where() {
    let (app, _d) = common::app().await;
    // Not JSON: 400 with the line and column.
    let r = post_json(
        &app,
        "/api/v1/plans",
        "{\n  \"title\": \"x\",\n  plan: 1\n}",
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        (r.json()["line"].as_u64(), r.json()["column"].as_u64()),
        (Some(3), Some(3))
    );
    // Unknown field, missing field, wrong type, out of range: 422 naming the field.
    let mut plan = serde_json::to_value(Plan::default()).unwrap();
    for (body, field) in [
        (
            json!({"title": "t", "plan": Plan::default(), "owner": "x"}),
            "owner",
        ),
        (json!({"plan": Plan::default()}), "title"),
        (json!({"title": "", "plan": Plan::default()}), "title"),
        (
            json!({"title": "t", "plan": Plan::default(), "forked_from": "../../etc"}),
            "forked_from",
        ),
        (
            {
                plan["training"]["micro_batch"] = json!("big");
                json!({"title": "t", "plan": plan.clone()})
            },
            "plan.training.micro_batch",
        ),
        (
            {
                plan["training"]["micro_batch"] = json!(0);
                json!({"title": "t", "plan": plan.clone()})
            },
            "plan.training.micro_batch",
        ),
        (
            {
                plan["training"]["micro_batch"] = json!(1);
                plan["parallel"]["tp"] = json!(3);
                json!({"title": "t", "plan": plan.clone()})
            },
            "plan.model.heads",
        ),
        (
            {
                plan["parallel"]["tp"] = json!(1);
                plan["parallel"]["warp"] = json!(9);
                json!({"title": "t", "plan": plan.clone()})
            },
            "plan.parallel.warp",
        ),
        (
            json!({"title": "t", "plan": {"version": 99}}),
            "plan.version",
        ),
    ] {
        let r = post_json(&app, "/api/v1/plans", body.to_string()).await;
        assert_eq!(r.status, 422, "{field}: {}", r.body);
        assert_eq!(r.json()["field"], field, "{}", r.body);
        assert!(r.json()["error"].as_str().unwrap().len() > field.len());
    }
    // Oversized: 413 with a JSON message; nothing stored.
    let huge = json!({"title": "t", "notes": "x".repeat(300 * 1024), "plan": Plan::default()});
    let r = post_json(&app, "/api/v1/plans", huge.to_string()).await;
    assert_eq!(r.status, 413);
    assert!(r.json()["error"].as_str().unwrap().contains("256 KiB"));
    // Wrong content type.
    let r = send(
        &app,
        http::Request::post("/api/v1/plans")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(axum::body::Body::from("title=x"))
            .unwrap(),
    )
    .await;
    assert_eq!(
        (r.status, r.json()["field"].as_str()),
        (422, Some("Content-Type"))
    );
    // Nothing of the above was stored.
    assert_eq!(get(&app, "/api/v1/plans").await.json()["total"], 0);
    // Bad page numbers.
    let r = get(&app, "/api/v1/plans?page=zero").await;
    assert_eq!((r.status, r.json()["field"].as_str()), (422, Some("page")));
}

#[tokio::test]
async fn unknown_ids_are_404_pages_and_json() {
    let (app, _d) = common::app().await;
    let r = get(&app, "/api/v1/plans/AAAAAAAAAAAA").await;
    assert_eq!(r.status, 404);
    assert!(r.json()["error"].as_str().unwrap().contains("AAAAAAAAAAAA"));
    let r = get(&app, "/p/AAAAAAAAAAAA").await;
    assert_eq!(r.status, 404);
    assert!(
        r.body.contains(r#"data-testid="plan-not-found""#),
        "{}",
        r.body
    );
    let r = get(&app, "/p/%3Cscript%3E").await;
    assert_eq!(r.status, 404);
    assert!(!r.body.contains("<script>"));
}

#[tokio::test]
async fn titles_and_notes_are_inert() {
    let (app, _d) = common::app().await;
    let evil = "<script>alert('x')</script><img src=x onerror=alert(1)>";
    let body = json!({"title": evil, "notes": evil, "author": evil, "plan": Plan::default()});
    let r = post_json(&app, "/api/v1/plans", body.to_string()).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["id"].as_str().unwrap().to_string();
    for page in [
        format!("/p/{id}"),
        "/plans".to_string(),
        "/plans?query=%3Cscript".to_string(),
    ] {
        let html = get(&app, &page).await.body;
        assert!(!html.contains("<script>alert"), "{page}: raw script tag");
        assert!(!html.contains("<img src=x"), "{page}: raw img tag");
        assert!(
            html.contains("&lt;script&gt;alert"),
            "{page}: escaped text shown"
        );
    }
    // JSON keeps the text as it was given.
    assert_eq!(
        get(&app, &format!("/api/v1/plans/{id}")).await.json()["title"],
        evil
    );
}

#[tokio::test]
async fn pages_carry_a_strict_csp_with_the_scripts_nonce() {
    let (app, _d) = common::app().await;
    let r = get(&app, "/").await;
    let csp = r.header("content-security-policy");
    assert!(csp.contains("default-src 'self'"), "{csp}");
    assert!(
        csp.contains("'wasm-unsafe-eval'") && csp.contains("object-src 'none'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .and_then(|s| s.split('\'').next())
        .expect("nonce");
    assert!(nonce.len() >= 16);
    // Every inline script carries it; a second response has another.
    let scripts = r.body.matches("<script").count();
    assert!(scripts >= 1);
    assert_eq!(
        r.body.matches(&format!("nonce=\"{nonce}\"")).count(),
        scripts,
        "{}",
        r.body
    );
    let again = get(&app, "/").await.header("content-security-policy");
    assert_ne!(csp, again);
    // Every page response, every time (also after a redirect and on a 404 page).
    let id = post_json(&app, "/api/v1/plans", save_body("csp"))
        .await
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    for uri in [
        format!("/p/{id}"),
        "/plans".into(),
        "/p/AAAAAAAAAAAA".into(),
        "/?mb=2".into(),
    ] {
        for _ in 0..10 {
            let r = get(&app, &uri).await;
            let csp = r.header("content-security-policy");
            let nonce = csp
                .split("'nonce-")
                .nth(1)
                .and_then(|s| s.split('\'').next())
                .unwrap_or("");
            assert!(nonce.len() >= 16, "{uri}: {csp}");
            assert!(
                r.body.contains(&format!("nonce=\"{nonce}\"")),
                "{uri}: scripts carry the nonce"
            );
        }
    }
    // JSON answers forbid everything.
    let api = get(&app, "/api/v1/plans").await;
    assert!(api
        .header("content-security-policy")
        .starts_with("default-src 'none'"));
    assert_eq!(api.header("x-content-type-options"), "nosniff");
}

#[tokio::test]
async fn search_and_pages_of_the_team_page() {
    let (app, _d) = common::app().await;
    for (i, gpu) in ["a100-sxm4-80gb", "h100-sxm-80gb", "a100-sxm4-80gb"]
        .iter()
        .enumerate()
    {
        let p = Plan {
            gpu: cost_model::gpu::gpu(gpu).unwrap(),
            ..Plan::default()
        };
        let b = json!({"title": format!("run {i}"), "plan": p});
        assert_eq!(
            post_json(&app, "/api/v1/plans", b.to_string()).await.status,
            201
        );
    }
    let l = get(&app, "/api/v1/plans?query=A100").await.json();
    assert_eq!(l["total"], 2);
    assert_eq!(l["plans"][0]["title"], "run 2");
    let html = get(&app, "/plans?query=a100").await.body;
    assert_eq!(html.matches(r#"data-testid="plan-row""#).count(), 2);
    assert!(html.contains("run 0") && !html.contains("run 1<"));
}

#[tokio::test]
async fn estimate_endpoint_answers_like_the_cli() {
    let (app, _d) = common::app().await;
    let r = post_json(
        &app,
        "/api/v1/estimate",
        serde_json::to_string(&Plan::default()).unwrap(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let want = serde_json::to_value(cost_model::report::report(&Plan::default()).unwrap()).unwrap();
    assert_eq!(r.json(), want);
    let v1 = include_str!("../../cost-model/tests/fixtures/plan-v1.json");
    let r = post_json(&app, "/api/v1/estimate", v1).await;
    assert_eq!(r.status, 200, "a v1 plan is migrated: {}", r.body);
    let r = post_json(&app, "/api/v1/estimate", "{\"version\": 2,").await;
    assert_eq!(r.status, 400, "{}", r.body);
    let mut p = Plan::default();
    p.parallel.pp = 1000;
    let r = post_json(&app, "/api/v1/estimate", serde_json::to_string(&p).unwrap()).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.json()["field"], "parallel.pp");
}

#[tokio::test]
async fn layouts_endpoint_searches_the_plans_layouts() {
    let (app, _d) = common::app().await;
    let mut p = Plan {
        model: cost_model::presets::preset("llama-3.1-70b").unwrap().spec(),
        ..Default::default()
    };
    p.training.micro_batch = 4;
    p.training.grad_accum = 8;
    let body = serde_json::to_string(&p).unwrap();
    let r = post_json(&app, "/api/v1/layouts", body.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let want = serde_json::to_value(
        cost_model::layouts::search_layouts(&p, cost_model::layouts::LAYOUTS_SHOWN).unwrap(),
    )
    .unwrap();
    assert_eq!(r.json(), want);
    assert!(r.json()["best"][0]["query"]
        .as_str()
        .unwrap()
        .contains("shard=zero3"));
    let r = post_json(&app, "/api/v1/layouts?top=1", body.clone()).await;
    assert_eq!(r.json()["best"].as_array().unwrap().len(), 1);
    // A count out of range, a broken body and an invalid plan: 4xx by field.
    let r = post_json(&app, "/api/v1/layouts?top=0", body).await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.json()["field"], "top");
    let r = post_json(&app, "/api/v1/layouts", "{\"version\": 2,").await;
    assert_eq!(r.status, 400, "{}", r.body);
    let mut bad = Plan::default();
    bad.parallel.pp = 1000;
    let r = post_json(
        &app,
        "/api/v1/layouts",
        serde_json::to_string(&bad).unwrap(),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.json()["field"], "parallel.pp");
}

#[tokio::test]
async fn the_save_form_works_without_javascript() {
    let (app, _d) = common::app().await;
    // What a browser without JavaScript posts from the planner's form.
    let form = "title=From+the+form&notes=n&author=bo&q=mb%3D2%26gpus%3D4&forked_from=";
    let r = send(
        &app,
        http::Request::post("/_fn/save_plan")
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "text/html")
            .header("referer", "http://localhost/?mb=2&gpus=4")
            .body(axum::body::Body::from(form))
            .unwrap(),
    )
    .await;
    assert!(matches!(r.status, 302 | 303), "{} {}", r.status, r.body);
    let loc = r.header("location");
    let id = loc.strip_prefix("/p/").expect("redirects to the plan");
    let v = get(&app, &format!("/api/v1/plans/{id}")).await.json();
    assert_eq!(v["plan"]["training"]["micro_batch"], 2);
    assert_eq!(v["plan"]["parallel"]["num_gpus"], 4);
    assert_eq!(v["author"], "bo");
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../shared/fixtures/traces/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// POSTs a raw body (no content type).
async fn post_raw(
    app: &axum::Router,
    uri: impl AsRef<str>,
    body: impl Into<axum::body::Body>,
) -> common::Reply {
    send(
        app,
        http::Request::post(uri.as_ref()).body(body.into()).unwrap(),
    )
    .await
}

/// The boundary of the multipart bodies the page-form tests send.
const BOUNDARY: &str = "XyZ123";

/// POSTs `body` to a saved plan's page form as `multipart/form-data`
/// (parts separated by [`BOUNDARY`]).
async fn post_form(
    app: &axum::Router,
    id: &str,
    body: impl Into<axum::body::Body>,
) -> common::Reply {
    send(
        app,
        http::Request::post(format!("/p/{id}/traces"))
            .header(
                "content-type",
                format!("multipart/form-data; boundary={BOUNDARY}"),
            )
            .body(body.into())
            .unwrap(),
    )
    .await
}

async fn saved_plan(app: &axum::Router) -> String {
    let r = post_json(app, "/api/v1/plans", save_body("verified run")).await;
    r.json()["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn traces_attach_to_saved_plans_via_the_api() {
    let (app, _d) = common::app().await;
    let id = saved_plan(&app).await;
    let r = send(
        &app,
        http::Request::post(format!("/api/v1/plans/{id}/traces?filename=gpu.csv"))
            .header("content-type", "text/plain")
            .body(axum::body::Body::from(fixture("smi_csv_04.txt")))
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let v = r.json();
    assert_eq!(v["filename"], "gpu.csv");
    assert_eq!(v["report"]["format"], "nvidia-smi-csv");
    assert_eq!(v["report"]["gpus"][0]["peak_used_mib"], 25073.0);
    assert_eq!(v["report"]["verdict"]["counter"], "device_used");
    assert_eq!(v["report"]["verdict"]["skipped_gpus"], json!([1]));

    // An OOM message: the finding carries the fix.
    let r = post_raw(
        &app,
        format!("/api/v1/plans/{id}/traces"),
        fixture("oom_11.txt"),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(r.json()["report"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["kind"] == "oom"));

    let list = get(&app, &format!("/api/v1/plans/{id}/traces")).await;
    assert_eq!(list.status, 200);
    assert_eq!(list.json().as_array().unwrap().len(), 2);

    // Refusals: garbage (422 naming the trace and the known formats), unknown plan (404).
    let r = post_raw(&app, format!("/api/v1/plans/{id}/traces"), "hello\nworld\n").await;
    assert_eq!((r.status, r.json()["field"].as_str()), (422, Some("trace")));
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .contains("known formats"));
    let r = post_raw(
        &app,
        "/api/v1/plans/AAAAAAAAAAAA/traces",
        fixture("smi_csv_04.txt"),
    )
    .await;
    assert_eq!(r.status, 404);
    let r = post_raw(&app, format!("/api/v1/plans/{id}/traces?format=excel"), "x").await;
    assert_eq!(
        (r.status, r.json()["field"].as_str()),
        (422, Some("format"))
    );
    // Compressed before upload (`… | gzip`): read as the text it holds.
    let gz = {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(fixture("smi_csv_04.txt").as_bytes()).unwrap();
        e.finish().unwrap()
    };
    let r = post_raw(
        &app,
        format!("/api/v1/plans/{id}/traces?filename=gpu.csv.gz"),
        gz.clone(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["report"]["gpus"][0]["peak_used_mib"], 25073.0);
    // A cut-off gzip stream: 422 saying so, nothing stored.
    let r = post_raw(
        &app,
        format!("/api/v1/plans/{id}/traces"),
        gz[..gz.len() / 2].to_vec(),
    )
    .await;
    assert_eq!(
        (r.status, r.json()["field"].as_str()),
        (422, Some("trace")),
        "{}",
        r.body
    );
    let list = get(&app, &format!("/api/v1/plans/{id}/traces")).await;
    assert_eq!(list.json().as_array().unwrap().len(), 3);
    // Over 64 MiB: 413.
    let big = vec![b'x'; 65 * 1024 * 1024];
    let r = post_raw(&app, format!("/api/v1/plans/{id}/traces"), big).await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(list.json().as_array().unwrap().len(), 3);
}

/// A PyTorch memory snapshot (`torch.cuda.memory._dump_snapshot()`'s
/// pickle) as the bytes it is: the API's raw body, gzip-compressed, and the
/// page's form; its replayed peaks judged on the reserved counter.
#[tokio::test]
async fn a_memory_snapshot_uploads_as_the_binary_it_is() {
    let (app, _d) = common::app().await;
    let id = saved_plan(&app).await;
    let pickle = std::fs::read(format!(
        "{}/../cost-model/tests/fixtures/snapshots/train.pickle",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let expected = cost_model::trace::parse_reader(&pickle[..], &Default::default()).unwrap();
    let peak = expected.allocator.unwrap().peak_reserved_mib.unwrap();
    let gz = {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&pickle).unwrap();
        e.finish().unwrap()
    };
    for body in [pickle.clone(), gz] {
        let r = post_raw(
            &app,
            format!("/api/v1/plans/{id}/traces?filename=snapshot.pickle"),
            body,
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.body);
        let v = r.json();
        assert_eq!(v["report"]["format"], "pytorch-memory-snapshot");
        assert_eq!(v["report"]["allocator"]["peak_reserved_mib"], peak);
        assert_eq!(v["report"]["verdict"]["counter"], "reserved");
    }
    // The page's form, the file as a browser sends it.
    let boundary = BOUNDARY;
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"trace\"; filename=\"dump_snapshot.pickle\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(&pickle);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let r = post_form(&app, &id, body).await;
    assert_eq!(r.status, 303, "{}", r.body);
    let page = get(&app, &format!("/p/{id}")).await.body;
    assert!(page.contains("dump_snapshot.pickle") && page.contains("pytorch-memory-snapshot"));
    // Cut short: refused with the byte, nothing stored.
    let r = post_raw(
        &app,
        format!("/api/v1/plans/{id}/traces"),
        pickle[..pickle.len() / 3].to_vec(),
    )
    .await;
    assert_eq!((r.status, r.json()["field"].as_str()), (422, Some("trace")));
    assert!(
        r.json()["error"].as_str().unwrap().contains("byte"),
        "{}",
        r.body
    );
    let list = get(&app, &format!("/api/v1/plans/{id}/traces")).await;
    assert_eq!(list.json().as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn the_page_form_uploads_a_file_and_shows_the_verification() {
    let (app, _d) = common::app().await;
    let id = saved_plan(&app).await;
    let boundary = BOUNDARY;
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"trace\"; filename=\"smi.txt\"\r\n\
         Content-Type: text/plain\r\n\r\n{}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\n\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"format\"\r\n\r\nauto\r\n--{boundary}--\r\n",
        fixture("smi_table_03.txt")
    );
    let r = post_form(&app, &id, body).await;
    assert_eq!(r.status, 303, "{}", r.body);
    let loc = r.header("location");
    assert!(loc.starts_with(&format!("/p/{id}#trace-")), "{loc}");
    let page = get(&app, &format!("/p/{id}")).await.body;
    assert!(page.contains(r#"data-testid="verification""#), "{page}");
    assert!(page.contains("smi.txt") && page.contains("nvidia-smi-table"));
    assert!(
        page.contains(r#"data-kind="foreign-process""#),
        "findings shown"
    );
    assert!(page.contains(r#"data-testid="trace-chart""#));
    // A verdict per GPU: three busy RTX 3090s against an 8 × H100 plan.
    assert_eq!(
        page.matches(r#"data-testid="gpu-verdict""#).count(),
        3,
        "per-GPU verdicts"
    );

    // A paste that is not a trace: back to the page with the reason.
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nnot a log\r\n--{boundary}--\r\n"
    );
    let r = post_form(&app, &id, body).await;
    assert_eq!(r.status, 303);
    let loc = r.header("location");
    assert!(loc.contains("verify_error="), "{loc}");
    let page = get(&app, loc.split('#').next().unwrap()).await.body;
    assert!(page.contains(r#"data-testid="verify-error""#) && page.contains("known formats"));
}
