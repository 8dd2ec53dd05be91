//! A case row read into a plan: the columns, the named preset, the notes and the framework's defaults.

use super::*;

/// Builds the plan a case row describes. Settings the schema does not carry
/// come from the framework profile, as for any user.
pub(super) fn plan_for(r: &Row) -> Result<Plan, String> {
    let framework = framework_of(r)?;
    let (model, config_dropout) = model_of(r, framework)?;
    let notes = r.get("notes");
    let oom = r.oom().unwrap_or(false);
    let gpu = gpu_of(r, oom)?;

    // Not stated in its column: the count the GPU column may carry ("8x H100").
    let num_gpus = r
        .u32("num_gpus")?
        .or_else(|| stated_gpu_count(r.get("gpu")))
        .unwrap_or(1);
    if num_gpus == 0 {
        return Err("num_gpus is 0: a run has at least one GPU".into());
    }
    let mut plan = Plan {
        model,
        gpu,
        ..Plan::default()
    };
    // On the row's GPU count: a framework may decide its defaults by it
    // (`Framework::default_checkpointing`).
    plan.parallel.num_gpus = num_gpus;
    // … and on the torchtune release the notes state ("torchtune 0.2.1",
    // "torchtune==0.1.1"; unstated, the current recipes), whose 0.1–0.2 had
    // only the standard loss (`Plan::default_loss`).
    plan.training.torchtune = stated_release(notes, &["torchtune ", "torchtune==", "torchtune v"])
        .map_or(TorchtuneRelease::Current, |(major, minor)| {
            TorchtuneRelease::of(major, minor)
        });
    // … and the torchtitan release ("torchtitan 0.2.0", "torchtitan==0.1.0";
    // unstated, the current one), whose model code up to 0.2.1 repeats
    // grouped k and v for SDPA.
    plan.training.torchtitan = stated_full_release(
        &notes.to_ascii_lowercase(),
        &["torchtitan ", "torchtitan==", "torchtitan v"],
    )
    .map_or(TorchtitanRelease::Current, |(major, minor, patch)| {
        TorchtitanRelease::of(major, minor, patch)
    });
    plan.set_framework(framework);
    // Block dropout (below), from the named checkpoint's config.
    let dropout = plan.dropout_for(config_dropout);
    let t = &mut plan.training;
    t.micro_batch = match r
        .u32("micro_batch")?
        .or_else(|| stated_micro_batch(notes, framework))
    {
        Some(b) => b,
        // An OOM row's lower bound, as for the sequence below.
        None if oom => 1,
        None => return Err("micro_batch is empty (the batch run is unknown)".into()),
    };
    t.seq_len = match r.tokens("seq_len")?.or_else(|| stated_seq_len(notes)) {
        Some(s) => s,
        // An OOM row only needs a lower bound: memory never falls as the
        // sequence grows (tests/properties.rs), so a run that does not fit
        // at one token did not fit at its real length. Its prediction is
        // that lower bound.
        None if oom => 1,
        None => return Err("seq_len is empty (the sequence length run is unknown)".into()),
    };
    if plan.model.arch == Arch::EncoderDecoder {
        // The decoder's own length, when the notes give the labels' length
        // ("max_target_length 128"); seq_len is then the source's.
        t.target_len = stated_target_len(notes);
    }
    t.grad_accum = r.u32("grad_accum")?.unwrap_or(1).max(1);
    // `AMP (bf16)`, `bf16 (mixed)`: the brackets are prose around the name.
    let precision = r.word("precision").replace(['(', ')'], "");
    let precision = precision.trim_matches('-').replace("--", "-");
    t.precision = match precision.as_str() {
        // Not stated: the framework's default (set above).
        "" => t.precision,
        // Beside the schema's names, Lightning Fabric's precision strings
        // (`bf16-mixed`, `bf16-true`, `32-true`), which LitGPT rows quote.
        "fp32" | "32" | "32-true" => Precision::Fp32,
        // Lightning 1.x's `precision=16` is its native AMP in fp16.
        "amp-fp16" | "16-mixed" | "fp16-mixed" | "16" => Precision::AmpFp16,
        "amp-bf16" | "bf16-mixed" => Precision::AmpBf16,
        "bf16" | "bf16-true" => Precision::Bf16,
        "fp16" | "16-true" | "fp16-true" => Precision::Fp16,
        "fp8" => Precision::Fp8,
        // Other spellings of the same policies: TF32 matmuls keep fp32
        // tensors; dtype names alone are pure (`torch_dtype=bfloat16`);
        // "mixed" / "amp" is autocast over fp32 weights.
        "tf32" | "fp32-tf32" | "float32" => Precision::Fp32,
        "mixed-bf16" | "bf16-amp" | "amp-bfloat16" | "bfloat16-mixed" => Precision::AmpBf16,
        "mixed-fp16" | "fp16-amp" | "amp-float16" | "float16-mixed" => Precision::AmpFp16,
        "bfloat16" | "pure-bf16" => Precision::Bf16,
        "float16" | "half" | "pure-fp16" => Precision::Fp16,
        "float8" | "fp8-mixed" | "fp8-e4m3" | "fp8-hybrid" | "float8-e4m3fn" => Precision::Fp8,
        // Lightning Fabric's `transformer-engine` precision: Transformer
        // Engine's fp8 matmuls over bf16 weights (`TransformerEnginePrecision`,
        // weights dtype bfloat16 by default).
        "transformer-engine" | "transformer-engine-float16" => Precision::Fp8,
        // Autocast named without its dtype: PyTorch's CUDA default is fp16
        // (`torch.autocast("cuda")`, `torch.cuda.amp.autocast()`).
        "amp" | "mixed" | "autocast" | "mixed-precision" => Precision::AmpFp16,
        // Other orders of the same words ("bfloat16 AMP", "mixed precision
        // bf16", "fp8 (transformer engine)"): one dtype named, with or
        // without autocast.
        p => precision_in_words(p).ok_or(format!("precision `{p}` is not in the schema"))?,
    };
    t.optimizer = match r.word("optimizer").as_str() {
        // Adam keeps the same two moments as AdamW (torch.optim state dicts).
        "adamw" | "adam" | "" => Optimizer::Adamw,
        "adamw-8bit" | "adamw8bit" | "adam-8bit" => Optimizer::Adamw8bit,
        "adamw-4bit" | "adamw4bit" | "adam-4bit" => Optimizer::Adamw4bit,
        "paged-adamw" | "paged-adamw-32bit" => Optimizer::PagedAdamw,
        "paged-adamw-8bit" => Optimizer::PagedAdamw8bit,
        "adafactor" => Optimizer::Adafactor,
        "sgd" => Optimizer::Sgd,
        "sgd-momentum" => Optimizer::SgdMomentum,
        "lion" => Optimizer::Lion,
        // Beyond the schema's names: optimizers the model knows by name.
        "muon" => Optimizer::Muon,
        "adan" => Optimizer::Adan,
        // PEFT's LoRA-FA optimizer is AdamW over B (the A matrices are frozen:
        // the LoRA variant below).
        "other" if notes.contains("LoRA-FA") => Optimizer::Adamw,
        "other" => other_optimizer(notes).ok_or(
            "optimizer `other` cannot be modelled without its state size (modelled when the notes \
             name Muon, Adan, GaLore, APOLLO, 4- or 8-bit Adam, Adam-mini, RMSprop, Adagrad, CAME, Sophia, schedule-free AdamW, \
             LAMB, Prodigy, AdEMAMix, LOMO, AdaLomo or Adam)",
        )?,
        // Another name for one the model knows: transformers' `optim` ids
        // (`adamw_torch_fused`, `adamw_bnb_8bit`, `paged_adamw_32bit`,
        // `lion_32bit`), or an optimizer named by its states.
        o => named_optimizer(o).ok_or(format!("optimizer `{o}` is not in the schema"))?,
    };
    t.optimizer_in_backward = r.bool("optimizer_in_backward")?;
    t.optimizer_states_16bit = optimizer_states_16bit(notes);
    // LOMO and AdaLomo step each parameter as its gradient is made.
    if matches!(t.optimizer, Optimizer::Sgd | Optimizer::Adafactor)
        && fused_update_optimizer(&format!("{} {}", r.get("optimizer"), notes)).is_some()
    {
        t.optimizer_in_backward = true;
    }
    if t.optimizer.projects_gradients() {
        let lower = format!("{} {}", notes, r.get("optimizer")).to_ascii_lowercase();
        // `optim_args="rank=64"`, "GaLore rank 512"; else transformers' 128.
        t.galore_rank = stated_after(&lower, &["galore_rank", "galore rank", "rank"])
            // APOLLO-Mini is APOLLO at rank 1.
            .or_else(|| (t.optimizer == Optimizer::Apollo && lower.contains("mini")).then_some(1));
        // transformers' `*_layerwise` GaLore steps each parameter from a
        // post-accumulate-grad hook: the optimizer in backward.
        if lower.contains("layerwise") || lower.contains("layer-wise") {
            t.optimizer_in_backward = true;
        }
    }
    let ckpt_column = r.word("activation_checkpointing");
    // torchtitan's "selective" is per-op or every k-th block, as its
    // `selective_ac_option` says ("op", or k: 0.1–0.2.2's job config; its
    // Llama configs set "op").
    let titan_every = (framework == Framework::Torchtitan && ckpt_column == "selective")
        .then(|| selective_ac_every(notes))
        .flatten();
    let every_k = checkpoint_every_k(&ckpt_column).or(titan_every);
    t.checkpointing = match ckpt_column.as_str() {
        "none" | "false" | "no" | "off" | "0" => Checkpointing::None,
        "full"
        | "true"
        | "yes"
        | "on"
        | "1"
        // LitGPT's `activation_checkpointing_policy={Block}`: every block.
        | "block"
        | "every-layer"
        | "every-block"
        | "gradient-checkpointing"
        | "activation-checkpointing"
        | "recompute"
        | "full-recompute" => Checkpointing::Full,
        // Unsloth's offloading checkpointing, named in the column, and
        // checkpointing with the kept inputs on the host by its own names
        // (torchtune's `enable_activation_offloading`): below.
        "unsloth" | "offload" | "offloaded" | "full-offload" | "cpu-offload" => {
            Checkpointing::Full
        }
        "selective-op" | "op-selective" | "per-op" | "op" | "per-op-selective"
        | "selective-per-op" => Checkpointing::OpSelective,
        // Full recomputation of every k-th block ("every 2 layers", "every
        // other block"; torchtitan's `selective_ac_option = "2"`, Megatron's
        // `--recompute-num-layers`): `checkpoint_every` below.
        _ if every_k.is_some() => Checkpointing::Full,
        // torchtitan's "selective" is its per-op policy (`SelectiveAC`, the
        // default in 0.3.0; `selective_ac_option = "op"` in its Llama configs);
        // elsewhere it is Megatron's attention-core recomputation.
        "selective" if framework == Framework::Torchtitan => Checkpointing::OpSelective,
        "selective" => Checkpointing::Selective,
        // TRL before 0.22 left checkpointing off, as the Trainer does.
        "" if framework == Framework::Trl
            && stated_trl_release(notes).is_some_and(|v| v < (0, 22, 0)) =>
        {
            Checkpointing::None
        }
        "" => t.checkpointing,
        c => {
            return Err(format!(
                "activation_checkpointing `{c}` is not in the schema"
            ))
        }
    };
    if let Some(k) = every_k {
        t.checkpoint_every = k;
    }
    t.activation_offload = r.bool("activation_offload")?;
    let lower = notes.to_ascii_lowercase();
    // Unsloth's own checkpointing (`use_gradient_checkpointing="unsloth"`)
    // moves each checkpointed block input to host memory and back for its
    // recomputation: checkpointing with the activations offloaded.
    let ckpt_argument = gradient_checkpointing_argument(&lower);
    let unsloth_ckpt = ckpt_argument.is_some_and(|a| a.starts_with("unsloth"));
    // It is Unsloth's default (`use_gradient_checkpointing = "unsloth"` in
    // `FastLanguageModel.from_pretrained` and `get_peft_model`, unsloth
    // 2026.3.4 `models/loader.py`, `models/llama.py`): a row naming Unsloth
    // (or whose framework column is `unsloth`) that states neither the column
    // nor the argument runs it.
    let unsloth_default = ckpt_column.is_empty()
        && ckpt_argument.is_none()
        && (framework == Framework::Unsloth
            || lower
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == "unsloth"));
    // The argument stated off (`use_gradient_checkpointing=False`) where the
    // column is empty: no checkpointing, whatever the profile's default.
    if ckpt_column.is_empty() && ckpt_argument.is_some_and(|a| a.starts_with("false")) {
        t.checkpointing = Checkpointing::None;
    }
    if unsloth_ckpt
        || unsloth_default
        || lower.contains("unsloth gradient checkpointing")
        || matches!(
            ckpt_column.as_str(),
            "unsloth" | "offload" | "offloaded" | "full-offload" | "cpu-offload"
        )
    {
        t.activation_offload = true;
        if t.checkpointing == Checkpointing::None {
            t.checkpointing = Checkpointing::Full;
        }
    }
    // Liger Kernel / Unsloth: fused norm and SwiGLU kernels.
    if lower.contains("liger") || lower.contains("unsloth") {
        t.fused_kernels = true;
    }
    // "zero_grad(set_to_none=False)", as PyTorch < 2.0 did by default; a
    // stated PyTorch 1.x also ran AdamW's per-parameter loop (its `foreach`
    // defaulted to False until 2.0's `_default_to_fused_or_foreach`).
    // A stated CUDA context beyond what lazy module loading leaves means the
    // kernels were loaded eagerly, as before PyTorch 1.13
    // ([`EAGER_MODULE_LOADING_CONTEXT_MIB`]): a PyTorch 1.x run.
    let eager_context = stated_number(notes, "MiB CUDA context")
        .is_some_and(|mib| mib > EAGER_MODULE_LOADING_CONTEXT_MIB);
    let torch_1 = ["torch 1.", "PyTorch 1.", "pytorch 1."]
        .iter()
        .any(|k| notes.contains(k))
        || eager_context;
    if notes.contains("set_to_none=False") || torch_1 {
        t.zero_grad_set_to_none = false;
    }
    if torch_1 {
        t.optimizer_impl = OptimizerImpl::ForLoop;
    }
    // The release the notes state; a PyTorch 1.x run of unknown minor (an
    // eagerly loaded context, a bare "PyTorch 1.x") as 1.10 or older, whose
    // softmax keeps more — the safe side, as for bitsandbytes' releases.
    let torch_release = stated_release(notes, &["torch ", "torch==", "PyTorch ", "pytorch "]);
    t.pytorch = match torch_release {
        Some((major, minor)) => PytorchRelease::of(major, minor),
        None if torch_1 => PytorchRelease::V1_10OrOlder,
        None => PytorchRelease::Current,
    };
    // The transformers release the notes state ("transformers 4.46.3",
    // "transformers==4.47.1"); unstated, the current one's loss.
    let transformers_release = stated_release(
        notes,
        &["transformers ", "transformers==", "transformers v"],
    );
    t.transformers = transformers_release.map_or(TransformersRelease::Current, |(major, minor)| {
        TransformersRelease::of(major, minor)
    });
    let kbit_prep_stated = stated_kbit_prep(&lower);
    if let Some(prep) = kbit_prep_stated {
        t.kbit_fp32_prep = prep;
    }
    t.sync_each_batch = notes.contains("sync_each_batch")
        || fsdp2_reduced_each_micro_batch(&lower, r.get("sharding"));
    // Stated, else the profile's (the tools built on the Trainer set it).
    t.nf4_double_quant = stated_double_quant(notes).unwrap_or(t.nf4_double_quant);
    // A bit-width column that names the double quantization ("nf4-dq").
    let bits_word = r.word("base_weight_bits");
    if bits_word.contains("-dq") || bits_word.contains("+dq") || bits_word.contains("double") {
        t.nf4_double_quant = true;
    }
    t.bnb_0_43_2 = runs_bnb_0_43_2(notes, transformers_release)
        || (framework == Framework::Litgpt && litgpt_pins_new_bnb(&lower));
    // The optimizer implementation the notes name: transformers' own AdamW
    // (`adamw_hf`) loops over parameters; `adamw_torch_fused` / "fused AdamW"
    // is the fused kernel; `adamw_torch` / foreach the multi-tensor one.
    // The optimizer column may hold the `optim` id itself.
    let named = format!("{notes} {}", r.get("optimizer").replace('-', "_"));
    if named.contains("adamw_hf") {
        t.optimizer_impl = OptimizerImpl::ForLoop;
    } else if named.contains("adamw_torch_fused")
        || named.contains("fused AdamW")
        || named.contains("fused=True")
    {
        t.optimizer_impl = OptimizerImpl::Fused;
    } else if named.contains("adamw_torch") || named.contains("foreach") {
        t.optimizer_impl = OptimizerImpl::Foreach;
    } else if framework.trains_through_trainer()
        && t.optimizer == Optimizer::Adamw
        && !named.contains("fused")
    {
        // No kernel named: the Trainer's default for the releases the notes
        // state ("transformers 4.44.2", "torch 2.4.0"), else the profile's.
        let transformers = stated_release(notes, &["transformers ", "transformers=="]);
        if let Some(k) = Framework::trainer_default_optimizer_impl(transformers, torch_release) {
            t.optimizer_impl = k;
        }
    }
    t.compile = r.bool("compile")? && compiled_by_inductor(notes);
    // The named checkpoint's config says whether its blocks drop out (GPT-2,
    // BERT, T5, OPT, BART: 0.1; GPT-NeoX, GPT-J, BLOOM, Falcon, Phi and the
    // Llama lineage: 0.0); a model no preset describes is read by its era's
    // habit, which its positions tell: the learned- and relative-position
    // families (GPT-2, BERT, OPT, BART, StarCoder 1, T5) ship 0.1, the
    // rotary and ALiBi ones (GPT-NeoX on, StarCoder2, MPT, Cohere, the Llama
    // lineage) 0.0 — unless the framework runs its own model code without
    // dropout layers (LitGPT, torchtitan, torchtune). Replayed: StarCoder2-3B,
    // no preset, kept 3 % less than with dropout masks.
    t.dropout = dropout;
    // A plain PyTorch or Accelerate loop runs whatever model implementation it
    // is given: a model named by its Hugging Face hub id (`org/name`) is the
    // transformers implementation, which upcasts softmax and logits to fp32.
    if matches!(framework, Framework::PlainPytorch | Framework::HfAccelerate) {
        t.fp32_upcasts = r.get("model").contains('/');
    }
    t.attention = match r.word("attention").as_str() {
        "eager" => Attention::Eager,
        // Not stated, and transformers' code for a family it gives no SDPA
        // path runs eager ([`without_sdpa_in_transformers`]).
        "" if framework.runs_the_models_own_code()
            && without_sdpa_in_transformers(&r.get("model").to_ascii_lowercase()) =>
        {
            Attention::Eager
        }
        // SDPA's math backend ("sdpa (math)") and attention written as
        // matmuls and a softmax materialise the scores as eager does.
        a if a.contains("math") || a.contains("eager") || matches!(a, "manual" | "naive") => {
            Attention::Eager
        }
        _ => Attention::Flash,
    };
    t.padded = stated_padding(&lower);
    let loss_column = r.word("loss");
    t.loss = match loss_name(&loss_column).unwrap_or(loss_column.as_str()) {
        "standard" => Loss::Standard,
        // Cut Cross-Entropy names itself; a fused loss the column could only
        // call "chunked" or leave unknown.
        "chunked" | "unknown" | "" if fused_linear_ce(&lower) => Loss::Fused,
        "fused" => Loss::Fused,
        "chunked" => match framework {
            // Liger's / Unsloth's loss is a fused linear + cross-entropy.
            _ if t.fused_kernels => Loss::Fused,
            Framework::Litgpt => Loss::ChunkedKeep,
            _ => Loss::ChunkedFree,
        },
        _ => t.loss,
    };
    // A task left empty is LoRA when a rank or targets are stated.
    // A note in parentheses after the task ("LoRA (4-bit)": the bit width
    // is the base_weight_bits column's).
    let task_word = r.word("task");
    let task_word = match with_note(&task_word) {
        Some((task, _)) if !task.is_empty() => task.to_string(),
        _ => task_word,
    };
    let lora_stated = !r.get("lora_rank").is_empty() || !r.get("lora_targets").is_empty();
    let task = match task_word.as_str() {
        "" if lora_stated => "lora",
        "" => "full",
        // Other names of the schema's tasks: every weight trained, whatever
        // the data; a LoRA variant; a 4-bit base; a PEFT method by name.
        "pretrain"
        | "pretraining"
        | "pre-training"
        | "continued-pretraining"
        | "full-sft"
        | "full-finetune"
        | "full-fine-tune"
        | "full-ft" => "full",
        // What the run trains on, not which weights: LoRA where the row
        // gives a LoRA rank or targets, else every weight (RL and `peft`
        // only with LoRA columns).
        t if TRAINING_DATA_TASKS.contains(&t) || CLASSIFIER_TASKS.contains(&t) => {
            if lora_stated {
                "lora"
            } else {
                "full"
            }
        }
        "grpo" | "ppo" | "rlhf" | "peft" if lora_stated => "lora",
        // LoRA+ trains the same matrices at two learning rates.
        "dora" | "lora-fa" | "rslora" | "lora+" | "loraplus" | "lora-plus" => "lora",
        "q-lora" | "qdora" => "qlora",
        // QLoRA with its base's format, what the run trained on or the
        // library ("qlora-nf4", "sft-qlora", "peft-qlora").
        t if t.split('-').any(|w| w == "qlora") => "qlora",
        t if GENERIC_ADAPTER_TASKS.contains(&t)
            || t == "adapter"
            || named_adapter_method(t).is_some() =>
        {
            "other-peft"
        }
        t => t,
    };
    // Not stated: QLoRA's 4-bit NF4 base (Dettmers et al. 2023), else 16-bit.
    let base_bits = r
        .bits("base_weight_bits")?
        .unwrap_or(if task == "qlora" { 4 } else { 16 });
    // A task column that names a method or variant is read as the notes would
    // be; a bare `adapter` is LitGPT's (`finetune_adapter`: LLaMA-Adapter).
    let notes_and_task = match task_word.as_str() {
        "" | "full" | "lora" | "qlora" | "other-peft" => notes.to_string(),
        "adapter" => format!("{notes} llama-adapter"),
        named => format!("{notes} {named}"),
    };
    let notes = notes_and_task.as_str();
    t.finetune = match task {
        "full" => Finetune::Full,
        "lora" | "qlora" => Finetune::Lora {
            // Not stated: the framework's defaults.
            rank: r.u32("lora_rank")?.unwrap_or(framework.lora_defaults().0),
            targets: match r.get("lora_targets") {
                "" => framework.lora_defaults().1,
                t => parse_targets("lora_targets", t)
                    .map_err(|e| format!("lora_targets: {}", e.reason))?,
            },
            base_bits,
            // No column states it: the notes may ("dropout 0.1",
            // "lora_dropout=0.05"), else the framework's default.
            dropout: stated_dropout(notes).unwrap_or(framework.defaults().lora_dropout),
            variant: if notes.contains("LoRA-FA") || task_word == "lora-fa" {
                LoraVariant::LoraFa
            } else if notes.contains("DoRA")
                || notes.contains("use_dora")
                || matches!(task_word.as_str(), "dora" | "qdora")
            {
                LoraVariant::Dora
            } else {
                LoraVariant::Lora
            },
        },
        "other-peft" => {
            let method = named_adapter_method(notes).unwrap_or(AdapterMethod::Generic);
            // Prompt tuning: "200 virtual tokens prepended".
            let virtual_tokens = stated_number(notes, "virtual tokens").unwrap_or(0);
            // Not stated: the count the method's defaults give on this model
            // (LLaMA-Adapter, IA³, LN tuning, prefix tuning), as PEFT's or
            // LitGPT's trainable-parameter print would report it.
            let trainable_params = match r.f64("trainable_params")? {
                Some(m) => (m * 1e6).round() as u64,
                None => method
                    .default_trainable_params(&plan.model, virtual_tokens)
                    .ok_or(
                        "trainable_params is empty for an other-peft row, and the method's \
                         count does not follow from the model's shape",
                    )?,
            };
            Finetune::Adapter {
                trainable_params,
                base_bits,
                method,
                virtual_tokens,
                // "… on q+v": the adapted matrices, else PEFT's default.
                targets: stated_targets(notes).unwrap_or(LoraTargets::QV),
            }
        }
        k => return Err(format!("task `{k}` is not in the schema")),
    };
    if matches!(t.finetune, Finetune::Full) {
        t.frozen_layers = stated_frozen_layers(notes).unwrap_or(0);
    }
    t.objective = stated_objective(notes);
    // TRL's `precompute_ref_log_probs` named without a no ("precompute_ref_log_probs",
    // "precompute_ref_log_probs=True"; not "=False").
    t.precompute_ref = lower.contains("precompute_ref_log_probs")
        && stated_flag(&lower, "precompute_ref_log_probs") != Some(false);
    // A CUDA context the source measured ("incl. ~1343 MiB CUDA context": CUDA
    // before lazy module loading) replaces the default, as a user would enter it.
    if let Some(mib) = stated_number(notes, "MiB CUDA context") {
        plan.runtime.cuda_context_mib = mib.into();
    }
    // The allocator's setting, as the run's environment gave it.
    plan.runtime.expandable_segments = stated_expandable_segments(&lower);
    let p = &mut plan.parallel;
    p.num_gpus = num_gpus;
    p.tp = r.u32("tp")?.unwrap_or(1).max(1);
    p.pp = r.u32("pp")?.unwrap_or(1).max(1);
    p.cp = r.u32("cp")?.unwrap_or(1).max(1);
    // What the schema has no column for, as the notes state it: sequence
    // parallelism (else the framework's default, from `set_framework`), the
    // expert-parallel degree, the interleaved schedule's model chunks.
    if stated_sequence_parallel(notes) {
        p.sequence_parallel = true;
    }
    if let Some(ep) = stated_degree(notes, &["EP", "expert parallel", "expert-parallel"]) {
        p.ep = ep;
    }
    // GPUs per node, where the notes say (only HSDP's shard group depends on
    // it), and HSDP's shard group where they name it ([`stated_node`]).
    if let Some(n) = stated_node(&format!("{notes}; {}", r.get("num_gpus")), p.num_gpus) {
        p.gpus_per_node = n;
    }
    if let Some(n) = stated_after(&lower, &HSDP_SHARD_GROUP) {
        // The model shards HSDP within a node of `gpus_per_node` GPUs over
        // TP × PP: the stated group is that node.
        let node = n
            .max(1)
            .checked_mul(p.tp)
            .and_then(|n| n.checked_mul(p.pp))
            .filter(|&n| n <= p.num_gpus);
        if let Some(node) = node {
            p.gpus_per_node = node;
        }
    }
    if let Some(v) =
        stated_degree(notes, &["VPP", "virtual pipeline", "virtual stages"]).filter(|_| p.pp > 1)
    {
        p.virtual_stages = v;
        p.pp_schedule = crate::plan::PipelineSchedule::Interleaved;
    }
    if p.pp > 1 {
        let stated = stated_pipeline_microbatches(notes, plan.training.micro_batch, p.dp());
        // Neither the notes nor the gradient-accumulation column: at least as
        // many micro-batches as stages, which a pipelined run needs to keep
        // every stage busy (fewer leave 1F1B's warm-up idle), so the first
        // stage holds `pp` in flight, the schedule's steady state.
        let unstated = r.get("grad_accum").is_empty();
        p.pp_microbatches = stated.unwrap_or(if unstated { p.pp } else { 0 });
    }
    p.sharding = match r.word("sharding").as_str() {
        "" if p.num_gpus / (p.tp * p.pp * p.cp).max(1) <= 1 => Sharding::None,
        // Data parallel across GPUs, not stated: what the framework's
        // multi-GPU launch does by default.
        // DDP for Trainer/Accelerate/torchrun loops, DeepSpeed's default
        // ZeRO stage 0 and Megatron without the distributed optimizer.
        "" if shards_with_fsdp(framework) => Sharding::FsdpFull,
        "" => Sharding::Ddp,
        // A strategy with a note in parentheses: the one named inside ("FSDP
        // (SHARD_GRAD_OP)"), else the one outside ("fsdp (8 GPUs)").
        s => sharding_word(s)
            .or_else(|| in_parentheses(s, sharding_word))
            .ok_or(format!("sharding `{s}` is not in the schema"))?,
    };
    // Megatron's distributed optimizer (`--use-distributed-optimizer`) shards
    // the fp32 master weights and Adam states over the data-parallel ranks —
    // ZeRO-1's layout — where the column could only say data parallelism.
    if framework == Framework::Megatron
        && p.sharding == Sharding::Ddp
        && stated_distributed_optimizer(notes)
    {
        p.sharding = Sharding::Zero1;
    }
    if p.sharding == Sharding::Ddp && stated_bucket_view(notes) {
        p.gradient_as_bucket_view = true;
    }
    // ZeRO++'s hpZ group: as the notes state it (`zero_hpz_partition_size`),
    // else, for ZeRO++ named in the column, a node — as ZeRO++'s tutorial
    // configures it — or all the data-parallel ranks where fewer.
    if p.sharding == Sharding::Zero3 {
        let dp = p.dp();
        let column = r.word("sharding");
        let zero_pp = column.contains("++") || ZERO_PLUS_PLUS.contains(&column.as_str());
        let stated = stated_after(
            &lower,
            &["zero_hpz_partition_size", "hpz_partition_size", "hpz"],
        );
        if let Some(n) = stated {
            p.hpz_partition_size = n.max(1);
        } else if zero_pp {
            p.hpz_partition_size = if dp.is_multiple_of(p.gpus_per_node) {
                p.gpus_per_node
            } else {
                dp
            };
        }
    }
    // The DeepSpeed release the notes state ("deepspeed 0.19.8", "DeepSpeed
    // v0.9.5"); else that of the PyTorch they state — DeepSpeed 0.18.3 came
    // out in December 2025 and 0.19.0 in May 2026 (their sdists' dates on
    // PyPI), beside PyTorch 2.10 and 2.11; else the current one, as for
    // PyTorch's.
    p.deepspeed = match stated_full_release(&lower, &["deepspeed ", "deepspeed=="]) {
        Some((major, minor, patch)) => DeepspeedRelease::of(major, minor, patch),
        None => match torch_release {
            Some(v) if v < (2, 10) => DeepspeedRelease::V0_18_2OrOlder,
            Some((2, 10)) => DeepspeedRelease::V0_18_3To0_18,
            None if torch_1 => DeepspeedRelease::V0_18_2OrOlder,
            _ => DeepspeedRelease::Current,
        },
    };
    // A sharding column that says "offload" ("ZeRO-2 offload", "zero3-offload")
    // where the offload column is empty: DeepSpeed's ZeRO-Offload moves the
    // optimizer to the host (stage 1/2); transformers' "ZeRO-3 Offload"
    // config moves the parameters too.
    let sharding_offload = r.word("sharding").contains("offload");
    // The device in parentheses after what went ("optimizer (nvme)"): the
    // host unless it names NVMe.
    let offload_word = r.word("offload");
    let (offload_word, nvme) = match with_note(&offload_word) {
        Some((what, device)) if !what.is_empty() => (what.to_string(), device.contains("nvme")),
        _ => (offload_word, false),
    };
    p.offload = match offload_word.as_str() {
        "" if sharding_offload && p.sharding == Sharding::Zero3 => Offload::ALL_CPU,
        "" if sharding_offload && matches!(p.sharding, Sharding::Zero1 | Sharding::Zero2) => {
            Offload::OPTIMIZER_CPU
        }
        "none" | "" => Offload::NONE,
        "optimizer" => Offload::OPTIMIZER_CPU,
        "params+optimizer" | "optimizer+params" => Offload::ALL_CPU,
        // FSDP's `CPUOffload(offload_params=True)` moves the parameters, their
        // gradients and so the optimizer step to the CPU; DeepSpeed's names.
        "params" | "param" | "parameters" | "offload-params" | "cpu-offload-params" => {
            Offload::ALL_CPU
        }
        "optimizer-cpu" | "cpu-optimizer" | "offload-optimizer" | "optimizer-states"
        | "optimizer:cpu" | "optimizer-to-cpu" => Offload::OPTIMIZER_CPU,
        // ZeRO-Offload (Ren et al. 2021): the optimizer's states, gradients
        // and update on the host, the parameters on the GPU.
        "zero-offload" => Offload::OPTIMIZER_CPU,
        o => {
            return Err(format!(
                "offload `{o}` is not in the schema (none, optimizer or params+optimizer)"
            ))
        }
    };
    if nvme {
        for d in [&mut p.offload.optimizer, &mut p.offload.params] {
            if *d == OffloadDevice::Cpu {
                *d = OffloadDevice::Nvme;
            }
        }
    }
    // Parameters offloaded where the sharding column cannot hold them: under
    // ZeRO-1/2 DeepSpeed ignores `offload_param` (it builds those stages
    // without it, deepspeed 0.19.8 `runtime/zero/config.py`: "Valid only
    // with stage 3"), so the optimizer alone went to the host; with no
    // sharding or plain data parallelism, the only runtimes that offload
    // parameters shard them too — FSDP where the framework shards with it,
    // in a plain PyTorch loop (its own) or where the notes name it, else
    // DeepSpeed's ZeRO-3 — and the column named the layout the run saw, not
    // its runtime.
    if p.offload.params_offloaded() && !p.sharding.shards_params() {
        if matches!(p.sharding, Sharding::Zero1 | Sharding::Zero2) {
            p.offload.params = OffloadDevice::None;
        } else if shards_with_fsdp(framework)
            || framework == Framework::PlainPytorch
            || lower.contains("fsdp")
        {
            p.sharding = Sharding::FsdpFull;
        } else {
            p.sharding = Sharding::Zero3;
        }
    }
    // A row that runs TRL's trainers, with the TRL release its notes state.
    let trl = runs_trl(plan.framework, notes).then(|| stated_trl_release(notes));
    let trl_prepares = trl.and_then(|release| {
        trl_kbit_preparation(release, &plan.training, kbit_prep_stated.is_some())
    });
    if let Some((prep, embeddings_16bit)) = trl_prepares {
        plan.training.kbit_fp32_prep = prep;
        plan.training.kbit_embeddings_16bit = embeddings_16bit;
    }
    if lower.contains("peft_module_casting_to_bf16") {
        plan.training.kbit_embeddings_16bit = true;
    }
    // TRL's own fused LM head from 1.15.0: a row stating such a release
    // computes its loss there whatever the loss column calls it (TRL refuses
    // Liger's fused cross-entropy beside it); any other TRL row took the
    // model's logits, as the Trainer does, unless its column says otherwise.
    // From 1.7.0 to 1.14 its `SFTTrainer` defaulted to its chunked NLL
    // unless Liger was on or the notes name `loss_type` "nll". Its ORPO and
    // CPO trainers never took the fused head ([`Plan::default_loss`]).
    if let Some(release) = trl {
        let own_head = !fused_linear_ce(&lower) && plan.training.objective != Objective::Orpo;
        let chunked_nll = plan.training.objective == Objective::Sft
            && release.is_some_and(|v| (TRL_CHUNKED_NLL..TRL_FUSED_LM_HEAD).contains(&v))
            && !lower.contains("liger")
            && !stated_nll_loss_type(&lower);
        if own_head && release.is_some_and(|v| v >= TRL_FUSED_LM_HEAD) {
            plan.training.loss = Loss::TiledLogprob;
        } else if own_head && chunked_nll {
            plan.training.loss = Loss::ChunkedNll;
        } else if matches!(plan.training.loss, Loss::TiledLogprob | Loss::ChunkedNll) {
            plan.training.loss = Loss::Standard;
        }
        // Its log-probabilities' Triton kernel from 1.14.0; an unstated
        // release is read as an earlier one, as for its k-bit preparation.
        plan.training.logprob_kernel = release.is_some_and(|v| v >= TRL_LOGPROB_KERNEL);
        // Its DPO's outputs by release; unstated, the current count.
        plan.training.trl = release.map_or(TrlRelease::Current, |(major, minor, _)| {
            TrlRelease::of(major, minor)
        });
    }
    plan.training.adapters_16bit = stated_flag(&lower, "autocast_adapter_dtype") == Some(false)
        || trl.flatten().is_some_and(|release| {
            trl_adapters_16bit(release, &plan.training, plan.parallel.sharding)
        });
    // An unstated policy under PEFT's k-bit preparation: checkpointed, as
    // `prepare_model_for_kbit_training` leaves the model (`Plan::default_checkpointing`);
    // not under TRL, which hands it its own `gradient_checkpointing` argument.
    if ckpt_column.is_empty() && plan.kbit_preparation_checkpoints() && trl_prepares.is_none() {
        plan.training.checkpointing = Checkpointing::Full;
    }
    // A full fine-tune stated in pure 16 bits whose framework keeps the
    // trainable weights in fp32 all the same runs as AMP over them.
    if upcasts_trainable_weights(&plan, &lower, r.get("sharding")) {
        plan.training.precision = match plan.training.precision {
            Precision::Bf16 => Precision::AmpBf16,
            Precision::Fp16 => Precision::AmpFp16,
            p => p,
        };
    }
    Ok(plan)
}

