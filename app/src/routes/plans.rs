//! `/plans`: the team page — saved plans, newest first, searchable, paged.

use crate::api::{format_utc, PlanList, PlanSummary};
use crate::components::site_header::SiteHeader;
use crate::i18n::use_lang;
use crate::server_fns::list_plans;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use leptos_router::{lazy_route, LazyRoute};

/// `/plans?query=…&page=…` (page 1 and an empty query are left out).
pub fn plans_href(query: &str, page: u32) -> String {
    let mut parts = Vec::new();
    if !query.is_empty() {
        parts.push(format!("query={}", cost_model::query::escape(query)));
    }
    if page > 1 {
        parts.push(format!("page={page}"));
    }
    if parts.is_empty() {
        "/plans".into()
    } else {
        format!("/plans?{}", parts.join("&"))
    }
}

/// The route, lazy: the team page's view is a WASM chunk of its own
/// (`cargo leptos build --split`), fetched when it is first shown.
pub struct PlansRoute;

#[lazy_route]
impl LazyRoute for PlansRoute {
    fn data() -> Self {
        PlansRoute
    }

    fn view(_this: Self) -> AnyView {
        view! { <PlansPage /> }.into_any()
    }
}

#[component]
pub fn PlansPage() -> impl IntoView {
    let q = use_query_map();
    let args = move || {
        let m = q.read();
        let page = m
            .get("page")
            .and_then(|p| p.trim().parse::<u32>().ok())
            .unwrap_or(1)
            .max(1);
        (m.get("query").unwrap_or_default(), page)
    };
    let list = Resource::new(args, |(query, page)| list_plans(query, page));
    let lang = use_lang();
    view! {
        <SiteHeader />
        <main class="plans">
            <h2>{move || lang.get().t("Saved plans")}</h2>
            <form method="get" action="/plans" role="search" class="plans-search">
                <input
                    type="search"
                    name="query"
                    maxlength="200"
                    value=move || args().0
                    placeholder=move || lang.get().t("Title, model or GPU").to_string()
                    data-testid="plans-query"
                />
                <button type="submit" class="button" data-testid="plans-search">
                    {move || lang.get().t("Search")}
                </button>
            </form>
            <Transition fallback=move || view! { <p>{move || lang.get().t("Loading…")}</p> }>
                {move || Suspend::new(async move {
                    match list.await {
                        Ok(l) => view! { <PlanTable list=l /> }.into_any(),
                        Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
                    }
                })}
            </Transition>
        </main>
    }
}

#[component]
fn PlanTable(list: PlanList) -> impl IntoView {
    let lang = use_lang();
    if list.plans.is_empty() {
        return view! {
            <p data-testid="plans-empty">
                {move || {
                    if list.query.is_empty() {
                        lang.get().t("No plans saved yet: save one from the planner.")
                    } else {
                        lang.get().t("No saved plan matches this search.")
                    }
                }}
            </p>
        }
        .into_any();
    }
    let pages = list.pages();
    let (page, query) = (list.page, list.query.clone());
    view! {
        <div class="table-wrap">
            <table class="plans-table" data-testid="plans-table">
                <thead>
                    <tr>
                        <th>{move || lang.get().t("Title")}</th>
                        <th>{move || lang.get().t("Model")}</th>
                        <th>{move || lang.get().t("GPUs")}</th>
                        <th>{move || lang.get().t("Verdict")}</th>
                        <th>{move || lang.get().t("Author")}</th>
                        <th>{move || lang.get().t("Saved")}</th>
                    </tr>
                </thead>
                <tbody>{list.plans.into_iter().map(|p| view! { <PlanRow p /> }).collect_view()}</tbody>
            </table>
        </div>
        <nav class="pager" data-testid="plans-pager">
            {(page > 1)
                .then(|| {
                    let href = plans_href(&query, page - 1);
                    view! { <a href=href rel="prev">{move || lang.get().t("← Newer")}</a> }
                })}
            <span>{move || format!("{} {page} / {pages} · {} {}", lang.get().t("Page"), list.total, lang.get().t("plans"))}</span>
            {((page as u64) < pages)
                .then(|| {
                    let href = plans_href(&query, page + 1);
                    view! { <a href=href rel="next" data-testid="plans-older">{move || lang.get().t("Older →")}</a> }
                })}
        </nav>
    }
        .into_any()
}

#[component]
fn PlanRow(p: PlanSummary) -> impl IntoView {
    let lang = use_lang();
    let verdict = match (p.fits, p.headroom, p.shortfall) {
        (Some(true), Some(h), _) => (true, format!("{h}")),
        (Some(false), _, Some(s)) => (false, format!("{s}")),
        _ => (false, String::new()),
    };
    let (fits, amount) = verdict;
    let known = p.fits.is_some();
    view! {
        <tr data-testid="plan-row">
            <td>
                <a href=format!("/p/{}", p.id)>{p.title.clone()}</a>
            </td>
            <td>{p.model.clone()}</td>
            <td>{format!("{} × {}", p.num_gpus, p.gpu)}</td>
            <td class=if fits { "fits" } else { "oom" }>
                {move || {
                    if !known {
                        lang.get().t("no longer estimates").to_string()
                    } else if fits {
                        format!("{} · {amount} {}", lang.get().t("fits"), lang.get().t("free"))
                    } else {
                        format!("{} · {amount} {}", lang.get().t("does not fit"), lang.get().t("over"))
                    }
                }}
            </td>
            <td>{p.author.clone()}</td>
            <td class="date">{format_utc(p.created_at_ms)}</td>
        </tr>
    }
}
