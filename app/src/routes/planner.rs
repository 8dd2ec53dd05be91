//! The planner page: the plan lives in the URL; the estimate is a memo of the plan.

use crate::components::breakdown::Breakdown;
use crate::components::charts::Charts;
use crate::components::ladder::Ladder;
use crate::components::plan_form::PlanForm;
use crate::components::verdict::Verdict;
use crate::i18n::{href, use_lang, Lang, LangInUrl};
use cost_model::query;
use cost_model::Plan;
use leptos::prelude::*;
use leptos_router::hooks::use_location;

#[component]
pub fn PlannerPage() -> impl IntoView {
    let location = use_location();
    let search = location.search.get_untracked();
    // Server and browser read the same URL, so both render the same plan.
    let (initial, url_error) = match query::decode_str(&search) {
        Ok(p) => (p, None),
        Err(e) => (Plan::default(), Some(e.to_string())),
    };
    let plan = RwSignal::new(initial);
    let estimate = Memo::new(move |_| plan.with(cost_model::estimate));
    let lang = use_lang();
    let lang_in_url = RwSignal::new(Lang::from_query(&search).is_some());
    provide_context(LangInUrl(lang_in_url));

    // Browser only: keep the URL equal to the plan (history replaced, not pushed).
    Effect::new(move |_| {
        let q = plan.with(query::encode);
        let suffix = if lang_in_url.get() {
            format!("lang={}", lang.get().code())
        } else {
            String::new()
        };
        replace_url(&href(&q, &suffix));
    });

    let switch = move |to: Lang| {
        view! {
            <a
                href=move || href(&plan.with(query::encode), &format!("lang={}", to.code()))
                data-testid=format!("lang-{}", to.code())
                aria-current=move || (lang.get() == to).then_some("true")
                on:click=move |ev| {
                    ev.prevent_default();
                    lang_in_url.set(true);
                    lang.set(to);
                    set_document_lang(to);
                }
            >
                {match to {
                    Lang::En => "English",
                    Lang::Zh => "简体中文",
                }}
            </a>
        }
    };

    view! {
        <header class="top">
            <div>
                <h1>"memplan"</h1>
                <p class="tagline">
                    {move || lang.get().t("What each GPU will hold while training — before you launch.")}
                </p>
            </div>
            <nav class="lang" aria-label="Language / 语言">{switch(Lang::En)} " · " {switch(Lang::Zh)}</nav>
        </header>
        <main class="planner">
            {url_error.map(|e| view! { <p class="error" data-testid="url-error">{e}</p> })}
            <PlanForm plan />
            <div class="results">
                <Verdict estimate />
                <Ladder plan />
                <Charts plan estimate />
                <Breakdown estimate />
            </div>
        </main>
    }
}

#[cfg(feature = "hydrate")]
fn replace_url(url: &str) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let Ok(history) = window.history() else {
        return;
    };
    let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(url));
}

#[cfg(not(feature = "hydrate"))]
fn replace_url(_url: &str) {}

#[cfg(feature = "hydrate")]
fn set_document_lang(l: Lang) {
    if let Some(el) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
    {
        let _ = el.set_attribute("lang", l.html());
    }
}

#[cfg(not(feature = "hydrate"))]
fn set_document_lang(_l: Lang) {}
