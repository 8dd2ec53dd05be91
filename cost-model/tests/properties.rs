//! Property tests: no input panics or overflows; memory is monotone in the
//! micro-batch and the sequence; more sharding never grows per-rank model states.
#![allow(clippy::field_reassign_with_default)] // one field at a time reads best here

use cost_model::estimate::{estimate, Phase};
use cost_model::framework::Framework;
use cost_model::plan::{
    AdapterMethod, Attention, Checkpointing, Finetune, LoraTargets, LoraVariant, Loss, Objective,
    Optimizer, Plan, Precision, Sharding,
};
use cost_model::presets::{preset, presets};
use proptest::prelude::*;

mod common;
use common::{lora16_all, phase};

fn any_plan() -> impl Strategy<Value = Plan> {
    (
        (
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
        ),
        (
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
        ),
        (0usize..9, any::<bool>(), any::<u32>(), any::<u32>()),
        (
            any::<u8>(),
            any::<u32>(),
            0usize..6,
            0usize..OPTIMIZERS.len(),
        ),
    )
        .prop_map(
            |(
                (l, h, a, kv, f, v),
                (mb, seq, gpus, tp, pp, cp),
                (shard, lora, rank, bits),
                (flags, norms, prec, opt),
            )| {
                let mut p = Plan::default();
                p.training.optimizer = OPTIMIZERS[opt];
                // Every objective (DPO's reference model, the doubled batch).
                p.training.objective = [
                    Objective::Sft,
                    Objective::Dpo,
                    Objective::Orpo,
                    Objective::Kto,
                ][(gpus >> 24) as usize % 4];
                // Any number of frozen bottom layers (too many refused by name).
                p.training.frozen_layers = (cp >> 8) % 128;
                // Any GaLore rank, zero included (refused by name).
                p.training.galore_rank = (tp & (1 << 20) != 0).then_some(f >> 12);
                p.model.layers = l % 300;
                if l & (1 << 31) != 0 {
                    // An encoder–decoder, with a target length of its own or none.
                    p.model.arch = cost_model::model::Arch::EncoderDecoder;
                    p.model.encoder_layers = (l >> 12) % 300;
                    p.training.target_len = (l & (1 << 30) != 0).then_some(seq.rotate_left(16));
                }
                p.model.hidden = h;
                p.model.heads = a % 512;
                // Some MoE models: any routing, shared experts and dense
                // blocks (a bad combination refused by name).
                let moe = a >> 9;
                if moe & 1 == 1 {
                    p.model.experts = (moe >> 1) % 70;
                    p.model.experts_per_token = (moe >> 8) % 9;
                    p.model.shared_experts = (moe >> 12) % 4;
                    p.model.dense_layers = (kv >> 6) % 8;
                    p.model.dense_ffn = f.rotate_left(moe % 32);
                }
                // Some with latent attention, any widths (a head narrower
                // than its rotary part, or grouped k/v, refused by name).
                if moe & (1 << 20) != 0 {
                    p.model.mla = Some(cost_model::model::Mla {
                        q_rank: v.rotate_left(9) % 4096,
                        kv_rank: v.rotate_left(17) % 2048,
                        rope_dim: mb.rotate_left(5) % 256,
                        v_dim: seq.rotate_left(11) % 512,
                    });
                }
                p.model.kv_heads = kv % 64;
                p.model.ffn = f;
                p.model.vocab = v;
                p.training.micro_batch = mb;
                p.training.seq_len = seq;
                p.parallel.num_gpus = gpus;
                p.parallel.tp = tp % 16;
                p.parallel.pp = pp % 16;
                p.parallel.cp = cp % 8;
                p.parallel.sharding = [
                    Sharding::None,
                    Sharding::DataParallel,
                    Sharding::Ddp,
                    Sharding::Zero1,
                    Sharding::Zero2,
                    Sharding::Zero3,
                    Sharding::FsdpFull,
                    Sharding::FsdpGradOp,
                    Sharding::Hsdp,
                ][shard];
                // Every framework profile (LitGPT's fused qkv and grouped LoRA,
                // DeepSpeed's master weights, …), then the drawn switches.
                p.set_framework(Framework::ALL[(norms >> 8) as usize % Framework::ALL.len()]);
                set_flags(&mut p, flags);
                // The quantized base's switches: PEFT's preparation, TRL's
                // embeddings back in 16 bits, 16-bit adapters, bitsandbytes
                // 0.43.2 (each without effect where it does not apply).
                let t = &mut p.training;
                t.kbit_fp32_prep = bits & (1 << 12) != 0;
                t.kbit_embeddings_16bit = bits & (1 << 13) != 0;
                t.adapters_16bit = bits & (1 << 14) != 0;
                t.bnb_0_43_2 = bits & (1 << 15) != 0;
                p.model.norms_per_layer = norms;
                // A vision encoder of any size (past the bound refused by name).
                p.model.vision_params = if a & (1 << 20) != 0 {
                    (v as u64) << (h % 48)
                } else {
                    0
                };
                p.training.precision = PRECISIONS[prec];
                if lora && rank % 4 == 3 {
                    // Every adapter method, with any parameter count.
                    p.training.finetune = Finetune::Adapter {
                        trainable_params: rank as u64 * bits as u64,
                        base_bits: bits % 40,
                        method: ADAPTER_METHODS[(rank / 4) as usize % ADAPTER_METHODS.len()],
                        virtual_tokens: bits % 4096,
                        targets: LoraTargets::QV,
                    };
                } else if lora {
                    p.training.finetune = Finetune::Lora {
                        rank,
                        targets: LoraTargets::ALL_LINEAR,
                        base_bits: bits % 40,
                        dropout: true,
                        variant: [LoraVariant::Lora, LoraVariant::Dora, LoraVariant::LoraFa]
                            [(rank % 3) as usize],
                    };
                }
                p
            },
        )
}

