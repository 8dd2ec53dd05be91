//! The header of the saved-plan and team pages.

use crate::i18n::use_lang;
use leptos::prelude::*;

#[component]
pub fn SiteHeader() -> impl IntoView {
    let lang = use_lang();
    view! {
        <header class="top">
            <div>
                <h1>
                    <a href="/" class="home">"memplan"</a>
                </h1>
                <p class="tagline">
                    {move || lang.get().t("What each GPU will hold while training — before you launch.")}
                </p>
            </div>
            <nav class="lang">
                <a href="/" data-testid="nav-planner">{move || lang.get().t("Planner")}</a>
                " · "
                <a href="/plans" data-testid="nav-plans">{move || lang.get().t("Saved plans")}</a>
            </nav>
        </header>
    }
}
