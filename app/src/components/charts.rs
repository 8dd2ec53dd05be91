//! The two charts. SVG strings come from `crate::charts` (plotters), the same
//! functions on the server and in the browser.

use crate::charts::{breakdown_svg, sweep_svg};
use crate::i18n::use_lang;
use cost_model::estimate::Estimate;
use cost_model::search::{log2_points, sweep, Axis};
use cost_model::validate::{MAX_MICRO_BATCH, MAX_SEQ_LEN};
use cost_model::{Plan, PlanError};
use leptos::prelude::*;

#[component]
pub fn Charts(
    plan: RwSignal<Plan>,
    estimate: Memo<Result<Estimate, PlanError>>,
    /// Largest micro-batch and sequence that fit.
    searches: Memo<(Option<u32>, Option<u32>)>,
) -> impl IntoView {
    let lang = use_lang();
    let bars = Memo::new(move |_| {
        let l = lang.get();
        estimate.with(|e| {
            e.as_ref()
                .map(|e| {
                    breakdown_svg(e, l.t("stage"), l.t("capacity"), |c| {
                        l.t(c.id()).to_string()
                    })
                })
                .unwrap_or_default()
        })
    });
    let by_batch = Memo::new(move |_| {
        let l = lang.get();
        plan.with(|p| {
            let best = searches.get().0;
            let around = best.unwrap_or(1).max(p.training.micro_batch);
            let pts = sweep(
                p,
                Axis::MicroBatch,
                &log2_points(around, MAX_MICRO_BATCH as u32),
            );
            sweep_svg(
                &pts,
                p.gpu.capacity(),
                best,
                p.training.micro_batch,
                l.t("micro-batch"),
            )
        })
    });
    let by_seq = Memo::new(move |_| {
        let l = lang.get();
        plan.with(|p| {
            let best = searches.get().1;
            let around = best.unwrap_or(1).max(p.training.seq_len);
            let pts: Vec<u32> = log2_points(around, MAX_SEQ_LEN as u32)
                .into_iter()
                .filter(|x| *x >= 128 && x % p.parallel.cp.max(1) == 0)
                .collect();
            let s = sweep(p, Axis::SeqLen, &pts);
            sweep_svg(
                &s,
                p.gpu.capacity(),
                best,
                p.training.seq_len,
                l.t("sequence length"),
            )
        })
    });
    view! {
        <section class="charts">
            <h2>{move || lang.get().t("Memory per GPU")}</h2>
            <div class="chart" data-testid="chart-breakdown" inner_html=move || bars.get()></div>
            <h2>{move || lang.get().t("Versus micro-batch")}</h2>
            <div class="chart" data-testid="chart-batch" inner_html=move || by_batch.get()></div>
            <h2>{move || lang.get().t("Versus sequence length")}</h2>
            <div class="chart" data-testid="chart-seq" inner_html=move || by_seq.get()></div>
        </section>
    }
}
