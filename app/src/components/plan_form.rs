//! The plan inputs, grouped by section. Works without JavaScript: the form
//! submits with GET and the server renders the same page for that URL.

use crate::components::config_paste::{ConfigPaste, ModelSearch};
use crate::components::controls::Field;
use crate::components::options::sections;
use crate::i18n::use_lang;
use cost_model::estimate::Estimate;
use cost_model::{Plan, PlanError};
use leptos::prelude::*;

#[component]
pub fn PlanForm(
    plan: RwSignal<Plan>,
    /// The page's estimate of the plan: what makes it invalid is marked at
    /// the controls it names.
    estimate: Memo<Result<Estimate, PlanError>>,
) -> impl IntoView {
    let error = RwSignal::new(None::<(String, String)>);
    let invalid = Memo::new(move |_| estimate.with(|r| r.as_ref().err().cloned()));
    let values = Memo::new(move |_| plan.with(cost_model::query::all_pairs));
    let lang = use_lang();
    let sections = sections();
    // The keys the sections show a control for (the rest travel hidden).
    let shown: Vec<&'static str> = sections
        .iter()
        .flat_map(|(_, fields)| fields.iter().map(|f| f.0))
        .collect();
    view! {
        <form class="plan-form" method="get" action="/" data-testid="plan-form">
            {sections
                .into_iter()
                .map(|(title, fields)| {
                    view! {
                        <fieldset>
                            <legend>{move || lang.get().t(title)}</legend>
                            {(title == "Model and hardware").then(|| view! { <ModelSearch plan /> })}
                            {fields
                                .into_iter()
                                .map(|(key, label, hint, kind)| {
                                    view! { <Field plan values key label hint kind error invalid /> }
                                })
                                .collect_view()}
                            {(title == "Model and hardware").then(|| view! { <ConfigPaste plan /> })}
                        </fieldset>
                    }
                })
                .collect_view()}
            <p class="global-batch" data-testid="global-batch">
                {move || {
                    let l = lang.get();
                    plan.with(|p| {
                        let g = p.global_batch();
                        format!(
                            "{}: {g} {} ({} {})",
                            l.t("Global batch"),
                            l.t("sequences"),
                            g * p.training.seq_len as u64,
                            l.t("tokens per optimizer step")
                        )
                    })
                }}
            </p>
            // Without JavaScript the form submits; once hydrated, inputs apply live
            // and the stylesheet hides the button (body[data-hydrated]).
            {move || {
                let explicit = use_context::<crate::i18n::LangInUrl>().map(|l| l.0.get()).unwrap_or(false);
                explicit.then(|| view! { <input type="hidden" name="lang" value=move || lang.get().code() /> })
            }}
            // Without JavaScript, the model the page showed: a changed model
            // select then replaces the dimension fields (cost_model::query::decode).
            <input
                type="hidden"
                name="model_prev"
                value=move || {
                    values.with(|v| v.iter().find(|(k, _)| *k == "model").map(|(_, x)| x.clone()).unwrap_or_default())
                }
            />
            // … the framework it showed: a changed framework select then
            // re-seeds the settings its profile decides, as hydrated.
            <input
                type="hidden"
                name="fw_prev"
                value=move || plan.with(|p| p.framework.id().to_string())
            />
            // … the objective and the torchtune release it showed: a changed
            // select then re-seeds a loss still at the old default.
            // … the method it showed: a changed method select then takes its
            // own base bits (QLoRA's 4), as hydrated.
            <input
                type="hidden"
                name="ft_prev"
                value=move || plan.with(|p| cost_model::query::value_of(p, "ft").unwrap_or_default())
            />
            <input
                type="hidden"
                name="obj_prev"
                value=move || plan.with(|p| cost_model::query::value_of(p, "obj").unwrap_or_default())
            />
            <input
                type="hidden"
                name="ttr_prev"
                value=move || plan.with(|p| cost_model::query::value_of(p, "ttr").unwrap_or_default())
            />
            // … and the adapter count it showed when that was the method's own,
            // which then follows a changed method or model.
            <input
                type="hidden"
                name="trainable_auto"
                value=move || plan.with(|p| cost_model::query::auto_trainable(p).map(|n| n.to_string()).unwrap_or_default())
            />
            // … the GPU it showed: a changed GPU select then brings its own figures.
            <input type="hidden" name="gpu_prev" value=move || plan.with(|p| p.gpu.id.clone()) />
            // … and every setting without a control of its own (a custom
            // model's name, biases and positions, a GPU's other figures), so
            // that the submitted form loses nothing the URL holds.
            // Keyed: a change of plan updates the values in place rather than
            // rebuilding the fields (the slider's DOM budget).
            <For
                each=move || {
                    values.with(|v| v.iter().map(|(k, _)| *k).filter(|k| !shown.contains(k)).collect::<Vec<_>>())
                }
                key=|k| *k
                let:k
            >
                <input
                    type="hidden"
                    name=k
                    value=move || {
                        values.with(|v| v.iter().find(|(x, _)| *x == k).map(|(_, x)| x.clone()).unwrap_or_default())
                    }
                />
            </For>
            <button type="submit" class="apply">{move || lang.get().t("Apply")}</button>
        </form>
    }
}
