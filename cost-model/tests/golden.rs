//! Golden tests pinned to published numbers, with stated tolerances.
#![allow(clippy::field_reassign_with_default)] // one field at a time reads best here

mod common;
use common::{forward_activations, lora16_all, phase};

use cost_model::estimate::{estimate, Phase};
use cost_model::framework::Framework;
use cost_model::model::ModelSpec;
use cost_model::plan::{Attention, Checkpointing, Plan, Precision, Sharding};
use cost_model::presets::preset;

/// A GPT-2-style block (LayerNorm, biases, plain GELU MLP, learned positions)
/// with the given dimensions.
fn gpt(layers: u32, hidden: u32, heads: u32, vocab: u32) -> ModelSpec {
    ModelSpec {
        name: "gpt".into(),
        layers,
        hidden,
        heads,
        kv_heads: heads,
        head_dim: hidden / heads,
        ffn: 4 * hidden,
        vocab,
        max_positions: 2048,
        // Megatron's GPT runs a fused bias-GELU kernel, which keeps only its
        // input (the paper's count), not transformers' Python tanh GELU.
        gelu_new: false,
        relu: false,
        qk_norm: false,
        logits_bias: false,
        ..preset("gpt2").unwrap().spec()
    }
}

/// Model-state bytes per parameter on one rank: weights + gradients + optimizer
/// states at the optimizer step.
fn states_per_param(plan: &Plan) -> f64 {
    let e = estimate(plan).unwrap();
    let step = e.stages[0]
        .phases
        .iter()
        .find(|p| p.phase == Phase::Step)
        .unwrap();
    let b = step.breakdown;
    (b.weights.get() + b.gradients.get() + b.optimizer.get()) as f64 / e.params as f64
}

/// Rajbhandari et al., "ZeRO", SC'20, Figure 1: Ψ = 7.5B, N = 64, mixed-precision
/// Adam (K = 12): 120 GB baseline, 31.4 GB (P_os), 16.6 GB (P_os+g), 1.9 GB (P_os+g+p).
#[test]
fn zero_paper_model_states_for_7_5b_on_64_gpus() {
    let mut plan = Plan {
        model: gpt(32, 4096, 32, 50257),
        ..Plan::default()
    };
    plan.set_framework(Framework::Deepspeed);
    plan.training.precision = Precision::AmpFp16;
    plan.parallel.num_gpus = 64;
    let psi = 7.5e9;
    for (sharding, paper_gb) in [
        (Sharding::Ddp, 120.0),
        (Sharding::Zero1, 31.4),
        (Sharding::Zero2, 16.6),
        (Sharding::Zero3, 1.9),
    ] {
        plan.parallel.sharding = sharding;
        let gb = states_per_param(&plan) * psi / 1e9;
        // The paper rounds to one decimal: 1.875 → 1.9, 31.40625 → 31.4.
        assert!(
            (gb - paper_gb).abs() <= 0.05 + 1e-9,
            "{sharding:?}: {gb:.3} GB vs paper {paper_gb}"
        );
    }
}

/// Llama-2-7B under `fw`; on one GPU without sharding for a plain loop.
fn llama2_7b(fw: Framework) -> Plan {
    let mut plan = Plan {
        model: preset("llama-2-7b").unwrap().spec(),
        ..Plan::default()
    };
    plan.set_framework(fw);
    if fw == Framework::PlainPytorch {
        plan.parallel.num_gpus = 1;
        plan.parallel.sharding = Sharding::None;
    }
    plan
}

/// Megatron-LM's distributed-optimizer guide (`docs/source/api-guide/
/// dist_optimizer.md`, "bytes per parameter", d = data-parallel size):
/// fp16 parameters with fp16 gradients 20 (4 + 16/d distributed), bf16
/// parameters with fp32 gradients 18 (6 + 12/d), fp32 16 (8 + 8/d). Counted
/// at the optimizer step, where the fp16 optimizer's fp32 gradient copies
/// exist; between steps an fp16 run holds its fp16 `main_grad` buffer.
#[test]
fn megatron_distributed_optimizer_bytes_per_parameter() {
    let mut plan = llama2_7b(Framework::Megatron);
    for (precision, grads, plain, fixed, sharded) in [
        (Precision::AmpFp16, 2.0, 20.0, 4.0, 16.0),
        (Precision::AmpBf16, 4.0, 18.0, 6.0, 12.0),
        (Precision::Fp32, 4.0, 16.0, 8.0, 8.0),
    ] {
        plan.training.precision = precision;
        for (sharding, d, want) in [
            (Sharding::Ddp, 8, plain),
            (Sharding::Zero1, 8, fixed + sharded / 8.0),
            (Sharding::Zero1, 64, fixed + sharded / 64.0),
        ] {
            plan.parallel.sharding = sharding;
            plan.parallel.num_gpus = d;
            let e = estimate(&plan).unwrap();
            let n = e.params as f64;
            let step = phase(&e, Phase::Step);
            let got = (step.weights.get()
                + step.gradients.get()
                + step.optimizer.get()
                + step.temporaries.get()
                - common::cublas_workspaces(&plan)) as f64
                / n;
            assert!(
                (got - want).abs() < 1e-3,
                "{precision:?} {sharding:?} d={d}: {got:.4} vs {want}"
            );
            let fwd = phase(&e, Phase::Forward).gradients.get() as f64 / n;
            assert!((fwd - grads).abs() < 1e-3, "{precision:?}: {fwd}");
        }
    }
}

/// Optimizers by their states (fp32, beside fp32 weights under bf16
/// autocast): Adan keeps four per parameter (timm's `exp_avg`, `exp_avg_sq`,
/// `exp_avg_diff`, `neg_pre_grad`); Muon one momentum buffer per hidden
/// matrix element (`torch.optim.Muon`) and AdamW's two on the embeddings, the
/// head and the norms — Llama-2-7B: 32 × (4 × 4096² + 3 × 4096 × 11008)
/// matrix parameters; under LoRA every adapter matrix is Muon's.
#[test]
fn muon_and_adan_keep_their_states() {
    use cost_model::plan::Optimizer;
    let mut plan = llama2_7b(Framework::PlainPytorch);
    plan.training.precision = Precision::AmpBf16;
    let states = |plan: &Plan, opt| {
        let mut p = plan.clone();
        p.training.optimizer = opt;
        let e = estimate(&p).unwrap();
        let o = phase(&e, Phase::Step).optimizer.get() as f64;
        (o, e.trainable_params as f64)
    };
    let (adan, n) = states(&plan, Optimizer::Adan);
    assert!((adan / n - 16.0).abs() < 1e-6, "{}", adan / n);
    let (adamw, _) = states(&plan, Optimizer::Adamw);
    assert!((adamw / n - 8.0).abs() < 1e-6);
    let (muon, _) = states(&plan, Optimizer::Muon);
    let matrices = 32.0 * (4.0 * 4096.0 * 4096.0 + 3.0 * 4096.0 * 11008.0);
    let want = 4.0 * (matrices + 2.0 * (n - matrices));
    assert!((muon - want).abs() / want < 1e-9, "{muon} vs {want}");
    // LoRA: A and B are matrices, all of them Muon's.
    plan.training.finetune = lora16_all();
    let (muon, n) = states(&plan, Optimizer::Muon);
    assert!((muon / n - 4.0).abs() < 1e-6, "{}", muon / n);
}

