//! What a case row's notes (and free-text columns) state: releases, settings, tools and the words people write them in.

use super::*;

/// An `other` optimizer the notes name, as the built-in one with the same
/// states per parameter: one full-size state for Adam-mini (its second moment
/// is one value per block, Zhang et al. 2024), RMSprop (`square_avg`),
/// Adagrad (`sum`) and CAME (`exp_avg` beside factored row and column
/// statistics, Luo et al. 2023, `came-pytorch`) — as SGD with momentum; two
/// for Sophia (`exp_avg`, `hessian`, Liu et al. 2023), schedule-free AdamW
/// (`z`, `exp_avg_sq`, Defazio et al. 2024), LAMB (`exp_avg`, `exp_avg_sq`,
/// You et al. 2020; apex `FusedLAMB`) and Adam — as AdamW (torch.optim state
/// dicts); four for Prodigy (`exp_avg`, `exp_avg_sq`, `s`, `p0`, Mishchenko
/// & Defazio 2024, `prodigyopt`) — as Adan — and for AdEMAMix's three
/// (`exp_avg_fast`, `exp_avg_slow`, `exp_avg_sq`, Pagliardini et al. 2024),
/// an upper bound. LOMO (Lv et al. 2023: the update fused into the backward,
/// no state, no gradient kept) reads as SGD and AdaLomo (its factored second
/// moment) as Adafactor, both stepped in backward ([`fused_update_optimizer`]).
pub(super) fn other_optimizer(notes: &str) -> Option<Optimizer> {
    let n = notes.to_ascii_lowercase();
    // Optimizers modelled by their own states: Muon's momentum on the hidden
    // matrices (AdamW on the rest), Adan's four.
    let words: Vec<&str> = n.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    if words.iter().any(|w| w.starts_with("muon")) {
        return Some(Optimizer::Muon);
    }
    if words
        .iter()
        .any(|&w| w == "adan" || w.starts_with("prodigy"))
    {
        return Some(Optimizer::Adan);
    }
    // AdEMAMix's three states, 8-bit where named so (transformers'
    // `ademamix_8bit`, bitsandbytes' `AdEMAMix8bit`).
    let named: Vec<&str> = words.iter().copied().filter(|w| !w.is_empty()).collect();
    if let Some(i) = named.iter().position(|w| w.starts_with("ademamix")) {
        // "ademamix8bit", "ademamix_8bit", "AdEMAMix 8-bit", "8-bit AdEMAMix".
        let at = |j: usize, w: &str| named.get(j).is_some_and(|x| *x == w);
        let eight = named[i].ends_with("8bit")
            || at(i + 1, "8bit")
            || (at(i + 1, "8") && at(i + 2, "bit"))
            || (i >= 1 && at(i - 1, "8bit"))
            || (i >= 2 && at(i - 2, "8") && at(i - 1, "bit"));
        return Some(if eight {
            Optimizer::Ademamix8bit
        } else {
            Optimizer::Ademamix
        });
    }
    match fused_update_optimizer(notes) {
        Some(true) => return Some(Optimizer::Adafactor),
        Some(false) => return Some(Optimizer::Sgd),
        None => {}
    }
    // "CAME" and "ADOPT" in capitals: "came" and "adopt" are English too.
    // CAME keeps a full first moment beside factored statistics; ADOPT
    // (Taniguchi et al. 2024) Adam's two moments.
    let capitals = |names: &[&str]| {
        notes
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| names.contains(&w))
    };
    if capitals(&["CAME", "CAMEOptimizer"]) {
        return Some(Optimizer::SgdMomentum);
    }
    if capitals(&["ADOPT"]) {
        return Some(Optimizer::Adamw);
    }
    if words.iter().any(|w| w.ends_with("lamb")) {
        return Some(Optimizer::Adamw);
    }
    // Adam with quantized moments named as such: torchao's `AdamW4bit`
    // (`adamw_torch_4bit`), its `AdamW8bit` and `AdamWFp8` (a byte and a
    // block scale a moment, as bitsandbytes' 8-bit). A bare "4-bit" is
    // not read: it names a QLoRA base more often than an optimizer.
    let named = |ids: &[&str], phrases: &[&str]| {
        words.iter().any(|w| ids.contains(w)) || phrases.iter().any(|p| n.contains(p))
    };
    if named(
        &["adamw4bit", "adam4bit"],
        &["4bit adam", "4-bit adam", "adamw_torch_4bit"],
    ) {
        return Some(Optimizer::Adamw4bit);
    }
    if named(
        &["adamw8bit", "adam8bit", "adamwfp8", "adamfp8"],
        &[
            "8bit adam",
            "8-bit adam",
            "fp8 adam",
            "adamw_torch_8bit",
            "adamw_torch_fp8",
        ],
    ) {
        return Some(Optimizer::Adamw8bit);
    }
    if n.contains("galore") {
        return galore(&n);
    }
    if n.contains("apollo") {
        return Some(Optimizer::Apollo);
    }
    // Optimizers whose states are none of the modelled ones: preconditioners
    // (Shampoo, SOAP).
    let own = ["shampoo", "soap"];
    if own.iter().any(|k| n.contains(k)) {
        return None;
    }
    let one = ["adam-mini", "adam_mini", "rmsprop", "adagrad"];
    let two = ["sophia", "schedule-free", "schedulefree", "adam"];
    if one.iter().any(|k| n.contains(k)) {
        Some(Optimizer::SgdMomentum)
    } else if two.iter().any(|k| n.contains(k)) {
        Some(Optimizer::Adamw)
    } else {
        None
    }
}

/// Whether the notes say the optimizer keeps its states in bf16 beside fp32
/// weights: torchtitan's `implementation = "fused_opt_states_bf16"`,
/// Megatron-Core's `--exp-avg-dtype bf16` (`exp_avg_dtype`), or in words
/// ("bf16 optimizer states", "optimizer states in bf16").
pub(super) fn optimizer_states_16bit(notes: &str) -> bool {
    let n = notes.to_ascii_lowercase().replace(['_', '='], "-");
    [
        "opt-states-bf16",
        "exp-avg-dtype bf16",
        "exp-avg-dtype-bf16",
        "exp-avg-dtype bfloat16",
        "bf16 optimizer state",
        "bfloat16 optimizer state",
        "optimizer states in bf16",
        "optimizer states in bfloat16",
    ]
    .iter()
    .any(|k| n.contains(k))
}

/// Whether the notes (or an optimizer column) name an optimizer that fuses
/// its update into the backward pass, freeing each gradient as it is used:
/// `Some(true)` for AdaLomo (a factored second moment), `Some(false)` for
/// LOMO (none) — Lv et al. 2023, "Full Parameter Fine-tuning for Large
/// Language Models with Limited Resources", and Lv et al. 2023b, "AdaLomo"
/// (OpenLMLab `collie` and LMFlow ship both, transformers as `optim="lomo"`
/// / `"adalomo"`).
pub(super) fn fused_update_optimizer(notes: &str) -> Option<bool> {
    let n = notes.to_ascii_lowercase();
    let mut words = n.split(|c: char| !c.is_ascii_alphanumeric());
    if words.clone().any(|w| w == "adalomo") {
        Some(true)
    } else if words.any(|w| w == "lomo") {
        Some(false)
    } else {
        None
    }
}

/// The schema's `loss` value another name of it stands for (`w` as
/// [`Row::word`] gives it): a fused linear + cross-entropy by its tools'
/// names (Liger's `LigerFusedLinearCrossEntropyLoss`, Cut Cross-Entropy,
/// "FLCE"), a chunked one by its chunk count or torchtune's class
/// (`CEWithChunkedOutputLoss`), the full upcast cross-entropy by the
/// function's name.
pub(super) fn loss_name(w: &str) -> Option<&'static str> {
    let fused = [
        "fused",
        "liger",
        "liger-flce",
        "flce",
        "cce",
        "cut-cross-entropy",
        "cut-ce",
        "fused-linear-cross-entropy",
        "fused-linear-ce",
        "fused-ce",
        "fused-cross-entropy",
        "ligerfusedlinearcrossentropyloss",
    ];
    if fused.contains(&w) {
        return Some("fused");
    }
    if w.starts_with("chunked") || w == "cewithchunkedoutputloss" || w == "chunked-cross-entropy" {
        return Some("chunked");
    }
    [
        "cross-entropy",
        "ce",
        "full-ce",
        "unchunked",
        "full",
        "plain",
        "crossentropyloss",
    ]
    .contains(&w)
    .then_some("standard")
}

/// The k of torchtitan's `selective_ac_option` when the notes give a number
/// (`selective_ac_option = "2"`, `--activation_checkpoint.selective_ac_option
/// 3`): every k-th block recomputed in full; `None` for "op" or unstated.
pub(super) fn selective_ac_every(notes: &str) -> Option<u32> {
    let unquoted = notes.to_ascii_lowercase().replace(['"', '\''], "");
    stated_after(&unquoted, &["selective_ac_option"]).filter(|&k| k > 0)
}

/// The k of a checkpointing column that recomputes every k-th block in full
/// ("every-2-layers", "every-2nd-block", "every-other-layer", "full-every-4"),
/// written as [`Row::word`] gives it; `None` for every other value.
pub(super) fn checkpoint_every_k(c: &str) -> Option<u32> {
    let rest = c.split_once("every-")?.1;
    let first = rest.split('-').next()?;
    if first == "other" {
        return Some(2);
    }
    let digits: String = first.chars().take_while(char::is_ascii_digit).collect();
    let k: u32 = digits.parse().ok()?;
    // "every-2nd", "every-3rd", "every-4th": an ordinal's suffix only.
    let suffix = &first[digits.len()..];
    (k > 0 && ["", "st", "nd", "rd", "th"].contains(&suffix)).then_some(k)
}

