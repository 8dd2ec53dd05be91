//! `/p/{id}`: a saved plan exactly as saved, estimated by the current model,
//! with a link that forks it into the planner.

use crate::api::{format_utc, SavedPlan};
use crate::components::breakdown::Breakdown;
use crate::components::plan_summary::PlanSummaryTable;
use crate::components::site_header::SiteHeader;
use crate::components::verdict::Verdict;
use crate::components::verify::VerifyPanel;
use crate::i18n::use_lang;
use crate::server_fns::get_plan;
use cost_model::estimate::MODEL_VERSION;
use cost_model::plan::PLAN_VERSION;
use cost_model::query;
use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};
use leptos_router::{lazy_route, LazyRoute};

/// Sets the HTTP status of the server-rendered response.
pub(crate) fn set_status(code: u16) {
    #[cfg(feature = "ssr")]
    {
        if let (Some(resp), Ok(code)) = (
            use_context::<leptos_axum::ResponseOptions>(),
            http::StatusCode::from_u16(code),
        ) {
            resp.set_status(code);
        }
    }
    #[cfg(not(feature = "ssr"))]
    let _ = code;
}

/// The route, lazy: its view (the saved plan, its stored verifications and the
/// upload panel) is a WASM chunk of its own (`cargo leptos build --split`),
/// fetched when a saved plan is first shown, so the planner does not carry it
/// (docs/BENCHMARKS.md, "WASM bundle").
pub struct SavedPlanRoute;

#[lazy_route]
impl LazyRoute for SavedPlanRoute {
    fn data() -> Self {
        SavedPlanRoute
    }

    fn view(_this: Self) -> AnyView {
        view! { <SavedPlanPage /> }.into_any()
    }
}

#[component]
pub fn SavedPlanPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let saved = Resource::new(id, get_plan);
    let lang = use_lang();
    view! {
        <SiteHeader />
        <Suspense fallback=move || view! { <p class="page">{move || lang.get().t("Loading…")}</p> }>
            {move || Suspend::new(async move {
                match saved.await {
                    Ok(Some(page)) => {
                        view! { <SavedPlanView saved=page.saved traces=page.traces /> }.into_any()
                    }
                    Ok(None) => {
                        set_status(404);
                        view! {
                            <main class="page" data-testid="plan-not-found">
                                <h1>{move || lang.get().t("No saved plan has this link")}</h1>
                                <p>
                                    {move || lang.get().t("Check the link, or find the plan on the team page.")}
                                </p>
                                <p>
                                    <a href="/plans">{move || lang.get().t("Saved plans")}</a>
                                </p>
                            </main>
                        }
                            .into_any()
                    }
                    Err(e) => {
                        set_status(500);
                        view! {
                            <main class="page">
                                <p class="error">{e.to_string()}</p>
                            </main>
                        }
                            .into_any()
                    }
                }
            })}
        </Suspense>
    }
}

#[component]
fn SavedPlanView(saved: SavedPlan, traces: Vec<crate::api::TraceView>) -> impl IntoView {
    let lang = use_lang();
    let plan = saved.plan.clone();
    let fork_href = format!("/?{}&fork={}", query::encode(&plan), saved.id);
    let estimate = Memo::new({
        let plan = plan.clone();
        move |_| cost_model::estimate(&plan)
    });
    let model_changed = saved.saved_model_version != MODEL_VERSION;
    let migrated = saved.saved_schema_version != PLAN_VERSION;
    let (saved_model, saved_schema) = (saved.saved_model_version, saved.saved_schema_version);
    let author = saved.author.clone();
    let forked = saved.forked_from.clone();
    let notes = saved.notes.clone();
    let verify_error = use_query_map().get_untracked().get("verify_error");
    let verify_plan = plan.clone();
    let plan_id = saved.id.clone();
    view! {
        <main class="saved">
            <section class="saved-head">
                <h2 data-testid="saved-title">{saved.title.clone()}</h2>
                <p class="meta">
                    {(!author.is_empty())
                        .then(|| {
                            view! {
                                <span data-testid="saved-author">{author.clone()}</span>
                                " · "
                            }
                        })}
                    <span>{move || lang.get().t("saved")} " " {format_utc(saved.created_at_ms)}</span>
                    {forked
                        .map(|f| {
                            view! {
                                " · "
                                <span data-testid="saved-forked-from">
                                    {move || lang.get().t("forked from")}
                                    " "
                                    <a href=format!("/p/{f}")>{f.clone()}</a>
                                </span>
                            }
                        })}
                </p>
                {(!notes.is_empty())
                    .then(|| view! { <p class="notes" data-testid="saved-notes">{notes.clone()}</p> })}
                {model_changed
                    .then(|| {
                        view! {
                            <p class="note" data-testid="model-version-note">
                                {move || {
                                    format!(
                                        "{} {saved_model}; {} {MODEL_VERSION}.",
                                        lang.get().t("Saved when the memory model was version"),
                                        lang.get().t("the figures below are from the current version"),
                                    )
                                }}
                            </p>
                        }
                    })}
                {migrated
                    .then(|| {
                        view! {
                            <p class="note" data-testid="schema-note">
                                {move || {
                                    format!(
                                        "{} {saved_schema} → {PLAN_VERSION}.",
                                        lang.get().t("Plan format migrated from version"),
                                    )
                                }}
                            </p>
                        }
                    })}
                <p>
                    <a class="button fork" href=fork_href data-testid="fork-link">
                        {move || lang.get().t("Fork into the planner")}
                    </a>
                </p>
            </section>
            <div class="saved-body">
                <PlanSummaryTable plan />
                <div class="results">
                    <Verdict estimate />
                    <Breakdown estimate />
                </div>
            </div>
            <VerifyPanel plan_id plan=verify_plan error=verify_error traces />
        </main>
    }
}
