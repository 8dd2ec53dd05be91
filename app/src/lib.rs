//! memplan's user interface: Leptos components and routes, rendered on the
//! server (`ssr`) and hydrated in the browser (`hydrate`). Components read
//! signals and render what `cost-model` returns; no memory logic lives here.

#![recursion_limit = "256"] // the planner view's types nest deeply

pub mod api;
pub mod charts;
pub mod components;
pub mod i18n;
pub mod routes;
pub mod server_fns;
#[cfg(feature = "ssr")]
pub mod store;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    Lazy, ParamSegment, SsrMode, StaticSegment,
};

/// This request's CSP nonce (set by the server's middleware as a request extension).
#[derive(Clone, Debug)]
pub struct CspNonce(pub String);

/// A fresh CSP nonce: 144 random bits, URL-safe.
#[cfg(feature = "ssr")]
pub fn new_csp_nonce() -> String {
    let mut b = [0u8; 18];
    if getrandom::fill(&mut b).is_err() {
        // No OS randomness: a nonce that still differs per response.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        b[..16].copy_from_slice(&t.to_le_bytes());
    }
    let (x, y) = b.split_at(9);
    let mut one = [0u8; 9];
    let mut two = [0u8; 9];
    one.copy_from_slice(x);
    two.copy_from_slice(y);
    api::encode_id(one) + &api::encode_id(two)
}

/// The Content-Security-Policy of every page: scripts only from this origin or
/// inline with this response's nonce (the hydration bootstrap, serialized
/// resources), WebAssembly compilation allowed, no plugins, no framing, forms
/// only to this origin.
pub fn content_security_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
         base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    )
}

/// The page language on the server: `lang=` in the URL, else the request's
/// `Accept-Language`.
#[cfg(feature = "ssr")]
pub fn request_lang() -> i18n::Lang {
    let Some(parts) = use_context::<http::request::Parts>() else {
        return i18n::Lang::En;
    };
    if let Some(l) = parts.uri.query().and_then(i18n::Lang::from_query) {
        return l;
    }
    parts
        .headers
        .get(http::header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .map(i18n::Lang::from_accept_language)
        .unwrap_or(i18n::Lang::En)
}

/// The page language in the browser: `lang=` in the URL, else what the server
/// chose (the document's `lang` attribute), so hydration renders the same text.
#[cfg(not(feature = "ssr"))]
pub fn request_lang() -> i18n::Lang {
    #[cfg(feature = "hydrate")]
    {
        let doc = web_sys::window().and_then(|w| w.document());
        let from_url = web_sys::window()
            .and_then(|w| w.location().search().ok())
            .and_then(|s| i18n::Lang::from_query(&s));
        if let Some(l) = from_url {
            return l;
        }
        if let Some(l) = doc
            .and_then(|d| d.document_element())
            .and_then(|e| e.get_attribute("lang"))
            .and_then(|l| i18n::Lang::parse(&l))
        {
            return l;
        }
    }
    i18n::Lang::En
}

/// The HTML document around the app (server only renders it).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    let lang = request_lang();
    // The server's middleware drew this response's nonce and sends it in the
    // Content-Security-Policy header; the inline scripts carry the same value.
    #[cfg(feature = "ssr")]
    if let Some(n) =
        use_context::<http::request::Parts>().and_then(|p| p.extensions.get::<CspNonce>().cloned())
    {
        provide_context(leptos::nonce::Nonce::from_value(n.0));
    }
    view! {
        <!DOCTYPE html>
        <html lang=lang.html()>
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
                <link rel="icon" type="image/svg+xml" href="/favicon.svg" />
                <AutoReload options=options.clone() />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    provide_context(RwSignal::new(request_lang()));
    view! {
        <Stylesheet id="leptos" href="/pkg/memplan.css" />
        <Title text="memplan — GPU memory planner" />
        <Router>
            <Routes fallback=|| view! { <routes::not_found::NotFound /> }>
                <Route path=StaticSegment("") view=routes::planner::PlannerPage />
                <Route
                    path=(StaticSegment("p"), ParamSegment("id"))
                    view={Lazy::<routes::saved::SavedPlanRoute>::new()}
                    ssr=SsrMode::Async
                />
                <Route
                    path=StaticSegment("plans")
                    view={Lazy::<routes::plans::PlansRoute>::new()}
                    ssr=SsrMode::Async
                />
                <Route
                    path=StaticSegment("layouts")
                    view={Lazy::<routes::layouts::LayoutsRoute>::new()}
                    ssr=SsrMode::Async
                />
            </Routes>
        </Router>
    }
}

/// Entry point of the WASM bundle.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    let Some(body) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.body())
    else {
        return;
    };
    // `leptos::mount::hydrate_lazy`, keeping the body: the saved-plan and
    // team pages are lazy routes (WASM chunks of their own), so hydration
    // awaits the chunk of the page being shown before it walks the DOM.
    let _ = any_spawner::Executor::init_wasm_bindgen();
    leptos::task::spawn_local(async move {
        let owner = leptos::mount::hydrate_from_async(body.clone(), App).await;
        owner.forget();
        // A marker end-to-end tests wait on: the page is live, not just rendered.
        let _ = body.set_attribute("data-hydrated", "true");
    });
}

/// Microseconds per call of `work` over `n` calls, timed with the page's clock.
/// `work` returns a value folded into a checksum so it is not optimised away.
#[cfg(feature = "hydrate")]
fn time_us(n: u32, mut work: impl FnMut() -> u64) -> f64 {
    let Some(perf) = web_sys::window().and_then(|w| w.performance()) else {
        return f64::NAN;
    };
    let t0 = perf.now();
    let mut acc = 0u64;
    for _ in 0..n {
        acc = acc.wrapping_add(work());
    }
    let us = (perf.now() - t0) * 1000.0 / n.max(1) as f64;
    if acc == 1 {
        -us
    } else {
        us
    }
}

/// Microseconds per estimate of the example plan, timed in the browser over
/// `n` runs (`end2end/bench/slider.mjs` calls it; docs/BENCHMARKS.md).
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn bench_estimate(n: u32) -> f64 {
    let plan = cost_model::Plan::default();
    time_us(n, || {
        cost_model::estimate(&plan)
            .map(|e| e.peak.device_used.get())
            .unwrap_or(0)
    })
}

/// Microseconds per (largest micro-batch + longest sequence) search pair in the browser.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn bench_searches(n: u32) -> f64 {
    let plan = cost_model::Plan::default();
    time_us(n, || {
        let mb = cost_model::search::max_micro_batch(&plan)
            .ok()
            .flatten()
            .unwrap_or(0);
        let seq = cost_model::search::max_seq_len(&plan)
            .ok()
            .flatten()
            .unwrap_or(0);
        mb as u64 + seq as u64
    })
}