/// Whether the framework casts the trainable 16-bit weights of `plan` to fp32
/// (`lower`: the notes, lower-cased; `sharding`: the column as written), so a
/// run the row calls pure bf16 or fp16 — a 16-bit checkpoint under
/// `--bf16`/`--fp16` — stores fp32 weights, gradients and optimizer states
/// and computes under autocast: the planner's AMP. By default as the
/// framework runs ([`Plan::framework_upcasts_trainable`]: the Trainer and the
/// tools on it under FSDP, with the `--bf16` their recipes pass; LLaMA-Factory
/// outside DeepSpeed), but not where the notes say mixed precision was off
/// ([`stated_mixed_precision`]), nor for LLaMA-Factory's BAdam or axolotl's
/// own FSDP2 preparation, which casts nothing; and for a loop of Accelerate's
/// own (or PEFT's scripts, which run on it) under FSDP where the notes turn
/// mixed precision on.
fn upcasts_trainable_weights(plan: &Plan, lower: &str, sharding: &str) -> bool {
    let stated = stated_mixed_precision(lower);
    let framework = plan.framework;
    if stated == Some(false)
        || (framework == Framework::LlamaFactory && lower.contains("badam"))
        || (framework == Framework::Axolotl && names_fsdp2(lower, sharding))
    {
        return false;
    }
    plan.framework_upcasts_trainable()
        || (plan.pure_16bit_full_fine_tune()
            && plan.parallel.sharding.is_fsdp()
            && matches!(framework, Framework::HfAccelerate | Framework::Peft)
            && stated == Some(true))
}

