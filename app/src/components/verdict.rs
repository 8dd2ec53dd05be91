//! Fits / does not fit on the worst GPU, with headroom, the peak's rank and
//! phase, the counters and the uncertainty band.

use crate::i18n::use_lang;
use cost_model::estimate::Estimate;
use cost_model::{Bytes, PlanError};
use leptos::prelude::*;

pub fn gib(b: Bytes) -> String {
    format!("{:.2} GiB", b.gib())
}

#[component]
pub fn Verdict(estimate: Memo<Result<Estimate, PlanError>>) -> impl IntoView {
    let lang = use_lang();
    // Which counter the headline figure shows (fits is always judged on device_used).
    let counter = RwSignal::new("device_used".to_string());
    view! {
        <section class="verdict" aria-live="polite">
            <label class="counter">
                {move || lang.get().t("Counter")}
                " "
                <select data-testid="counter" on:change=move |ev| counter.set(event_target_value(&ev))>
                    <option value="device_used">"device_used (nvidia-smi)"</option>
                    <option value="reserved">"reserved (max_memory_reserved)"</option>
                    <option value="allocated">"allocated (max_memory_allocated)"</option>
                </select>
            </label>
            {move || {
                let l = lang.get();
                match estimate.get() {
                    Err(e) => view! {
                        <p class="error" data-testid="plan-error" role="alert">{l.plan_error(&e)}</p>
                    }
                    .into_any(),
                    Ok(est) => {
                        let fits = est.fits;
                        let cap = est.capacity.as_f64().max(1.0);
                        let used = est.peak.device_used;
                        let shown = match counter.get().as_str() {
                            "reserved" => est.peak.reserved,
                            "allocated" => est.peak.allocated,
                            _ => used,
                        };
                        let pct = 100.0 * (est.capacity.as_f64() - used.as_f64()) / cap;
                        let stage = if est.stages.len() > 1 {
                            format!("{} {} / {}", l.t("pipeline stage"), est.worst_stage + 1, est.stages.len())
                        } else if est.replica_peak.is_some() {
                            l.t("GPU 0 (nn.DataParallel's output device)").to_string()
                        } else {
                            l.t("every GPU").to_string()
                        };
                        view! {
                            <p class=if fits { "fits" } else { "oom" } data-testid="verdict">
                                {if fits { l.t("Fits") } else { l.t("Does not fit") }}
                            </p>
                            <p class="figure">
                                <span data-testid="device-used">{gib(shown)}</span>
                                {format!(" {} ", l.t("of"))}
                                <span data-testid="capacity">{gib(est.capacity)}</span>
                                {format!(" {} ({}), {}, {} ", l.t("per GPU"), counter.get(), stage, l.t("peak at"))}
                                <span data-testid="peak-phase">{l.t(est.peak_phase.id())}</span>
                                ")"
                            </p>
                            <p class="headroom" data-testid="headroom">
                                {if fits {
                                    format!("{} {} ({pct:.1} %)", l.t("Headroom"), gib(est.headroom))
                                } else {
                                    format!("{} {} ({:.1} % {})", l.t("Short by"), gib(est.shortfall), -pct, l.t("over"))
                                }}
                            </p>
                            <p class="band" data-testid="band">
                                {format!(
                                    "{} {} – {} {} · {} {}, {} {}",
                                    l.t("Likely range"),
                                    gib(est.band_low),
                                    gib(est.band_high),
                                    l.t("(from the calibration residuals)"),
                                    l.t("PyTorch allocated"),
                                    gib(est.peak.allocated),
                                    l.t("reserved"),
                                    gib(est.peak.reserved)
                                )}
                            </p>
                            {est
                                .replica_peak
                                .map(|r| {
                                    view! {
                                        <p class="band" data-testid="replica-peak">
                                            {format!(
                                                "{} {} device_used · {} {}",
                                                l.t("The other GPUs (nn.DataParallel's replicas):"),
                                                gib(r.device_used),
                                                l.t("reserved"),
                                                gib(r.reserved),
                                            )}
                                        </p>
                                    }
                                })}
                            {(est.host_offload.get() > 0 || est.nvme_offload.get() > 0)
                                .then(|| {
                                    view! {
                                        <p class="band" data-testid="offload-needs">
                                            {format!(
                                                "{} {} · {} {}",
                                                l.t("Offload needs, per GPU: host RAM"),
                                                gib(est.host_offload),
                                                l.t("NVMe"),
                                                gib(est.nvme_offload),
                                            )}
                                        </p>
                                    }
                                })}
                            {est
                                .framework_upcasts
                                .then(|| {
                                    view! {
                                        <p class="caveat" data-testid="caveat" role="note">
                                            {l.t(cost_model::plan::UPCAST_CAVEAT)}
                                        </p>
                                    }
                                })}
                        }
                        .into_any()
                    }
                }
            }}
        </section>
    }
}