/// Whether a row's `compile = true` is Inductor's fusion, which
/// [`crate::plan::TrainingSpec::compile`] models (its partitioner recomputes
/// element-wise chains in backward instead of saving them). `torch.compile`
/// is; so is Lightning Thunder's `torchcompile` executor, which hands every
/// torch operation to `torch.compile` (lightning-thunder 0.2.0.dev20240505,
/// `thunder/executors/torch_compile.py`: `torch_compile_ex._implmap` covers
/// all of `pytorch_ex.implmap`, "meant to be used without the
/// nvfuser_executor"). Thunder's default executors are not: nvFuser fuses the
/// element-wise regions between matmuls (`thunder/__init__.py` adds
/// `nvfuser_executor` and `sdpa_executor` as the defaults) and
/// `torchcompile_cat` takes only cat, pad and slice regions (RoPE). What
/// Thunder's rematerialization of those fusions saves is not counted, so such a
/// run is read as eager — the upper bound, as for any compiler the model does
/// not know. The notes name Thunder and, where stated, its executors
/// ("executors: sdpa+torchcompile_cat+nvfuser+torch"); `torchcompile_cat` is
/// a word of its own, not `torchcompile`.
pub(super) fn compiled_by_inductor(notes: &str) -> bool {
    let lower = notes.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    if !words.contains(&"thunder") {
        return true;
    }
    words.contains(&"torchcompile")
}

/// PEFT methods a task column may name instead of `other-peft` that keep
/// no more than a frozen base ([`AdapterMethod::Generic`]); the others are
/// whatever [`named_adapter_method`] reads.
pub(super) const GENERIC_ADAPTER_TASKS: &[&str] =
    &["prompt-tuning", "p-tuning", "shira", "bone", "miss"];

/// The parameter-efficient method the notes (or a task column) name, when
/// its saved tensors differ from a frozen base's. Method names are matched
/// as whole words, so that SHiRA is not HiRA and BOFT not OFT.
pub(super) fn named_adapter_method(notes: &str) -> Option<AdapterMethod> {
    let lower = notes.to_ascii_lowercase();
    let words: Vec<String> = notes
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '³'))
        .map(str::to_lowercase)
        .collect();
    let named = |names: &[&str]| names.iter().any(|n| words.iter().any(|w| w == n));
    // LitGPT names them `adapter` and `adapter_v2` (its `finetune_adapter`
    // and `finetune_adapter_v2` commands), the papers LLaMA-Adapter (V2).
    let v2 = [
        "adapter v2",
        "adapter-v2",
        "adapter_v2",
        "adapterv2",
        "adapter (v2)",
    ];
    let v1 = [
        "llama adapter",
        "llama_adapter",
        "finetune_adapter",
        "finetune-adapter",
    ];
    Some(if v2.iter().any(|n| lower.contains(n)) {
        AdapterMethod::LlamaAdapterV2
    } else if named(&[
        "llama-adapter",
        "adaptionprompt",
        "adaption-prompt",
        "adapter-v1",
    ]) || v1.iter().any(|n| lower.contains(n))
        || lower.contains("adaption prompt")
        || lower.contains("adaption_prompt")
    {
        // PEFT calls LLaMA-Adapter `AdaptionPrompt`.
        AdapterMethod::LlamaAdapter
    } else if named(&["ia3", "ia³"]) {
        AdapterMethod::Ia3
    } else if lower.contains("ln tuning") || named(&["ln-tuning"]) {
        AdapterMethod::LnTuning
    } else if named(&["boft"]) {
        AdapterMethod::Boft
    } else if named(&["hra"]) {
        AdapterMethod::Hra
    } else if named(&["shira"]) {
        AdapterMethod::Shira
    } else if lower.contains("prefix tuning")
        || named(&["prefix-tuning", "cartridge", "cartridges"])
    {
        // Cartridges (PEFT `CartridgeConfig`) train a key/value prefix too.
        AdapterMethod::PrefixTuning
    } else if named(&["osf"]) {
        // PEFT 0.21 factored OSF's forward; the published OSF runs
        // (PEFT's MetaMathQA results, added with the method in 0.18)
        // rebuilt the weight. A stated "PEFT 0.21" (or later) says which.
        match stated_version(notes, "PEFT ") {
            Some((0, minor)) if minor >= 21 => AdapterMethod::Osf,
            Some((major, _)) if major >= 1 => AdapterMethod::Osf,
            _ => AdapterMethod::OsfReconstruct,
        }
    } else if named(&[
        "loha",
        "lokr",
        "fourierft",
        "waveft",
        "randlora",
        "hira",
        "peanut",
    ]) {
        // Counted with saved_tensors.py --methods: the fp32 input
        // casts plus a weight-sized update (PEANuT keeps about two).
        AdapterMethod::DeltaWeight
    } else if named(&[
        "vera", "pvera", "vb-lora", "vblora", "c3a", "delora", "gralora", "road", "adalora", "oft",
        "lily", "unilora", "deft",
    ]) {
        // Counted: the fp32 input casts (PVeRA and DEFT keep a little more).
        AdapterMethod::CastInputs
    } else {
        return None;
    })
}

/// The preference objective the notes (or a task column such as `dpo`)
/// name: DPO with its reference model; ORPO, SimPO and CPO without one; KTO.
/// A reference-free loss named beside DPO is the one run: LLaMA-Factory's
/// `stage: dpo` with `pref_loss: orpo` (or `simpo`) loads no reference model
/// (`use_ref_model = stage == "dpo" and pref_loss not in ["orpo", "simpo"]`,
/// llamafactory 0.9.5 `hparams/finetuning_args.py`).
pub(super) fn stated_objective(notes: &str) -> Objective {
    let lower = notes.to_ascii_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    let named = |names: &[&str]| words.iter().any(|w| names.contains(w));
    if named(&["orpo", "simpo", "cpo", "orpotrainer", "cpotrainer"]) {
        Objective::Orpo
    } else if named(&["dpo", "dpotrainer"]) {
        Objective::Dpo
    } else if named(&["kto", "ktotrainer"]) {
        Objective::Kto
    } else {
        Objective::Sft
    }
}

/// The bottom blocks a full fine-tune's notes say were frozen
/// (`frozen_layers=8`, "freeze the first 8 layers", "8 frozen layers",
/// "bottom 8 layers frozen").
pub(super) fn stated_frozen_layers(notes: &str) -> Option<u32> {
    let lower = notes.to_ascii_lowercase().replace('_', " ");
    stated_after(
        &lower,
        &[
            "frozen layers",
            "freeze layers",
            "num frozen layers",
            "freeze the first",
            "freezing the first",
            "froze the first",
            "frozen first",
            "freeze first",
            "freeze the bottom",
            "freezing the bottom",
        ],
    )
    .or_else(|| stated_number(&lower, " frozen layers"))
    .or_else(|| stated_number(&lower, " frozen blocks"))
    .or_else(|| stated_number(&lower, " layers frozen"))
    .filter(|&n| n > 0)
}

/// The GaLore optimizer a (lower-cased) name gives: AdamW's, 32- or 8-bit
/// (galore-torch's `GaLoreAdamW`, `GaLoreAdamW8bit`; transformers'
/// `galore_adamw`, `galore_adamw_8bit` and their `_layerwise` forms);
/// GaLore-Adafactor's factored moments are not modelled.
pub(super) fn galore(name: &str) -> Option<Optimizer> {
    if name.contains("adafactor") {
        None
    } else if name.contains("8bit") || name.contains("8-bit") {
        Some(Optimizer::Galore8bit)
    } else {
        Some(Optimizer::Galore)
    }
}

/// An optimizer column outside the schema's names that still names one
/// the model knows: transformers' `optim` ids (`adamw_torch_fused`,
/// `adamw_bnb_8bit`, `paged_adamw_8bit`, `lion_32bit`, `sgd`), else
/// whatever [`other_optimizer`] reads from a name. `o` is lower-cased with
/// `_` and spaces as `-`.
pub(super) fn named_optimizer(o: &str) -> Option<Optimizer> {
    if ["galore", "apollo", "shampoo", "soap"]
        .iter()
        .any(|k| o.contains(k))
    {
        // Projected or preconditioned states, read as in the notes (before
        // `galore_adamw` could pass for AdamW below).
        return other_optimizer(o);
    }
    // An optimizer column names one optimizer: CAME and ADOPT by their
    // lower-case names too (in the notes only in capitals, above).
    if o == "came" || o.starts_with("came-") || o.starts_with("came_") {
        return Some(Optimizer::SgdMomentum);
    }
    if o == "adopt" {
        return Some(Optimizer::Adamw);
    }
    let eight = o.contains("8bit") || o.contains("8-bit");
    let paged = o.contains("paged");
    if o.contains("lion") {
        // bitsandbytes' 8-bit Lion (`lion_8bit`, `paged_lion_8bit`: its
        // pages read as PyTorch's, an upper bound) keeps its state in 8 bits.
        return Some(if eight {
            Optimizer::Lion8bit
        } else {
            Optimizer::Lion
        });
    }
    if o.contains("adam") && !o.contains("mini") {
        // torchao's 4-bit AdamW (`adamw_torch_4bit`, `AdamW4bit`).
        if o.contains("4bit") || o.contains("4-bit") {
            return Some(Optimizer::Adamw4bit);
        }
        return Some(match (paged, eight) {
            (true, true) => Optimizer::PagedAdamw8bit,
            (true, false) => Optimizer::PagedAdamw,
            (false, true) => Optimizer::Adamw8bit,
            (false, false) => Optimizer::Adamw,
        });
    }
    if o.contains("adafactor") {
        return Some(Optimizer::Adafactor);
    }
    if o.starts_with("sgd") {
        return Some(if o.contains("momentum") || o.contains("nesterov") {
            Optimizer::SgdMomentum
        } else {
            Optimizer::Sgd
        });
    }
    other_optimizer(o)
}