/// Every adapter method.
const ADAPTER_METHODS: [AdapterMethod; 13] = [
    AdapterMethod::Generic,
    AdapterMethod::LlamaAdapter,
    AdapterMethod::LlamaAdapterV2,
    AdapterMethod::Ia3,
    AdapterMethod::LnTuning,
    AdapterMethod::Boft,
    AdapterMethod::CastInputs,
    AdapterMethod::DeltaWeight,
    AdapterMethod::Osf,
    AdapterMethod::OsfReconstruct,
    AdapterMethod::Hra,
    AdapterMethod::PrefixTuning,
    AdapterMethod::Shira,
];

const OPTIMIZERS: [Optimizer; 17] = [
    Optimizer::Adamw,
    Optimizer::Adamw8bit,
    Optimizer::Adamw4bit,
    Optimizer::PagedAdamw,
    Optimizer::PagedAdamw8bit,
    Optimizer::Adafactor,
    Optimizer::Sgd,
    Optimizer::SgdMomentum,
    Optimizer::Lion,
    Optimizer::Lion8bit,
    Optimizer::Muon,
    Optimizer::Adan,
    Optimizer::Galore,
    Optimizer::Galore8bit,
    Optimizer::Apollo,
    Optimizer::Ademamix,
    Optimizer::Ademamix8bit,
];

const PRECISIONS: [Precision; 6] = [
    Precision::Fp32,
    Precision::AmpFp16,
    Precision::AmpBf16,
    Precision::Bf16,
    Precision::Fp16,
    Precision::Fp8,
];

/// How many [`finetune`]s there are to draw from.
const FINETUNES: usize = 5;

/// Full training, or LoRA on every linear over a 16-, 4-, 8- or 32-bit base.
fn finetune(i: usize) -> Finetune {
    match i {
        0 => Finetune::Full,
        _ => Finetune::Lora {
            rank: 8,
            targets: LoraTargets::ALL_LINEAR,
            base_bits: [16, 4, 8, 32][(i - 1) % 4],
            dropout: true,
            variant: LoraVariant::Lora,
        },
    }
}

const LOSSES: [Loss; 4] = [
    Loss::Standard,
    Loss::ChunkedKeep,
    Loss::ChunkedFree,
    Loss::Fused,
];