/// The framework a row runs: the column, a tool in parentheses after it, or
/// the one its notes name behind `other`.
fn framework_of(r: &Row) -> Result<Framework, String> {
    // A note in parentheses after the framework ("torchtune (recipe)"), or
    // the tool inside them after `other` ("other (axolotl)").
    let framework_word = r.word("framework");
    let framework_word = match with_note(&framework_word) {
        Some(("" | "other", tool)) => tool.to_string(),
        Some((name, _)) => name.to_string(),
        None => framework_word,
    };
    let framework = match framework_word.as_str() {
        // The Trainer running TRL's trainers ("TRL SFTTrainer"): TRL's profile
        // (the schema has no `trl` value; [`runs_trl`]).
        "hf-trainer" if other_framework(r.get("notes")) == Some(Framework::Trl) => Framework::Trl,
        "hf-trainer" => Framework::HfTrainer,
        "hf-accelerate" => Framework::HfAccelerate,
        "litgpt" => Framework::Litgpt,
        "torchtune" => Framework::Torchtune,
        "torchtitan" => Framework::Torchtitan,
        "deepspeed" => Framework::Deepspeed,
        "megatron" => Framework::Megatron,
        "fsdp-qlora" => Framework::FsdpQlora,
        // A tool the notes name: NeMo and Megatron-Bridge run Megatron-Core;
        // axolotl, LLaMA-Factory, Unsloth, ms-swift and TRL have profiles of
        // their own over transformers' `Trainer`.
        "other" => other_framework(r.get("notes")).unwrap_or(Framework::PlainPytorch),
        "plain-pytorch" | "" => Framework::PlainPytorch,
        // Other names of the schema's frameworks.
        "peft" => Framework::Peft,
        "accelerate" => Framework::HfAccelerate,
        "transformers"
        | "hf-transformers"
        | "huggingface-trainer"
        | "transformers-trainer"
        | "hf-trainer-api"
        | "huggingface"
        | "hugging-face"
        | "hf"
        | "hugging-face-transformers"
        | "trainer" => Framework::HfTrainer,
        "lit-gpt" | "lit-llama" => Framework::Litgpt,
        "torch-titan" => Framework::Torchtitan,
        // Oumi trains through transformers' `Trainer` (or TRL's) by default.
        "oumi" => Framework::HfTrainer,
        // Megatron-DeepSpeed runs Megatron-LM's model code (its ZeRO stage is
        // the sharding column's).
        // EleutherAI's GPT-NeoX library is built on Megatron-DeepSpeed.
        // Hugging Face's nanotron keeps Megatron's states: an fp32 master copy
        // and fp32 gradient buffers beside 16-bit weights when it accumulates
        // in fp32, as its example configs do (nanotron 0.4 `helpers.py`
        // `init_optimizer_and_grad_accumulator`, `FP32GradientAccumulator`),
        // and a vocabulary-parallel loss (`sharded_cross_entropy`).
        "megatron-lm" | "megatron-deepspeed" | "gpt-neox" | "neox" | "nanotron" => {
            Framework::Megatron
        }
        "deepspeed-chat" | "openrlhf" => Framework::Deepspeed,
        // ms-swift by its command and project names (`swift sft`, ModelScope's
        // SWIFT); the notes need "ms-swift", "swift" being a word of its own.
        "swift" | "modelscope-swift" | "ms-swift" => Framework::MsSwift,
        // A loop of one's own, under torchrun or Lightning, or a PyTorch tool
        // running its own (or the given) model code with the sharding the
        // columns state: nanoGPT, MosaicML's Composer and LLM Foundry,
        // fairseq, Colossal-AI, XTuner (mmengine), verl.
        "pytorch"
        | "torch"
        | "torchrun"
        | "lightning"
        | "pytorch-lightning"
        | "fabric"
        | "lightning-fabric"
        | "pytorch-fsdp"
        | "fsdp"
        | "fsdp2"
        | "pytorch-ddp"
        | "ddp"
        | "nanogpt"
        | "composer"
        | "mosaic-composer"
        | "mosaicml-composer"
        | "llm-foundry"
        | "mosaicml"
        | "llmfoundry"
        | "mosaicml-llm-foundry"
        | "fairseq"
        | "metaseq"
        | "colossalai"
        | "colossal-ai"
        | "xtuner"
        | "mmengine"
        | "verl" => Framework::PlainPytorch,
        // Not PyTorch: XLA's and MLX's memory is not a caching allocator's
        // (JAX preallocates 75 % of the GPU unless told otherwise).
        f @ ("jax" | "flax" | "maxtext" | "levanter" | "t5x" | "paxml" | "praxis" | "easylm"
        | "tensorflow" | "tf" | "keras" | "mlx") => {
            return Err(format!(
                "framework `{f}` is not PyTorch: the model describes PyTorch's allocator (JAX \
                 and TensorFlow preallocate most of the GPU through XLA; MLX runs on Apple's \
                 unified memory)"
            ))
        }
        // A tool written in the column instead of `other` + notes
        // (`axolotl`, `NeMo`): read as the notes would be, and with its
        // hyphens as spaces ("trl-sft", "axolotl-v0.6").
        f => other_framework(f)
            .or_else(|| other_framework(&f.replace('-', " ")))
            .ok_or(format!("framework `{f}` is not in the schema"))?,
    };
    // DeepSpeed with tensor parallelism: before its AutoTP training
    // (March 2025, deepspeed 0.19.8's README news) a DeepSpeed run split over TP was
    // Megatron-DeepSpeed — Megatron-LM's model code, its vocab-parallel
    // embedding and loss (BLOOM, MT-NLG, GPT-NeoX) — and rows label it
    // `deepspeed`; AutoTP only when the notes say so.
    if framework == Framework::Deepspeed && r.u32("tp")?.unwrap_or(1) > 1 {
        let lower = r.get("notes").to_ascii_lowercase();
        let autotp = [
            "autotp",
            "auto tp",
            "auto-tp",
            "tp_model_init",
            "tensor_parallel",
        ]
        .iter()
        .any(|k| lower.contains(k));
        if !autotp {
            return Ok(Framework::Megatron);
        }
    }
    Ok(framework)
}

