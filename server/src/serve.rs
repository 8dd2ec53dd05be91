//! `memplan serve`: SSR of the app plus its static assets.

use crate::cli::ServeArgs;
use anyhow::Context;
use app::{shell, App};
use axum::Router;
use leptos::config::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};
use std::path::PathBuf;

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
pub fn router(options: LeptosOptions) -> Router {
    let routes = generate_route_list(App);
    Router::new()
        .leptos_routes(&options, routes, {
            let options = options.clone();
            move || shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler(shell))
        .with_state(options)
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
        tracing::warn!(site_root = %root.display(), "no pkg/ under the site root: pages render but will not hydrate (build with `cargo leptos build --release`)");
    }
    let app = router(options);
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    tracing::info!("memplan listening on http://{}", args.addr);
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