/// ZeRO++'s hpZ (Wang et al. 2023 §3.2; deepspeed 0.16.9
/// `partition_parameters.py` `_partition_param_sec`): beside its 1/64 of
/// Llama-2-7B's bf16 parameters, each of 64 ranks keeps 1/8 of them as the
/// secondary shard of its node — 2 bytes × 6.74e9 / 8 = 1.57 GiB, at every
/// phase — and under parameter offload keeps it on the host instead. Only
/// ZeRO-3 has the partition, and its group divides the data-parallel ranks.
#[test]
fn zero_plus_plus_hpz_keeps_a_secondary_shard_of_the_parameters() {
    let mut plan = llama2_7b(Framework::Deepspeed);
    plan.training.precision = Precision::Bf16;
    plan.parallel.num_gpus = 64;
    plan.parallel.sharding = Sharding::Zero3;
    let off = estimate(&plan).unwrap();
    let params = off.params as f64;
    plan.parallel.hpz_partition_size = 8;
    let on = estimate(&plan).unwrap();
    let secondary = params * 2.0 / 8.0;
    for ph in [Phase::Init, Phase::Forward, Phase::Backward, Phase::Step] {
        let extra = phase(&on, ph).weights.get() as f64 - phase(&off, ph).weights.get() as f64;
        assert!(
            (extra - secondary).abs() < 1e-6 * secondary,
            "{ph:?}: {extra} vs {secondary}"
        );
    }
    assert!(on.peak.allocated.get() > off.peak.allocated.get());
    // A larger group keeps a smaller secondary shard.
    plan.parallel.hpz_partition_size = 16;
    let wider = estimate(&plan).unwrap();
    assert!(wider.peak.allocated < on.peak.allocated);
    // Offloaded parameters take it to the host.
    plan.parallel.hpz_partition_size = 8;
    plan.parallel.offload = cost_model::plan::Offload::ALL_CPU;
    let host_on = estimate(&plan).unwrap();
    plan.parallel.hpz_partition_size = 1;
    let host_off = estimate(&plan).unwrap();
    assert_eq!(
        phase(&host_on, Phase::Step).weights,
        phase(&host_off, Phase::Step).weights
    );
    let host_extra = host_on.host_offload.get() as f64 - host_off.host_offload.get() as f64;
    assert!(
        (host_extra - secondary).abs() < 1e-6 * secondary,
        "{host_extra}"
    );
    // Refused outside ZeRO-3, and for a group that does not divide the ranks.
    plan.parallel.offload = cost_model::plan::Offload::NONE;
    plan.parallel.hpz_partition_size = 8;
    plan.parallel.sharding = Sharding::Zero2;
    assert_eq!(
        estimate(&plan).unwrap_err().field(),
        "parallel.hpz_partition_size"
    );
    plan.parallel.sharding = Sharding::Zero3;
    plan.parallel.num_gpus = 12;
    let e = estimate(&plan).unwrap_err();
    assert_eq!(e.field(), "parallel.hpz_partition_size");
    assert!(e.to_string().contains("12"), "{e}");
}

/// bitsandbytes' optimizers (0.45.0 `optim/optimizer.py`, `optim/ademamix.py`)
/// step in place in their own kernels, so a `foreach` setting makes no
/// state-sized temporary for them, and their 32-bit states are fp32 beside
/// bf16 parameters; AdEMAMix keeps three states (two EMAs and a second
/// moment), 12 bytes a parameter in 32 bits and three bytes and three fp32
/// absmax per 256 in 8 bits; transformers' Trainer takes Lion from
/// bitsandbytes too. Llama-2-7B, pure bf16, one GPU.
#[test]
fn bitsandbytes_optimizers_step_in_place_with_fp32_states() {
    use cost_model::plan::{Optimizer, OptimizerImpl};
    let mut plan = llama2_7b(Framework::PlainPytorch);
    plan.training.precision = Precision::Bf16;
    let step_of = |base: &Plan, opt, imp| {
        let mut p = base.clone();
        p.training.optimizer = opt;
        p.training.optimizer_impl = imp;
        let e = estimate(&p).unwrap();
        let b = phase(&e, Phase::Step);
        (
            b.optimizer.get() as f64,
            b.temporaries.get() as f64,
            e.trainable_params as f64,
        )
    };
    let step = |opt, imp| step_of(&plan, opt, imp);
    // torch's foreach AdamW makes a state-sized temporary in bf16; fused none.
    let (adamw, foreach_tmp, n) = step(Optimizer::Adamw, OptimizerImpl::Foreach);
    let (_, fused_tmp, _) = step(Optimizer::Adamw, OptimizerImpl::Fused);
    assert!((adamw / n - 4.0).abs() < 1e-6, "{}", adamw / n);
    assert!(
        foreach_tmp - fused_tmp > 1.9 * n,
        "{foreach_tmp} vs {fused_tmp}"
    );
    for opt in [
        Optimizer::Adamw8bit,
        Optimizer::PagedAdamw,
        Optimizer::PagedAdamw8bit,
        Optimizer::Lion8bit,
        Optimizer::Ademamix,
        Optimizer::Ademamix8bit,
    ] {
        let foreach = step(opt, OptimizerImpl::Foreach);
        let fused = step(opt, OptimizerImpl::Fused);
        let looped = step(opt, OptimizerImpl::ForLoop);
        assert_eq!(foreach, fused, "{opt:?}");
        assert_eq!(looped, fused, "{opt:?}");
    }
    let (ademamix, _, _) = step(Optimizer::Ademamix, OptimizerImpl::Fused);
    assert!((ademamix / n - 12.0).abs() < 1e-6, "{}", ademamix / n);
    let (lion8, _, _) = step(Optimizer::Lion8bit, OptimizerImpl::Fused);
    assert!(
        (lion8 / n - (1.0 + 4.0 / 256.0)).abs() < 1e-6,
        "{}",
        lion8 / n
    );
    let (ademamix8, _, _) = step(Optimizer::Ademamix8bit, OptimizerImpl::Fused);
    assert!(
        (ademamix8 / n - 3.0 * (1.0 + 4.0 / 256.0)).abs() < 1e-6,
        "{}",
        ademamix8 / n
    );
    // Paged 32-bit AdamW: its pages (nvidia-smi's, not the allocator's) hold
    // two fp32 states, 8 bytes a parameter beside bf16 weights.
    let paged = |opt| {
        let mut p = plan.clone();
        p.training.optimizer = opt;
        let c = cost_model::estimate(&p).unwrap().stages[0]
            .phases
            .iter()
            .find(|x| x.phase == Phase::Step)
            .unwrap()
            .counters;
        c.device_used.get() as f64 - c.reserved.get() as f64
    };
    let beyond = paged(Optimizer::PagedAdamw) - paged(Optimizer::Adamw8bit);
    assert!((beyond / n - 8.0).abs() < 0.01, "{}", beyond / n);
    // Lion: under the Trainer bitsandbytes' (`optim="lion_32bit"`), an fp32
    // state stepped in place; in a plain loop a PyTorch one, its state in
    // the parameters' bf16, stepped a tensor at a time.
    let (loop_lion, loop_tmp, _) = step(Optimizer::Lion, OptimizerImpl::Foreach);
    assert!((loop_lion / n - 2.0).abs() < 1e-6, "{}", loop_lion / n);
    assert!(loop_tmp > fused_tmp);
    let mut trainer = plan.clone();
    trainer.set_framework(Framework::HfTrainer);
    trainer.training.precision = Precision::Bf16;
    let lion = |imp| step_of(&trainer, Optimizer::Lion, imp);
    let (trainer_lion, trainer_tmp, _) = lion(OptimizerImpl::Foreach);
    assert!(
        (trainer_lion / n - 4.0).abs() < 1e-6,
        "{}",
        trainer_lion / n
    );
    assert_eq!(trainer_tmp, lion(OptimizerImpl::Fused).1);
}

