//! "Save plan": title, notes and author; the plan itself travels as its URL
//! query. Works without JavaScript (a plain form POST that redirects to
//! `/p/{id}`); with it, the router follows the redirect in the page.

use crate::api::{AUTHOR_MAX_CHARS, NOTES_MAX_CHARS, TITLE_MAX_CHARS};
use crate::i18n::use_lang;
use crate::server_fns::SavePlan;
use cost_model::{query, Plan};
use leptos::form::ActionForm;
use leptos::prelude::*;

#[component]
pub fn SaveForm(plan: RwSignal<Plan>, forked_from: Option<String>) -> impl IntoView {
    let lang = use_lang();
    let action = ServerAction::<SavePlan>::new();
    let t = move |s: &'static str| move || lang.get().t(s).to_string();
    view! {
        <details class="save" data-testid="save-panel">
            <summary data-testid="save-open">{t("Save plan")}</summary>
            <ActionForm action>
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
                        if action.pending().get() {
                            lang.get().t("Saving…").to_string()
                        } else {
                            lang.get().t("Save").to_string()
                        }
                    }}
                </button>
                <p class="hint">
                    {t("Saved plans are immutable and visible to everyone with the link or on the team page.")}
                </p>
                {move || {
                    action
                        .value()
                        .get()
                        .and_then(|r| r.err())
                        .map(|e| {
                            view! {
                                <p class="error" data-testid="save-error">
                                    {e.to_string()}
                                </p>
                            }
                        })
                }}
            </ActionForm>
        </details>
    }
}
