//! The plan inputs. Every control has the `name` of its URL parameter, so the
//! form also works without JavaScript (GET submit, server renders the result).

use cost_model::{gpu, presets, Plan};
use leptos::prelude::*;

#[component]
pub fn PlanForm(plan: RwSignal<Plan>) -> impl IntoView {
    let model_id = move || {
        plan.with(|p| {
            presets::presets()
                .iter()
                .find(|pr| pr.spec() == p.model)
                .map(|pr| pr.id)
                .unwrap_or("custom")
        })
    };
    let set_num = move |ev, f: fn(&mut Plan, u32)| {
        if let Ok(v) = event_target_value(&ev).parse::<u32>() {
            plan.update(|p| f(p, v));
        }
    };
    view! {
        <form class="plan-form" method="get" action="/" data-testid="plan-form">
            <label>
                <span>"Model"</span>
                <select
                    name="model"
                    data-testid="model"
                    on:change=move |ev| {
                        if let Some(pr) = presets::preset(&event_target_value(&ev)) {
                            plan.update(|p| p.model = pr.spec());
                        }
                    }
                >
                    {presets::presets()
                        .iter()
                        .map(|pr| {
                            let id = pr.id;
                            view! {
                                <option value=id selected=move || model_id() == id>
                                    {pr.name}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
            </label>
            <label>
                <span>"GPU"</span>
                <select
                    name="gpu"
                    data-testid="gpu"
                    on:change=move |ev| {
                        if let Some(g) = gpu::gpu(&event_target_value(&ev)) {
                            plan.update(|p| p.gpu = g);
                        }
                    }
                >
                    {gpu::ids()
                        .map(|(id, name)| {
                            view! {
                                <option value=id selected=move || plan.with(|p| p.gpu.id == id)>
                                    {name}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
            </label>
            <label>
                <span>"GPUs"</span>
                <input
                    type="number"
                    name="gpus"
                    min="1"
                    data-testid="gpus"
                    value=move || plan.with(|p| p.parallel.num_gpus)
                    prop:value=move || plan.with(|p| p.parallel.num_gpus)
                    on:input=move |ev| set_num(ev, |p, v| p.parallel.num_gpus = v)
                />
            </label>
            <label>
                <span>"Micro-batch"</span>
                <input
                    type="range"
                    name="mb"
                    min="1"
                    max="64"
                    data-testid="micro-batch"
                    value=move || plan.with(|p| p.training.micro_batch)
                    prop:value=move || plan.with(|p| p.training.micro_batch)
                    on:input=move |ev| set_num(ev, |p, v| p.training.micro_batch = v)
                />
                <output data-testid="micro-batch-value">
                    {move || plan.with(|p| p.training.micro_batch)}
                </output>
            </label>
            <label>
                <span>"Sequence length"</span>
                <input
                    type="number"
                    name="seq"
                    min="1"
                    step="1"
                    data-testid="seq-len"
                    value=move || plan.with(|p| p.training.seq_len)
                    prop:value=move || plan.with(|p| p.training.seq_len)
                    on:input=move |ev| set_num(ev, |p, v| p.training.seq_len = v)
                />
            </label>
            <button type="submit" class="apply">"Apply"</button>
        </form>
    }
}