/// GaLore (Zhao et al. 2024; galore-torch 1.0): Llama-2-7B's block matrices
/// keep Adam's moments on gradients projected to rank 128 (2 · 128 · max(m, n)
/// elements) and the projector (128 · min(m, n) in bf16; the whole
/// min(m, n)² SVD factor in fp32, which the projector's slice keeps alive);
/// the embeddings, head and norms keep AdamW's two states. Pure bf16 needs
/// 2.09 GB of optimizer states where AdamW needs 26.95 GB.
#[test]
fn galore_keeps_projected_moments_and_its_projector() {
    use cost_model::plan::Optimizer;
    let mut plan = llama2_7b(Framework::PlainPytorch);
    plan.training.optimizer = Optimizer::Galore;
    let states = |plan: &Plan| {
        let e = estimate(plan).unwrap();
        phase(&e, Phase::Step).optimizer.get() as f64
    };
    // Per block: q, k, v, o are 4096 × 4096; gate, up, down 4096 × 11008.
    let (h, f, r) = (4096.0, 11008.0, 128.0);
    let rest = 32000.0 * h * 2.0 + 2.0 * h * 32.0 + h; // embeddings, head, norms
    let block = |moments: f64, projector: &dyn Fn(f64) -> f64| {
        4.0 * (2.0 * r * h * moments + projector(h)) + 3.0 * (2.0 * r * f * moments + projector(h))
    };
    plan.training.precision = Precision::Bf16;
    let bf16 = 32.0 * block(2.0, &|lo| r * lo * 2.0) + rest * 2.0 * 2.0;
    assert!(
        (states(&plan) - bf16).abs() < 1024.0,
        "{} vs {bf16}",
        states(&plan)
    );
    assert!((bf16 / 1e9 - 2.094).abs() < 1e-3);
    // fp32 weights (AMP): fp32 moments, and the projector's whole factor.
    plan.training.precision = Precision::AmpBf16;
    let amp = 32.0 * block(4.0, &|lo| lo * lo * 4.0) + rest * 2.0 * 4.0;
    assert!(
        (states(&plan) - amp).abs() < 1024.0,
        "{} vs {amp}",
        states(&plan)
    );
    // 8-bit moments (the rest in bitsandbytes' 8-bit Adam).
    plan.training.precision = Precision::Bf16;
    plan.training.optimizer = Optimizer::Galore8bit;
    let eight = 32.0 * block(1.0, &|lo| r * lo * 2.0) + rest * 2.0;
    assert!(
        (states(&plan) - eight).abs() < 1024.0,
        "{} vs {eight}",
        states(&plan)
    );
    // A larger rank keeps more; no rank exceeds a matrix's smaller side.
    plan.training.galore_rank = Some(512);
    assert!(states(&plan) > eight);
    plan.training.galore_rank = Some(1 << 20);
    let full_rank = states(&plan);
    plan.training.galore_rank = Some(4096);
    assert_eq!(states(&plan), full_rank);
    // APOLLO: GaLore's moments; its random projector is r × min(m, n) in the
    // gradient's dtype even for fp32 weights (no SVD factor kept).
    plan.training.galore_rank = None;
    plan.training.optimizer = Optimizer::Apollo;
    assert!(
        (states(&plan) - bf16).abs() < 1024.0,
        "{} vs {bf16}",
        states(&plan)
    );
    plan.training.precision = Precision::AmpBf16;
    let apollo_amp = 32.0 * block(4.0, &|lo| r * lo * 4.0) + rest * 2.0 * 4.0;
    assert!(
        (states(&plan) - apollo_amp).abs() < 1024.0,
        "{} vs {apollo_amp}",
        states(&plan)
    );
    plan.training.precision = Precision::Bf16;
    // Adapters are not projected: GaLore over LoRA is Adam over the adapters.
    plan.training.optimizer = Optimizer::Galore;
    plan.training.finetune = lora16_all();
    let galore_lora = states(&plan);
    plan.training.optimizer = Optimizer::Adamw;
    assert_eq!(galore_lora, states(&plan));
}

/// Korthikanti et al. 2022, eq. (1)–(4): activations per layer of a GPT block
/// (16-bit, dropout, materialised softmax) are s·b·h·(34 + 5·a·s/h) bytes; with
/// tensor + sequence parallelism divided by t; selective recomputation keeps
/// 34·s·b·h/t; full recomputation keeps the 2·s·b·h layer input. The paper
/// measured Megatron-LM, so its profile (fused 16-bit softmax, fused norms)
/// must give the formula. A plain loop over the same block gives it without
/// tensor parallelism's gathers: under PyTorch's DTensor sequence
/// parallelism the QKV and fc1 matmuls keep their gathered 16-bit inputs
/// whole (`calibration/saved_tensors.py --tp`), 4·s·b·h·(1 − 1/t) more
/// unless the whole block is recomputed.
#[test]
fn korthikanti_activation_formula_for_their_gpt_configs() {
    // Table 3 of the paper: 22B, 175B (GPT-3), 530B (MT-NLG), 1T.
    for ((layers, h, a, t), framework) in [
        (48, 6144, 64, 8),
        (96, 12288, 96, 8),
        (105, 20480, 128, 8),
        (128, 25600, 160, 8),
    ]
    .into_iter()
    .flat_map(|c| [(c, Framework::PlainPytorch), (c, Framework::Megatron)])
    {
        let (s, b) = (2048.0, 1.0);
        let mut plan = Plan {
            model: gpt(layers, h, a, 51200),
            ..Plan::default()
        };
        plan.set_framework(framework);
        plan.training.precision = Precision::Bf16;
        plan.training.attention = Attention::Eager;
        plan.training.dropout = true;
        plan.training.seq_len = 2048;
        plan.training.micro_batch = 1;
        plan.parallel.num_gpus = t;
        plan.parallel.tp = t;
        plan.parallel.sequence_parallel = true;
        plan.parallel.sharding = Sharding::None;
        let hf = h as f64;
        // Outside the layers (the paper's §4.3): the input embeddings'
        // dropout mask, sbh/t bytes under sequence parallelism.
        let embedding_dropout = s * b * hf / t as f64;
        let per_layer = |plan: &Plan| {
            let e = estimate(plan).unwrap();
            let fwd = e.stages[0]
                .phases
                .iter()
                .find(|p| p.phase == Phase::Forward)
                .unwrap();
            (fwd.breakdown.activations.get() as f64 - embedding_dropout) / layers as f64
        };
        let tf = t as f64;
        let cases = [
            (
                Checkpointing::None,
                s * b * hf * (34.0 + 5.0 * a as f64 * s / hf) / tf,
            ),
            (Checkpointing::Selective, 34.0 * s * b * hf / tf),
            (Checkpointing::Full, 2.0 * s * b * hf / tf),
        ];
        for (ckpt, want) in cases {
            plan.training.checkpointing = ckpt;
            let gathered = if framework == Framework::PlainPytorch && ckpt != Checkpointing::Full {
                4.0 * s * b * hf * (1.0 - 1.0 / tf)
            } else {
                0.0
            };
            let want = want + gathered;
            let got = per_layer(&plan);
            assert!(
                ((got - want) / want).abs() < 1e-6,
                "{framework:?} h={h} {ckpt:?}: {got} vs {want}"
            );
        }
    }
}

/// Checkpointing every k-th block keeps the inputs of the checkpointed blocks
/// and everything of the others.
#[test]
fn checkpoint_every_k_interpolates_between_none_and_full() {
    let mut p = Plan::default();
    let acts = |p: &Plan| {
        let e = estimate(p).unwrap();
        e.stages[0]
            .phases
            .iter()
            .find(|x| x.phase == Phase::Forward)
            .unwrap()
            .breakdown
            .activations
            .get()
    };
    p.training.checkpointing = Checkpointing::None;
    let none = acts(&p);
    p.training.checkpointing = Checkpointing::Full;
    let full = acts(&p);
    p.training.checkpoint_every = 2;
    let half = acts(&p);
    assert!(full < half && half < none);
    let mid = (none + full) as f64 / 2.0;
    assert!(((half as f64 - mid) / mid).abs() < 1e-6, "{half} vs {mid}");
}