/// A sharding column's word (lower-cased, `_` and spaces as `-`) as a
/// strategy: its own names, FSDP's and DeepSpeed's, and their other
/// spellings; `None` for anything else.
pub(super) fn sharding_word(s: &str) -> Option<Sharding> {
    Some(match s {
        "none" => Sharding::None,
        // Data parallelism by its short and long names.
        "ddp" | "dp" | "data-parallel" | "distributeddataparallel" | "megatron-dp" => Sharding::Ddp,
        // DeepSpeed's stage 0 is plain data parallelism.
        "zero0" | "zero-0" => Sharding::Ddp,
        "zero1" | "zero-1" => Sharding::Zero1,
        "zero2" | "zero-2" => Sharding::Zero2,
        "zero3" | "zero-3" => Sharding::Zero3,
        // ZeRO++ (Wang et al. 2023) is stage 3 with its hpZ partition (set
        // by the reader) and quantized collectives.
        s if ZERO_PLUS_PLUS.contains(&s) => Sharding::Zero3,
        // FSDP's own strategy names (`ShardingStrategy`), and FSDP2, which
        // only fully shards.
        "fsdp-full" | "fsdp" | "fsdp2" | "full-shard" => Sharding::FsdpFull,
        "fsdp-grad-op" | "shard-grad-op" => Sharding::FsdpGradOp,
        "hsdp" | "hybrid-shard" => Sharding::Hsdp,
        // Other spellings: FSDP's strategies with a prefix, DeepSpeed's stages
        // by name ("deepspeed-zero3", "ds-stage-2", "zero-stage-3"), one GPU.
        "fsdp-hybrid" | "fsdp-hybrid-shard" | "hybrid" => Sharding::Hsdp,
        "fsdp-full-shard" => Sharding::FsdpFull,
        "fsdp-shard-grad-op" | "grad-op" => Sharding::FsdpGradOp,
        "single" | "single-gpu" | "no" | "no-shard" => Sharding::None,
        "dataparallel" | "nn-dataparallel" | "nn.dataparallel" => Sharding::DataParallel,
        // FSDP2's API (`fully_shard`).
        "fully-shard" | "fsdp2-fully-shard" => Sharding::FsdpFull,
        s => return zero_stage(s),
    })
}

/// ZeRO++ by the names a sharding column gives it ([`sharding_word`]).
pub(super) const ZERO_PLUS_PLUS: [&str; 6] = [
    "zero++",
    "zeropp",
    "zero-pp",
    "zero3++",
    "zero-3++",
    "zero-plus-plus",
];

/// A column's word and the note in parentheses after it, each trimmed of
/// the separators [`Row::word`] leaves ("fsdp-(shard-grad-op)" → "fsdp",
/// "shard-grad-op"); `None` without parentheses.
pub(super) fn with_note(s: &str) -> Option<(&str, &str)> {
    let (outside, rest) = s.split_once('(')?;
    let inside = rest.split(')').next().unwrap_or("");
    Some((
        outside.trim_matches(NOTE_SEPARATORS),
        inside.trim_matches(NOTE_SEPARATORS),
    ))
}

/// What [`Row::word`] leaves around a note in parentheses.
pub(super) const NOTE_SEPARATORS: [char; 4] = ['-', ' ', ',', ';'];

/// What `read` makes of the text inside a value's parentheses, else of the
/// text before them ("fsdp-(shard-grad-op)", "zero-3-(stage-3)").
pub(super) fn in_parentheses<T>(s: &str, read: fn(&str) -> Option<T>) -> Option<T> {
    let (outside, inside) = with_note(s)?;
    read(inside).or_else(|| read(outside))
}

/// A DeepSpeed ZeRO stage named in a sharding column ("deepspeed-zero3",
/// "ds-stage-2", "zero-stage-3"): stage 0 is plain data parallelism.
pub(super) fn zero_stage(s: &str) -> Option<Sharding> {
    if !(s.contains("zero")
        || s.contains("stage")
        || s.starts_with("ds")
        || s.contains("deepspeed"))
    {
        return None;
    }
    let digits: Vec<char> = s.chars().filter(|c| c.is_ascii_digit()).collect();
    match digits.as_slice() {
        ['0'] => Some(Sharding::Ddp),
        ['1'] => Some(Sharding::Zero1),
        ['2'] => Some(Sharding::Zero2),
        ['3'] => Some(Sharding::Zero3),
        _ => None,
    }
}

/// The encoder and decoder layer counts the notes state ("24 enc + 24 dec",
/// "12 encoder + 6 decoder").
pub(super) fn stated_stacks(notes: &str) -> Option<(u32, u32)> {
    let trailing_number = |t: &str| -> Option<u32> {
        let t = t.trim_end();
        let digits = t.len() - t.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        t[t.len() - digits..].parse().ok()
    };
    notes.match_indices('+').find_map(|(at, _)| {
        let left = notes[..at].trim_end();
        let left = left.strip_suffix("layers").unwrap_or(left).trim_end();
        let left = left
            .strip_suffix("encoder")
            .or_else(|| left.strip_suffix("enc"))?;
        let enc = trailing_number(left)?;
        let right = notes[at + 1..].trim_start();
        let digits = right.len() - right.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let dec: u32 = right[..digits].parse().ok()?;
        right[digits..]
            .trim_start()
            .starts_with("dec")
            .then_some((enc, dec))
    })
}

/// Whether the framework's multi-GPU runs shard with FSDP: litgpt's
/// finetune/pretrain pick `FSDPStrategy` for devices > 1, torchtitan's and
/// torchtune's distributed recipes shard with FSDP2, fsdp_qlora is FSDP.
pub(super) fn shards_with_fsdp(framework: Framework) -> bool {
    matches!(
        framework,
        Framework::Litgpt | Framework::Torchtitan | Framework::Torchtune | Framework::FsdpQlora
    )
}

/// The length a row ran at when its `seq_len` column is empty and its notes
/// state it as the length run: padded or packed to it ("left-padded to
/// max_length 64", "padded to 512", "packed to 4096"), transformers'
/// `run_clm.py` blocks ("block_size 1024": the text is grouped into blocks of
/// that many tokens), named ("seq_len 2048", "sequence length 2048",
/// Megatron's `--seq-length 2048`, "seqlen 4k") or counted ("2048 tokens per
/// sample", "2048-token sequences", "sequences of 2048 tokens"). A cap is not
/// the length run — `max_length`, `max_seq_length`, "max sequence length",
/// "truncated to": a batch padded to its longest sample is shorter — so it is
/// read only where the notes say every row filled it: packed (TRL's
/// `packing=True`, axolotl's `sample_packing: true`, torchtune's
/// `packed=True`, whose packs run at the cap) or padded to it
/// (`padding="max_length"`, `pad_to_max_length`, axolotl's
/// `pad_to_sequence_len`). Never a label's length ("labels padded to 32",
/// [`stated_target_len`]) or a vocabulary's ("vocab padded to 50304").
pub(super) fn stated_seq_len(notes: &str) -> Option<u32> {
    let lower = notes.to_ascii_lowercase();
    let named = stated_tokens_after(
        &lower,
        &[
            "padded to max_length",
            "padded to",
            "packed to",
            "block_size",
            "block size",
            "sequence length",
            "sequence_length",
            "sequence-length",
            "seq_len",
            "seq len",
            "seq_length",
            "seq-length",
            "seq length",
            "seqlen",
            "seq",
        ],
        &NOT_THE_RUN_LENGTH,
    );
    // A cap the rows filled.
    let cap = || {
        fills_the_cap(&lower).then(|| {
            stated_tokens_after(
                &lower,
                &[
                    "max_seq_length",
                    "max_seq_len",
                    "max_length",
                    "max_len",
                    "model_max_length",
                    "max sequence length",
                    "max seq length",
                    "cutoff_len",
                    "sequence_len",
                ],
                &["_"],
            )
        })?
    };
    named
        .or_else(|| stated_tokens_before(&lower))
        .or_else(cap)
        .filter(|&n| n > 0)
}

/// What a length follows when it is not the length run: a cap's, a label's,
/// a vocabulary's, a mean or a bound (`_`: the end of another key,
/// `max_seq_len`).
pub(super) const NOT_THE_RUN_LENGTH: [&str; 16] = [
    "_",
    "max-",
    "max",
    "maximum",
    "labels",
    "label",
    "target",
    "vocab",
    "vocabulary",
    "avg",
    "average",
    "mean",
    "median",
    "min",
    "minimum",
    "up to",
];

/// A token count after one of `names` ([`stated_after_unless`]'s rules), as a
/// whole number or in thousands of 1,024 ("8k": the schema's `seq_len` column
/// reads it so): not the start of a longer word ("seq2seq" has no length).
pub(super) fn stated_tokens_after(lower: &str, names: &[&str], not_after: &[&str]) -> Option<u32> {
    after_names(lower, names, not_after).find_map(|after| {
        // Not the start of a longer word ("seq_len" is not "seq").
        if after.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            return None;
        }
        leading_tokens(after.trim_start_matches([' ', '=', ':', '"', '\'']))
    })
}

