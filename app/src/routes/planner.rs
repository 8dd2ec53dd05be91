//! The planner page: the plan lives in the URL; the estimate is a memo of the plan.

use crate::components::breakdown::Breakdown;
use crate::components::charts::Charts;
use crate::components::ladder::Ladder;
use crate::components::plan_form::PlanForm;
use crate::components::save_form::SaveForm;
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
    // `fork=<id>`: opened from a saved plan; a save records where it came from.
    let fork = query::pairs(&search)
        .into_iter()
        .find(|(k, _)| k == "fork")
        .map(|(_, v)| v)
        .filter(|v| crate::api::is_plan_id(v));
    let estimate = Memo::new(move |_| plan.with(cost_model::estimate));
    let searches = Memo::new(move |_| {
        plan.with(|p| {
            (
                cost_model::search::max_micro_batch(p).ok().flatten(),
                cost_model::search::max_seq_len(p).ok().flatten(),
            )
        })
    });
    let lang = use_lang();
    let lang_in_url = RwSignal::new(Lang::from_query(&search).is_some());
    provide_context(LangInUrl(lang_in_url));

    // Browser only: keep the URL equal to the plan (history replaced, not
    // pushed), at most every URL_THROTTLE_MS while sliding. `pending` is
    // `None` when no write is waiting, else the URL the waiting write will
    // make (empty: nothing changed since the last write).
    let pending = StoredValue::new(None::<String>);
    let fork_for_url = fork.clone();
    Effect::new(move |_| {
        let q = plan.with(query::encode);
        let mut suffix = if lang_in_url.get() {
            format!("lang={}", lang.get().code())
        } else {
            String::new()
        };
        if let Some(f) = &fork_for_url {
            if !suffix.is_empty() {
                suffix.push('&');
            }
            suffix.push_str("fork=");
            suffix.push_str(f);
        }
        // The first change after a quiet spell is written at once (a typed
        // value or a select is then in the history entry before any link can
        // be followed, so going back returns to it); a slide's later ones
        // when the time is up, the latest only.
        let url = href(&q, &suffix);
        if pending.with_value(|p| p.is_none()) {
            replace_url(&url);
            pending.set_value(Some(String::new()));
            schedule_url_update(pending);
        } else {
            pending.set_value(Some(url));
        }
    });

    let copied = RwSignal::new(false);
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
            <nav class="lang" aria-label="Language / 语言">
                <button type="button" class="copy" data-testid="copy-link" on:click=move |_| copy_link(copied)>
                    {move || if copied.get() { lang.get().t("Link copied") } else { lang.get().t("Copy link") }}
                </button>
                " "
                <a href="/plans" data-testid="nav-plans">{move || lang.get().t("Saved plans")}</a>
                " · "
                {switch(Lang::En)}
                " · "
                {switch(Lang::Zh)}
            </nav>
        </header>
        <main class="planner">
            {url_error.map(|e| view! { <p class="error" data-testid="url-error">{e}</p> })}
            <div class="save-row">
                {fork
                    .clone()
                    .map(|f| {
                        view! {
                            <p class="note" data-testid="forked-from">
                                {move || lang.get().t("Forked from")}
                                " "
                                <a href=format!("/p/{f}")>{f.clone()}</a>
                            </p>
                        }
                    })}
                <SaveForm plan forked_from=fork.clone() />
            </div>
            <PlanForm plan estimate />
            <div class="results">
                <Verdict estimate />
                <Ladder plan searches />
                <Charts plan estimate searches />
                <Breakdown estimate />
            </div>
        </main>
    }
}

/// `history.replaceState` costs about a millisecond in Chromium: coalesce the
/// updates of a slide into one per this many milliseconds.
const URL_THROTTLE_MS: u64 = 120;

#[cfg(feature = "hydrate")]
fn schedule_url_update(pending: StoredValue<Option<String>>) {
    set_timeout(
        move || {
            let url = pending.try_update_value(|p| p.take()).flatten();
            if let Some(url) = url.filter(|u| !u.is_empty()) {
                replace_url(&url);
            }
        },
        std::time::Duration::from_millis(URL_THROTTLE_MS),
    );
}

#[cfg(not(feature = "hydrate"))]
fn schedule_url_update(pending: StoredValue<Option<String>>) {
    pending.set_value(None);
    let _ = URL_THROTTLE_MS;
}

#[cfg(not(feature = "hydrate"))]
fn replace_url(_url: &str) {}

#[cfg(feature = "hydrate")]
fn replace_url(url: &str) {
    let Some(window) = web_sys::window() else {
        return;
    };
    // The page may have been left within the throttle (a link to the layout
    // search, a saved plan): the URL is then another page's, not the plan's.
    if window.location().pathname().ok().as_deref() != Some("/") {
        return;
    }
    let Ok(history) = window.history() else {
        return;
    };
    let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(url));
}

/// Copies the page's URL (which is the plan) to the clipboard.
#[cfg(feature = "hydrate")]
fn copy_link(copied: RwSignal<bool>) {
    let Some(w) = web_sys::window() else { return };
    let Ok(href) = w.location().href() else {
        return;
    };
    let _ = w.navigator().clipboard().write_text(&href);
    copied.set(true);
    set_timeout(
        move || copied.set(false),
        std::time::Duration::from_millis(1500),
    );
}

#[cfg(not(feature = "hydrate"))]
fn copy_link(_copied: RwSignal<bool>) {}

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
