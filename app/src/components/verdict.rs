//! Fits / does not fit, with the per-GPU peak and its breakdown.

use cost_model::estimate::{Component, Estimate};
use cost_model::{Plan, PlanError};
use leptos::prelude::*;

fn gib(b: cost_model::Bytes) -> String {
    format!("{:.2} GiB", b.gib())
}

#[component]
pub fn Verdict(plan: RwSignal<Plan>, estimate: Memo<Result<Estimate, PlanError>>) -> impl IntoView {
    let _ = plan;
    view! {
        <section class="verdict" aria-live="polite">
            {move || match estimate.get() {
                Err(e) => {
                    view! {
                        <p class="error" data-testid="plan-error">
                            {e.to_string()}
                        </p>
                    }
                        .into_any()
                }
                Ok(est) => {
                    let fits = est.fits;
                    view! {
                        <p class=if fits { "fits" } else { "oom" } data-testid="verdict">
                            {if fits { "Fits" } else { "Does not fit" }}
                        </p>
                        <p class="figure">
                            <span data-testid="device-used">{gib(est.peak.device_used)}</span>
                            " of "
                            <span data-testid="capacity">{gib(est.capacity)}</span>
                            " per GPU (nvidia-smi)"
                        </p>
                        <table class="breakdown" data-testid="breakdown">
                            <tbody>
                                {est
                                    .peak_breakdown
                                    .entries()
                                    .into_iter()
                                    .map(|(c, b): (Component, _)| {
                                        view! {
                                            <tr>
                                                <th>{c.id()}</th>
                                                <td>{gib(b)}</td>
                                            </tr>
                                        }
                                    })
                                    .collect_view()}
                            </tbody>
                        </table>
                    }
                        .into_any()
                }
            }}
        </section>
    }
}