/// The token count a text starts with: digits, with an optional `k`
/// (× 1,024), not followed by another letter or digit ("2048", "4k"; not
/// "2seq", "3b").
pub(super) fn leading_tokens(text: &str) -> Option<u32> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let n: u32 = text[..digits].parse().ok()?;
    let rest = &text[digits..];
    let (n, rest) = match rest.strip_prefix('k') {
        Some(r) => (n.checked_mul(1024)?, r),
        None => (n, rest),
    };
    if rest.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return None;
    }
    Some(n)
}

/// A length counted in tokens before what it measures ("2048 tokens per
/// sample", "4k-token sequences", "sequences of 2048 tokens"): each sample
/// ran that long.
pub(super) fn stated_tokens_before(lower: &str) -> Option<u32> {
    const PER_SAMPLE: [&str; 10] = [
        " tokens per sample",
        " tokens per sequence",
        " tokens per example",
        " tokens per row",
        " tokens each",
        "-token sequences",
        " token sequences",
        "-token samples",
        " token samples",
        "-token blocks",
    ];
    let number_before = |at: usize| {
        let head = &lower[..at];
        let start = head
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == 'k')
            .len();
        // A whole number: not the end of a name ("llama3 tokens"), nor a mean
        // or a bound ("avg 300 tokens per sample", "up to 2048 tokens each").
        name_starts_at(lower, start, &NOT_THE_RUN_LENGTH)
            .then(|| leading_tokens(&head[start..]))
            .flatten()
    };
    PER_SAMPLE
        .iter()
        .find_map(|w| lower.match_indices(w).find_map(|(at, _)| number_before(at)))
        .or_else(|| {
            ["sequences of ", "samples of ", "blocks of ", "chunks of "]
                .iter()
                .find_map(|w| {
                    lower.match_indices(w).find_map(|(at, _)| {
                        let rest = &lower[at + w.len()..];
                        let n = leading_tokens(rest)?;
                        let digits = rest
                            .find(|c: char| !(c.is_ascii_digit() || c == 'k'))
                            .unwrap_or(rest.len());
                        rest[digits..]
                            .trim_start()
                            .starts_with("token")
                            .then_some(n)
                    })
                })
        })
}

/// The notes say every row filled the length cap: packed into full-length
/// sequences ([`stated_packing`]) or padded to the cap (`padding="max_length"`,
/// `pad_to_max_length`, axolotl's `pad_to_sequence_len: true`).
pub(super) fn fills_the_cap(lower: &str) -> bool {
    let squeezed: String = lower
        .chars()
        .filter(|c| !matches!(c, ' ' | '"' | '\''))
        .collect();
    let set = |key: &str| lower.contains(key) && stated_flag(lower, key) != Some(false);
    stated_packing(lower)
        || squeezed.contains("padding=max_length")
        || squeezed.contains("padding:max_length")
        || set("pad_to_max_length")
        || set("pad_to_sequence_len")
}

/// The value the notes give the flag `key` at its first occurrence that has
/// one ("packing=False", `sample_packing: true`, `expandable_segments:True`,
/// "packing off"); `None` where no occurrence is followed by a yes or a no.
pub(super) fn stated_flag(lower: &str, key: &str) -> Option<bool> {
    lower.match_indices(key).find_map(|(at, _)| {
        let rest = lower[at + key.len()..].trim_start_matches([' ', '=', ':', '"', '\'']);
        let word = &rest[..rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len())];
        match word {
            "true" | "on" | "yes" | "1" => Some(true),
            "false" | "off" | "no" | "0" => Some(false),
            _ => None,
        }
    })
}

/// The notes say the rows were packed ("packed", "packing", TRL's
/// `packing=True`, axolotl's `sample_packing: true`, torchtune's
/// `packed=True`) — and not that they were not ("packing=False",
/// `sample_packing: false`, "no packing", "without packing", "unpacked",
/// "not packed").
pub(super) fn stated_packing(lower: &str) -> bool {
    const NOT: [&str; 5] = [
        "no packing",
        "without packing",
        "unpacked",
        "not packed",
        "no sample packing",
    ];
    if NOT.iter().any(|w| lower.contains(w)) {
        return false;
    }
    let set_false = ["packing", "packed"]
        .iter()
        .any(|key| stated_flag(lower, key) == Some(false));
    !set_false && (lower.contains("packed") || lower.contains("packing"))
}

/// The per-GPU micro-batch a row ran, when its `micro_batch` column is empty
/// and its notes name it as such: the Trainer's
/// `per_device_train_batch_size`, DeepSpeed's `train_micro_batch_size_per_gpu`,
/// Megatron's `micro_batch_size` / `--micro-batch-size` ("MBS 4"), torchtune's
/// `batch_size` (its recipes' batch is per device), or in words
/// ("micro-batch 4", "batch size per GPU 8", "per-device batch 4", "batch 4
/// per GPU"). A plain "batch size" is not read: papers and logs give the
/// global batch under that name (DeepSpeed's `train_batch_size` is global).
pub(super) fn stated_micro_batch(notes: &str, framework: Framework) -> Option<u32> {
    let lower = notes.to_ascii_lowercase();
    // `_`: not inside another key (`eval_micro_batch_size`); nor the largest
    // that fits, a search's answer ("max micro-batch 16").
    const NOT_AFTER: [&str; 7] = [
        "_",
        "global",
        "eval",
        "total",
        "effective",
        "max",
        "maximum",
    ];
    let named = stated_after_unless(
        &lower,
        &[
            "per_device_train_batch_size",
            "train_micro_batch_size_per_gpu",
            "micro_batch_size",
            "micro-batch-size",
            "micro-batch size",
            "micro batch size",
            "micro-batch",
            "micro batch",
            "batch size per gpu",
            "per-gpu batch size",
            "per gpu batch size",
            "per-device batch size",
            "per-device batch",
            "per device batch",
            "per-gpu batch",
            "per gpu batch",
            "mbs",
        ],
        &NOT_AFTER,
    );
    // torchtune's `batch_size` key (not `eval_batch_size`, not
    // `global_batch_size`).
    let torchtune = || {
        (framework == Framework::Torchtune)
            .then(|| stated_after_unless(&lower, &["batch_size"], &NOT_AFTER))?
    };
    // "batch 4 per GPU", "bs 4 per device", "batch of 4 per GPU".
    let per_device = || {
        [" per gpu", " per device", "/gpu", "/device"]
            .iter()
            .find_map(|per| {
                lower.match_indices(per).find_map(|(at, _)| {
                    let head = lower[..at].trim_end();
                    let digits =
                        head.len() - head.trim_end_matches(|c: char| c.is_ascii_digit()).len();
                    let n: u32 = head[head.len() - digits..].parse().ok()?;
                    let word = head[..head.len() - digits].trim_end();
                    let word = word.strip_suffix(" of").unwrap_or(word).trim_end();
                    let word = word.trim_end_matches([' ', '=', ':']);
                    (word.ends_with("batch")
                        || word.ends_with("bs")
                        || word.ends_with("batch size"))
                    .then_some(n)
                })
            })
    };
    named
        .or_else(torchtune)
        .or_else(per_device)
        .filter(|&n| n > 0)
}

/// The decoder (target) length an encoder–decoder row's notes state:
/// transformers' seq2seq scripts' `max_target_length` (`run_summarization.py`,
/// `run_translation.py`), PEFT's examples' `target_max_length`, or in words
/// ("target length 128", "labels padded to 128", "128 target tokens").
pub(super) fn stated_target_len(notes: &str) -> Option<u32> {
    let lower = notes.to_ascii_lowercase();
    stated_after(
        &lower,
        &[
            "max_target_length",
            "target_max_length",
            "max_target_len",
            "max target length",
            "target_length",
            "target length",
            "target_len",
            "decoder length",
            "labels padded to",
        ],
    )
    .or_else(|| stated_number(&lower, " target tokens"))
    .filter(|&n| n > 0)
}

/// A `major.minor` version the notes state after `name` ("PEFT 0.21.2").
pub(super) fn stated_version(notes: &str, name: &str) -> Option<(u32, u32)> {
    let at = notes.find(name)? + name.len();
    release_at(&notes[at..]).map(|(major, minor, _)| (major, minor))
}

/// A `major.minor` release the notes state after any of `names`, at any of
/// their occurrences ("torch.compile … torch 2.4.0": the second).
pub(super) fn stated_release(notes: &str, names: &[&str]) -> Option<(u32, u32)> {
    stated_full_release(notes, names).map(|(major, minor, _)| (major, minor))
}

/// Task words that name a classification or reward head (no vocabulary
/// logits): which weights train, the row's LoRA columns say.
pub(super) const CLASSIFIER_TASKS: [&str; 11] = [
    "reward",
    "reward-model",
    "reward-modeling",
    "reward-modelling",
    "rm",
    "classification",
    "text-classification",
    "sequence-classification",
    "seq-cls",
    "token-classification",
    "classifier",
];