/// Offloading moves optimizer states to host RAM: the GPU holds none, the host
/// holds the states, the master copy, an fp32 gradient partition and ZeRO-1/2's
/// 16-bit staging copy of the partition.
#[test]
fn optimizer_offload_moves_states_to_the_host() {
    let mut p = Plan::default();
    let on_gpu = estimate(&p).unwrap();
    assert_eq!(on_gpu.host_offload.get(), 0);
    p.parallel.offload = cost_model::plan::Offload::OPTIMIZER_CPU;
    let off = estimate(&p).unwrap();
    let step = |e: &cost_model::Estimate| {
        e.stages[0]
            .phases
            .iter()
            .find(|x| x.phase == Phase::Step)
            .unwrap()
            .breakdown
    };
    assert_eq!(step(&off).optimizer.get(), 0);
    assert!(off.peak.device_used < on_gpu.peak.device_used);
    // ZeRO-2 over 8 GPUs: (4 master + 8 moments + 4 gradient + 2 staging)
    // bytes × Ψ / 8 per rank on the host (deepspeed 0.19.8 stage_1_and_2.py).
    let want = 18.0 * off.params as f64 / 8.0;
    assert!(
        (off.host_offload.get() as f64 - want).abs() / want < 0.01,
        "{} vs {want}",
        off.host_offload.get()
    );
}

/// The host holds each offloaded state in the dtype the runtime keeps it in,
/// not a fixed 16 bits: ZeRO-3's parameter partitions in the model's dtype
/// (fp32 when it trains in fp32), its gradient partition in the model's
/// dtype beside an fp32 master and the moments; FSDP1's shard of packed NF4
/// codes with a pinned gradient of the same size for every flat parameter
/// (`_cpu_grad`), FSDP2's gradients for the trainable parameters only.
#[test]
fn host_offload_keeps_each_state_in_its_own_dtype() {
    use cost_model::plan::{Finetune, LoraTargets, Offload};
    let host = |p: &Plan| estimate(p).unwrap().host_offload.get() as f64;
    // Llama-2-7B, full fine-tune, ZeRO-3 over 8 ranks, all offloaded: the
    // host's bytes per parameter of the model.
    let mut p = llama2_7b(Framework::Deepspeed);
    p.parallel.num_gpus = 8;
    p.parallel.sharding = Sharding::Zero3;
    p.parallel.offload = Offload::ALL_CPU;
    let psi = estimate(&p).unwrap().params as f64;
    let per_param = |p: &Plan| host(p) * 8.0 / psi;
    // bf16: 2 (partition) + 4 master + 8 moments + 2 gradient partition;
    // fp32: 4 (partition) + 4 master (a copy) + 8 moments + 4 gradient partition.
    for (precision, bytes) in [(Precision::Bf16, 16.0), (Precision::Fp32, 20.0)] {
        p.training.precision = precision;
        assert!(
            (per_param(&p) - bytes).abs() < 1e-6,
            "{precision:?}: {}",
            per_param(&p)
        );
    }

    // QLoRA Llama-2-70B over two ranks with FSDP's CPU offload, pure bf16
    // (peft_docs_fsdp_70b-149): the shard is the packed codes, about a
    // quarter of the 16-bit weights; the host used "~107 GB" for both ranks.
    let mut q = Plan::default();
    q.model = preset("llama-2-70b").unwrap().spec();
    q.framework = Framework::HfTrainer;
    q.training.precision = Precision::Bf16;
    q.training.finetune = Finetune::Lora {
        rank: 8,
        targets: LoraTargets::ALL_LINEAR,
        base_bits: 4,
        dropout: true,
        variant: Default::default(),
    };
    q.parallel.num_gpus = 2;
    q.parallel.sharding = Sharding::FsdpFull;
    q.parallel.offload = Offload::ALL_CPU;
    let fsdp1 = host(&q);
    let packed = 69e9 * 0.5 / 2.0;
    assert!(fsdp1 > 2.0 * packed && 2.0 * fsdp1 < 107e9, "{fsdp1}");
    // FSDP2 copies gradients of the adapters alone: about one shard less.
    q.framework = Framework::PlainPytorch;
    let fsdp2 = host(&q);
    assert!(fsdp2 > packed && fsdp2 < 0.55 * fsdp1, "{fsdp2} vs {fsdp1}");
}

/// FSDP's parameter offload takes the gradients and the optimizer step to the
/// CPU with it (FSDP1 `CPUOffload(offload_params=True)`, FSDP2
/// `CPUOffloadPolicy`), whatever the plan says of the optimizer: the states
/// leave the GPU. A runtime that cannot offload parameters is refused by name.
#[test]
fn fsdp_parameter_offload_takes_the_optimizer_along() {
    use cost_model::plan::{Offload, OffloadDevice};
    let mut p = llama2_7b(Framework::HfTrainer);
    p.parallel.num_gpus = 8;
    p.parallel.sharding = Sharding::FsdpFull;
    p.parallel.offload = Offload::ALL_CPU;
    let both = estimate(&p).unwrap();
    p.parallel.offload.optimizer = OffloadDevice::None;
    let params_only = estimate(&p).unwrap();
    assert_eq!(params_only.peak, both.peak);
    assert_eq!(params_only.host_offload, both.host_offload);
    assert_eq!(phase(&params_only, Phase::Step).optimizer.get(), 0);
    // ZeRO-1/2, DDP and one GPU keep every parameter on the GPU.
    for s in [
        Sharding::None,
        Sharding::Ddp,
        Sharding::Zero1,
        Sharding::Zero2,
    ] {
        p.parallel.sharding = s;
        assert_eq!(
            estimate(&p).unwrap_err().field(),
            "parallel.offload.params",
            "{s:?}"
        );
    }
    // DeepSpeed offloads the parameters at stage 3 without the optimizer.
    p.parallel.sharding = Sharding::Zero3;
    let e = estimate(&p).unwrap();
    assert!(phase(&e, Phase::Step).optimizer.get() > 0);
}

/// FSDP1 under parameter offload reserves what FSDP2 does not: the root
/// unit's shard copied in on the pre-unshard stream, and the segments the
/// wrap of a host-loaded model left cached, beside which the loss's fp32
/// logits (larger than any of them) get segments of their own. Accelerate
/// (FSDP1) and a plain loop (FSDP2) hold the same tensors here, so the
/// reserve is all that differs; without offload nothing does. Measured on
/// the H200 (calibration/h200-2026-12-04-fsdp1): this plan reserved 21.71
/// GiB over a 16.29 GiB allocated peak. Both hold the segments the
/// checkpointed blocks' forward left idle beside the loss (model version
/// 26); FSDP1's wrap segments take them in, so the difference is 1–3 GiB over
/// the root shard (2–4 before).
#[test]
fn fsdp1_offload_reserves_its_copy_stream_and_wrap_segments() {
    use cost_model::plan::Offload;
    let mut p = Plan {
        model: preset("llama-3.1-8b").unwrap().spec(),
        ..Plan::default()
    };
    p.set_framework(Framework::HfAccelerate);
    p.training.precision = Precision::Bf16;
    p.training.finetune = lora16_all();
    p.training.micro_batch = 4;
    p.training.seq_len = 2048;
    p.training.checkpointing = Checkpointing::Full;
    p.parallel.num_gpus = 2;
    p.parallel.sharding = Sharding::FsdpFull;
    // The framework alone changes, not the settings its profile fills.
    let peak = |p: &Plan, fw| {
        let mut p = p.clone();
        p.framework = fw;
        let e = estimate(&p).unwrap();
        (e.peak.allocated.get(), e.peak.reserved.get())
    };
    let (fsdp1, fsdp2) = (
        peak(&p, Framework::HfAccelerate),
        peak(&p, Framework::PlainPytorch),
    );
    assert_eq!(fsdp1, fsdp2, "without offload");
    p.parallel.offload = Offload::ALL_CPU;
    let (fsdp1, fsdp2) = (
        peak(&p, Framework::HfAccelerate),
        peak(&p, Framework::PlainPytorch),
    );
    assert_eq!(fsdp1.0, fsdp2.0, "allocated");
    // The root unit (embedding, head and final norm in bf16) over two ranks.
    let m = &p.model;
    let root_shard = (2 * m.vocab as u64 * m.hidden as u64 + m.hidden as u64) * 2 / 2;
    let more = fsdp1.1 - fsdp2.1;
    assert!(more > root_shard + (1 << 30), "{more} B more reserved");
    assert!(more < root_shard + (3 << 30), "{more} B more reserved");
}

