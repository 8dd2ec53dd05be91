//! Paste a Hugging Face `config.json`: the model's dimensions replace the
//! current ones, and its dropout probability sets the block-dropout switch
//! (parsed by `cost_model::hf_config`; errors name the key).

use crate::i18n::use_lang;
use cost_model::hf_config::{config_dropout, from_config_json};
use cost_model::Plan;
use leptos::prelude::*;

#[component]
pub fn ConfigPaste(plan: RwSignal<Plan>) -> impl IntoView {
    let lang = use_lang();
    let message = RwSignal::new(None::<Result<String, String>>);
    let on_input = move |ev| {
        let text = event_target_value(&ev);
        if text.trim().is_empty() {
            message.set(None);
            return;
        }
        match from_config_json(&text, "custom") {
            Ok(spec) => {
                let params = spec.params();
                plan.update(|p| p.set_model(spec, config_dropout(&text)));
                message.set(Some(Ok(format!("{:.3} B parameters", params as f64 / 1e9))));
            }
            Err(e) => message.set(Some(Err(e.to_string()))),
        }
    };
    view! {
        <details class="config-paste">
            <summary>{move || lang.get().t("Paste config.json")}</summary>
            <textarea
                rows=6
                spellcheck="false"
                aria-label=move || lang.get().t("Use a Hugging Face config.json")
                placeholder=r#"{"model_type": "llama", "hidden_size": 4096, …}"#
                data-testid="config-json"
                on:input=on_input
            ></textarea>
            {move || {
                message
                    .get()
                    .map(|m| match m {
                        Ok(ok) => view! { <p class="ok" data-testid="config-ok">{ok}</p> }.into_any(),
                        Err(e) => view! { <p class="error" role="alert" data-testid="config-error">{e}</p> }.into_any(),
                    })
            }}
        </details>
    }
}

/// Type to search the presets (by name or id); picking one applies it.
#[component]
pub fn ModelSearch(plan: RwSignal<Plan>) -> impl IntoView {
    let lang = use_lang();
    let on_input = move |ev| {
        let q = event_target_value(&ev);
        let q = q.trim();
        if let Some(p) = cost_model::presets::presets()
            .iter()
            .find(|p| p.id.eq_ignore_ascii_case(q) || p.name.eq_ignore_ascii_case(q))
        {
            plan.update(|pl| pl.set_model(p.spec(), None));
        }
    };
    view! {
        <div class="model-search">
            <input
                type="search"
                list="model-presets"
                autocomplete="off"
                placeholder=move || lang.get().t("Search models…")
                aria-label=move || lang.get().t("Search models…")
                data-testid="model-search"
                on:input=on_input
            />
            <datalist id="model-presets">
                {cost_model::presets::presets()
                    .iter()
                    .map(|p| view! { <option value=p.name>{p.id}</option> })
                    .collect_view()}
            </datalist>
        </div>
    }
}