/// Whether the notes or the task column describe a model that ends in a
/// classification (or reward) head rather than the language-model head:
/// "classification head", "no LM head", transformers'
/// `AutoModelForSequenceClassification` / `*ForTokenClassification`, a
/// reward model (TRL's `RewardTrainer`, DeepSpeed-Chat's step 2), PEFT's
/// `SEQ_CLS` task.
pub(super) fn names_classifier_head(notes: &str, task_word: &str) -> bool {
    let lower = notes.to_ascii_lowercase();
    let squashed: String = lower
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    CLASSIFIER_TASKS.contains(&task_word)
        || [
            "classification head",
            "classifier head",
            "no lm head",
            "sequence classification",
            "token classification",
            "reward model",
            "reward trainer",
            "reward modeling",
            "reward modelling",
        ]
        .iter()
        .any(|p| lower.contains(p))
        || [
            "forsequenceclassification",
            "fortokenclassification",
            "rewardtrainer",
            "seqcls",
        ]
        .iter()
        .any(|p| squashed.contains(p))
}

/// Task words that name what a run trains on, not which weights train
/// (the row's LoRA columns say that).
pub(super) const TRAINING_DATA_TASKS: [&str; 11] = [
    "sft",
    "finetune",
    "fine-tune",
    "fine-tuning",
    "finetuning",
    "instruction-tuning",
    "instruction-tune",
    "dpo",
    "orpo",
    "simpo",
    "kto",
];

/// A precision written as words in any order: fp8 (float8, Transformer
/// Engine), else one 16-bit dtype with autocast ("amp", "mixed", "autocast")
/// or without; `None` when it names both 16-bit dtypes or neither.
pub(super) fn precision_in_words(p: &str) -> Option<Precision> {
    let words: Vec<&str> = p.split('-').filter(|w| !w.is_empty()).collect();
    let has = |names: &[&str]| words.iter().any(|w| names.contains(w));
    if has(&["fp8", "float8", "transformer"]) {
        return Some(Precision::Fp8);
    }
    let bf16 = has(&["bf16", "bfloat16"]);
    let fp16 = has(&["fp16", "float16", "half"]);
    let mixed = has(&["amp", "mixed", "autocast"]);
    match (bf16, fp16, mixed) {
        (true, false, true) => Some(Precision::AmpBf16),
        (false, true, true) => Some(Precision::AmpFp16),
        (true, false, false) => Some(Precision::Bf16),
        (false, true, false) => Some(Precision::Fp16),
        _ => None,
    }
}

/// A `major.minor[.patch]` release the notes state after any of `names`, at
/// any of their occurrences ("DeepSpeed ZeRO-2 … deepspeed 0.19.8": the
/// second).
pub(super) fn stated_full_release(notes: &str, names: &[&str]) -> Option<(u32, u32, Option<u32>)> {
    names.iter().find_map(|name| {
        notes
            .match_indices(name)
            .find_map(|(i, _)| release_at(&notes[i + name.len()..]))
    })
}

/// The `major.minor[.patch]` release a text starts with ("0.43.2; …",
/// "v1.0"): the major a whole number, minor and patch their leading digits.
pub(super) fn release_at(text: &str) -> Option<(u32, u32, Option<u32>)> {
    let digits = |p: &str| -> Option<u32> {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .ok()
    };
    let mut parts = text.trim_start_matches('v').split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = digits(parts.next()?)?;
    Some((major, minor, parts.next().and_then(digits)))
}

/// What the notes give `use_gradient_checkpointing` (lower-cased notes):
/// the text after the name and its `=`, `:` or quotes (`"unsloth"`, `false`).
pub(super) fn gradient_checkpointing_argument(lower: &str) -> Option<&str> {
    const NAME: &str = "use_gradient_checkpointing";
    lower
        .find(NAME)
        .map(|i| lower[i + NAME.len()..].trim_start_matches([' ', '=', ':', '"', '\'']))
}

/// An FSDP2 run through Accelerate before 1.11 reduced every micro-batch
/// (`lower`: the row's notes, lower-cased):
/// `Accelerator.no_sync` looked for the model's `no_sync` (FSDP1's and DDP's
/// context manager), which an FSDP2 module does not have (torch 2.8.0
/// `FSDPModule`: "`set_requires_gradient_sync` … the equivalence of `no_sync`
/// in FSDP1"), so it entered a null context and `fully_shard` reduce-scattered
/// each backward; 1.11.0 added the branch that calls
/// `set_requires_gradient_sync(False)` (accelerate 1.6.0, 1.8.0 and 1.10.0
/// against 1.11.0, 1.12.0 and 1.16.0 `accelerator.py`).
/// The notes name FSDP2 (or the column says `fsdp2`) and state an Accelerate
/// release before 1.11, or an axolotl release before 0.13 (0.12 pinned
/// `accelerate==1.10.0`, 0.13.2 `1.12.0`). axolotl 0.12's gpt-oss-20b FSDP2
/// README figures (~36 GiB a GPU on 8 × 48 GB accumulating 2 micro-batches)
/// leave no room for the 39 GiB of unsharded gradients `no_sync` keeps.
pub(super) fn fsdp2_reduced_each_micro_batch(lower: &str, sharding: &str) -> bool {
    let fsdp2 = names_fsdp2(lower, sharding);
    let accelerate = stated_release(lower, &["accelerate ", "accelerate==", "accelerate v"]);
    let axolotl = stated_release(lower, &["axolotl ", "axolotl==", "axolotl v"]);
    fsdp2 && (accelerate.is_some_and(|v| v < (1, 11)) || axolotl.is_some_and(|v| v < (0, 13)))
}

/// The row ran FSDP2: the sharding column says `fsdp2`, or the notes name
/// it (FSDP2, `fully_shard`, `fsdp_version: 2`).
pub(super) fn names_fsdp2(lower: &str, sharding: &str) -> bool {
    sharding.trim().eq_ignore_ascii_case("fsdp2")
        || names_tool(lower, &["fsdp2", "fully_shard"])
        || lower.contains("fsdp_version: 2")
        || lower.contains("fsdp_version=2")
        || lower.contains("fsdp_version 2")
}

/// What the notes say of the run's mixed precision, the switch behind the
/// Trainer's `--bf16`/`--fp16` (Accelerate's `mixed_precision`; `lower`: the
/// notes, lower-cased). Off where they say so — `mixed_precision no`,
/// `bf16=False`, LLaMA-Factory's `pure_bf16`, "pure bf16"; on where they name
/// a mixed-precision dtype (`mixed_precision bf16`, `--mixed_precision fp16`)
/// or set the flag (`bf16=True`, `--bf16`); else `None`.
pub(super) fn stated_mixed_precision(lower: &str) -> Option<bool> {
    const PURE: [&str; 4] = ["pure_bf16", "pure bf16", "pure_fp16", "pure fp16"];
    let named = [
        stated_flag(lower, "mixed_precision"),
        stated_flag(lower, "mixed precision"),
        stated_flag(lower, "bf16"),
        stated_flag(lower, "fp16"),
    ];
    if PURE.iter().any(|w| lower.contains(w)) || named.contains(&Some(false)) {
        return Some(false);
    }
    let dtype_named = ["mixed_precision", "mixed precision"].iter().any(|key| {
        lower.match_indices(key).any(|(at, _)| {
            let rest = lower[at + key.len()..].trim_start_matches([' ', '=', ':', '"', '\'', '`']);
            ["bf16", "fp16", "fp8"].iter().any(|d| rest.starts_with(d))
        })
    });
    let flag = lower
        .split([' ', ';', ',', '(', ')'])
        .any(|w| w == "--bf16" || w == "--fp16");
    (dtype_named || flag || named.contains(&Some(true))).then_some(true)
}

/// A CUDA context larger than this (MiB) was created with eager module
/// loading. PyTorch 1.13 made lazy loading the default
/// (`torch/cuda/__init__.py` sets `CUDA_MODULE_LOADING=LAZY` when unset; 1.12.1
/// does not — both read from the wheels on PyPI), after which a training
/// process holds far less outside the allocator: 767 MiB on the H200 with its
/// kernels loaded (calibration/h200-2026-11-30), 510 MiB for an idle CUDA 12
/// context (fixture smi_table_28). Eagerly, every kernel image is loaded when
/// the context is made: 1343 MiB in the V100 rows of the Trainer's
/// perf_train_gpu_one guide. A run above this predates PyTorch 2.0, so its
/// `zero_grad()` kept the gradients (`set_to_none=False`, the 1.x default in
/// `Module.zero_grad` and `Optimizer.zero_grad`) and AdamW looped per parameter.
pub(super) const EAGER_MODULE_LOADING_CONTEXT_MIB: u32 = 1024;

/// What the notes say of the 4-bit base's scales being quantized too:
/// QLoRA's "double quant(ization)", LitGPT's `nf4-dq`, bitsandbytes'
/// `bnb_4bit_use_double_quant=True` say so, `=False` (or LLaMA-Factory's
/// `double_quantization: false`) says not; `None` when they say nothing.
pub(super) fn stated_double_quant(notes: &str) -> Option<bool> {
    let lower = notes.to_ascii_lowercase().replace([' ', '-'], "_");
    for name in ["use_double_quant", "double_quantization"] {
        if let Some(i) = lower.find(name) {
            let rest = lower[i + name.len()..].trim_start_matches(['=', ':', '_']);
            if rest.starts_with("false") || rest.starts_with('0') {
                return Some(false);
            }
            if name == "use_double_quant" {
                return Some(true);
            }
        }
    }
    (lower.contains("double_quant") || lower.contains("nf4_dq") || lower.contains("doublequant"))
        .then_some(true)
}

