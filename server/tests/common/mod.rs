//! Helpers shared by the server's integration tests.
#![allow(dead_code)]

use app::store::SharedStore;
use axum::body::Body;
use axum::Router;
use http_body_util::BodyExt;
use leptos::config::LeptosOptions;
use tower::ServiceExt;

pub fn options() -> LeptosOptions {
    LeptosOptions::builder()
        .output_name("memplan")
        .site_root("target/site")
        .site_pkg_dir("pkg")
        .build()
}

/// A fresh SQLite store in its own temporary directory (kept alive by the guard).
pub async fn sqlite_store() -> (SharedStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("plans.db");
    let store = server::store::connect(&format!("sqlite:{}", path.display()))
        .await
        .expect("SQLite store opens");
    (store, dir)
}

/// Keeps a test's temporary directory and its turn alive.
pub struct Guard {
    _dir: tempfile::TempDir,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

/// Tests that render pages take turns: each `#[tokio::test]` has a runtime of
/// its own, and Leptos' server rendering of nested resources can hang when
/// several runtimes render in one process at once (seen as a rare stall of one
/// test). The server itself runs one runtime.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The whole app over a fresh SQLite store.
pub async fn app() -> (Router, Guard) {
    let turn = TURN.lock().await;
    let (store, dir) = sqlite_store().await;
    (
        server::serve::router(options(), store),
        Guard {
            _dir: dir,
            _turn: turn,
        },
    )
}

pub struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    }
}

pub async fn send(app: &Router, req: http::Request<Body>) -> Reply {
    let res = app.clone().oneshot(req).await.expect("router answers");
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let body = res.into_body().collect().await.expect("body").to_bytes();
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

pub async fn get(app: &Router, uri: &str) -> Reply {
    send(app, http::Request::get(uri).body(Body::empty()).unwrap()).await
}

pub async fn post_json(app: &Router, uri: &str, body: impl Into<Body>) -> Reply {
    send(
        app,
        http::Request::post(uri)
            .header("content-type", "application/json")
            .body(body.into())
            .unwrap(),
    )
    .await
}
