//! Bytes per component and phase for the worst rank, so a user can check the
//! arithmetic. The table's shape is fixed; only the cells' text changes when
//! the plan does (no re-built DOM while sliding).

use crate::components::verdict::gib;
use crate::i18n::use_lang;
use cost_model::estimate::{Component, Estimate, Phase, StageEstimate};
use cost_model::PlanError;
use leptos::prelude::*;

fn explain(c: Component) -> &'static str {
    match c {
        Component::Weights => {
            "Parameters as stored on this GPU (sharded under ZeRO-3/FSDP, quantised under QLoRA)"
        }
        Component::Gradients => "One gradient per trainable parameter (sharded under ZeRO-2+)",
        Component::Optimizer => {
            "Optimizer states and the fp32 master copy (Adam: two states per trainable parameter)"
        }
        Component::Activations => {
            "Tensors saved in forward for backward, per block × layers × micro-batches in flight"
        }
        Component::Logits => "LM-head output and the cross-entropy working set",
        Component::CommBuffers => "DDP buckets, ZeRO buckets, FSDP gathered units",
        Component::Temporaries => {
            "Optimizer-step temporaries, autocast weight copies, the block in backward, cuBLAS workspaces"
        }
        Component::AllocatorReserve => {
            "Cached free blocks and fragmentation in PyTorch's caching allocator"
        }
        Component::Runtime => {
            "CUDA context, NCCL communicators and other processes, outside PyTorch"
        }
    }
}

#[component]
pub fn Breakdown(estimate: Memo<Result<Estimate, PlanError>>) -> impl IntoView {
    let lang = use_lang();
    let stage: Memo<Option<StageEstimate>> = Memo::new(move |_| {
        estimate.with(|e| {
            e.as_ref()
                .ok()
                .and_then(|e| e.stages.iter().find(|s| s.stage == e.worst_stage).cloned())
        })
    });
    let is_peak = move |ph: Phase| stage.with(|s| s.as_ref().is_some_and(|s| s.peak_phase == ph));
    let cell = move |ph: Phase, f: &dyn Fn(&cost_model::estimate::PhaseEstimate) -> String| {
        stage.with(|s| {
            s.as_ref()
                .and_then(|s| s.phases.iter().find(|p| p.phase == ph))
                .map(f)
                .unwrap_or_else(|| "—".into())
        })
    };
    view! {
        <section class="breakdown-section">
            <h2>{move || lang.get().t("Per-GPU breakdown")}</h2>
            <div class="table-wrap">
                <table class="breakdown" data-testid="breakdown">
                    <thead>
                        <tr>
                            <th scope="col">{move || lang.get().t("Component")}</th>
                            {Phase::ALL
                                .iter()
                                .map(|&ph| {
                                    view! {
                                        <th scope="col" class:peak=move || is_peak(ph)>
                                            {move || lang.get().t(ph.id())}
                                        </th>
                                    }
                                })
                                .collect_view()}
                        </tr>
                    </thead>
                    <tbody>
                        {Component::ALL
                            .iter()
                            .map(|&c| {
                                view! {
                                    <tr data-testid=format!("row-{}", c.id())>
                                        <th scope="row" title=move || lang.get().t(explain(c))>
                                            <details>
                                                <summary>{move || lang.get().t(c.id())}</summary>
                                                <span class="explain">{move || lang.get().t(explain(c))}</span>
                                            </details>
                                        </th>
                                        {Phase::ALL
                                            .iter()
                                            .map(|&ph| {
                                                view! {
                                                    <td class:peak=move || is_peak(ph)>
                                                        {move || cell(ph, &|p| gib(p.breakdown.get(c)))}
                                                    </td>
                                                }
                                            })
                                            .collect_view()}
                                    </tr>
                                }
                            })
                            .collect_view()}
                        <tr class="total">
                            <th scope="row">"device_used"</th>
                            {Phase::ALL
                                .iter()
                                .map(|&ph| {
                                    view! {
                                        <td class:peak=move || is_peak(ph)>
                                            {move || cell(ph, &|p| gib(p.counters.device_used))}
                                        </td>
                                    }
                                })
                                .collect_view()}
                        </tr>
                    </tbody>
                </table>
            </div>
        </section>
    }
}