/// The transformers major release from which its 4-bit loader refuses a
/// bitsandbytes older than 0.46.1 (`BITSANDBYTES_MIN_VERSION = "0.46.1"`,
/// transformers 5.0.0 `utils/import_utils.py`, checked by
/// `quantizer_bnb_4bit.py`; 4.44–4.57 asked for 0.41.3 at the least): a row
/// that states transformers 5 ran a bitsandbytes whose 4-bit matmul saves
/// no input ([`runs_bnb_0_43_2`]), unless it names an older one.
pub(super) const TRANSFORMERS_REQUIRING_NEW_BNB: u32 = 5;

/// Whether the notes place the run on bitsandbytes 0.43.2 or later, whose
/// 4-bit matmul saves no input: a stated release ("bitsandbytes 0.45.2",
/// "bnb==0.43.3", "bitsandbytes>=0.44"; a bare "0.43" does not tell, 0.43.0
/// and 0.43.1 still saved it, nor does `quant_storage`, 0.43.0 on), else a
/// stated `transformers` release that refuses older ones
/// ([`TRANSFORMERS_REQUIRING_NEW_BNB`]).
pub(super) fn runs_bnb_0_43_2(notes: &str, transformers: Option<(u32, u32)>) -> bool {
    match stated_bnb_release(notes) {
        Some((0, 43, Some(patch))) => patch >= 2,
        Some((0, minor, _)) => minor >= 44,
        Some((major, _, _)) => major >= 1,
        None => transformers.is_some_and(|(major, _)| major >= TRANSFORMERS_REQUIRING_NEW_BNB),
    }
}

/// The first LitGPT release whose Linux install pins a bitsandbytes whose
/// 4-bit matmul saves no input: 0.5.5 asks `bitsandbytes>=0.44.0,<0.44.2`
/// (later releases ≥ 0.45.2); 0.4.0 to 0.5.4 pinned `==0.42.0` (read in the
/// litgpt wheels' metadata, `Requires-Dist`).
pub(super) const LITGPT_NEW_BNB: (u32, u32, u32) = (0, 5, 5);

/// Whether a LitGPT row's notes (`lower`: lower-cased) state a LitGPT release
/// that pins a new bitsandbytes ([`LITGPT_NEW_BNB`]) and name no bitsandbytes
/// release of their own ("litgpt 0.5.7", "LitGPT v0.5.11", "litgpt==0.5.5").
pub(super) fn litgpt_pins_new_bnb(lower: &str) -> bool {
    stated_bnb_release(lower).is_none()
        && stated_full_release(lower, &["litgpt ", "litgpt==", "litgpt v", "lit-gpt "]).is_some_and(
            |(major, minor, patch)| (major, minor, patch.unwrap_or(0)) >= LITGPT_NEW_BNB,
        )
}

/// The bitsandbytes release the notes name ("bitsandbytes 0.45.2",
/// "bnb==0.43.3", "bitsandbytes>=0.44"): the first that reads as one.
pub(super) fn stated_bnb_release(notes: &str) -> Option<(u32, u32, Option<u32>)> {
    let lower = notes.to_ascii_lowercase();
    ["bitsandbytes", "bnb"].iter().find_map(|name| {
        lower.match_indices(name).find_map(|(i, _)| {
            let rest = lower[i + name.len()..].trim_start_matches([' ', '=', '>', '<', '~', '-']);
            release_at(rest)
        })
    })
}

/// A number the notes state right before `unit`: "200 virtual tokens",
/// "~1343 MiB CUDA context" (`None` when not stated).
pub(super) fn stated_number(notes: &str, unit: &str) -> Option<u32> {
    let at = notes.find(unit)?;
    let before = notes[..at].trim_end();
    let digits = before.len()
        - before
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_digit())
            .count();
    before[digits..].parse().ok()
}

/// The micro-batches a pipeline runs per step, as the notes state them:
/// counted ("8 microbatches", `n_microbatches=8`, "num micro-batches: 8"),
/// or a global batch ("GBS 512", `global_batch_size=512`, "global batch
/// 512") over the micro-batch and the data-parallel size, as Megatron
/// derives them (`get_num_microbatches()` = global batch / (micro-batch ×
/// DP)). `None` when the notes say neither, and the plan falls back to the
/// gradient accumulation column.
pub(super) fn stated_pipeline_microbatches(notes: &str, micro_batch: u32, dp: u32) -> Option<u32> {
    let named = ["microbatches", "micro-batches", "micro batches"];
    let counted = named
        .iter()
        .find_map(|n| stated_number(notes, n).filter(|&m| m > 0))
        .or_else(|| {
            stated_after(
                notes,
                &[
                    "n_microbatches",
                    "num_microbatches",
                    "num microbatches",
                    "num micro-batches",
                    "microbatches",
                    "micro-batches",
                ],
            )
        })
        .filter(|&m| m > 0);
    counted.or_else(|| {
        let gbs = stated_after(
            notes,
            &[
                "global_batch_size",
                "global batch size",
                "global batch",
                "GBS",
            ],
        )?;
        let per = micro_batch.max(1).saturating_mul(dp.max(1));
        (gbs >= per).then(|| gbs / per)
    })
}

/// The notes say sequence parallelism runs beside TP ("sequence parallel",
/// `--sequence-parallel`, "TP 4 + SP").
pub(super) fn stated_sequence_parallel(notes: &str) -> bool {
    let lower = notes.to_ascii_lowercase();
    (lower.contains("sequence parallel")
        || lower.contains("sequence-parallel")
        || lower.contains("sequence_parallel"))
        && !lower.contains("no sequence parallel")
        && !lower.contains("sequence_parallel=false")
        || notes
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == "SP")
}

/// The notes say Megatron's distributed optimizer runs
/// (`--use-distributed-optimizer`, `use_distributed_optimizer=True`,
/// "distributed optimizer").
pub(super) fn stated_distributed_optimizer(notes: &str) -> bool {
    let lower = notes.to_ascii_lowercase().replace(['_', '-'], " ");
    lower.contains("distributed optimizer")
        && !lower.contains("no distributed optimizer")
        && !lower.contains("distributed optimizer=false")
        && !lower.contains("distributed optimizer: false")
}

/// The notes say DDP keeps its gradients as bucket views
/// (`gradient_as_bucket_view=True`; no column says it).
pub(super) fn stated_bucket_view(notes: &str) -> bool {
    [
        "gradient_as_bucket_view True",
        "gradient_as_bucket_view=True",
    ]
    .iter()
    .any(|k| notes.contains(k))
}

/// A degree the notes give after one of `names` ("EP 8", "EP=8", "EP8",
/// "expert parallel 8"); at least 1.
pub(super) fn stated_degree(notes: &str, names: &[&str]) -> Option<u32> {
    stated_after(notes, names).map(|n| n.max(1))
}

/// What TRL's `SFTTrainer` does to a quantized model it does not shard, by
/// the `release` the notes state ([`stated_trl_release`]; `None`: unstated),
/// where they say nothing of the preparation themselves:
/// `(kbit_fp32_prep, kbit_embeddings_16bit)`, `None` for an unquantized base.
/// Asked of TRL's rows only ([`runs_trl`]).
///
/// Read in the trl wheels: up to 0.21.0 it prepares the model
/// (`prepare_model_for_kbit_training`; up to 0.7.1 PEFT's older
/// `prepare_model_for_int8_training`, which upcasts alike), and from 0.7.5 it
/// puts a 4-bit model's embeddings and LM head back in bf16 under
/// `bf16=True` (`peft_module_casting_to_bf16`; 0.7.4 did not); from 0.22.0
/// it prepares nothing. The sharded case (FSDP, ZeRO-3), which it leaves
/// alone, the estimate tells apart itself. An unstated release reads as one
/// before 0.22 (its wheel built 29 August 2025): what most published runs
/// ran, and the reading that keeps more — the safe side, as for
/// bitsandbytes' releases.
pub(super) fn trl_kbit_preparation(
    release: Option<(u32, u32, u32)>,
    t: &crate::plan::TrainingSpec,
    prep_stated: bool,
) -> Option<(bool, bool)> {
    let bits = t.finetune.base_bits()?;
    if bits > 8 || prep_stated {
        return None;
    }
    let prepares = release.is_none_or(|v| v < (0, 22, 0));
    let casts_back = release.is_none_or(|v| v >= TRL_CASTS_EMBEDDINGS_BACK);
    let bf16 = t.precision == Precision::AmpBf16;
    Some((prepares, prepares && casts_back && bits == 4 && bf16))
}

/// The first TRL release whose `SFTTrainer` ran `peft_module_casting_to_bf16`
/// after the k-bit preparation (absent from 0.7.4's wheel, present in 0.7.5's).
pub(super) const TRL_CASTS_EMBEDDINGS_BACK: (u32, u32, u32) = (0, 7, 5);

/// The row runs TRL's trainers: the framework's, or the Trainer's with TRL's
/// trainers named in the notes and no tool that runs them its own way
/// (Unsloth, axolotl, LLaMA-Factory, ms-swift wrap the model before TRL sees
/// it: [`other_framework`]'s order). The schema has no `trl` value, and TRL's
/// trainers subclass transformers' `Trainer`: PEFT's QLoRA guides' rows read
/// "hf-trainer" and "TRL SFTTrainer".
pub(super) fn runs_trl(framework: Framework, notes: &str) -> bool {
    framework == Framework::Trl
        || (framework == Framework::HfTrainer && other_framework(notes) == Some(Framework::Trl))
}

