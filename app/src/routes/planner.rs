//! The planner page: the plan lives in the URL; the estimate is a memo of the plan.

use crate::components::breakdown::Breakdown;
use crate::components::ladder::Ladder;
use crate::components::plan_form::PlanForm;
use crate::components::verdict::Verdict;
use cost_model::query;
use cost_model::Plan;
use leptos::prelude::*;
use leptos_router::hooks::use_location;

#[component]
pub fn PlannerPage() -> impl IntoView {
    let location = use_location();
    // Server and browser read the same URL, so both render the same plan.
    let (initial, url_error) = match query::decode_str(&location.search.get_untracked()) {
        Ok(p) => (p, None),
        Err(e) => (Plan::default(), Some(e.to_string())),
    };
    let plan = RwSignal::new(initial);
    let estimate = Memo::new(move |_| plan.with(cost_model::estimate));

    // Browser only: keep the URL equal to the plan (history replaced, not pushed).
    Effect::new(move |_| {
        let q = plan.with(query::encode);
        replace_url_query(&q);
    });

    view! {
        <header class="top">
            <h1>"memplan"</h1>
            <p class="tagline">"What each GPU will hold while training — before you launch."</p>
        </header>
        <main class="planner">
            {url_error.map(|e| view! { <p class="error" data-testid="url-error">{e}</p> })}
            <PlanForm plan />
            <div class="results">
                <Verdict estimate />
                <Ladder plan />
                <Breakdown estimate />
            </div>
        </main>
    }
}

#[cfg(feature = "hydrate")]
fn replace_url_query(q: &str) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let Ok(history) = window.history() else {
        return;
    };
    let path = window.location().pathname().unwrap_or_else(|_| "/".into());
    let url = if q.is_empty() {
        path
    } else {
        format!("{path}?{q}")
    };
    let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url));
}

#[cfg(not(feature = "hydrate"))]
fn replace_url_query(_q: &str) {}
