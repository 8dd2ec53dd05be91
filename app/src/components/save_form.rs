//! "Save plan": title, notes and author; the plan itself travels as its URL
//! query. A plain form POST to the server function, with JavaScript or
//! without: it redirects to `/p/{id}`, or back to the planner with the error
//! in the URL (`__path`, `__err`), which the router hands over as
//! [`ServerActionError`]. Not an `ActionForm`: dispatching the server function
//! from the browser would bring its form decoder and client into the
//! planner's WASM (28 KB gzip, docs/BENCHMARKS.md "WASM bundle") for a step
//! that leaves the page anyway.

use crate::api::{AUTHOR_MAX_CHARS, NOTES_MAX_CHARS, TITLE_MAX_CHARS};
use crate::i18n::use_lang;
use crate::server_fns::SavePlan;
use cost_model::{query, Plan};
use leptos::prelude::*;
use leptos::server::ServerActionError;
use leptos::server_fn::error::ServerFnUrlError;
use leptos::server_fn::ServerFn;

/// The error the last save returned, when the page was redirected back to
/// with one (`None` otherwise).
fn save_error() -> Option<String> {
    use_context::<ServerActionError>()
        .filter(|e| e.path() == <SavePlan as ServerFn>::PATH)
        .map(|e| ServerFnUrlError::<ServerFnError>::decode_err(e.err()).to_string())
}

#[component]
pub fn SaveForm(plan: RwSignal<Plan>, forked_from: Option<String>) -> impl IntoView {
    let lang = use_lang();
    let error = save_error();
    let open = error.is_some();
    let saving = RwSignal::new(false);
    let t = move |s: &'static str| move || lang.get().t(s).to_string();
    view! {
        <details class="save" data-testid="save-panel" open=open>
            <summary data-testid="save-open">{t("Save plan")}</summary>
            <form
                method="post"
                action={<SavePlan as ServerFn>::PATH}
                on:submit=move |_| saving.set(true)
            >
                <label>
                    {t("Title")}
                    <input
                        name="title"
                        required
                        maxlength=TITLE_MAX_CHARS.to_string()
                        data-testid="save-title"
                    />
                </label>
                <label>
                    {t("Notes (optional)")}
                    <textarea
                        name="notes"
                        rows="3"
                        maxlength=NOTES_MAX_CHARS.to_string()
                        data-testid="save-notes"
                    ></textarea>
                </label>
                <label>
                    {t("Your name (optional)")}
                    <input
                        name="author"
                        maxlength=AUTHOR_MAX_CHARS.to_string()
                        data-testid="save-author"
                    />
                </label>
                <input type="hidden" name="q" value=move || plan.with(query::encode) />
                <input type="hidden" name="forked_from" value=forked_from.unwrap_or_default() />
                <button type="submit" class="button" data-testid="save-submit">
                    {move || {
                        if saving.get() {
                            lang.get().t("Saving…").to_string()
                        } else {
                            lang.get().t("Save").to_string()
                        }
                    }}
                </button>
                <p class="hint">
                    {t("Saved plans are immutable and visible to everyone with the link or on the team page.")}
                </p>
                {error.map(|e| view! { <p class="error" role="alert" data-testid="save-error">{e}</p> })}
            </form>
        </details>
    }
}
