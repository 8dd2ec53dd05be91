//! Bytes per component and phase for the worst rank, so a user can check the arithmetic.

use crate::components::verdict::gib;
use crate::i18n::use_lang;
use cost_model::estimate::{Component, Estimate};
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
            "Optimizer-step temporaries, autocast weight copies, the block in backward"
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
    view! {
        <section class="breakdown-section">
            <h2>{move || lang.get().t("Per-GPU breakdown")}</h2>
            {move || {
                let l = lang.get();
                estimate
                    .get()
                    .ok()
                    .map(|est| {
                        let stage = est.stages.iter().find(|s| s.stage == est.worst_stage).cloned();
                        stage.map(|st| {
                            let phases = st.phases.clone();
                            view! {
                                <div class="table-wrap">
                                    <table class="breakdown" data-testid="breakdown">
                                        <thead>
                                            <tr>
                                                <th scope="col">{l.t("Component")}</th>
                                                {phases
                                                    .iter()
                                                    .map(|p| {
                                                        let peak = p.phase == st.peak_phase;
                                                        view! { <th scope="col" class:peak=peak>{l.t(p.phase.id())}</th> }
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
                                                            <th scope="row" title=l.t(explain(c))>
                                                                <details>
                                                                    <summary>{l.t(c.id())}</summary>
                                                                    <span class="explain">{l.t(explain(c))}</span>
                                                                </details>
                                                            </th>
                                                            {phases
                                                                .iter()
                                                                .map(|p| {
                                                                    let peak = p.phase == st.peak_phase;
                                                                    view! { <td class:peak=peak>{gib(p.breakdown.get(c))}</td> }
                                                                })
                                                                .collect_view()}
                                                        </tr>
                                                    }
                                                })
                                                .collect_view()}
                                            <tr class="total">
                                                <th scope="row">"device_used"</th>
                                                {phases
                                                    .iter()
                                                    .map(|p| view! { <td>{gib(p.counters.device_used)}</td> })
                                                    .collect_view()}
                                            </tr>
                                        </tbody>
                                    </table>
                                </div>
                            }
                        })
                    })
            }}
        </section>
    }
}
