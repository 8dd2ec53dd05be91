//! `MODEL_VERSION` moves with the model's numbers: a saved plan records the
//! version it was estimated with, and the saved-plan page says so when the
//! figures it shows come from another version. This test fingerprints the
//! estimates of a fixed set of plans (the project's own calibration files,
//! each at four batch/pipeline variants, and every preset under every
//! framework profile at three layouts): any change to any byte count fails
//! here until `MODEL_VERSION` is bumped and the fingerprint recorded beside it.
//! Only data inside the repository is used, so new shared data cannot move it.
#![allow(clippy::field_reassign_with_default)] // one field at a time reads best here

use cost_model::calibrate::case_plan;
use cost_model::estimate::{estimate, Component, MODEL_VERSION};
use cost_model::framework::Framework;
use cost_model::plan::{Plan, Sharding};
use cost_model::presets::presets;

/// The fingerprint of each model version since they were recorded. A new
/// preset adds plans to the set, so the fingerprint of the same version is
/// re-recorded when no estimate of an existing plan moved (3: FLAN-T5/BART in
/// the twelfth session; Gemma-1, Pythia, OPT, BLOOM, … in the thirteenth,
/// the project's calibration reports byte-identical). Likewise when a plan
/// setting is added whose default keeps every saved plan's figures and the
/// calibration rows that state it now set it (`training.nf4_double_quant`:
/// the H200 QLoRA rows ran bitsandbytes' double quantization), and when
/// only the reading of a calibration row moves (version 4 in the fourteenth
/// session: rows take their model's norm, positions and biases from the
/// preset it names, so the GPT-2 rows lost the rotary embedding they were
/// read with; the estimate of every plan as given is unchanged). Version 9
/// was re-recorded in the sixteenth session for Qwen1.5-MoE, DeepSeek-MoE
/// and Llama-4-Maverick (MoE dense blocks and shared experts): the set
/// without them still gave 0xe097_d317_3d59_aa09 and the three calibration
/// reports were byte-identical; then for DeepSeek-V2-Lite and DeepSeek-V3
/// (latent attention), without which the set gave 0x0930_cfc2_1364_b8ef.
/// Version 11 was recorded twice in the eighteenth session before it landed:
/// 0xe4b4_3ad9_61cd_5646 for the packed 4-bit gather, then this one once a
/// checkpointed block's autocast casts were freed with its forward. It was
/// re-recorded in the twenty-first session when LitGPT's checkpointing
/// default came to follow the GPU count (`Framework::default_checkpointing`):
/// the set's LitGPT plans on 16 and 32 GPUs now checkpoint, as its finetune
/// scripts do; with each plan's policy held at the old default the set still
/// gave 0x02c6_2371_0c0b_a29a, so no estimate of a plan as given moved.
/// Version 12 was re-recorded in the twenty-second session for the profiles
/// of LLaMA-Factory, ms-swift, axolotl and Unsloth (four more frameworks in
/// the preset set): without them the set still gave 0xca37_7a08_8ae3_5ab0
/// and the three calibration reports were byte-identical. Version 15 was
/// recorded twice in the twenty-fifth session before it landed:
/// 0x258f_23ab_8ff4_5e80 for T5's position-bias mask and norm input, then
/// this one once padded rows (and a sliding window as long as the sequence)
/// kept SDPA's converted mask. Version 16 was recorded six times in the
/// twenty-sixth session, as its changes came one after another before it
/// landed: 0xd3e3_2cb3_e1d0_ef35 (the stranded loss segments, counted as
/// whole segments), 0xd7da_55c8_40be_8cd1 (the band's high edge re-derived),
/// 0x0e68_d074_8c22_5dfb (the stranded bytes as `max(L, states)` capped at
/// three segments: the whole-segment count fell as an encoder–decoder's
/// target grew, which the property test
/// `an_encoder_decoder_grows_with_its_source_and_its_target` found),
/// 0x975b_edbb_f980_3d58 (an encoder's masked-LM loss under fp16 autocast
/// keeps CUDA's fp16 gradient), 0x39d2_1532_f3ca_8a6c (a loop's held logits
/// through the optimizer's step; stranded segments only on the loss's
/// stream), then this one: the standard loss's forward moment counted apart
/// from its backward's, the first step's peak reserved with the allocator's
/// share, the stranded bytes as `states + L/2` between one and three
/// segments, and the band re-derived (`BAND_BELOW` 0.046 → 0.045,
/// `BAND_ABOVE` 0.071 → 0.059). Version 17 was recorded twice in the
/// twenty-seventh session before it landed: 0xa71a_31a3_8039_19e8 (ReLU
/// MLPs, q/k norms, one adapter per fused projection), then this one once
/// encoder and encoder–decoder losses ran on their 16-bit scores and a
/// decoder's cross-attention adapters counted. It was re-recorded in the
/// twenty-eighth session when block dropout came to be seeded by the model
/// and the framework (`Plan::default_dropout`, which `set_framework` applies):
/// the set's GPT-2, BERT, OPT, T5 and BART plans now drop out under the
/// frameworks whose model code does; with dropout held off as before the set
/// still gave 0x9436_1627_b809_f051, so no estimate of a plan as given moved.
/// Version 18 was recorded twice in the twenty-eighth session before it
/// landed: 0x510a_75ee_5cc8_0f00, then this one once BART's bias buffer
/// promoted the scores only where it is fp32 (not under DeepSpeed's 16-bit
/// module or over a 16-bit frozen base). Version 19 was recorded twice in the
/// twenty-ninth session before it landed: 0x330e_0eed_b1da_71db, then
/// 0xa10d_e090_49fa_3b26 once a recomputed block stopped counting a second
/// copy of an input its first op saves as it is
/// (`Ctx::recompute_reuses_input`), then 0x5ed7_1635_f060_2fea once a plain
/// MLP's input took one autocast cast, not two (no gate), then this one once
/// Falcon's always-materialised SDPA mask counted (`ModelSpec::sdpa_mask`).
/// Version 20 was recorded twice in the thirtieth session before it landed:
/// 0x472c_dd3f_00c8_fee7 for the smaller reserve of an adapter without
/// recomputation, then this one once LitGPT's 4-bit matmuls held the fp16
/// dequantized matrix beside its cast. Version 21 (thirty-first session):
/// what older PyTorch releases keep (`TrainingSpec::pytorch`, the current
/// release in every plan of the set, whose estimates did not move: the set
/// still gave version 20's fingerprint with the new setting) and the band
/// re-derived. Version 22 (thirty-fourth session): a compiled model's loss
/// buffers through the head's backward (and, tied, the blocks'), FSDP2's
/// gathers on one rank; its set adds the rows of calibration/h200-2026-12-04.
/// Re-recorded in the thirty-fifth session when the set added the rows of
/// calibration/h200-2026-12-04-deepspeed (no estimate moved: without them the
/// set still gave 0x58c9_47cd_cc3d_6c65). Version 23 (thirty-fifth session):
/// DeepSpeed's 16-bit model without autocast, ZeRO-3's bucket in the
/// communication dtype, a frozen base linear's input kept under ZeRO-3;
/// recorded twice in that session before CI had run on it:
/// 0xe3a3_244e_2dea_0fde, then this one with ZeRO-3's fetch-stream pool.
/// Version 24 (thirty-sixth session): the host's offloaded states in their
/// own dtypes, FSDP's parameter offload taking the optimizer along (the
/// fingerprint's ZeRO-3 plans offload an fp32 model: their host bytes moved).
/// Version 25 (thirty-seventh session): FSDP1's offload reserve (its
/// pre-unshard stream's pool, the wrap's cached segments); the set gained
/// calibration/h200-2026-12-04-fsdp1, whose runs found them.
/// Version 28 was re-recorded in the forty-second session for the MPT-7B,
/// MPT-30B, StableLM-2-1.6B and OLMoE-1B-7B presets (found by the replayed
/// families): without them the set still gave 0xa38d_0cf6_d661_3596, and
/// every calibration report was byte-identical.
/// Version 35 (forty-fourth session) moved only classifiers' checkpointed
/// full fine-tunes, which the set held none of (it gave version 34's
/// fingerprint): the set gained the replayed classifiers and the LoRA
/// without dropout (calibration/replay-classifiers-2026-12-05,
/// replay-lora-nodropout-2026-12-05) and 35 was recorded with them — and
/// re-recorded when the latter gained its held-out rows (no estimate moved:
/// before them the set gave 0xc8e2_8f69_51b9_e7a8).
/// Version 37 (forty-fifth session) was recorded with the replayed QLoRA
/// families added to the set (calibration/replay-qlora-2026-12-05); without
/// them it gave 0xeae8_8b7e_93bd_e020. Version 38 was recorded with the
/// file's rows without the k-bit preparation added, and re-recorded when
/// the file gained its held-out eager rows (Gemma-2-2B, BLOOM-1b7; no
/// estimate moved: before them the set gave 0x613a_3dc5_7f88_dbb0). It was
/// re-recorded in the forty-sixth session for `training.kbit_embeddings_16bit`
/// (TRL ≤ 0.21's embeddings back in bf16, off in every saved plan) and the
/// replayed TRL QLoRA added to the set (calibration/replay-qlora-trl-2026-12-05);
/// without the file the set still gave 0x35dc_8276_d4be_6430, and every
/// calibration report was byte-identical. Version 39 (TRL's fused LM head)
/// was recorded with the replayed fused-head, DPO and QLoRA files in the set
/// (calibration/replay-trl-fused-head-2026-12-05, replay-trl-dpo-2026-12-05,
/// replay-trl-qlora-2026-12-05),
/// the head's fp32 casts read as no copies, no autocast cast of the whole
/// head under the fused head, and its tile alive as its backward returns.
/// Version 40 (DPO through the model's logits, TRL 0.29 to 1.13) was recorded
/// with the replayed file of that path in the set
/// (calibration/replay-trl-dpo-logits-2026-12-05, and TRL 0.24's path for
/// comparison, replay-trl-dpo-logits-0.24-2026-12-05), and re-recorded before
/// it landed for TRL's chunked NLL ([`Loss::ChunkedNll`]) with TRL's SFT
/// files in the set (replay-trl-sft-logits-2026-12-05,
/// replay-trl-chunked-nll-2026-12-05), for the segment of TRL's SFT
/// metrics' copy of the logits, and for LLaMA-Factory's DPO upcasting its
/// logits (replay-llamafactory-dpo-2026-12-05 in the set). Version 41
/// (ORPO through the logits as TRL's `ORPOTrainer` and LLaMA-Factory run it,
/// TRL's log-probabilities kernel) was recorded with the replayed ORPO files
/// in the set (replay-trl-orpo-2026-12-05, replay-trl-orpo-1.13-2026-12-05,
/// replay-llamafactory-orpo-2026-12-05), and re-recorded before it landed
/// for LLaMA-Factory's KTO (replay-llamafactory-kto-2026-12-05 in the set);
/// every earlier calibration report was byte-identical. Version 52 was
/// re-recorded in the sixty-third session for the multimodal presets
/// (Qwen2.5-VL-3B/7B/72B, LLaVA-1.5-7B: `ModelSpec::vision_params`, which
/// every earlier plan holds at 0): without them the set still gave
/// 0xcfbe_9511_2884_d691, and all 29 calibration reports were byte-identical.
/// Version 53 (`nn.DataParallel`'s reduced gradients on GPU 0, its
/// replicas' peak) added each preset under `nn.DataParallel` on four GPUs to
/// the set, and the replicas' peak to what is hashed: no earlier plan of the
/// set runs `nn.DataParallel`, and no calibration row does.
/// Version 54: under the Trainer each `nn.DataParallel` replica computes
/// its share's loss, and GPU 0 gathers the logits alone.
/// Version 55: TRL 0.15–0.28's DPO (the replayed 0.24 file's rows state
/// their release) returns no logits from its forward.
/// Version 56: TRL 0.5–0.14's DPO saves a whole log-softmax (the replayed
/// 0.13, 0.11 and 0.8 files in the set), and a preference loss under the
/// Trainer's AMP meets only the weight copies autograd saved; re-recorded
/// within the session (0xac69_807a_c4cd_c230 before) for 0.12–0.14's one
/// dropped 16-bit output.
/// Version 57: bitsandbytes' optimizers step in place whatever the
/// `optimizer_impl` setting, and their 32-bit states are fp32 beside 16-bit
/// parameters (the set's plans from the project's files that run one moved,
/// in phases or counters their reports do not grade).
const FINGERPRINTS: &[(u32, u64)] = &[
    (2, 0x264f_8e75_00c7_9c03),
    (3, 0xf3f4_1c79_626c_e60b),
    (4, 0x4403_cad5_0e55_034a),
    (5, 0xf682_cde7_b5b1_7f90),
    (6, 0xb4ef_1e2b_6a9a_93e4),
    (7, 0x933f_0daa_f8f1_e184),
    (8, 0xe361_5708_7ac8_cd2d),
    (9, 0xfb45_8b9c_2057_1a2c),
    (10, 0x24e7_a78c_2224_3de9),
    (11, 0x1e77_7015_7468_bf1e),
    (12, 0x13a7_38ff_7e7a_14c7),
    (13, 0x3377_36cc_0bc8_13d8),
    (14, 0x55bd_b95d_1423_fabd),
    (15, 0xfb12_fed2_0684_438e),
    (16, 0xa519_574c_bbc7_d9d7),
    (17, 0x9f10_5c50_69ef_7bd9),
    (18, 0xde01_93a1_7570_0773),
    (19, 0x3883_4ba4_98fb_9247),
    (20, 0x4846_0458_fe4a_63d1),
    (21, 0x0053_4543_c43a_9876),
    (22, 0xf253_de5e_1b58_ae87),
    (23, 0x4d2f_50da_4ca3_a673),
    (24, 0xae37_0c0d_be6c_8957),
    (25, 0x1d38_6d9a_dbd7_a09d),
    (26, 0x3c3e_708f_7cc0_f303),
    (27, 0xd3a1_d2d2_781d_ecb2),
    (28, 0x57a1_0502_fc67_39f7),
    (29, 0xbb7d_523d_c775_a7b2),
    (30, 0x543b_e1d6_f331_e796),
    (31, 0x455f_7af8_ca8f_9442),
    (32, 0xb925_b157_3fc4_b1b0),
    (33, 0x384c_0aa7_2ca4_4d34),
    (34, 0x793c_7911_d693_86e4),
    (35, 0xe333_1ae0_24d2_02b8),
    (36, 0x8f96_17e7_152a_f093),
    (37, 0x485a_eccf_462f_7494),
    (38, 0x33e9_ffff_240a_eba8),
    (39, 0x6892_66b0_a35c_e04b),
    (40, 0x0134_d8fd_5290_04af),
    (41, 0x5571_ad50_c06f_a467),
    (42, 0xa6da_f9f2_4414_be92),
    (43, 0x0332_b485_48b7_0f1a),
    (44, 0xbefc_3cfa_cb66_fe8b),
    (45, 0xf923_9da1_289b_f6d2),
    (46, 0x5996_2a91_6a8f_7e82),
    (47, 0x7c5b_a6e7_2341_1840),
    (48, 0x45c4_1fdf_298c_cade),
    (49, 0x55c3_067a_5475_dde1),
    (50, 0x63bd_6c9c_b107_6eb8),
    (51, 0xd34c_d3f4_a990_3409),
    (52, 0x7d34_db00_f7f9_6b81),
    (53, 0x8701_8db0_c554_4198),
    (54, 0x464b_c19f_e885_6eb4),
    (55, 0xf479_da11_8a72_f4f0),
    (56, 0xf401_3784_3982_a21c),
    (57, 0x20e3_3df3_4702_a85e),
];

