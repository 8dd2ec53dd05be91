//! `/layouts?{plan}`: the layout search for the plan in the URL — every
//! parallel layout its framework runs on its GPUs, the fastest that fit
//! (`cost_model::layouts`). Computed where the page renders: on the server
//! for the first paint (and without JavaScript), in the browser's WASM when
//! the planner links here; the same URL gives the same table either way.

use crate::components::site_header::SiteHeader;
use crate::components::verdict::gib;
use crate::i18n::{href, use_lang, Lang};
use cost_model::layouts::{describe_in, search_layouts, LayoutSearch, LAYOUTS_SHOWN};
use cost_model::{query, Plan};
use leptos::prelude::*;
use leptos_router::hooks::use_location;
use leptos_router::{lazy_route, LazyRoute};

/// The route, lazy: the search and its table are a WASM chunk of their own
/// (`cargo leptos build --split`), fetched when the page is first shown.
pub struct LayoutsRoute;

#[lazy_route]
impl LazyRoute for LayoutsRoute {
    fn data() -> Self {
        LayoutsRoute
    }

    fn view(_this: Self) -> AnyView {
        view! { <LayoutsPage /> }.into_any()
    }
}

#[component]
pub fn LayoutsPage() -> impl IntoView {
    let search = use_location().search.get_untracked();
    let lang = use_lang();
    // Links back to the planner keep a language the URL chose.
    let suffix = Lang::from_query(&search)
        .map(|l| format!("lang={}", l.code()))
        .unwrap_or_default();
    let found = query::decode_str(&search)
        .map_err(|e| e.to_string())
        .and_then(|p| {
            search_layouts(&p, LAYOUTS_SHOWN)
                .map(|r| (p, r))
                .map_err(|e| e.to_string())
        });
    let back = match &found {
        Ok((p, _)) => href(&query::encode(p), &suffix),
        Err(_) => href("", &suffix),
    };
    view! {
        <SiteHeader />
        <main class="layouts">
            <h2>{move || lang.get().t("Parallel layouts that fit")}</h2>
            <p>
                <a href=back data-testid="layouts-back">
                    {move || lang.get().t("← Back to the plan")}
                </a>
            </p>
            {match found {
                Err(e) => view! { <p class="error" data-testid="layouts-error">{e}</p> }.into_any(),
                Ok((plan, r)) => view! { <LayoutTable plan found=r suffix /> }.into_any(),
            }}
        </main>
    }
}

#[component]
fn LayoutTable(plan: Plan, found: LayoutSearch, suffix: String) -> impl IntoView {
    let lang = use_lang();
    let l = lang.get_untracked();
    // The table keeps only the layouts nothing beats on both step time and
    // room: say how many of those that fit it leaves out.
    let shown = found.best.len() as u64;
    let hidden = if shown > 0 && shown < found.fitting {
        format!(
            " ({shown} {})",
            l.t("shown: the others are no faster and leave less room")
        )
    } else {
        String::new()
    };
    let summary = format!(
        "{} · {} × {} · {} · {} {} × {} {} — {} {}, {} {}{hidden}, {} {}.",
        plan.model.name,
        plan.parallel.num_gpus,
        plan.gpu.name,
        plan.framework.label(),
        l.t("global batch"),
        plan.global_batch(),
        plan.training.seq_len,
        l.t("tokens"),
        found.considered,
        l.t("layouts considered"),
        found.fitting,
        l.t("fit"),
        found.estimated,
        l.t("estimates"),
    );
    let rows = found
        .best
        .into_iter()
        .enumerate()
        .map(|(i, x)| {
            let link = href(&x.query, &suffix);
            let t = &x.plan.training;
            view! {
                <tr class:current=x.is_plan>
                    <td class="speed">{format!("{:+} %", x.speed_cost_pct)}</td>
                    <td>
                        <a href=link data-testid=format!("layout-{i}")>
                            {describe_in(&x.plan, |label| l.t(label))}
                        </a>
                        {x
                            .is_plan
                            .then(|| {
                                view! {
                                    " "
                                    <span class="tag" data-testid="layout-current">
                                        {l.t("your plan")}
                                    </span>
                                }
                            })}
                    </td>
                    <td class="num">{format!("{} × {}", t.micro_batch, t.grad_accum)}</td>
                    <td class="num">{gib(x.device_used)}</td>
                    <td class="num">{gib(x.headroom)}</td>
                </tr>
            }
        })
        .collect_view();
    let none = l.t(
        "None fits: no sharding, tensor or pipeline split, recomputation or offload this framework runs brings the peak under the card at this global batch and sequence. Try more GPUs, a larger card, LoRA or QLoRA, or a shorter sequence.",
    );
    view! {
        <p data-testid="layouts-summary">{summary}</p>
        <p class="note">
            {l.t("Fastest first; each layout below is slower than the ones above it and leaves more memory free. Step time is the change against your plan's, from the fix ladder's costs (recomputation, ZeRO-3, TP/CP, offload) and the pipeline bubble; a layout fits when its peak fits at the high edge of the model's uncertainty band.")}
        </p>
        {if found.fitting == 0 {
            view! { <p class="error" data-testid="layouts-none">{none}</p> }.into_any()
        } else {
            view! {
                <div class="table-wrap">
                <table class="layouts-table" data-testid="layouts-table">
                    <thead>
                        <tr>
                            <th>{l.t("Step time")}</th>
                            <th>{l.t("Layout")}</th>
                            <th>{l.t("Micro-batch × accumulation")}</th>
                            <th>{l.t("Peak per GPU")}</th>
                            <th>{l.t("Headroom")}</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
                </div>
            }
                .into_any()
        }}
    }
}
