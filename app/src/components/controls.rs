//! One labelled control bound to one plan setting. Its `name` is the URL key,
//! so the same form submits with GET when JavaScript is off.

use crate::components::options::Kind;
use crate::i18n::use_lang;
use cost_model::query;
use cost_model::{Plan, PlanError};
use leptos::prelude::*;

#[component]
pub fn Field(
    plan: RwSignal<Plan>,
    /// `query::all_pairs` of the plan.
    values: Memo<Vec<(&'static str, String)>>,
    key: &'static str,
    label: &'static str,
    hint: &'static str,
    kind: Kind,
    /// The last input that could not be applied, shown beside its control.
    error: RwSignal<Option<(String, String)>>,
    /// Why the plan is invalid, if it is: shown at each control it names
    /// (both of a pair that does not divide).
    invalid: Memo<Option<PlanError>>,
) -> impl IntoView {
    let lang = use_lang();
    let at_fault = move || {
        invalid.with(|e| {
            e.as_ref()
                .filter(|e| {
                    let by = match e {
                        PlanError::NotDivisible { by_field, .. } => query::key_of_field(by_field),
                        _ => None,
                    };
                    query::key_of_field(e.field()) == Some(key) || by == Some(key)
                })
                .map(|e| lang.get().plan_error(e))
        })
    };
    // Every control reads one shared list of the plan's settings (computed
    // once per change), not the plan itself.
    let value = Memo::new(move |_| {
        values.with(|v| {
            v.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, x)| x.clone())
                .unwrap_or_default()
        })
    });
    let set = move |v: String| match plan.with_untracked(|p| query::apply(p, key, &v)) {
        Ok(p) => {
            error.set(None);
            plan.set(p);
        }
        Err(e) => error.set(Some((key.to_string(), e.to_string()))),
    };
    let testid = key.replace('_', "-");
    let error_id = format!("error-{key}");
    let id = format!("f-{key}");
    let input = match kind {
        Kind::Select(options) => view! {
            <select id=id.clone() name=key data-testid=testid.clone() on:change=move |ev| set(event_target_value(&ev))>
                {options
                    .into_iter()
                    .map(|(v, l)| {
                        let v2 = v.clone();
                        view! {
                            <option value=v selected=move || value.get() == v2>
                                {move || lang.get().t(&l).to_string()}
                            </option>
                        }
                    })
                    .collect_view()}
            </select>
        }
        .into_any(),
        Kind::Number { min, max } => view! {
            <input
                id=id.clone()
                type="number"
                name=key
                min=min
                max=max
                inputmode="numeric"
                data-testid=testid.clone()
                value=move || value.get()
                prop:value=move || value.get()
                on:input=move |ev| set(event_target_value(&ev))
            />
        }
        .into_any(),
        Kind::Range { min, max } => view! {
            <input
                id=id.clone()
                type="range"
                name=key
                min=min
                max=max
                data-testid=testid.clone()
                value=move || value.get()
                prop:value=move || value.get()
                on:input=move |ev| set(event_target_value(&ev))
            />
            <output for=id.clone() data-testid=format!("{testid}-value")>{move || value.get()}</output>
        }
        .into_any(),
        Kind::LogRange { min_exp, max_exp } => {
            // The slider moves over powers of two and has no `name`: the number
            // box is what a GET submit sends.
            let exp = move || {
                value.get().parse::<f64>().ok().filter(|v| *v >= 1.0).map(|v| v.log2().round() as u32).unwrap_or(min_exp)
            };
            view! {
                <input
                    id=id.clone()
                    type="number"
                    name=key
                    min=1
                    inputmode="numeric"
                    data-testid=testid.clone()
                    value=move || value.get()
                    prop:value=move || value.get()
                    on:input=move |ev| set(event_target_value(&ev))
                />
                <input
                    type="range"
                    min=min_exp
                    max=max_exp
                    step=1
                    aria-label=move || format!("{} (log₂)", lang.get().t(label))
                    data-testid=format!("{testid}-log")
                    value=exp
                    prop:value=exp
                    on:input=move |ev| {
                        if let Ok(e) = event_target_value(&ev).parse::<u32>() {
                            set((1u64 << e.min(31)).to_string())
                        }
                    }
                />
            }
            .into_any()
        }
        Kind::Check => view! {
            <input type="hidden" name=key value="0" />
            <input
                id=id.clone()
                type="checkbox"
                name=key
                value="1"
                data-testid=testid.clone()
                checked=move || value.get() == "1"
                prop:checked=move || value.get() == "1"
                on:change=move |ev| set(if event_target_checked(&ev) { "1".into() } else { "0".into() })
            />
        }
        .into_any(),
    };
    view! {
        <div class="field">
            <label for=id title=move || lang.get().t(hint)>
                {move || lang.get().t(label)}
            </label>
            <div class="input">{input}</div>
            <p class="hint">{move || lang.get().t(hint)}</p>
            // An input that could not be applied, else what the plan's
            // validation says of this control.
            {move || {
                error
                    .get()
                    .filter(|(k, _)| k == key)
                    .map(|(_, msg)| msg)
                    .or_else(at_fault)
                    .map(|msg| view! { <p class="error" role="alert" data-testid=error_id.clone()>{msg}</p> })
            }}
        </div>
    }
}
