//! `memplan serve`: SSR of the app plus its static assets.

use crate::cli::ServeArgs;
use anyhow::Context;
use app::api::MAX_BODY_BYTES;
use app::store::SharedStore;
use app::{shell, App};
use axum::extract::{DefaultBodyLimit, FromRef};
use axum::http::{header, HeaderValue};
use axum::Router;
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, LeptosRoutes};
use std::path::PathBuf;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;

/// What every handler can reach: built once in `run`, shared by reference.
#[derive(Clone)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub store: SharedStore,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(s: &AppState) -> Self {
        s.leptos_options.clone()
    }
}

impl FromRef<AppState> for SharedStore {
    fn from_ref(s: &AppState) -> Self {
        s.store.clone()
    }
}

/// CSP of responses that are not pages (JSON, assets): nothing may run.
const NON_PAGE_CSP: &str = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'";

/// Draws a nonce per request (the page's inline scripts carry it, see
/// `app::shell`) and sets the Content-Security-Policy of every response: the
/// page policy with that nonce for HTML, deny-all for everything else.
async fn content_security_policy(
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let nonce = app::new_csp_nonce();
    req.extensions_mut().insert(app::CspNonce(nonce.clone()));
    let mut res = next.run(req).await;
    let html = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/html"));
    let policy = if html {
        HeaderValue::from_str(&app::content_security_policy(&nonce))
            .unwrap_or(HeaderValue::from_static(NON_PAGE_CSP))
    } else {
        HeaderValue::from_static(NON_PAGE_CSP)
    };
    res.headers_mut()
        .insert(header::CONTENT_SECURITY_POLICY, policy);
    res
}

/// Where the built site lives: the flag/env, cargo-leptos' `LEPTOS_SITE_ROOT`,
/// `site/` beside the executable (a release install), else `target/site`.
fn site_root(args: &ServeArgs) -> PathBuf {
    if let Some(p) = &args.site_root {
        return p.clone();
    }
    if let Ok(p) = std::env::var("LEPTOS_SITE_ROOT") {
        return PathBuf::from(p);
    }
    if let Some(beside) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("site")))
        .filter(|d| d.join("pkg").is_dir())
    {
        return beside;
    }
    PathBuf::from("target/site")
}

/// Builds the application router (tests call this with `oneshot`, no socket).
pub fn router(options: LeptosOptions, store: SharedStore) -> Router {
    let state = AppState {
        leptos_options: options.clone(),
        store: store.clone(),
    };
    let routes = generate_route_list(App);
    let context = move || provide_context(store.clone());
    let pages = Router::new()
        .leptos_routes_with_context(&state, routes, context.clone(), {
            let options = options.clone();
            move || shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler_with_context::<
            AppState,
            _,
        >(context, shell))
        // Server functions (the save form) read their bodies themselves.
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES as usize));
    Router::new()
        .nest(
            "/api/v1",
            crate::api::routes().layer(DefaultBodyLimit::max(MAX_BODY_BYTES as usize)),
        )
        .route(
            "/p/{id}/traces",
            axum::routing::post(crate::api::page_upload)
                .layer(DefaultBodyLimit::max(app::api::MAX_TRACE_BYTES as usize)),
        )
        .merge(pages)
        .layer(axum::middleware::from_fn(content_security_policy))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        ))
        .with_state(state)
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,tower_http=info".into()),
        )
        .init();
    let root = site_root(&args);
    let options = LeptosOptions::builder()
        .output_name(std::env::var("LEPTOS_OUTPUT_NAME").unwrap_or_else(|_| "memplan".into()))
        .site_root(root.to_string_lossy().to_string())
        .site_pkg_dir(std::env::var("LEPTOS_SITE_PKG_DIR").unwrap_or_else(|_| "pkg".into()))
        .site_addr(args.addr)
        .build();
    if !root.join("pkg").is_dir() {
        tracing::warn!(site_root = %root.display(), "no pkg/ under the site root: pages render but will not hydrate (build with `cargo leptos build --release --split`)");
    }
    let db = args
        .database
        .clone()
        .unwrap_or_else(|| crate::store::DEFAULT_DATABASE.to_string());
    let store = crate::store::connect(&db)
        .await
        .with_context(|| format!("plan store {}", crate::store::redact(&db)))?;
    tracing::info!(backend = store.backend(), database = %crate::store::redact(&db), "plan store ready");
    let app = router(options, store);
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    let local = listener.local_addr().unwrap_or(args.addr);
    tracing::info!("memplan listening on http://{local}");
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await
        .context("server error")?;
    tracing::info!("memplan stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutdown signal received, draining connections");
}