/// The model a row trains: its architecture columns, completed and told
/// apart by the preset its `model` column names and by its notes; and
/// whether that checkpoint's config trains with dropout in its blocks. The
/// framework says whether transformers' own code runs it.
fn model_of(r: &Row, framework: Framework) -> Result<(ModelSpec, Option<bool>), String> {
    // The preset the model column names (its hub id, or the name as people
    // write it: "TinyLlama-1.1B (litgpt config)", "Llama 2 7B"): it fills
    // architecture columns a row leaves empty, and says what the columns
    // cannot (below).
    let preset = crate::presets::by_name(r.get("model"));
    let named = preset.map(|p| p.spec());
    let from_preset = |col: &str, v: Option<u32>, pick: fn(&ModelSpec) -> u32| {
        v.or(named.as_ref().map(pick)).ok_or_else(|| {
            format!(
                "{col} is empty and `model` ({}) names no preset to take it from",
                r.get("model")
            )
        })
    };
    let arch = match r.word("arch").as_str() {
        "" => named.as_ref().map_or(Arch::Decoder, |m| m.arch),
        "decoder" => Arch::Decoder,
        "encoder" => Arch::Encoder,
        "encoder-decoder" => Arch::EncoderDecoder,
        // The same kinds as people name them (transformers' `AutoModelFor…`
        // heads, "decoder-only", "seq2seq").
        "decoder-only" | "causal-lm" | "causal" | "clm" | "causallm" | "autoregressive" | "gpt" => {
            Arch::Decoder
        }
        "encoder-only" | "masked-lm" | "mlm" | "bert" => Arch::Encoder,
        "seq2seq" | "seq2seq-lm" | "seq-2-seq" | "enc-dec" | "encoder+decoder" | "t5" => {
            Arch::EncoderDecoder
        }
        a => {
            return Err(format!(
                "arch `{a}` is not in the schema (decoder, encoder or encoder-decoder)"
            ))
        }
    };
    let mlp = match r.word("mlp").as_str() {
        "" => named.as_ref().map_or(Mlp::Plain, |m| m.mlp),
        "gated" => Mlp::Gated,
        "plain" => Mlp::Plain,
        // By the activation's name: the GLU family has three matrices
        // (Shazeer 2020, "GLU Variants Improve Transformer"), the rest two.
        "swiglu" | "geglu" | "reglu" | "glu" | "gated-mlp" | "gated-silu" | "gated-gelu"
        | "silu-gated" => Mlp::Gated,
        "gelu" | "gelu-new" | "relu" | "squared-relu" | "mlp" | "standard" | "dense" | "ffn" => {
            Mlp::Plain
        }
        m => return Err(format!("mlp `{m}` is not in the schema (gated or plain)")),
    };
    let layers = from_preset("n_layers", r.u32("n_layers")?, |m| m.layers)?;
    let hidden = from_preset("hidden", r.u32("hidden")?, |m| m.hidden)?;
    let heads = from_preset("n_heads", r.u32("n_heads")?, |m| m.heads)?;
    // Without GQA unless the named preset (with these heads) has it.
    let kv_heads = match (r.u32("n_kv_heads")?, &named) {
        (Some(k), _) => k,
        (None, Some(m)) if m.heads == heads => m.kv_heads,
        (None, _) => heads,
    };
    // The schema has no norm or position column: gated-MLP models are the
    // Llama lineage (RMSNorm, rotary); plain-MLP ones GPT/BERT (LayerNorm);
    // T5-style encoder–decoders use RMS-style norms and relative positions.
    let (norm, positions, linear_bias) = match (arch, mlp) {
        (Arch::EncoderDecoder, _) => (Norm::RmsNorm, Positions::Relative, false),
        (_, Mlp::Gated) => (Norm::RmsNorm, Positions::Rotary, false),
        (Arch::Encoder, Mlp::Plain) => (Norm::LayerNorm, Positions::Learned, true),
        (Arch::Decoder, Mlp::Plain) => (Norm::LayerNorm, Positions::Rotary, true),
    };
    // Empty expert columns are unknown, not dense: the named preset's (a row
    // for gpt-oss-20b that leaves them empty is its 32 experts, 4 a token).
    let experts = match r.u32("n_experts")? {
        Some(n) => n,
        None => named.as_ref().map_or(0, |m| m.experts),
    };
    let experts_per_token = match (r.u32("experts_per_token")?, &named) {
        (Some(k), _) => k,
        (None, Some(m)) if experts > 0 && m.experts == experts => m.experts_per_token,
        (None, _) => 0,
    };
    let mut model = ModelSpec {
        name: r.get("model").to_string(),
        arch,
        layers,
        encoder_layers: if arch == Arch::EncoderDecoder {
            layers
        } else {
            0
        },
        hidden,
        heads,
        kv_heads,
        head_dim: hidden / heads.max(1),
        ffn: from_preset("ffn_hidden", r.u32("ffn_hidden")?, |m| m.ffn)?,
        mlp,
        vocab: from_preset("vocab", r.u32("vocab")?, |m| m.vocab)?,
        tied_embeddings: match r.get("tied_embeddings") {
            "" => named.as_ref().is_some_and(|m| m.tied_embeddings),
            _ => r.bool("tied_embeddings")?,
        },
        norm,
        positions,
        max_positions: if positions == Positions::Learned {
            512
        } else {
            0
        },
        linear_bias,
        experts,
        experts_per_token,
        ..ModelSpec::unset("")
    };
    // What the schema's columns cannot say about the architecture (norm kind
    // and how many a block has, positions, biases, parallel blocks,
    // soft-capping, head width, a sliding window) comes from the preset the
    // model column names, when its dimensions agree with the row's; how
    // transformers implements it (fused projections, the Python GELU) only
    // when the column is a hub id (`org/name`, or one word: `gpt2`), the
    // checkpoint transformers loads, or the Trainer runs it: a free-form name
    // ("GPT-2 124M (from scratch)") may be any code.
    let transformers_code =
        !r.get("model").trim().contains(char::is_whitespace) || framework.trains_through_trainer();
    // Whether the named checkpoint's config trains with dropout in its blocks.
    let mut config_dropout = None;
    // The named preset of the row's shape says the rest; a size of a preset
    // family no preset has (Pythia-70M, Falcon-180B) takes its family's
    // implementation, not its dimensions (head width, window). Whether the
    // head width came from a preset of the row's shape:
    let shape = (model.layers, model.hidden, model.arch);
    let head_width_known = match named
        .as_ref()
        .filter(|s| (s.layers, s.hidden, s.arch) == shape)
    {
        Some(s) => {
            config_dropout = preset.map(|p| p.config_dropout());
            copy_implementation(&mut model, s, transformers_code);
            model.sliding_window = s.sliding_window;
            model.head_dim = s.head_dim;
            // Latent attention (DeepSeek-V2/V3): the heads' shape comes with it.
            if s.mla.is_some() && model.heads == s.heads && model.kv_heads == model.heads {
                model.mla = s.mla;
            }
            // An MoE preset's layout the columns cannot hold: its shared
            // experts and dense blocks (DeepSeek-MoE, Llama-4 Maverick), when
            // the row's experts are its routed ones (or routed and shared:
            // "total experts") and its width the experts' (or the dense
            // blocks').
            let experts_agree = model.experts > 0
                && (model.experts == s.experts || model.experts == s.experts + s.shared_experts);
            let width_agrees =
                model.ffn == s.ffn || (s.dense_layers > 0 && model.ffn == s.dense_ffn);
            if s.is_moe() && experts_agree && width_agrees {
                model.experts = s.experts;
                model.ffn = s.ffn;
                model.shared_experts = s.shared_experts;
                model.dense_layers = s.dense_layers;
                model.dense_ffn = s.dense_ffn;
            }
            true
        }
        None => {
            let member = crate::presets::family_member(r.get("model"), model.hidden)
                .filter(|p| p.spec().arch == model.arch);
            if let Some(p) = member {
                config_dropout = Some(p.config_dropout());
                copy_implementation(&mut model, &p.spec(), transformers_code);
            }
            false
        }
    };
    // What the notes state about the implementation.
    let notes = r.get("notes");
    // A fused projection the LoRA targets or the notes name: the model's own
    // code computes q/k/v (or gate/up) in one matmul, which PEFT adapts as one
    // module — for a model no preset describes (ChatGLM's `query_key_value`,
    // Baichuan's `W_pack`, InternLM2's `wqkv`, Qwen 1's `c_attn`, MPT's
    // `Wqkv`). Replayed: MPT-7B with LoRA on every linear, +6.1 % until its
    // one adapter on `Wqkv` was counted as one.
    let targets_and_notes = format!("{} {notes}", r.get("lora_targets"));
    if transformers_code && names_fused_module(&targets_and_notes) {
        model.fused_projections = true;
    }
    // "n_layers is per stack (24 enc + 24 dec)", "12 encoder + 6 decoder".
    if let (Arch::EncoderDecoder, Some((enc, dec))) = (arch, stated_stacks(notes)) {
        model.encoder_layers = enc;
        model.layers = dec;
    }
    // "sequence classification head only (no LM head; no vocab logits)", a
    // reward model, a `*ForSequenceClassification` class, or a task column
    // that names one.
    if names_classifier_head(notes, &r.word("task")) {
        model.head = ModelHead::Classifier;
    }
    // MoE shared experts the schema has no column for ("2 shared experts",
    // `n_shared_experts=2`), counted in routed experts' widths (DeepSeek-MoE's
    // `n_shared_experts` are; Qwen-MoE's one shared expert 4 routed widths wide
    // is "4 shared experts").
    if model.experts > 0 {
        let lower = notes.to_ascii_lowercase();
        let n = stated_number(&lower, " shared expert")
            .or_else(|| stated_after(&lower, &["n_shared_experts", "num_shared_experts"]));
        if let Some(n) = n {
            model.shared_experts = n;
        }
    }
    // A from-scratch model whose LayerNorm / GELU are written as tensor ops
    // ("custom LayerNorm/GELU").
    if notes.contains("custom LayerNorm") {
        model.python_norm = true;
    }
    if notes.contains("custom LayerNorm/GELU") || notes.contains("custom GELU") {
        model.gelu_new = true;
    }
    // A head width the columns cannot give: heads × head width need not be
    // the hidden size (Qwen3, Gemma, ERNIE-4.5, Seed-OSS: 128- or 256-wide
    // heads over a narrower hidden), and the attention's projections — its
    // parameters and its q/k/v activations — follow it. Where no preset of
    // the row's shape says, the stated `params_total` does, when the usual
    // width (hidden / heads) misses it by more than
    // [`HEAD_WIDTH_MISMATCH_PCT`] and a common width
    // ([`COMMON_HEAD_WIDTHS`]) meets it within [`HEAD_WIDTH_MATCH_PCT`].
    // Replayed: Seed-OSS-36B (80 heads of 128 over 5120) −9 … −10 % on every
    // counter with 64-wide heads, ERNIE-4.5-0.3B −8 %.
    if !head_width_known && model.mla.is_none() {
        if let Some(stated) = r.params_total() {
            model.head_dim = head_width_for(&model, stated * 1e9);
        }
    }
    // A multimodal checkpoint the model column names ("Qwen2.5-VL-7B-Instruct",
    // "llava-1.5-7b-hf", "gemma-3-4b-it") whose stated `params_total` passes
    // what its text columns give by more than [`PARAMS_MISMATCH_PCT`]: the
    // rest is its vision encoder and projector, frozen weights
    // ([`ModelSpec::vision_params`]).
    if multimodal_checkpoint(r.get("model")) {
        if let Some(stated) = r.params_total() {
            let (stated, ours) = (stated * 1e9, model.params() as f64);
            if stated > ours * (1.0 + PARAMS_MISMATCH_PCT / 100.0) {
                model.vision_params =
                    ((stated - ours).round() as u64).min(crate::validate::MAX_VISION_PARAMS);
            }
        }
    }
    Ok((model, config_dropout))
}

/// The GPU a row ran on, with its capacity: the `gpu_mem_gib` column, else
/// the board size its name states, else an OOM row's measurement.
fn gpu_of(r: &Row, oom: bool) -> Result<GpuSpec, String> {
    // The capacity: the column, else the board size the name states ("RTX
    // 2080 Ti 11GB"), else, on an OOM row, its measurement (the schema's
    // lower bound: the capacity the run hit).
    let mem_gib = match gpu_mem_gib(r.get("gpu_mem_gib"))? {
        Some(g) if !(g.is_finite() && g > 0.0) => {
            return Err(format!(
                "gpu_mem_gib: `{}` is not a capacity (a number of GiB above 0)",
                r.get("gpu_mem_gib")
            ))
        }
        Some(g) => Some(g),
        None => stated_board_gib(r.get("gpu")).or(if oom {
            r.f64("measured_gib").ok().flatten()
        } else {
            None
        }),
    };
    if let Some(why) = not_a_gpu(r.get("gpu")) {
        return Err(why);
    }
    Ok(gpu_for(r.get("gpu"), mem_gib))
}
