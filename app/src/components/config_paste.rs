//! Paste a Hugging Face `config.json`: the model's dimensions replace the
//! current ones, its dropout probability sets the block-dropout switch, and a
//! family transformers runs without SDPA sets eager attention (parsed by
//! `cost_model::hf_config`; errors name the key).

use crate::i18n::use_lang;
use cost_model::hf_config::Imported;
use cost_model::Plan;
use leptos::lazy;
use leptos::prelude::*;

/// The pasted config read: the model, its block dropout where it states one,
/// or the error naming the key. A function of its own WASM chunk (`#[lazy]`,
/// built by `cargo leptos build --split`): the importer's tables of model
/// families are fetched with the first paste, not with every page
/// (docs/BENCHMARKS.md, "WASM bundle").
#[lazy]
fn import_config(text: String) -> Result<Imported, String> {
    cost_model::hf_config::import_config_json(&text, "custom").map_err(|e| e.to_string())
}

#[component]
pub fn ConfigPaste(plan: RwSignal<Plan>) -> impl IntoView {
    let lang = use_lang();
    let message = RwSignal::new(None::<Result<String, String>>);
    // A result lands only if no later paste has started meanwhile.
    let generation = StoredValue::new(0u64);
    let on_input = move |ev| {
        let text = event_target_value(&ev);
        generation.update_value(|g| *g += 1);
        let this = generation.get_value();
        if text.trim().is_empty() {
            message.set(None);
            return;
        }
        leptos::task::spawn_local(async move {
            let read = import_config(text).await;
            if generation.try_get_value() != Some(this) {
                return;
            }
            match read {
                Ok(Imported {
                    model: spec,
                    dropout,
                    without_sdpa,
                }) => {
                    let lang = lang.get_untracked();
                    let b = |n: u64| format!("{:.3} B", n as f64 / 1e9);
                    let mut said = format!("{} {}", b(spec.params()), lang.t("parameters"));
                    if spec.vision_params > 0 {
                        said += &format!(
                            " ({} {})",
                            b(spec.vision_params),
                            lang.t("of them the vision encoder, held frozen")
                        );
                    }
                    let mut eager = false;
                    plan.update(|p| eager = p.set_imported_model(spec, dropout, without_sdpa));
                    if eager {
                        said += " · ";
                        said += lang.t("transformers has no SDPA path for it: eager attention");
                    }
                    message.set(Some(Ok(said)));
                }
                Err(e) => message.set(Some(Err(e))),
            }
        });
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