/// The implementation switches, one bit each: torch.compile, soft-capping,
/// gelu_new, fused projections, eager attention, transformers model code,
/// TRL's log-prob kernel, precomputed reference log-probabilities.
fn set_flags(p: &mut Plan, flags: u8) {
    let on = |bit: u8| flags & (1 << bit) != 0;
    p.training.compile = on(0);
    p.model.softcap = on(1);
    p.model.gelu_new = on(2);
    p.model.fused_projections = on(3);
    if on(4) {
        p.training.attention = Attention::Eager;
    }
    p.training.fp32_upcasts = on(5);
    p.training.logprob_kernel = on(6);
    p.training.precompute_ref = on(7);
}

/// An MoE model's dense blocks are averaged into its stack
/// (`Ctx::mixed`): every model-state byte and every activation kept
/// through the forward is the expert and the dense stack's, each in its
/// share of the blocks: 27 parts DeepSeek-MoE-16B with experts everywhere,
/// one part with a dense MLP everywhere.
#[test]
fn dense_blocks_weigh_in_by_their_number() {
    let mixed = preset("deepseek-moe-16b").unwrap().spec();
    let experts_everywhere = cost_model::model::ModelSpec {
        dense_layers: 0,
        dense_ffn: 0,
        ..mixed.clone()
    };
    let dense_everywhere = mixed.dense_block().unwrap();
    for (ft, prec) in [
        (Finetune::Full, Precision::Bf16),
        (Finetune::Full, Precision::AmpBf16),
        (lora16_all(), Precision::Bf16),
    ] {
        let run = |m: &cost_model::model::ModelSpec| {
            let mut p = Plan::default();
            p.model = m.clone();
            p.set_framework(Framework::PlainPytorch);
            p.training.finetune = ft;
            p.training.precision = prec;
            p.training.checkpointing = Checkpointing::None;
            p.training.seq_len = 1024;
            p.parallel.num_gpus = 1;
            p.parallel.sharding = Sharding::None;
            estimate(&p).unwrap()
        };
        let (m, a, d) = (
            run(&mixed),
            run(&experts_everywhere),
            run(&dense_everywhere),
        );
        let at = |e: &cost_model::estimate::Estimate, ph: Phase| {
            let b = phase(e, ph);
            [b.weights, b.gradients, b.optimizer, b.activations].map(|x| x.get() as f64)
        };
        for ph in [Phase::Init, Phase::Forward, Phase::Step] {
            let (got, all, one) = (at(&m, ph), at(&a, ph), at(&d, ph));
            for i in 0..4 {
                let want = (27.0 * all[i] + one[i]) / 28.0;
                assert!(
                    (got[i] - want).abs() <= 4.0,
                    "{ft:?} {prec:?} {ph:?} component {i}: {} vs {want}",
                    got[i]
                );
            }
        }
        let want = (27.0 * a.trainable_params as f64 + d.trainable_params as f64) / 28.0;
        assert!(
            (m.trainable_params as f64 - want).abs() <= 1.0,
            "{ft:?}: {} trainable vs {want}",
            m.trainable_params
        );
        assert_eq!(m.params, mixed.params());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn never_panics_and_errors_name_a_field(plan in any_plan()) {
        match estimate(&plan) {
            Ok(e) => {
                prop_assert!(e.peak.allocated <= e.peak.reserved);
                prop_assert!(e.peak.reserved <= e.peak.device_used);
                // Each peak counter is that counter's maximum over the worst
                // stage's phases, as PyTorch's max_memory_* report them.
                let worst = &e.stages[e.worst_stage as usize];
                let most = |f: fn(&cost_model::estimate::Counters) -> u64| {
                    worst.phases.iter().map(|p| f(&p.counters)).max().unwrap()
                };
                prop_assert_eq!(e.peak.allocated.get(), most(|c| c.allocated.get()));
                prop_assert_eq!(e.peak.reserved.get(), most(|c| c.reserved.get()));
                prop_assert_eq!(e.peak.device_used.get(), most(|c| c.device_used.get()));
            }
            Err(err) => {
                let f = err.field();
                prop_assert!(f.contains('.') || f == "version", "field {f}");
            }
        }
    }

    /// The URL is the first home of plan state, and a saved plan travels to
    /// the browser as its query: every plan the model accepts comes back
    /// from `query::encode` unchanged.
    #[test]
    fn every_valid_plan_round_trips_through_the_url(
        plan in any_plan(),
        preset in 0usize..presets().len(),
        sane in any::<bool>(),
    ) {
        let mut plan = plan;
        if sane {
            // Any settings on a real model and a layout that divides it, so
            // that most draws are plans the model accepts.
            plan.model = presets()[preset].spec();
            plan.training.micro_batch = plan.training.micro_batch % 64 + 1;
            plan.training.seq_len = plan.training.seq_len % 32768 + 1;
            plan.training.target_len = plan.training.target_len.map(|t| t % 4096 + 1);
            plan.training.frozen_layers %= plan.model.layers.max(1);
            plan.parallel.tp = 1;
            plan.parallel.pp = 1;
            plan.parallel.cp = 1;
            plan.parallel.num_gpus = plan.parallel.num_gpus % 64 + 1;
        }
        if cost_model::validate::validate(&plan).is_ok() {
            let back = cost_model::query::decode_str(&cost_model::query::encode(&plan));
            prop_assert_eq!(back.as_ref(), Ok(&plan));
        }
    }

    #[test]
    fn memory_grows_with_micro_batch_and_sequence(
        preset in 0usize..presets().len(),
        mb in 1u32..64,
        seq in 1u32..16384,
        shard in 0usize..4,
        flags in any::<u8>(),
        prec in 0usize..6,
        ft in 0usize..FINETUNES,
        loss in 0usize..LOSSES.len(),
        framework in 0usize..Framework::ALL.len(),
        objective in 0usize..4,
        trl in 0usize..6,
    ) {
        let mut p = Plan {
            model: presets()[preset % presets().len()].spec(),
            ..Plan::default()
        };
        // TRL's DPO before 0.29 (the larger of two moments at the forward;
        // up to 0.14 a whole log-softmax saved).
        p.training.trl = [
            cost_model::plan::TrlRelease::Current,
            cost_model::plan::TrlRelease::V0_19To0_28,
            cost_model::plan::TrlRelease::V0_15To0_18,
            cost_model::plan::TrlRelease::V0_12To0_14,
            cost_model::plan::TrlRelease::V0_9To0_11,
            cost_model::plan::TrlRelease::V0_5To0_8,
        ][trl];
        // Every framework profile and objective (the preference losses'
        // logits, the segments a shifted size cannot reuse).
        p.set_framework(Framework::ALL[framework]);
        p.training.objective =
            [Objective::Sft, Objective::Dpo, Objective::Orpo, Objective::Kto][objective];
        set_flags(&mut p, flags);
        p.training.precision = PRECISIONS[prec];
        // A frozen base of any width (a chunked head casts a frozen fp32
        // head once per chunk) and every loss.
        p.training.finetune = finetune(ft);
        p.training.loss = LOSSES[loss];
        p.parallel.sharding = [Sharding::None, Sharding::Ddp, Sharding::Zero2, Sharding::FsdpFull][shard];
        p.training.micro_batch = mb;
        p.training.seq_len = seq;
        let base = estimate(&p).unwrap().peak;
        p.training.micro_batch = mb + 1;
        let more_batch = estimate(&p).unwrap().peak;
        p.training.micro_batch = mb;
        p.training.seq_len = seq + 1;
        let more_seq = estimate(&p).unwrap().peak;
        prop_assert!(more_batch.allocated >= base.allocated);
        prop_assert!(more_batch.device_used >= base.device_used);
        prop_assert!(more_seq.allocated >= base.allocated);
        prop_assert!(more_seq.device_used >= base.device_used);
    }

    #[test]
    fn more_ranks_never_cost_a_sharded_rank_memory(
        preset in 0usize..presets().len(),
        framework in 0usize..Framework::ALL.len(),
        shard in 0usize..4,
        opt in 0usize..OPTIMIZERS.len(),
        prec in 0usize..6,
        mb in 1u32..16,
        seq in 1u32..8192,
        gpus in 2u32..64,
        flags in any::<u8>(),
        ft in 0usize..FINETUNES,
        offload in any::<bool>(),
    ) {
        let mut p = Plan {
            model: presets()[preset].spec(),
            ..Plan::default()
        };
        p.set_framework(Framework::ALL[framework]);
        set_flags(&mut p, flags);
        p.training.optimizer = OPTIMIZERS[opt];
        p.training.precision = PRECISIONS[prec];
        p.training.micro_batch = mb;
        p.training.seq_len = seq;
        // Full training or an adapter over a 4/8/16/32-bit base (a 4-bit
        // base's scales stay whole on every rank), offloaded or not.
        p.training.finetune = finetune(ft);
        if offload {
            p.parallel.offload = cost_model::plan::Offload::ALL_CPU;
        }
        p.parallel.sharding =
            [Sharding::Zero2, Sharding::Zero3, Sharding::FsdpFull, Sharding::FsdpGradOp][shard];
        p.parallel.num_gpus = gpus;
        let Ok(fewer) = estimate(&p) else { return Ok(()) };
        p.parallel.num_gpus = 2 * gpus;
        let more = estimate(&p).unwrap();
        prop_assert!(
            more.peak.allocated <= fewer.peak.allocated,
            "{:?} on {} ranks: {:?}, on {}: {:?}",
            p.parallel.sharding, gpus, fewer.peak, 2 * gpus, more.peak
        );
    }

    #[test]
    fn freezing_another_layer_never_costs_memory(
        preset in 0usize..presets().len(),
        frozen in 0u32..80,
        shard in 0usize..4,
        opt in 0usize..OPTIMIZERS.len(),
        prec in 0usize..6,
    ) {
        let mut p = Plan {
            model: presets()[preset].spec(),
            ..Plan::default()
        };
        p.training.optimizer = OPTIMIZERS[opt];
        p.training.precision = PRECISIONS[prec];
        p.parallel.sharding = [Sharding::None, Sharding::Ddp, Sharding::Zero2, Sharding::FsdpFull][shard];
        p.training.frozen_layers = frozen.min(p.model.total_layers().saturating_sub(1));
        let base = estimate(&p).unwrap().peak;
        p.training.frozen_layers += 1;
        let more = estimate(&p).unwrap().peak;
        prop_assert!(more.allocated <= base.allocated, "{:?} vs {:?}", more, base);
        // Not the reserve under ZeRO-1/2: the segments its optimizer leaves
        // cached at start-up hold what fits in them, and a layer fewer to
        // train can shrink the largest below the loss's logits-sized
        // tensors, which then map segments of their own (free cache the
        // allocator hands back when memory runs short: it never costs a
        // run that fits).
        if p.parallel.sharding != Sharding::Zero2 {
            prop_assert!(more.device_used <= base.device_used);
        }
    }

    #[test]
    fn an_encoder_decoder_grows_with_its_source_and_its_target(
        large in any::<bool>(),
        mb in 1u32..32,
        seq in 1u32..4096,
        target in 1u32..4096,
        flags in any::<u8>(),
        prec in 0usize..6,
        ckpt in 0usize..4,
    ) {
        let mut p = Plan {
            model: preset(if large { "t5-large" } else { "t5-base" }).unwrap().spec(),
            ..Plan::default()
        };
        set_flags(&mut p, flags);
        p.training.precision = PRECISIONS[prec];
        p.training.checkpointing = [
            Checkpointing::None,
            Checkpointing::Selective,
            Checkpointing::OpSelective,
            Checkpointing::Full,
        ][ckpt];
        p.training.micro_batch = mb;
        p.training.seq_len = seq;
        // A target as long as the source is no target of its own.
        p.training.target_len = Some(seq);
        let same = estimate(&p).unwrap().peak;
        p.training.target_len = None;
        prop_assert_eq!(same, estimate(&p).unwrap().peak);
        p.training.target_len = Some(target);
        let base = estimate(&p).unwrap().peak;
        p.training.target_len = Some(target + 1);
        let longer_target = estimate(&p).unwrap().peak;
        p.training.target_len = Some(target);
        p.training.seq_len = seq + 1;
        let longer_source = estimate(&p).unwrap().peak;
        for more in [longer_target, longer_source] {
            prop_assert!(more.allocated >= base.allocated);
            prop_assert!(more.device_used >= base.device_used);
        }
    }

    #[test]
    fn more_sharding_never_increases_model_states(preset in 0usize..presets().len(), gpus in 1u32..128) {
        let mut p = Plan {
            model: presets()[preset % presets().len()].spec(),
            ..Plan::default()
        };
        p.parallel.num_gpus = gpus;
        let mut last = u64::MAX;
        for s in [Sharding::Ddp, Sharding::Zero1, Sharding::Zero2, Sharding::Zero3] {
            p.parallel.sharding = s;
            let e = estimate(&p).unwrap();
            let step = e.stages[0].phases.iter().find(|x| x.phase == Phase::Step).unwrap().breakdown;
            let states = step.weights.get() + step.gradients.get() + step.optimizer.get();
            prop_assert!(states <= last, "{s:?}: {states} > {last}");
            last = states;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The fix ladder over presets, frameworks, GPU counts, batch shapes,
    /// shardings and fine-tuning methods: each rung valid, saving memory on
    /// the one before, and keeping at least the plan's global batch (a
    /// smaller micro-batch, or fewer data-parallel ranks under TP or CP, is
    /// made up by accumulation, rounded up).
    #[test]
    fn every_rung_is_valid_saves_memory_and_keeps_the_global_batch(
        preset in 0usize..presets().len(),
        fw in 0usize..Framework::ALL.len(),
        gpus_log in 0u32..7,
        mb_log in 0u32..6,
        seq_log in 9u32..18,
        shard in 0usize..5,
        ft in 0usize..3,
        ckpt in 0usize..4,
    ) {
        let q = format!(
            "?model={}&fw={}&gpus={}&mb={}&seq={}&shard={}&ft={}{}",
            presets()[preset].id,
            Framework::ALL[fw].id(),
            1u32 << gpus_log,
            1u32 << mb_log,
            1u32 << seq_log,
            ["ddp", "zero1", "zero2", "zero3", "fsdp-full"][shard],
            ["full", "lora", "qlora"][ft],
            // The framework's default, none, every 4th block, selective.
            ["", "&ckpt=none", "&ckpt=full&ckpt_every=4", "&ckpt=selective"][ckpt],
        );
        let Ok(plan) = cost_model::query::decode_str(&q) else {
            return Ok(());
        };
        let Ok(ladder) = cost_model::search::fix_ladder(&plan) else {
            return Ok(());
        };
        let mut before = estimate(&plan).unwrap().peak.device_used;
        for r in &ladder {
            prop_assert!(cost_model::validate::validate(&r.plan).is_ok(), "{q}: {}", r.id);
            prop_assert!(r.device_used < before, "{q}: {}", r.id);
            prop_assert!(r.plan.global_batch() >= plan.global_batch(), "{q}: {}", r.id);
            before = r.device_used;
        }
    }
}

/// Every setting a plan holds reaches the URL: each leaf of a plan's JSON is
/// changed in turn — a flag flipped, a number moved, an enum set to each of
/// its variants (read from serde's "expected one of" message, so a variant
/// added later is tried too), an empty option given a value — on several
/// starting plans, and every variation the model accepts must come back from
/// `query::encode` unchanged. A field the query forgets fails here.
#[test]
fn every_setting_of_a_plan_reaches_the_url() {
    use cost_model::query::{decode_str, encode};
    use serde_json::Value;

    /// Every leaf of `v` under `path`, and (as `Null`) every field a plan
    /// object may hold that its JSON leaves out at its default — the names
    /// serde lists when it refuses an unknown field.
    fn leaves(
        root: &Value,
        v: &Value,
        path: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, Value)>,
    ) {
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    path.push(k.clone());
                    leaves(root, c, path, out);
                    path.pop();
                }
                for k in fields(root, path) {
                    if !m.contains_key(&k) {
                        let mut p = path.clone();
                        p.push(k);
                        out.push((p, Value::Null));
                    }
                }
            }
            other => out.push((path.clone(), other.clone())),
        }
    }
    /// The fields the plan object at `path` may hold: the names serde lists
    /// when it refuses an unknown one.
    fn fields(base: &Value, path: &[String]) -> Vec<String> {
        let mut v = base.clone();
        let mut p = path.to_vec();
        p.push(SENTINEL.to_string());
        set(&mut v, &p, Value::from(1));
        expected_names(v)
    }
    /// The variants of the enum at `path`, listed the same way.
    fn variants(base: &Value, path: &[String]) -> Vec<String> {
        let mut v = base.clone();
        set(&mut v, path, Value::from(SENTINEL));
        expected_names(v)
    }
    /// The names in serde's "expected one of" when it refuses `v` as a plan.
    fn expected_names(v: Value) -> Vec<String> {
        let Err(e) = serde_json::from_value::<Plan>(v) else {
            return Vec::new();
        };
        let msg = e.to_string();
        let Some(list) = msg.split("expected one of ").nth(1) else {
            return Vec::new();
        };
        list.split(", ")
            .filter_map(|s| s.split('`').nth(1).map(str::to_string))
            .collect()
    }
    const SENTINEL: &str = "\u{1}no such name";
    fn set(v: &mut Value, path: &[String], to: Value) {
        let mut at = v;
        for k in path {
            at = &mut at[k.as_str()];
        }
        *at = to;
    }
    let starts: Vec<Plan> = [
        "",
        "ft=lora&bits=4&shard=fsdp-full&gpus=8",
        "fw=deepspeed&shard=zero3&gpus=16&off_opt=cpu&off_par=cpu",
        "model=t5-base&ft=lora",
        "model=mixtral-8x7b&gpus=8&tp=2&ep=2",
    ]
    .iter()
    .map(|q| decode_str(q).unwrap())
    .chain(std::iter::once({
        // A card of one's own (a plan file's, a calibration row's).
        let mut p = Plan::default();
        p.gpu = cost_model::gpu::GpuSpec {
            id: "custom".into(),
            name: "24GB GPU (model not stated)".into(),
            capacity_mib: 24576,
            bandwidth_gbps: 0.0,
            bf16_tflops: 0.0,
            fp16_tflops: 0.0,
            fp8_tflops: 0.0,
        };
        p
    }))
    .collect();
    let (mut tried, mut accepted) = (0, 0);
    for start in &starts {
        let base = serde_json::to_value(start).unwrap();
        let mut all = Vec::new();
        leaves(&base, &base, &mut Vec::new(), &mut all);
        for (path, leaf) in all {
            if path == ["version"] {
                continue; // the URL is always the current format
            }
            let candidates: Vec<Value> = match &leaf {
                Value::Bool(b) => vec![Value::from(!b)],
                Value::Number(n) => match n.as_u64() {
                    Some(x) => vec![
                        Value::from(x + 1),
                        Value::from(x.max(1) * 2),
                        Value::from(1),
                    ],
                    None => vec![Value::from(n.as_f64().unwrap_or(0.0) * 2.0 + 1.0)],
                },
                Value::String(_) => variants(&base, &path)
                    .into_iter()
                    .map(Value::from)
                    .collect(),
                // A field left out: any of its variants, or a flag, a count.
                Value::Null => variants(&base, &path)
                    .into_iter()
                    .map(Value::from)
                    .chain([Value::from(true), Value::from(8)])
                    .collect(),
                _ => vec![],
            };
            for c in candidates {
                let mut v = base.clone();
                set(&mut v, &path, c.clone());
                let Ok(plan) = serde_json::from_value::<Plan>(v) else {
                    continue;
                };
                tried += 1;
                if cost_model::validate::validate(&plan).is_err() || &plan == start {
                    continue;
                }
                accepted += 1;
                let q = encode(&plan);
                assert_eq!(
                    decode_str(&q).as_ref(),
                    Ok(&plan),
                    "{} = {c} does not survive the URL ({q})",
                    path.join(".")
                );
            }
        }
    }
    // The walk really varies the plans (a broken walk would pass vacuously).
    assert!(
        tried > 500 && accepted > 300,
        "tried {tried}, accepted {accepted}"
    );
}