/// FNV-1a, 64-bit: stable across platforms and Rust releases.
struct Fnv(u64);

impl Fnv {
    fn eat(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn eat_u64(&mut self, v: u64) {
        self.eat(&v.to_le_bytes());
    }
}

fn eat_estimate(h: &mut Fnv, plan: &Plan) {
    match estimate(plan) {
        Ok(e) => {
            // The uncertainty band too (from version 8 on).
            for c in [
                e.peak.allocated,
                e.peak.reserved,
                e.peak.device_used,
                e.band_low,
                e.band_high,
            ] {
                h.eat_u64(c.get());
            }
            h.eat_u64(e.trainable_params);
            for st in &e.stages {
                for ph in &st.phases {
                    for c in Component::ALL {
                        h.eat_u64(ph.breakdown.get(c).get());
                    }
                }
            }
            h.eat_u64(e.host_offload.get());
            h.eat_u64(e.nvme_offload.get());
            if let Some(r) = e.replica_peak {
                for c in [r.allocated, r.reserved, r.device_used] {
                    h.eat_u64(c.get());
                }
            }
        }
        Err(err) => h.eat(err.to_string().as_bytes()),
    }
}

fn project_plans() -> Vec<Plan> {
    let mut plans = Vec::new();
    for file in [
        "h200-2026-11-30.csv",
        "h200-2026-12-04.csv",
        "h200-2026-12-04-deepspeed.csv",
        "h200-2026-12-04-fsdp1.csv",
        "torchtune-readme-0.6.1.csv",
        "replay-classifiers-2026-12-05.csv",
        "replay-lora-nodropout-2026-12-05.csv",
        "replay-qlora-2026-12-05.csv",
        "replay-qlora-trl-2026-12-05.csv",
        "replay-trl-fused-head-2026-12-05.csv",
        "replay-trl-dpo-2026-12-05.csv",
        "replay-trl-qlora-2026-12-05.csv",
        "replay-trl-dpo-logits-2026-12-05.csv",
        "replay-trl-dpo-logits-0.24-2026-12-05.csv",
        "replay-trl-dpo-logits-0.13-2026-12-07.csv",
        "replay-trl-dpo-logits-0.11-2026-12-07.csv",
        "replay-trl-dpo-logits-0.8-2026-12-07.csv",
        "replay-trl-sft-logits-2026-12-05.csv",
        "replay-trl-chunked-nll-2026-12-05.csv",
        "replay-llamafactory-dpo-2026-12-05.csv",
        "replay-trl-orpo-2026-12-05.csv",
        "replay-trl-orpo-1.13-2026-12-05.csv",
        "replay-llamafactory-orpo-2026-12-05.csv",
        "replay-llamafactory-kto-2026-12-05.csv",
    ] {
        let path = format!("{}/../calibration/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for line in text.lines().skip(1) {
            let id = line.split(',').next().unwrap_or_default();
            if let Ok(p) = case_plan(&text, id) {
                plans.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for p in plans {
        for (batch, pp) in [(1, 1), (3, 1), (2, 2), (1, 4)] {
            let mut q = p.clone();
            q.training.micro_batch = p.training.micro_batch.saturating_mul(batch);
            q.parallel.pp = pp;
            q.parallel.num_gpus = p.parallel.num_gpus.saturating_mul(pp);
            out.push(q);
        }
    }
    out
}

fn preset_plans() -> Vec<Plan> {
    let mut out = Vec::new();
    for preset in presets() {
        for fw in Framework::ALL {
            for (sharding, gpus, tp, pp, ga) in [
                (Sharding::None, 1, 1, 1, 1),
                (Sharding::Zero1, 16, 2, 2, 1),
                (Sharding::FsdpFull, 32, 1, 4, 1),
                (Sharding::Zero3, 1, 1, 1, 1),
                // Accumulating over 8 GPUs under FSDP (from version 12).
                (Sharding::FsdpFull, 8, 1, 1, 4),
                // `nn.DataParallel` on 4 GPUs: GPU 0 and the replicas (from
                // version 53).
                (Sharding::DataParallel, 4, 1, 1, 1),
            ] {
                let mut p = Plan {
                    model: preset.spec(),
                    ..Plan::default()
                };
                p.parallel.num_gpus = gpus;
                p.set_framework(fw);
                p.parallel.sharding = sharding;
                p.parallel.tp = tp;
                p.parallel.pp = pp;
                p.parallel.pp_microbatches = 8;
                p.training.grad_accum = ga;
                if sharding == Sharding::Zero3 {
                    // PEFT's RAFT set-up: LoRA in fp32 with parameters and
                    // states offloaded to the CPU, short sequences.
                    p.parallel.offload = cost_model::plan::Offload::ALL_CPU;
                    p.training.precision = cost_model::plan::Precision::Fp32;
                    p.training.seq_len = 128;
                    p.training.finetune = cost_model::plan::Finetune::Lora {
                        rank: 8,
                        targets: cost_model::plan::LoraTargets::QV,
                        base_bits: 32,
                        dropout: true,
                        variant: cost_model::plan::LoraVariant::Lora,
                    };
                }
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn model_version_moves_with_the_numbers() {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    let plans: Vec<Plan> = project_plans().into_iter().chain(preset_plans()).collect();
    assert!(plans.len() > 2000, "{} plans", plans.len());
    for p in &plans {
        eat_estimate(&mut h, p);
    }
    let recorded = FINGERPRINTS
        .iter()
        .find(|(v, _)| *v == MODEL_VERSION)
        .map(|(_, f)| *f);
    match recorded {
        Some(f) => assert_eq!(
            f,
            h.0,
            "the estimates changed: bump MODEL_VERSION (now {MODEL_VERSION}) in \
             cost-model/src/estimate/mod.rs and record ({}, {:#018x}) in FINGERPRINTS",
            MODEL_VERSION + 1,
            h.0
        ),
        None => panic!(
            "no fingerprint for MODEL_VERSION {MODEL_VERSION}: record \
             ({MODEL_VERSION}, {:#018x}) in FINGERPRINTS",
            h.0
        ),
    }
}