/// The first TRL release whose trainers compute the loss through their own
/// fused LM head ([`Loss::TiledLogprob`]): 1.15.0 (`add_fused_lm_head` in
/// `trainer/utils.py`, called by `SFTTrainer`, `DPOTrainer`, `KTOTrainer`,
/// `GRPOTrainer`, `RLOOTrainer`; absent from 1.14.2, read in the wheels).
pub(super) const TRL_FUSED_LM_HEAD: (u32, u32, u32) = (1, 15, 0);

/// The first TRL release whose `SFTTrainer` defaults to its chunked NLL
/// ([`Loss::ChunkedNll`], `loss_type=None` read as `"chunked_nll"` unless
/// `use_liger_kernel`): 1.7.0 (1.4.0 to 1.6.x offered it, defaulting to
/// `"nll"`; read in the wheels).
pub(super) const TRL_CHUNKED_NLL: (u32, u32, u32) = (1, 7, 0);

/// The first TRL release whose `selective_log_softmax` runs its Triton kernel
/// on CUDA ([`crate::plan::TrainingSpec::logprob_kernel`]): 1.14.0
/// (`_fused_logprob_entropy` in `trainer/utils.py`; 1.13.0 took a logsumexp
/// or a log-softmax row by row).
pub(super) const TRL_LOGPROB_KERNEL: (u32, u32, u32) = (1, 14, 0);

/// Notes that name TRL's `loss_type` as the plain NLL ("loss_type nll",
/// `loss_type="nll"`).
pub(super) fn stated_nll_loss_type(lower: &str) -> bool {
    [
        "loss_type nll",
        "loss_type=nll",
        "loss_type=\"nll\"",
        "loss_type='nll'",
        "loss_type: nll",
    ]
    .iter()
    .any(|k| lower.contains(k))
}

/// The TRL release the notes state ("TRL 0.21.0", "trl==0.9.6", "trl>=1.8",
/// "TRL version 1.10.0", "TRL: v0.12.1"), patch 0 where they give none.
pub(super) fn stated_trl_release(notes: &str) -> Option<(u32, u32, u32)> {
    const AFTER: [&str; 7] = ["==", ">=", "~=", "=", " version ", ": ", " "];
    let lower = notes.to_ascii_lowercase();
    // "trl" as a word of its own (not "ctrl"), then the release.
    let starts: Vec<usize> = lower
        .match_indices("trl")
        .map(|(i, _)| i)
        .filter(|&i| {
            !lower[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .collect();
    AFTER
        .iter()
        .find_map(|after| {
            starts
                .iter()
                .find_map(|&i| lower[i + 3..].strip_prefix(after).and_then(release_at))
        })
        .map(|(major, minor, patch)| (major, minor, patch.unwrap_or(0)))
}

/// Whether TRL's `SFTTrainer`, by the `release` the notes state, keeps the
/// adapters in 16 bits ([`crate::plan::TrainingSpec::adapters_16bit`]); read
/// in the trl wheels: 0.7.5–0.8.6's `peft_module_casting_to_bf16` casts every
/// `BaseTunerLayer` of an unsharded 4-bit model under `bf16=True` (gone from
/// 0.9.2); from 0.9.2 a sharded 4-bit model's adapters are made with
/// `autocast_adapter_dtype=False`, in the bf16 its storage is; from 0.26 a
/// quantized model's trainable parameters are cast to bf16; from 1.13 ZeRO-3
/// over a 16-bit model gets `autocast_adapter_dtype=False` too. An unstated
/// release keeps PEFT's fp32, which keeps more.
pub(super) fn trl_adapters_16bit(
    v: (u32, u32, u32),
    t: &crate::plan::TrainingSpec,
    sharding: Sharding,
) -> bool {
    let Some(bits) = t.finetune.base_bits() else {
        return false;
    };
    if t.precision == Precision::Fp32 {
        return false;
    }
    match bits {
        4 if sharding.shards_params() => v >= (0, 9, 2),
        4 if (TRL_CASTS_EMBEDDINGS_BACK..(0, 9, 0)).contains(&v) => {
            t.precision == Precision::AmpBf16
        }
        b if b <= 8 => v >= (0, 26, 0),
        _ => sharding == Sharding::Zero3 && v >= (1, 13, 0),
    }
}

/// What the notes (lower-cased) say of PEFT's `prepare_model_for_kbit_training`
/// (which casts a quantized model's unquantized parameters to fp32): named,
/// it ran; named with a negation ("without prepare_model_for_kbit_training",
/// "no k-bit preparation", "prepare_model_for_kbit_training not called"), it
/// did not — TRL's `SFTTrainer` from 0.22.0 on prepares nothing; unnamed,
/// the profile's default.
pub(super) fn stated_kbit_prep(lower: &str) -> Option<bool> {
    const NOT: [&str; 6] = [
        "without prepare_model_for_kbit_training",
        "no prepare_model_for_kbit_training",
        "prepare_model_for_kbit_training not",
        "no k-bit preparation",
        "no kbit preparation",
        "not prepared for k-bit",
    ];
    if NOT.iter().any(|w| lower.contains(w)) {
        Some(false)
    } else if lower.contains("prepare_model_for_kbit_training") {
        Some(true)
    } else {
        None
    }
}

/// The notes (lower-cased) say the caching allocator ran with expandable
/// segments (`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`, PyTorch
/// 2.9's `PYTORCH_ALLOC_CONF`, "with expandable segments") and not that it
/// ran without them ("expandable_segments:False", "no expandable segments").
pub(super) fn stated_expandable_segments(lower: &str) -> bool {
    if let Some(set) = stated_flag(lower, "expandable_segments") {
        return set;
    }
    let said_off = [
        "no expandable",
        "without expandable",
        "expandable segments off",
    ]
    .iter()
    .any(|w| lower.contains(w));
    !said_off && (lower.contains("expandable segments") || lower.contains("expandable_segments"))
}

/// A checkpoint with a vision encoder beside its language model, by its name:
/// Qwen-VL, DeepSeek-VL, InternVL, SmolVLM, LLaVA, PaliGemma, Idefics,
/// Pixtral, Molmo, MiniCPM-V, GLM-4V, "…-Vision" (Llama 3.2, Phi-3.5), Gemma 3
/// (from 4B; the 1B and 270M are text only, which the parameter count says).
pub(super) fn multimodal_checkpoint(model: &str) -> bool {
    const MARKS: [&str; 15] = [
        "-vl",
        "_vl",
        "vl-",
        "vlm",
        "llava",
        "vision",
        "pixtral",
        "paligemma",
        "idefics",
        "internvl",
        "minicpm-v",
        "molmo",
        "glm-4v",
        "gemma-3-",
        "gemma-3n",
    ];
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    MARKS.iter().any(|m| name.contains(m))
}

/// A model family whose transformers implementation has no SDPA path, so a
/// run that names no attention kernel ran the eager one (scores kept):
/// BLOOM, GPT-Neo, MPT and GPT-1 (`_supports_sdpa` unset in transformers
/// 4.x and 5.25), Gemma-2 (4.42–4.x pick eager unless SDPA is asked for,
/// `Gemma2PreTrainedModel._check_and_enable_sdpa`; 5.25 refuses SDPA:
/// "does not support an attention implementation through
/// torch.nn.functional.scaled_dot_product_attention yet", met replaying it)
/// and gpt-oss (eager unless its flash kernels are installed); among the
/// encoders and encoder–decoders (transformers 5.25's masked-LM and seq2seq
/// classes without `_supports_sdpa`), DeBERTa (v1–v3), MPNet (the
/// sentence-transformers `all-mpnet` models), Longformer, LED, LongT5,
/// BigBird, RoFormer, RemBERT, Funnel, SqueezeBERT, ConvBERT, Switch
/// Transformers, PEGASUS-X and ProphetNet. Read from the model's name: not
/// Gemma 1 ("gemma-2b", "gemma-7b") nor GPT-NeoX.
pub(super) fn without_sdpa_in_transformers(model: &str) -> bool {
    const PREFIXES: [&str; 22] = [
        "bloom",
        "gemma-2-",
        "gemma2",
        "gpt-oss",
        "mpt-",
        "deberta",
        "mpnet",
        "all-mpnet",
        "longformer",
        "led-",
        "long-t5",
        "longt5",
        "bigbird",
        "roformer",
        "rembert",
        "funnel",
        "squeezebert",
        "conv-bert",
        "convbert",
        "switch-",
        "pegasus-x",
        "prophetnet",
    ];
    let name = model.rsplit('/').next().unwrap_or(model);
    PREFIXES.iter().any(|p| name.starts_with(p))
        || (name.starts_with("gpt-neo-") && !name.starts_with("gpt-neox"))
        || name == "openai-gpt"
}

/// What a preset says of a model's implementation that the schema's columns
/// cannot: norm kind and count, positions, biases, parallel blocks,
/// soft-capping, q/k norms, the ReLU activation, the head's bias and a vision
/// encoder; and,
/// when transformers' code runs the model, its fused projections and Python
/// GELU.
pub(super) fn copy_implementation(model: &mut ModelSpec, s: &ModelSpec, transformers_code: bool) {
    // The activation is the model's, whatever code runs it.
    model.relu = s.relu && model.mlp == Mlp::Plain;
    model.logits_bias = s.logits_bias;
    model.sdpa_mask = s.sdpa_mask;
    model.norm = s.norm;
    model.norms_per_layer = s.norms_per_layer;
    model.positions = s.positions;
    model.max_positions = s.max_positions;
    model.linear_bias = s.linear_bias;
    model.qkv_bias = s.qkv_bias;
    model.parallel_residual = s.parallel_residual;
    model.norm_fp32_affine = s.norm_fp32_affine;
    model.qk_norm = s.qk_norm;
    model.softcap = s.softcap;
    model.attention_sinks = s.attention_sinks;
    model.clamped_glu = s.clamped_glu;
    // A multimodal preset's vision encoder (the text columns cannot hold it).
    model.vision_params = s.vision_params;
    if transformers_code {
        model.fused_projections = s.fused_projections;
        model.fused_gate_up = s.fused_gate_up;
        model.gelu_new = s.gelu_new;
        model.dense_experts = s.dense_experts;
    }
}

/// The text names a module that computes q/k/v (or gate/up) in one matmul,
/// as the model code spells it: `query_key_value` (GPT-NeoX, Falcon, BLOOM,
/// ChatGLM), `c_attn` (GPT-2, Qwen 1), `qkv_proj` / `gate_up_proj` (Phi-3),
/// `Wqkv` (MPT), `wqkv` (InternLM2), `W_pack` (Baichuan).
pub(super) fn names_fused_module(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| {
            matches!(
                w,
                "query_key_value" | "c_attn" | "qkv_proj" | "gate_up_proj" | "wqkv" | "w_pack"
            )
        })
}

/// The names HSDP's shard group goes by: torchtitan's
/// `data_parallel_shard_degree` (`dp_shard`), DeepSpeed's hpZ
/// `zero_hpz_partition_size`, or in words.
pub(super) const HSDP_SHARD_GROUP: [&str; 7] = [
    "data_parallel_shard_degree",
    "dp_shard",
    "dp-shard",
    "shard group size",
    "sharding group size",
    "sharding_group_size",
    "shard group",
];

/// The GPUs a node holds, as the notes state them ("8 GPUs per node",
/// "4 GPUs/node", torchrun's `--nproc_per_node 4`, `gpus_per_node=8`) or
/// through the nodes the run spanned ("2 nodes", `--nnodes 4`,
/// `num_nodes=2`) over its `num_gpus`. `None` when they say neither, or a
/// count that does not divide the GPUs: the plan's default (8) stands. HSDP
/// shards within a node (PyTorch FSDP's `HYBRID_SHARD`: the intra-node
/// group), so its shard group follows.
pub(super) fn stated_node(notes: &str, num_gpus: u32) -> Option<u32> {
    let lower = notes.to_ascii_lowercase();
    let per_node = stated_after(
        &lower,
        &[
            "nproc_per_node",
            "nproc-per-node",
            "gpus_per_node",
            "gpus-per-node",
            "gpus per node",
            "devices per node",
        ],
    )
    .or_else(|| {
        [
            " gpus per node",
            " gpus/node",
            " gpus a node",
            " gpus each",
            " per node",
        ]
        .iter()
        .find_map(|w| stated_number(&lower, w))
    });
    let nodes = || {
        stated_after(&lower, &["nnodes", "num_nodes", "num-nodes", "nodes"])
            .or_else(|| stated_number(&lower, " nodes"))
            .or_else(|| stated_number(&lower, " node ").filter(|&n| n == 1))
            .filter(|&n| n > 0 && num_gpus.is_multiple_of(n))
            .map(|n| num_gpus / n)
    };
    per_node.filter(|&n| n > 0 && n <= num_gpus).or_else(nodes)
}

/// The whole number the notes give after one of `names`, each a whole word
/// ("EP 8", "n_shared_experts=2", "num_shared_experts: 2").
pub(super) fn stated_after(notes: &str, names: &[&str]) -> Option<u32> {
    stated_after_unless(notes, names, &[])
}

/// A name found at `at` in `text` starts a word — "EP" is not the end of
/// "STEP" — and does not follow one of `not_after` (a cap's or another
/// quantity's name: "max sequence length", `max_seq_len`).
pub(super) fn name_starts_at(text: &str, at: usize, not_after: &[&str]) -> bool {
    let before = &text[..at];
    before
        .chars()
        .next_back()
        .is_none_or(|c| !c.is_ascii_alphanumeric())
        && !not_after.iter().any(|w| before.trim_end().ends_with(w))
}

/// [`stated_after`], passing over a name whose preceding text ends with one
/// of `not_after` (a cap's or another quantity's: "max sequence length",
/// `max_seq_len`).
pub(super) fn stated_after_unless(notes: &str, names: &[&str], not_after: &[&str]) -> Option<u32> {
    after_names(notes, names, not_after).find_map(|after| {
        let rest = after.trim_start_matches([' ', '=', ':']);
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        rest[..digits].parse().ok()
    })
}

/// The text after each whole-word occurrence of `names` in `text`, name by
/// name ([`name_starts_at`]).
pub(super) fn after_names<'t>(
    text: &'t str,
    names: &'t [&'t str],
    not_after: &'t [&'t str],
) -> impl Iterator<Item = &'t str> + 't {
    names.iter().flat_map(move |name| {
        text.match_indices(name)
            .filter(move |&(at, _)| name_starts_at(text, at, not_after))
            .map(move |(at, _)| &text[at + name.len()..])
    })
}

