//! Fits / does not fit on the worst GPU, with headroom, the peak's rank and
//! phase, the counters and the uncertainty band.

use cost_model::estimate::Estimate;
use cost_model::{Bytes, PlanError};
use leptos::prelude::*;

pub fn gib(b: Bytes) -> String {
    format!("{:.2} GiB", b.gib())
}

#[component]
pub fn Verdict(estimate: Memo<Result<Estimate, PlanError>>) -> impl IntoView {
    view! {
        <section class="verdict" aria-live="polite">
            {move || match estimate.get() {
                Err(e) => view! {
                    <p class="error" data-testid="plan-error" role="alert">{e.to_string()}</p>
                }
                .into_any(),
                Ok(est) => {
                    let fits = est.fits;
                    let cap = est.capacity.as_f64().max(1.0);
                    let used = est.peak.device_used;
                    let pct = 100.0 * (est.capacity.as_f64() - used.as_f64()) / cap;
                    let stage = if est.stages.len() > 1 {
                        format!("pipeline stage {} of {}", est.worst_stage + 1, est.stages.len())
                    } else {
                        "every GPU".to_string()
                    };
                    view! {
                        <p class=if fits { "fits" } else { "oom" } data-testid="verdict">
                            {if fits { "Fits" } else { "Does not fit" }}
                        </p>
                        <p class="figure">
                            <span data-testid="device-used">{gib(used)}</span>
                            " of "
                            <span data-testid="capacity">{gib(est.capacity)}</span>
                            " per GPU (nvidia-smi, "
                            {stage}
                            ", peak at "
                            <span data-testid="peak-phase">{est.peak_phase.id()}</span>
                            ")"
                        </p>
                        <p class="headroom" data-testid="headroom">
                            {if fits {
                                format!("Headroom {} ({pct:.1} %)", gib(est.headroom))
                            } else {
                                format!("Short by {} ({:.1} % over)", gib(est.shortfall), -pct)
                            }}
                        </p>
                        <p class="band" data-testid="band">
                            "Likely range "
                            {gib(est.band_low)}
                            " – "
                            {gib(est.band_high)}
                            " (from the calibration residuals) · PyTorch allocated "
                            {gib(est.peak.allocated)}
                            ", reserved "
                            {gib(est.peak.reserved)}
                        </p>
                    }
                    .into_any()
                }
            }}
        </section>
    }
}