/// ZeRO-Infinity to NVMe: the same states leave the GPU, but land on the NVMe
/// device; the host keeps only the swap buffers (4 × sub-group × fp32).
#[test]
fn nvme_offload_puts_states_on_nvme_and_buffers_on_the_host() {
    use cost_model::plan::{Offload, OffloadDevice};
    let mut p = Plan::default();
    p.parallel.offload = Offload::OPTIMIZER_CPU;
    let cpu = estimate(&p).unwrap();
    p.parallel.offload.optimizer = OffloadDevice::Nvme;
    let nvme = estimate(&p).unwrap();
    assert_eq!(nvme.peak.device_used, cpu.peak.device_used);
    assert_eq!(nvme.nvme_offload, cpu.host_offload);
    assert_eq!(cpu.nvme_offload.get(), 0);
    // Llama-3.1-8B over 8 ranks: a 1.0e9-element shard, one sub-group of 1e9.
    let want = 4.0 * 1e9 * 4.0;
    assert!(
        (nvme.host_offload.get() as f64 - want).abs() / want < 0.01,
        "{}",
        nvme.host_offload.get()
    );
}

/// Freezing the bottom blocks of a full fine-tune (`requires_grad_(False)` on
/// the embedding and the first N blocks): Llama-2-7B with 8 of its 32 blocks
/// frozen trains 6.74 B − 131 M − 8 × 202 M parameters, keeps gradients and
/// AdamW states for those alone, and its frozen blocks keep no activations
/// (nothing beneath them needs a gradient). A tied embedding trains with the
/// head, so then the blocks' activations stay.
#[test]
fn frozen_bottom_layers_keep_no_states_and_no_activations() {
    let mut plan = llama2_7b(Framework::PlainPytorch);
    plan.training.precision = Precision::Bf16;
    plan.training.seq_len = 1024;
    let est = |p: &Plan| estimate(p).unwrap();
    let full = est(&plan);
    plan.training.frozen_layers = 8;
    let part = est(&plan);
    let m = preset("llama-2-7b").unwrap().spec();
    let block = m.layer_params() as f64;
    let trainable = m.params() as f64 - m.embedding_params() as f64 - 8.0 * block;
    assert_eq!(part.trainable_params, trainable as u64);
    let step = |e: &cost_model::Estimate| phase(e, Phase::Step);
    // Gradients in bf16, AdamW's two bf16 states.
    let g = step(&part).gradients.get() as f64;
    assert!(
        (g - 2.0 * trainable).abs() < 1024.0,
        "{g} vs {}",
        2.0 * trainable
    );
    let o = step(&part).optimizer.get() as f64;
    assert!(
        (o - 4.0 * trainable).abs() < 1024.0,
        "{o} vs {}",
        4.0 * trainable
    );
    // Weights do not move; activations keep 24 of 32 blocks.
    assert_eq!(step(&part).weights, step(&full).weights);
    let act = |e: &cost_model::Estimate| phase(e, Phase::Forward).activations.get() as f64;
    assert!(
        (act(&part) / act(&full) - 24.0 / 32.0).abs() < 0.01,
        "{} / {}",
        act(&part),
        act(&full)
    );
    // Tied (the head trains the embedding): every block keeps its activations.
    plan.model.tied_embeddings = true;
    let tied = est(&plan);
    plan.training.frozen_layers = 0;
    assert_eq!(act(&tied), act(&est(&plan)));
    // More than the model has, or beside an adapter, is refused by name.
    plan.training.frozen_layers = 33;
    assert_eq!(
        estimate(&plan).unwrap_err().field(),
        "training.frozen_layers"
    );
}

/// A multimodal model's vision encoder ([`ModelSpec::vision_params`], Qwen2.5-VL-7B's
/// 676,550,144): frozen weights in the dtype of the model's other weights, on
/// the first pipeline stage, sharded by ZeRO-3 / FSDP, whole on every tensor-parallel
/// rank; no gradients, optimizer states or activations.
#[test]
fn a_vision_encoder_is_frozen_weights_on_the_first_stage() {
    const VISION: f64 = 676_550_144.0;
    let text = llama2_7b(Framework::PlainPytorch);
    let with = |p: &Plan| {
        let mut p = p.clone();
        p.model.vision_params = VISION as u64;
        p
    };
    let est = |p: &Plan| estimate(p).unwrap();
    let step = |e: &cost_model::Estimate, s: usize| {
        e.stages[s]
            .phases
            .iter()
            .find(|x| x.phase == Phase::Step)
            .unwrap()
            .breakdown
    };
    let grew = |p: &Plan, s: usize| {
        let (a, b) = (step(&est(p), s), step(&est(&with(p)), s));
        assert_eq!(a.gradients, b.gradients);
        assert_eq!(a.optimizer, b.optimizer);
        assert_eq!(a.activations, b.activations);
        b.weights.get() as f64 - a.weights.get() as f64
    };
    // AMP over fp32 weights (the model loaded in fp32), pure bf16.
    let mut p = text.clone();
    p.training.precision = Precision::AmpBf16;
    assert_eq!(grew(&p, 0), 4.0 * VISION);
    p.training.precision = Precision::Bf16;
    assert_eq!(grew(&p, 0), 2.0 * VISION);
    assert_eq!(est(&with(&p)).params, est(&p).params + VISION as u64);
    assert_eq!(est(&with(&p)).trainable_params, est(&p).trainable_params);
    // LoRA over a 16-bit base: frozen beside the base.
    let mut lora = p.clone();
    lora.training.finetune = lora16_all();
    assert_eq!(grew(&lora, 0), 2.0 * VISION);
    // Sharded over 8 ranks by FSDP; whole on each of 2 TP ranks; on stage 0 of 2.
    let mut fsdp = p.clone();
    fsdp.set_framework(Framework::HfTrainer);
    fsdp.parallel.num_gpus = 8;
    fsdp.parallel.sharding = Sharding::FsdpFull;
    assert!((grew(&fsdp, 0) - 2.0 * VISION / 8.0).abs() <= 8.0);
    let mut tp = p.clone();
    tp.set_framework(Framework::Megatron);
    tp.parallel.num_gpus = 2;
    tp.parallel.tp = 2;
    tp.parallel.sharding = Sharding::Ddp;
    assert_eq!(grew(&tp, 0), 2.0 * VISION);
    tp.parallel.tp = 1;
    tp.parallel.pp = 2;
    assert_eq!(grew(&tp, 0), 2.0 * VISION);
    assert_eq!(grew(&tp, 1), 0.0);
}

