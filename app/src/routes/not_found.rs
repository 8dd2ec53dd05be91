use leptos::prelude::*;

/// 404 page; sets the real HTTP status during SSR.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
            resp.set_status(http::StatusCode::NOT_FOUND);
        }
    }
    let lang = crate::i18n::use_lang();
    view! {
        <main class="page">
            <h1>{move || lang.get().t("Page not found")}</h1>
            <p>
                <a href="/">{move || lang.get().t("Back to the planner")}</a>
            </p>
        </main>
    }
}
