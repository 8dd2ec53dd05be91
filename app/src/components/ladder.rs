//! Largest micro-batch / sequence that fit, and the fix ladder when it does not.

use crate::components::verdict::gib;
use crate::i18n::{href, lang_suffix, page_href, use_lang};
use cost_model::search::fix_ladder;
use cost_model::Plan;
use leptos::prelude::*;

/// A rung's name in the page language (`tp-4` → "Tensor parallel 4",
/// `checkpointing-every-4` → "Activation checkpointing · applied to one block in 4").
fn rung_label(l: crate::i18n::Lang, id: &str) -> String {
    if let Some(t) = id.strip_prefix("tp-") {
        return format!("{} {t}", l.t("Tensor parallel"));
    }
    if let Some(c) = id.strip_prefix("cp-") {
        return format!("{} {c}", l.t("Context parallel"));
    }
    if let Some(k) = id.strip_prefix("checkpointing-every-") {
        return format!(
            "{} · {} {k}",
            l.t("Activation checkpointing"),
            l.t("applied to one block in")
        );
    }
    let en = match id {
        "mixed-precision" => "Mixed precision",
        "compile" => "torch.compile",
        "base-16bit" => "Load the frozen base in 16-bit (torch_dtype=bfloat16)",
        "kbit-16bit" => "Keep the 4-bit base's embeddings and norms in 16-bit",
        "double-quant" => "Double-quantize the 4-bit base (bnb_4bit_use_double_quant)",
        "bucket-view" => "DDP gradient_as_bucket_view (no second gradient copy)",
        "fused-kernels" => "Fused kernels (Liger): RMSNorm, SwiGLU, linear + cross-entropy",
        "checkpointing" => "Activation checkpointing",
        "grad-accum" => "Smaller micro-batch + gradient accumulation",
        "sync-each-batch" => "Reduce gradients every micro-batch (sync_each_batch)",
        "hpz-off" => "Turn off ZeRO++ hpZ (no secondary weight shard)",
        "unpadded" => "Pack the batches (or flash-attn varlen): no padding mask",
        "precompute-ref" => "Precompute the reference log-probs (precompute_ref_log_probs)",
        "zero-1" => "ZeRO-1",
        "distributed-optimizer" => "Distributed optimizer (shard master weights and Adam states)",
        "zero-2" => "ZeRO-2",
        "zero-3" => "ZeRO-3",
        "fsdp-grad-op" => "FSDP shard grad op",
        "fsdp-full" => "FSDP full shard",
        "offload-activations" => "Offload the checkpointed activations to CPU",
        "offload-optimizer" => "Offload optimizer states to CPU",
        "offload-params" => "Offload parameters to CPU too",
        other => return other.to_string(),
    };
    l.t(en).to_string()
}

#[component]
pub fn Ladder(plan: RwSignal<Plan>, searches: Memo<(Option<u32>, Option<u32>)>) -> impl IntoView {
    let ladder = Memo::new(move |_| plan.with(|p| fix_ladder(p).unwrap_or_default()));
    let lang = use_lang();
    let show = move |v: Option<u32>| {
        v.map(|x| x.to_string())
            .unwrap_or_else(|| lang.get().t("none").to_string())
    };
    view! {
        <section class="searches">
            <p>
                {move || format!("{}: ", lang.get().t("Largest micro-batch that fits"))}
                <strong data-testid="max-mb">{move || show(searches.get().0)}</strong>
                {move || format!(" · {}: ", lang.get().t("longest sequence"))}
                <strong data-testid="max-seq">{move || show(searches.get().1)}</strong>
                " · "
                <a
                    href=move || {
                        page_href("/layouts", &plan.with(cost_model::query::encode), &lang_suffix())
                    }
                    data-testid="find-layouts"
                >
                    {move || lang.get().t("Fastest layouts that fit")}
                </a>
            </p>
        </section>
        <section class="ladder" data-testid="ladder">
            {move || {
                let rungs = ladder.get();
                let l = lang.get();
                let suffix = lang_suffix();
                (!rungs.is_empty())
                    .then(|| {
                        view! {
                            <h2>{l.t("What to change")}</h2>
                            <ol>
                                {rungs
                                    .into_iter()
                                    .enumerate()
                                    .map(|(i, r)| {
                                        let target = r.plan.clone();
                                        let link = href(&r.query, &suffix);
                                        view! {
                                            <li class:fits=r.fits>
                                                <a
                                                    href=link
                                                    data-testid=format!("rung-{i}")
                                                    on:click=move |ev| {
                                                        ev.prevent_default();
                                                        plan.set(target.clone());
                                                    }
                                                >
                                                    {rung_label(l, &r.id)}
                                                </a>
                                                " → "
                                                {gib(r.device_used)}
                                                {format!(
                                                    " ({} {}, {} {:+} %)",
                                                    l.t("saves"),
                                                    gib(r.saving),
                                                    l.t("step time"),
                                                    r.speed_cost_pct
                                                )}
                                                {r.fits.then(|| format!(" — {}", l.t("fits")))}
                                            </li>
                                        }
                                    })
                                    .collect_view()}
                            </ol>
                        }
                    })
            }}
        </section>
    }
}