/// The notes (lower-cased) say the batches the peak ran carried padding
/// ("padded per batch", "left-padded to max_length 64", "the last 25 % of
/// every row padding"), so that transformers hands SDPA an attention mask
/// ([`crate::plan::TrainingSpec::padded`]). A clause about the vocabulary
/// ("vocab padded to 50304") is not about the rows; packed or padding-free
/// batches, and flash-attn's varlen path, which drops the padding, pass no
/// mask; length-bucketed batches (or `group_by_length`) put the longest rows —
/// truncated at the stated length, the batch that sets the peak — together,
/// with no padding among them.
pub(super) fn stated_padding(lower: &str) -> bool {
    // ("bucketed", not "bucket": DDP's `gradient_as_bucket_view` is no batching.)
    if stated_packing(lower) {
        return false;
    }
    const NONE: [&str; 9] = [
        "padding-free",
        "padding_free",
        "unpadded",
        "no padding",
        "without padding",
        "bucketed",
        "bucketing",
        "group_by_length",
        "flash_attention_2",
    ];
    if NONE.iter().any(|w| lower.contains(w)) {
        return false;
    }
    lower
        .split(';')
        .filter(|clause| !clause.contains("vocab"))
        .any(|clause| clause.contains("padded") || clause.contains("padding"))
}

/// The adapter dropout probability the notes state (`dropout 0.1`,
/// `lora_dropout=0.05`): whether it is non-zero.
pub(super) fn stated_dropout(notes: &str) -> Option<bool> {
    let at = notes.find("dropout")? + "dropout".len();
    let rest = notes[at..].trim_start_matches([' ', '=', ':']);
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse::<f64>().ok().map(|p| p > 0.0)
}

/// The matrices the notes say a method adapts ("BOFT block 4 on q+v").
pub(super) fn stated_targets(notes: &str) -> Option<LoraTargets> {
    let at = notes.find(" on ")? + " on ".len();
    let word = notes[at..].split([' ', ';', ',', '(']).next()?;
    parse_targets("notes", word).ok()
}

/// The notes name one of `tools` as a whole word (lower-case names; `-`
/// belongs to a word), so "control" is not TRL.
pub(super) fn names_tool(notes: &str, tools: &[&str]) -> bool {
    notes
        .to_ascii_lowercase()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .any(|w| tools.contains(&w))
}

/// The framework profile of a tool the notes name (whole words, so
/// "control" is not TRL): Megatron-Core's users (NeMo, Megatron-Bridge) get
/// Megatron-LM's (so does ms-swift's Megatron-SWIFT backend, `megatron sft`,
/// which trains through `megatron.core`: ms-swift 4.6.0 `swift/megatron`);
/// Unsloth, LLaMA-Factory, ms-swift and axolotl their own
/// (before TRL's, whose trainers they run: Unsloth's notebooks train with
/// TRL's `SFTTrainer`, axolotl's RL configs with TRL's trainers); TRL's
/// trainers TRL's.
pub(super) fn other_framework(notes: &str) -> Option<Framework> {
    const TOOLS: [(&[&str], Framework); 6] = [
        (
            &[
                "nemo",
                "megatron-core",
                "megatron-bridge",
                "mcore",
                "megatron-swift",
                "nanotron",
            ],
            Framework::Megatron,
        ),
        (&["unsloth"], Framework::Unsloth),
        (&["llama-factory", "llamafactory"], Framework::LlamaFactory),
        (&["ms-swift"], Framework::MsSwift),
        (&["axolotl"], Framework::Axolotl),
        (&TRL_NAMES, Framework::Trl),
    ];
    TOOLS
        .iter()
        .find(|(names, _)| names_tool(notes, names))
        .map(|(_, f)| *f)
}

/// TRL and its trainers, as notes name them (whole words, lower-cased).
pub(super) const TRL_NAMES: [&str; 5] = [
    "trl",
    "sfttrainer",
    "dpotrainer",
    "grpotrainer",
    "ktotrainer",
];

/// The notes (lower-cased) name a fused linear + cross-entropy: Apple's Cut
/// Cross-Entropy (axolotl's `CutCrossEntropyPlugin`, Unsloth), or Liger's by
/// its name.
pub(super) fn fused_linear_ce(lower: &str) -> bool {
    [
        "cut cross-entropy",
        "cut cross entropy",
        "cut_cross_entropy",
        "cutcrossentropy",
        "fused linear cross",
        "fused linear-cross",
        "fused_linear_cross",
    ]
    .iter()
    .any(|k| lower.contains(k))
        || lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == "cce" || w == "flce")
}