/// DPO (TRL 1.16 `DPOTrainer`): chosen and rejected run as one batch of twice
/// the micro-batch, and a full fine-tune keeps a frozen reference model in the
/// policy's dtype — sharded with it under FSDP. A LoRA policy disables its
/// adapters for the reference pass: no second copy. ORPO doubles the batch
/// without a reference model.
#[test]
fn dpo_doubles_the_batch_and_keeps_a_reference_model() {
    use cost_model::plan::Objective;
    let mut plan = llama2_7b(Framework::PlainPytorch);
    plan.training.precision = Precision::Bf16;
    plan.training.seq_len = 1024;
    plan.training.micro_batch = 2;
    let est = |p: &Plan| estimate(p).unwrap();
    let sft = est(&plan);
    let mut doubled = plan.clone();
    doubled.training.micro_batch = 4;
    let sft4 = est(&doubled);
    plan.training.objective = Objective::Dpo;
    let dpo = est(&plan);
    let psi = 6_738_415_616.0;
    let w = |e: &cost_model::Estimate| phase(e, Phase::Step).weights.get() as f64;
    assert!((w(&dpo) - 2.0 * w(&sft)).abs() < 1024.0);
    assert!((w(&dpo) - 4.0 * psi).abs() < 1024.0, "{}", w(&dpo));
    // Activations: those of twice the micro-batch.
    let fwd = |e: &cost_model::Estimate| phase(e, Phase::Forward);
    assert_eq!(fwd(&dpo).activations, fwd(&sft4).activations);
    // Logits: TRL's DPO through the model's logits over those 4 × 1024
    // positions (trl 0.29–1.13 `_compute_loss`), not the causal-LM loss's
    // tensors — the policy's and the reference's 16-bit logits, the metrics'
    // flattened copy and the log-softmax rows kept for backward (8 bytes a
    // logit), and one 128-row entropy chunk (three 16-bit temporaries): each
    // vocabulary entry more costs that much.
    assert_ne!(fwd(&dpo).logits, fwd(&sft4).logits);
    let mut wide = plan.clone();
    wide.model.vocab *= 2;
    let per_entry = (8.0 * 4096.0 + 128.0 * 3.0 * 2.0) * 32000.0;
    let grown = fwd(&est(&wide)).logits.get() as f64 - fwd(&dpo).logits.get() as f64;
    assert!((grown - per_entry).abs() < 1024.0, "{grown} vs {per_entry}");
    // Gradients and optimizer states: the policy's only.
    let step = |e: &cost_model::Estimate| phase(e, Phase::Step);
    assert_eq!(step(&dpo).gradients, step(&sft).gradients);
    assert_eq!(step(&dpo).optimizer, step(&sft).optimizer);
    // ORPO: the doubled batch, one model.
    plan.training.objective = Objective::Orpo;
    let orpo = est(&plan);
    assert_eq!(w(&orpo), w(&sft));
    assert_eq!(fwd(&orpo).activations, fwd(&sft4).activations);
    // KTO: one sequence per example, with the reference model.
    plan.training.objective = Objective::Kto;
    let kto = est(&plan);
    assert_eq!(w(&kto), w(&dpo));
    assert_eq!(fwd(&kto).activations, fwd(&sft).activations);
    // FSDP over 8 GPUs shards the reference like the policy.
    plan.training.objective = Objective::Dpo;
    plan.parallel.num_gpus = 8;
    plan.parallel.sharding = Sharding::FsdpFull;
    let sharded = est(&plan);
    plan.training.objective = Objective::Sft;
    let sharded_sft = est(&plan);
    assert!((w(&sharded) - 2.0 * w(&sharded_sft)).abs() < 1024.0);
    // LoRA: no reference copy.
    plan.parallel.num_gpus = 1;
    plan.parallel.sharding = Sharding::None;
    plan.training.finetune = lora16_all();
    let lora_sft = est(&plan);
    plan.training.objective = Objective::Dpo;
    assert_eq!(w(&est(&plan)), w(&lora_sft));
}

/// TRL's `precompute_ref_log_probs`: a full fine-tune's DPO or KTO keeps no
/// reference model (but under FSDP, where TRL still wraps one), and DPO
/// through the model's logits holds no reference logits — one 16-bit
/// logits-sized tensor fewer at the forward's end.
#[test]
fn precomputed_reference_log_probs_drop_the_reference_model_and_logits() {
    use cost_model::plan::{Loss, Objective};
    let mut plan = llama2_7b(Framework::Trl);
    plan.training.precision = Precision::Bf16;
    plan.training.seq_len = 1024;
    plan.training.micro_batch = 2;
    plan.training.loss = Loss::Standard;
    plan.training.objective = Objective::Dpo;
    let est = |p: &Plan| estimate(p).unwrap();
    let w = |e: &cost_model::Estimate| phase(e, Phase::Step).weights.get() as f64;
    let lg = |e: &cost_model::Estimate| phase(e, Phase::Forward).logits.get() as f64;
    let with_ref = est(&plan);
    plan.training.precompute_ref = true;
    let precomputed = est(&plan);
    let psi = 6_738_415_616.0;
    assert!((w(&with_ref) - w(&precomputed) - 2.0 * psi).abs() < 1024.0);
    // 4 sequences × 1024 positions × 32,000 entries × 2 bytes.
    let logits = 4.0 * 1024.0 * 32000.0 * 2.0;
    assert!((lg(&with_ref) - lg(&precomputed) - logits).abs() < 1024.0);
    // KTO's reference model goes too; FSDP keeps it.
    plan.training.objective = Objective::Kto;
    let kto = est(&plan);
    assert!((w(&kto) - w(&precomputed)).abs() < 1024.0);
    plan.training.objective = Objective::Dpo;
    plan.parallel.num_gpus = 8;
    plan.parallel.sharding = Sharding::FsdpFull;
    let fsdp = est(&plan);
    plan.training.precompute_ref = false;
    assert_eq!(w(&fsdp), w(&est(&plan)));
}

/// The trainable counts of methods whose size the model's shape decides, as
/// the frameworks define their parameters (LitGPT `adapter.py` /
/// `adapter_v2.py`, PEFT's IA³, LN tuning and prefix tuning), counted by hand.
#[test]
fn adapter_counts_follow_the_frameworks_parameter_definitions() {
    use cost_model::plan::AdapterMethod::{self, *};
    let count = |m: AdapterMethod, id: &str, vt: u32| {
        m.default_trainable_params(&preset(id).unwrap().spec(), vt)
    };
    // Llama-2-7B: 30 blocks from the start layer × (10 prefix tokens × 4096
    // + a gate per head).
    assert_eq!(
        count(LlamaAdapter, "llama-2-7b", 0),
        Some(30 * (10 * 4096 + 32))
    );
    // v2 adds, in each of 32 blocks, a bias and a scale per output of the
    // fused qkv (3 · 4096), the output projection (4096) and the MLP (fc_1,
    // fc_2: 2 · 11008; proj: 4096), of the LM head (32000), and the trained
    // RMSNorm weights (65 · 4096).
    let v2 =
        30 * (10 * 4096 + 32) + 2 * (32 * (3 * 4096 + 4096 + 2 * 11008 + 4096) + 32000) + 65 * 4096;
    assert_eq!(count(LlamaAdapterV2, "llama-2-7b", 0), Some(v2));
    assert_eq!(v2, 4_279_744);
    // TinyLlama's grouped kv (4 heads of 64): the fused qkv is (32 + 2·4)·64 wide.
    assert_eq!(
        count(LlamaAdapterV2, "tinyllama-1.1b", 0),
        Some(
            20 * (10 * 2048 + 32) + 2 * (22 * (2560 + 2048 + 2 * 5632 + 2048) + 32000) + 45 * 2048
        )
    );
    // IA³: k and v outputs (grouped: 2 · 256) and the down projection's input;
    // GPT-2's fused c_attn scales all 2304 outputs.
    assert_eq!(count(Ia3, "llama-2-7b", 0), Some(614_400));
    assert_eq!(count(Ia3, "tinyllama-1.1b", 0), Some(22 * (2 * 256 + 5632)));
    assert_eq!(count(Ia3, "gpt2", 0), Some(12 * (2304 + 3072)));
    // LN tuning: GPT-2's 25 LayerNorms, weight and bias.
    assert_eq!(count(LnTuning, "gpt2", 0), Some(25 * 2 * 768));
    // Prefix tuning: 20 tokens × 32 layers × k and v × the kv width.
    assert_eq!(
        count(PrefixTuning, "llama-2-7b", 20),
        Some(20 * 32 * 2 * 4096)
    );
    assert_eq!(count(PrefixTuning, "llama-2-7b", 0), None);
    // Counts that depend on settings a plan does not carry, and
    // encoder–decoders, are not derived.
    for m in [Generic, Boft, CastInputs, DeltaWeight, Hra] {
        assert_eq!(count(m, "llama-2-7b", 20), None, "{m:?}");
    }
    assert_eq!(count(LlamaAdapter, "flan-t5-base", 0), None);
}

