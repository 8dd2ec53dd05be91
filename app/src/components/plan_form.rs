//! The plan inputs, grouped by section. Works without JavaScript: the form
//! submits with GET and the server renders the same page for that URL.

use crate::components::controls::Field;
use crate::components::options::sections;
use cost_model::Plan;
use leptos::prelude::*;

#[component]
pub fn PlanForm(plan: RwSignal<Plan>) -> impl IntoView {
    let error = RwSignal::new(None::<(String, String)>);
    view! {
        <form class="plan-form" method="get" action="/" data-testid="plan-form">
            {sections()
                .into_iter()
                .map(|(title, fields)| {
                    view! {
                        <fieldset>
                            <legend>{title}</legend>
                            {fields
                                .into_iter()
                                .map(|(key, label, hint, kind)| {
                                    view! { <Field plan key label hint kind error /> }
                                })
                                .collect_view()}
                        </fieldset>
                    }
                })
                .collect_view()}
            <p class="global-batch" data-testid="global-batch">
                "Global batch: "
                {move || {
                    plan.with(|p| {
                        let dp = p.parallel.dp() as u64;
                        let g = p.training.micro_batch as u64 * p.training.grad_accum as u64 * dp;
                        format!("{g} sequences ({} tokens) per optimizer step", g * p.training.seq_len as u64)
                    })
                }}
            </p>
            // Without JavaScript the form submits; once hydrated, inputs apply live
            // and the stylesheet hides the button (body[data-hydrated]).
            <button type="submit" class="apply">"Apply"</button>
        </form>
    }
}
