//! A saved plan's settings as a read-only table: the headline settings and
//! every one that differs from the example plan, labelled as on the planner.

use crate::components::options::{sections, Kind};
use crate::i18n::use_lang;
use cost_model::{query, Plan};
use leptos::prelude::*;

/// Settings shown even at their default value.
const ALWAYS: [&str; 8] = ["model", "gpu", "gpus", "fw", "mb", "seq", "prec", "shard"];

/// (label, value label) rows for `plan`.
pub fn rows(plan: &Plan) -> Vec<(&'static str, String)> {
    let all = query::all_pairs(plan);
    let changed: Vec<&'static str> = query::encode_pairs(plan)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let mut out = Vec::new();
    for (_, fields) in sections() {
        for (key, label, _, kind) in fields {
            if !ALWAYS.contains(&key) && !changed.contains(&key) {
                continue;
            }
            let Some((_, v)) = all.iter().find(|(k, _)| *k == key) else {
                continue;
            };
            let shown = match &kind {
                Kind::Select(options) => options
                    .iter()
                    .find(|(id, _)| id == v)
                    .map(|(_, l)| l.clone())
                    .unwrap_or_else(|| v.clone()),
                Kind::Check => if v == "1" { "on" } else { "off" }.to_string(),
                _ => v.clone(),
            };
            out.push((label, shown));
        }
    }
    out
}

#[component]
pub fn PlanSummaryTable(plan: Plan) -> impl IntoView {
    let lang = use_lang();
    let rows = rows(&plan);
    view! {
        <section class="plan-summary" data-testid="plan-summary">
            <h2>{move || lang.get().t("Settings")}</h2>
            <dl>
                {rows
                    .into_iter()
                    .map(|(label, value)| {
                        view! {
                            <dt>{move || lang.get().t(label).to_string()}</dt>
                            <dd>{move || lang.get().t(&value).to_string()}</dd>
                        }
                    })
                    .collect_view()}
            </dl>
        </section>
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn headline_and_changed_settings_are_listed() {
        let mut p = cost_model::Plan::default();
        p.training.micro_batch = 4;
        p.parallel.tp = 2;
        let rows = super::rows(&p);
        let get = |l: &str| rows.iter().find(|(k, _)| *k == l).map(|(_, v)| v.clone());
        assert_eq!(get("Micro-batch").as_deref(), Some("4"), "{rows:?}");
        assert_eq!(get("Tensor parallel").as_deref(), Some("2"));
        assert!(get("Pipeline parallel").is_none());
    }

    /// Every setting a plan's URL carries has a control on the planner (and
    /// so a row here when it differs), but for a model's implementation
    /// details, which its config.json sets (the planner's import), and a
    /// custom GPU's name and speeds, which no memory term reads.
    #[test]
    fn every_setting_has_a_control() {
        const FROM_CONFIG: [&str; 18] = [
            "norms",
            "max_pos",
            "cglu",
            "dense_moe",
            "sinks",
            "bias",
            "qkv_bias",
            "fproj",
            "fgu",
            "gelu_new",
            "relu",
            "qknorm",
            "lbias",
            "smask",
            "softcap",
            "parallel",
            "norm32",
            "pynorm",
        ];
        const GPU_SPEEDS: [&str; 5] = ["gpu_name", "gpu_bw", "gpu_bf16", "gpu_fp16", "gpu_fp8"];
        let keys: Vec<&str> = crate::components::options::sections()
            .into_iter()
            .flat_map(|(_, fields)| fields.into_iter().map(|(k, ..)| k))
            .collect();
        let missing: Vec<&str> = cost_model::query::all_pairs(&cost_model::Plan::default())
            .into_iter()
            .map(|(k, _)| k)
            .filter(|k| !keys.contains(k) && !FROM_CONFIG.contains(k) && !GPU_SPEEDS.contains(k))
            .collect();
        assert!(
            missing.is_empty(),
            "settings without a control: {missing:?}"
        );
        let mut p = cost_model::Plan::default();
        p.training.checkpointing = cost_model::plan::Checkpointing::Full;
        p.training.checkpoint_every = 2;
        let rows = super::rows(&p);
        assert!(
            rows.contains(&("Checkpoint every k-th block", "2".to_string())),
            "{rows:?}"
        );
    }
}
