//! memplan's user interface: Leptos components and routes, rendered on the
//! server (`ssr`) and hydrated in the browser (`hydrate`). Components read
//! signals and render what `cost-model` returns; no memory logic lives here.

#![recursion_limit = "256"] // the planner view's types nest deeply

pub mod components;
pub mod routes;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    StaticSegment,
};

/// The HTML document around the app (server only renders it).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
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
    view! {
        <Stylesheet id="leptos" href="/pkg/memplan.css" />
        <Title text="memplan — GPU memory planner" />
        <Router>
            <Routes fallback=|| view! { <routes::not_found::NotFound /> }>
                <Route path=StaticSegment("") view=routes::planner::PlannerPage />
            </Routes>
        </Router>
    }
}

/// Entry point of the WASM bundle.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
    // A marker end-to-end tests wait on: the page is live, not just rendered.
    if let Some(body) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.body())
    {
        let _ = body.set_attribute("data-hydrated", "true");
    }
}