/// PEFT adapts a fused projection as one module: GPT-2's `c_attn` at rank 8
/// is 294,912 trainable parameters (PEFT's README and quicktour,
/// `print_trainable_parameters()`: 12 × (8 · 768 + 2304 · 8)), Pythia-1.4B
/// at rank 16 on every linear 12,582,912 (PEFT 0.21.2's
/// `print_trainable_parameters()` on `GPTNeoXConfig`: 24 × 16 × 32,768, the
/// in and out widths of `query_key_value`, `dense`, `dense_h_to_4h` and
/// `dense_4h_to_h` summed) — one adapter over
/// `query_key_value`, not one each for q, k and v. LitGPT's `LoRAQKVLinear`
/// keeps a rank-r slice of A per enabled part: its count stays per part.
#[test]
fn a_fused_projection_is_adapted_as_one_module() {
    use cost_model::plan::{Finetune, LoraTargets, LoraVariant};
    let lora = |rank, targets| Finetune::Lora {
        rank,
        targets,
        base_bits: 16,
        dropout: true,
        variant: LoraVariant::Lora,
    };
    let trainable = |id: &str, fw: Framework, finetune: Finetune| {
        let mut p = Plan::default();
        p.model = preset(id).unwrap().spec();
        p.set_framework(fw);
        p.training.finetune = finetune;
        estimate(&p).unwrap().trainable_params
    };
    let c_attn = LoraTargets {
        q: true,
        k: true,
        v: true,
        ..LoraTargets::default()
    };
    let pt = Framework::PlainPytorch;
    assert_eq!(trainable("gpt2", pt, lora(8, c_attn)), 294_912);
    // q and v named: the same one module.
    let qv = LoraTargets {
        q: true,
        v: true,
        ..LoraTargets::default()
    };
    assert_eq!(trainable("gpt2", pt, lora(8, qv)), 294_912);
    let all = lora(16, LoraTargets::ALL_LINEAR);
    assert_eq!(trainable("pythia-1.4b", pt, all), 12_582_912);
    // LitGPT: A has a slice per enabled part (q and v: 2 · 16 rows), B the
    // enabled parts' outputs.
    let h = 4096; // StableLM-Alpha-3B: 16 blocks
    let litgpt = trainable("stablelm-base-alpha-3b", Framework::Litgpt, lora(16, qv));
    assert_eq!(litgpt, 16 * 2 * 16 * (h + h));
}

/// Unsloth's README (unsloth 2025.2.4 to 2025.6.1 on PyPI, "Context length
/// benchmarks") gives the longest sequence Llama-3.1-8B-Instruct trains at as
/// QLoRA (4-bit, rank 32 on every linear, batch 1, padded to length) on GPUs
/// of 8 to 80 GB: with Hugging Face + FA2 OOM, 932, 2,551, 5,789, 12,264,
/// 15,502 and 28,454 tokens. Read as the Trainer's QLoRA recipe (PEFT's k-bit
/// preparation, checkpointing, autocast bf16, 8-bit AdamW), the longest
/// sequence the model finds is within a quarter of each from 16 GB on (the
/// 12 GB one is 656, the fixed costs weighing most there), and 8 GB does
/// not fit. Unsloth's own column (2,972 … 342,733 tokens) is not pinned: the
/// model gives it about 36 % more context at 80 GB (docs/ACCURACY.md).
#[test]
fn qlora_longest_sequences_match_the_unsloth_readmes_hugging_face_column() {
    use cost_model::plan::{Finetune, LoraTargets, LoraVariant, Optimizer};
    use cost_model::search::max_seq_len;
    let mut p = Plan::default();
    p.model = preset("llama-3.1-8b").unwrap().spec();
    p.set_framework(Framework::HfTrainer);
    p.parallel.num_gpus = 1;
    p.parallel.sharding = Sharding::None;
    let t = &mut p.training;
    t.precision = Precision::AmpBf16;
    t.micro_batch = 1;
    t.grad_accum = 1;
    t.optimizer = Optimizer::Adamw8bit;
    t.checkpointing = Checkpointing::Full;
    t.kbit_fp32_prep = true;
    t.finetune = Finetune::Lora {
        rank: 32,
        targets: LoraTargets::ALL_LINEAR,
        base_bits: 4,
        dropout: false,
        variant: LoraVariant::Lora,
    };
    let longest = |gb: u64| {
        let mut q = p.clone();
        q.gpu.capacity_mib = gb * 1024;
        max_seq_len(&q).unwrap()
    };
    assert_eq!(longest(8), None);
    for (gb, published) in [
        (16, 2551.0),
        (24, 5789.0),
        (40, 12264.0),
        (48, 15502.0),
        (80, 28454.0),
    ] {
        let ours = longest(gb).unwrap() as f64;
        assert!(
            (ours / published - 1.0).abs() <= 0.25,
            "{gb} GB: {ours} tokens against {published}"
        );
    }
}

/// Under fp16 autocast a head that hands `CrossEntropyLoss` its 16-bit scores
/// takes CUDA's `half_to_float` log-softmax — no fp32 copy, an fp16 gradient —
/// which T5's head does; BART's adds its fp32 `final_logits_bias` first, so
/// its scores are fp32 before the loss, held by the output a plain loop keeps
/// (four fp32 score-sized tensors as backward starts). Replayed
/// (`calibration/allocator_replay.py --families`): T5-base at 8 × 512 keeps
/// 0.243 GiB (its fp16 scores) less under fp16 than under bf16 autocast,
/// BART-large the same under both; BART-large at 16 × 512 with
/// checkpointing starts backward with 4 × 1.534 GiB of fp32 scores.
#[test]
fn t5s_loss_reads_fp16_scores_and_barts_bias_promotes_them() {
    let logits_at = |id: &str, prec: Precision, mb: u32, ph: Phase| {
        let p = transformers_loop(id, prec, mb, 512);
        phase(&estimate(&p).unwrap(), ph).logits.get() as f64
    };
    let (fp16, bf16) = (Precision::AmpFp16, Precision::AmpBf16);
    let t5_scores = 8.0 * 512.0 * 32_128.0;
    let saved = logits_at("t5-base", bf16, 8, Phase::Backward)
        - logits_at("t5-base", fp16, 8, Phase::Backward);
    assert_eq!(saved, 2.0 * t5_scores);
    assert!(preset("bart-large").unwrap().spec().logits_bias);
    assert!(!preset("t5-base").unwrap().spec().logits_bias);
    assert_eq!(
        logits_at("bart-large", fp16, 16, Phase::Backward),
        logits_at("bart-large", bf16, 16, Phase::Backward)
    );
    // BART's held fp32 scores: 4 B each more than T5-like 16-bit ones would
    // be held at, 2 B of it in place of the `.float()` copy's.
    let bart_scores = 16.0 * 512.0 * 50_265.0;
    let mut unbiased = preset("bart-large").unwrap().spec();
    unbiased.logits_bias = false;
    // The model is set per call below; block dropout stays as the default
    // model seeded it (off), as before.
    let mut p = transformers_loop("bart-large", bf16, 16, 512);
    p.training.dropout = false;
    let at = |p: &Plan, m: ModelSpec, ph| {
        let mut q = p.clone();
        q.model = m;
        phase(&estimate(&q).unwrap(), ph).logits.get() as f64
    };
    let biased = preset("bart-large").unwrap().spec();
    let grew = at(&p, biased.clone(), Phase::Backward) - at(&p, unbiased.clone(), Phase::Backward);
    assert_eq!(grew, 2.0 * bart_scores);
    let fwd = at(&p, unbiased.clone(), Phase::Forward) - at(&p, biased.clone(), Phase::Forward);
    assert_eq!(fwd, 2.0 * bart_scores);
    // A 16-bit base (LoRA over a bf16 checkpoint) has a 16-bit buffer: the
    // scores stay 16-bit.
    p.training.finetune = cost_model::plan::Finetune::Lora {
        rank: 16,
        targets: cost_model::plan::LoraTargets::ALL_LINEAR,
        base_bits: 16,
        dropout: false,
        variant: cost_model::plan::LoraVariant::Lora,
    };
    assert_eq!(
        at(&p, biased, Phase::Backward),
        at(&p, unbiased, Phase::Backward)
    );
}

/// A preset trained by a plain loop over its transformers model (the
/// replays' and the H200 runs' set-up) on one GPU.
fn transformers_loop(id: &str, precision: Precision, micro_batch: u32, seq_len: u32) -> Plan {
    let mut p = Plan::default();
    p.model = preset(id).unwrap().spec();
    p.set_framework(Framework::PlainPytorch);
    p.parallel.num_gpus = 1;
    p.parallel.sharding = Sharding::None;
    p.training.fp32_upcasts = true; // transformers' model code
    p.training.precision = precision;
    p.training.micro_batch = micro_batch;
    p.training.seq_len = seq_len;
    p
}

/// What the stacks keep outside their blocks, pinned to the allocation
/// replay (`calibration/allocator_replay.py`, T5-base bf16 checkpointed at
/// 32 × 512: 24 block inputs, both embedding dropouts' masks, the encoder's
/// final norm — fp32 copy, 16-bit input, normalised tensor —, its dropout's
/// mask and output; at the decoder's end the same norm, the mask and the
/// head's input), and the scale-side tensor every RMSNorm written as tensor
/// ops keeps at the top of a decoder (SmolLM2/Llama: `hidden_states.to(
/// input_dtype)`, which `weight *` saves).
#[test]
fn the_stacks_keep_their_ends_outside_the_blocks() {
    let plan = |id: &str, ckpt: bool, dropout: bool| {
        let mut p = transformers_loop(id, Precision::Bf16, 32, 512);
        p.training.dropout = dropout;
        p.training.checkpointing = if ckpt {
            Checkpointing::Full
        } else {
            Checkpointing::None
        };
        p
    };
    let at = |p: &Plan, ph| phase(&estimate(p).unwrap(), ph);
    let th = 32.0 * 512.0 * 768.0; // elements of one hidden-wide tensor
    let blocks = 24.0 * 2.0 * th; // the checkpointed blocks' 16-bit inputs
    let t5 = plan("t5-base", true, true);
    let acts = at(&t5, Phase::Forward).activations.get() as f64;
    // Two embedding masks; the encoder's end: 4 + 2 + 2 (norm), 1 (mask), 2
    // (output).
    assert_eq!(acts, blocks + (2.0 + 11.0) * th);
    let acts = at(&plan("t5-base", true, false), Phase::Forward)
        .activations
        .get() as f64;
    assert_eq!(acts, blocks + 10.0 * th, "no dropout, no masks");
    // A frozen embedding (LoRA) passes no gradient to its dropout: no masks
    // there; a frozen norm weight keeps no normalised tensor for its scale —
    // unless PEFT under checkpointing makes each embedding's output a leaf
    // that requires a gradient (`enable_input_require_grads`): then both
    // stacks keep it (2) and their dropout's mask (1), as replayed.
    let mut lora = t5.clone();
    lora.training.finetune = lora16_all();
    let acts = at(&lora, Phase::Forward).activations.get() as f64;
    assert_eq!(acts, blocks + (9.0 + 2.0 * 3.0) * th);
    // The decoder's end, at the head's side of the loss: its final dropout's
    // mask is the difference dropout makes there.
    let logits = |p: &Plan| at(p, Phase::Forward).logits.get() as f64;
    assert_eq!(logits(&t5) - logits(&plan("t5-base", true, false)), th);

    // A decoder-only model: the final RMSNorm keeps 4 + 2 bytes an element
    // and the head's input 2 more, 8 in all; its norm weight frozen (LoRA),
    // the normalised tensor is not kept.
    let mut llama = plan("llama-3.2-1b", true, false);
    llama.training.micro_batch = 4;
    llama.training.seq_len = 2048;
    let th = 4.0 * 2048.0 * 2048.0;
    let norm_moment = |p: &Plan| at(p, Phase::Backward).logits.get() as f64;
    let mut frozen = llama.clone();
    frozen.training.finetune = lora16_all();
    let full = norm_moment(&llama);
    let lora = norm_moment(&frozen);
    assert_eq!(full - lora, 2.0 * th);
}

/// A plain MLP's input is cast once under autocast: it has one matmul reading
/// it, where a gated MLP has two. Replayed block by block
/// (`calibration/allocator_replay.py`, BERT-large under fp16 autocast, 32 ×
/// 512, which the H200 measured at the replayed 26.038 GiB): a block keeps
/// fc1's output and GELU's (8 + 8 bytes a token and hidden unit), its two
/// fp32 residual sums (the LayerNorms' inputs, 4 + 4), q/k/v's own 16-bit
/// casts of the block input and their outputs (6 + 6), the attention output
/// (2), fc1's input cast (2) and two dropout masks (1 + 1): 42. The model
/// counted a second cast for a gate the MLP does not have (44).
#[test]
fn a_plain_mlp_casts_its_input_once_under_autocast() {
    let mut p = transformers_loop("bert-large", Precision::AmpFp16, 32, 512);
    p.training.dropout = true;
    let mut fewer = p.clone();
    fewer.model.layers -= 1;
    let per_block =
        (forward_activations(&p) - forward_activations(&fewer)) / (32.0 * 512.0 * 1024.0);
    // And the per-row log-sum-exp of flash attention: 16 heads × 4 bytes a
    // token, over 1024 hidden units.
    assert!(
        (per_block - 42.0 - 16.0 * 4.0 / 1024.0).abs() < 1e-9,
        "{per_block}"
    );
}

/// A model whose code always hands SDPA a materialised causal mask keeps it
/// in every block: transformers 5 Falcon (`create_causal_mask(...,
/// allow_is_causal_skip=False)`), replayed (`calibration/allocator_replay.py`)
/// at 4 × 2048 in bf16 with a `B × 1 × S × S` bf16 mask per block (32 MiB), the
/// whole of the block's shortfall. Under a framework that runs its own
/// attention, or compiled (Inductor recomputes the conversion), none.
#[test]
fn falcons_sdpa_mask_is_kept_in_every_block() {
    let p = transformers_loop("falcon-7b", Precision::Bf16, 4, 2048);
    assert!(p.model.sdpa_mask);
    let mut without = p.clone();
    without.model.sdpa_mask = false;
    let mask = 4.0 * 2048.0 * 2048.0 * 2.0;
    assert_eq!(
        forward_activations(&p) - forward_activations(&without),
        32.0 * mask
    );
    let mut compiled = p.clone();
    compiled.training.compile = true;
    let mut compiled_without = compiled.clone();
    compiled_without.model.sdpa_mask = false;
    assert_eq!(
        forward_activations(&compiled),
        forward_activations(&compiled_without)
    );
    let mut lit = p.clone();
    lit.set_framework(Framework::Litgpt);
    let mut lit_without = lit.clone();
    lit_without.model.sdpa_mask = false;
    assert_eq!(forward_activations(&lit), forward_activations(&lit_without));
}
