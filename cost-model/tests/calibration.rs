//! The public calibration cases (../shared/calibration/cases.csv), the
//! project's own H200 measurements (calibration/h200-2026-11-30.csv) and
//! torchtune's published numbers (calibration/torchtune-readme-0.6.1.csv): every row
//! is predicted, and the accuracy may not slip below the recorded level (a
//! ratchet; docs/ACCURACY.md holds the full report and the targets).

use cost_model::calibrate::{calibrate, CaseResult};
use cost_model::model::ModelSpec;
use cost_model::plan::{AdapterMethod, Finetune};

fn cases() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/calibration/cases.csv"
    );
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e} (the shared/ folder sits beside the checkout)"))
}

/// The text of one of the project's own case files (calibration/).
fn project_text(file: &str) -> String {
    let path = format!("{}/../calibration/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A summary's median and 90th-percentile |error| and worst under-prediction, %.
fn errors(s: &cost_model::calibrate::Summary) -> (f64, f64, f64) {
    (
        s.median_abs_error_pct.unwrap(),
        s.p90_abs_error_pct.unwrap(),
        s.worst_under_prediction_pct.unwrap(),
    )
}

/// One of the project's own case files, predicted.
fn project_set(file: &str) -> cost_model::calibrate::Report {
    calibrate(&project_text(file)).unwrap()
}

/// A project file's report holding its recorded accuracy: `rows` rows, none
/// skipped, the median and p90 |error| at most and the worst under-prediction
/// at least the bounds given, and every allocated row `picked` (`count` of
/// them) within `allocated_within` %.
fn holds_its_accuracy(
    file: &str,
    rows: u64,
    (median_max, p90_max, worst_min): (f64, f64, f64),
    picked: impl Fn(&CaseResult) -> bool,
    (count, allocated_within): (usize, f64),
) -> cost_model::calibrate::Report {
    let r = project_set(file);
    let s = &r.summary;
    assert_eq!((s.n, s.skipped), (rows, 0), "{file}");
    let (median, p90, worst) = errors(s);
    assert!(median <= median_max, "{file}: median |error| {median} %");
    assert!(p90 <= p90_max, "{file}: p90 |error| {p90} %");
    assert!(
        worst >= worst_min,
        "{file}: worst under-prediction {worst} %"
    );
    let allocated: Vec<&CaseResult> = r
        .cases
        .iter()
        .filter(|c| c.metric == "max_allocated" && picked(c))
        .collect();
    assert_eq!(allocated.len(), count, "{file}");
    for c in allocated {
        let e = c.error_pct.unwrap();
        assert!(e.abs() <= allocated_within, "{}: {e} %", c.id);
    }
    r
}

/// The allocated rows' median and 90th-percentile |error| at most these.
fn allocated_within(r: &cost_model::calibrate::Report, median_max: f64, p90_max: f64) {
    let (median, p90) = allocated_median_p90(r);
    assert!(median <= median_max, "allocated median |error| {median} %");
    assert!(p90 <= p90_max, "allocated p90 |error| {p90} %");
}

/// The allocated rows' median and 90th-percentile (nearest rank) |error|.
fn allocated_median_p90(r: &cost_model::calibrate::Report) -> (f64, f64) {
    let mut allocated: Vec<f64> = r
        .cases
        .iter()
        .filter(|c| c.metric == "max_allocated")
        .map(|c| c.error_pct.unwrap().abs())
        .collect();
    allocated.sort_by(f64::total_cmp);
    let median = allocated[allocated.len() / 2];
    let p90 = allocated[(allocated.len() * 9).div_ceil(10) - 1];
    (median, p90)
}

/// Each replay's allocated row (`replay-{id}-alloc`) within its bound, %.
fn rows_within(r: &cost_model::calibrate::Report, rows: &[(&str, f64)]) {
    for (id, within) in rows {
        let id = format!("replay-{id}-alloc");
        let c = r.cases.iter().find(|c| c.id == id).unwrap();
        let e = c.error_pct.unwrap();
        assert!(e.abs() <= *within, "{id}: {e:+.2} %");
    }
}

/// The reserved rows of the pure-bf16 checkpointed full fine-tunes within
/// `lo..=hi` %: with no logits-sized tensor in the loss, the first step's
/// optimizer states take the segments the blocks' transients freed, and the
/// next step's blocks map theirs again (model version 43,
/// `Ctx::idle_block_segments_without_logits`).
fn checkpointed_full_reserve_within(r: &cost_model::calibrate::Report, lo: f64, hi: f64) {
    let rows: Vec<&CaseResult> = r
        .cases
        .iter()
        .filter(|c| c.id.contains("-bf16-ckpt-") && !c.id.contains("-amp-"))
        .filter(|c| c.id.ends_with("-full-resv"))
        .collect();
    assert!(rows.len() >= 4, "{} rows", rows.len());
    for c in rows {
        let e = c.error_pct.unwrap();
        assert!((lo..=hi).contains(&e), "{}: {e:+.2} %", c.id);
    }
}

/// Every reserved row's error within `lo..=hi` %.
fn reserved_within(r: &cost_model::calibrate::Report, lo: f64, hi: f64) {
    for c in r.cases.iter().filter(|c| c.metric == "max_reserved") {
        let e = c.error_pct.unwrap();
        assert!((lo..=hi).contains(&e), "{}: {e:+.2} %", c.id);
    }
}

#[test]
fn public_cases_hold_the_recorded_accuracy() {
    let r = calibrate(&cases()).unwrap();
    let s = &r.summary;
    assert!(s.n >= 90, "{} cases", s.n);
    // Skipped rows state why (unknown sequence length, an unmodelled optimizer).
    for c in &r.cases {
        if let Some(why) = &c.skipped {
            assert!(!why.is_empty());
        }
    }
    assert!(s.skipped <= 5, "skipped {}", s.skipped);
    let (median, p90, worst) = errors(s);
    // 2026-11-30, after LitGPT's blocks were counted tensor by tensor
    // (calibration/saved_tensors.py): 3.82 % / 13.82 % (was 8.86 % / 24.65 %).
    // Then DoRA, LoRA-FA, LN tuning, BOFT, Python LayerNorm/GELU (each pinned
    // to a count) and classification heads: 3.78 % / 13.81 %.
    // Then the ZeRO-3 IPG bucket and OSF's rebuilt weights: 3.72 % / 12.72 %;
    // a compiled block's recomputed SiLU output: 3.58 % / 12.72 %. Then 3.94 %:
    // LitGPT's plain-MLP rows lost dropout masks its model code never had
    // (they had been hiding ~3 % missing elsewhere in the phi-1.5 rows); then
    // 3.72 % once bitsandbytes' dequantized weights and LitGPT's quantized LM
    // head were modelled. Then 3.58 % / 7.42 %: the V100 BERT rows' stated
    // 1343 MiB CUDA context (eager module loading) makes them PyTorch 1.x
    // runs, whose zero_grad kept the gradients. Then 3.97 % / 7.50 %: the
    // StableLM-Alpha rows found their new GPT-NeoX preset, whose parallel
    // block reads one input into both norms (LitGPT's block, counted at
    // 29.17·hidden per token in mechanisms.rs; the sequential count 31.04
    // had been hiding ~1–2 % missing elsewhere in those rows). Then 4.06 % /
    // 8.98 %: the rows whose notes say "nf4 + double quant" keep 0.047 bytes
    // less per quantized weight — the LitGPT nf4/nf4-dq pairs measure exactly
    // that apart (`double_quantization_…` below) — which shows the ~0.1–0.6 GiB
    // LitGPT's 4-bit rows miss in both of each pair. Then 4.14 %: a sharded
    // bitsandbytes 4-bit base is gathered as its packed codes, not as 16-bit
    // weights, and its scales stay whole on every rank (MODEL_VERSION 11,
    // mechanisms.rs `a_sharded_4bit_base_…`); the three Llama-2-70B QLoRA
    // rows under FSDP/ZeRO-3 lost the 2–3 GiB of unpacked blocks that had
    // been covering something else those runs keep (docs/ACCURACY.md).
    // Then 4.05 % again: a frozen fp32 LM head is cast once per chunk under
    // autocast (LitGPT's LoRA tutorial row, −11.2 → +1.1 %); then 3.87 % once
    // a checkpointed block's autocast casts no longer outlive its forward.
    // Then 3.76 % at model version 19, and 3.04 % once an adapter trained
    // without recomputation reserves 2 % over its allocated peak (model
    // version 20: PEFT's MetaMathQA benchmark, nine adapters on an L40S,
    // `max_reserved` +2.0 … +7.6 % → −2.8 … +2.5 %, LoRA-FA −4.4 → −8.9 %).
    // Then 2.22 % / 8.04 % once LitGPT's 4-bit matmuls hold the fp16
    // dequantized matrix beside its bf16 cast (Fabric quantizes from fp16):
    // its sixteen 4-bit rows −3.6 … −8.8 → −3.1 … +0.4 %.
    // Then p90 7.67 % once Thunder's nvFuser rows are read as eager, and
    // 2.25 % / 5.71 % once PyTorch 1.10's softmax kept its input (the V100
    // BERT rows, −5.8 … −9.5 % without checkpointing → +2.8 … +6.2 %).
    // Then p90 5.67 % at model version 23 (DeepSpeed measured on the H200:
    // deepspeed_70b-146 −14.9 → −8.8 %, raft-145 −23.5 → −2.4 %).
    assert!(median <= 2.3, "median |error| {median} %");
    assert!(p90 <= 5.7, "p90 |error| {p90} %");
    // 2026-12-01: −30.23 % (raft-145, ZeRO-3 with fp32 parameters offloaded)
    // until the head's fetch through a GPU copy of its partition was
    // modelled; thunder-091 (−26.18 %) was the worst row since, until the
    // packed gather above took peft_docs_fsdp_70b-149 (QLoRA, FSDP with CPU
    // parameter offload) from −19.9 % to −28.0 %; −26.9 % once FSDP's
    // accumulation under `no_sync` keeps its unsharded LoRA gradients
    // (MODEL_VERSION 12; worst thunder-091 next, −26.1 %). −23.6 %
    // (peft_docs_fsdp_70b-149) once a Thunder row compiled by nvFuser is read
    // as eager, not as torch.compile (thunder-091 +4.6 %).
    // −20.9 % once FSDP1's offload reserve was measured and modelled (its
    // pre-unshard stream's pool, MODEL_VERSION 25; calibration/h200-2026-12-04-fsdp1).
    assert!(worst >= -21.0, "worst under-prediction {worst} %");
    assert_eq!(
        s.oom_detected, s.oom_total,
        "OOM detected {}/{}",
        s.oom_detected, s.oom_total
    );
}

#[test]
fn an_oom_row_without_its_sequence_length_is_bounded_below() {
    // mt0-xxl full fine-tune in fp32 on an 80 GB A100, padded per batch to an
    // unknown length: at one token it already needs more than the GPU.
    let r = calibrate(&cases()).unwrap();
    let case = |id: &str| r.cases.iter().find(|c| c.id == id).unwrap();
    let oom = case("peft_readme_raft-140");
    assert!(oom.oom && oom.skipped.is_none(), "{oom:?}");
    assert!(oom.predicted_gib.unwrap() > 80.0);
    // A row that fitted needs its length for an error: skipped, saying why.
    let fitted = case("peft_readme_raft-141");
    assert!(fitted
        .skipped
        .as_deref()
        .unwrap()
        .contains("seq_len is empty"));
}

/// The second H200 run (calibration/h200-2026-12-04, sets 7 and 8; 24 rows):
/// FSDP2 on one rank with CPU offload (full fine-tunes and LoRA), without
/// resharding after forward, over a LoRA model, and the compiled,
/// checkpointed runs (Llama-3.2-1B tied and untied, -3B). Allocated within
/// 3 % but for the CPU-offload runs (+4.9 … +7.1 %: over); their reserved
/// and nvidia-smi counters are the worst rows (LoRA over an offloaded 8B
/// base −16.6 / −18.0 %: FSDP2's host-to-device copies strand reserve the
/// model does not count).
#[test]
fn the_second_h200_run_holds_the_recorded_accuracy() {
    // Model version 21 (before the run's two terms): 6.47 % / 16.30 % / −18.0 %;
    // version 25: 3.25 % / 9.47 % / −18.0 %. Version 26 (a checkpointed
    // adapter's idle block segments): 3.51 % / 9.47 % / −13.1 % — the
    // FSDP2-offload LoRA run's reserved and nvidia-smi −16.6 / −18.0 →
    // −11.4 / −13.1 %, the FSDP2 LoRA run's +3.9 / +2.2 → +4.3 / +2.7 %.
    holds_its_accuracy(
        "h200-2026-12-04.csv",
        24,
        (3.6, 9.6, -13.5),
        |c| !c.id.contains("fsdp2off"),
        (5, 3.0),
    );
}

/// DeepSpeed on the H200 (calibration/h200-2026-12-04-deepspeed, set 10; 21
/// rows, 7 runs on one rank): ZeRO-2 and ZeRO-3, with LoRA and full
/// fine-tuning, the optimizer (and under ZeRO-3 the parameters) offloaded to
/// the host, the Trainer's "auto" buckets and Accelerate's plugin defaults,
/// models built under `zero.Init`, and the public peft_readme_raft-145's
/// configuration as stated. At model version 22, before the terms it led to:
/// 4.55 % / 23.11 % / −28.7 %, allocated within 6.2 %. Version 23 (DeepSpeed
/// without autocast, ZeRO-3's bucket in the communication dtype, ZeRO-3's
/// linear keeping a frozen base's input, ZeRO-3's fetch-stream pool):
/// 3.81 % / 21.26 % / −28.7 %, allocated within 6.6 % (BLOOMZ's −6.2 → +6.6 %,
/// its reserved −18.3 → +4.1 %); what is left is the reserve of the offloaded
/// Llama full fine-tunes (−20 … −29 % reserved and nvidia-smi). Version 28
/// (ZeRO-1/2's start-up segments, ZeRO-2 offload's reduction-stream copies,
/// ZeRO-3 offload's reduce-stream copies and its dropped logits' segment):
/// 2.84 % / 6.58 % / −9.2 %, the ZeRO-2 offload run within 1 % on every
/// counter, the ZeRO-3 one −7.9 / −9.2 % (was −20.4 / −21.3 %; what is left
/// is `zero.Init`'s start-up segments and the fetch stream's, docs/ACCURACY.md).
/// Version 30 (the end of a recomputed block's forward under PEFT LoRA on the
/// down projection): the ZeRO-3 LoRA run's allocated −1.47 → −0.93 %, its
/// reserved +3.46 → +4.04 % and nvidia-smi +2.84 → +3.40 %, which moves the
/// median of 21 rows to 3.40 %; version 34 (the final norm's fp32 gradient at
/// the top block's recompute): allocated −0.38 %, nvidia-smi +3.97 %, median
/// 3.53 %.
#[test]
fn the_deepspeed_h200_run_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "h200-2026-12-04-deepspeed.csv",
        21,
        (3.6, 6.6, -9.3),
        |_| true,
        (7, 6.6),
    );
    // Without offload the reserve is the allocator's usual one: every counter
    // of the four runs within 6 %.
    for c in r.cases.iter().filter(|c| !c.id.contains("off")) {
        let e = c.error_pct.unwrap();
        assert!(e.abs() <= 6.0, "{} ({}): {e} %", c.id, c.metric);
    }
    // ZeRO-2 with its optimizer on the host: the parameters' and the
    // clone's start-up segments, the loss's tensors beside them, the
    // reduction stream's fp32 copies — every counter within 2.5 %.
    for c in r.cases.iter().filter(|c| c.id.contains("ds2off")) {
        let e = c.error_pct.unwrap();
        assert!(e.abs() <= 2.5, "{} ({}): {e} %", c.id, c.metric);
    }
}

/// FSDP1 on the H200 (calibration/h200-2026-12-04-fsdp1, set 11; 12 rows, 4
/// runs, one rank of two with a fake process group): peft's FSDP-QLoRA
/// configuration with and without CPU parameter offload, on Llama-2-70B's
/// blocks (40 of 80) in NF4 and on Llama-3.1-8B with LoRA. At model version
/// 24: 3.18 % / 14.43 % / −17.40 % (the offloaded runs' reserved −9.4 and
/// −17.4 %: the pre-unshard stream's pool and the wrap's cached segments,
/// found in the runs' whole allocator histories, were not counted); version
/// 25 counts both: 2.16 % / 3.82 % / −4.51 %; version 26 (a checkpointed
/// adapter's idle block segments): 1.69 % / 3.37 % / −3.84 %; version 34
/// (the top block's recompute with the final norm's fp32 gradient, which
/// these reentrantly checkpointed runs may not hold): 1.96 % / 3.90 % /
/// −3.50 %, the QLoRA allocated rows +2.95 → +4.10 % and +1.42 → +1.98 %.
#[test]
fn the_fsdp1_h200_run_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "h200-2026-12-04-fsdp1.csv",
        12,
        (2.0, 4.0, -3.9),
        |_| true,
        (4, 4.5),
    );
    for c in r.cases.iter().filter(|c| c.id.contains("fsdp1off")) {
        let e = c.error_pct.unwrap();
        assert!(e.abs() <= 4.6, "{} ({}): {e} %", c.id, c.metric);
    }
}

/// Real training steps measured on an H200 with the exact configuration
/// (calibration/measure.py): allocated, reserved and nvidia-smi counters of 69
/// runs (plain loops, the transformers Trainer, Accelerate, DDP and FSDP2 on one
/// rank, QLoRA, 8-bit and paged optimizers, Liger Kernel, torchao float8) and
/// three out-of-memory runs.
#[test]
fn h200_measurements_hold_the_recorded_accuracy() {
    let r = project_set("h200-2026-11-30.csv");
    let s = &r.summary;
    assert_eq!(s.n, 210);
    assert_eq!(s.skipped, 0);
    assert_eq!((s.oom_detected, s.oom_total), (3, 3));
    let (median, p90, worst) = errors(s);
    // 2026-11-30: 2.43 % / 7.01 % / −19.8 % (torch.compile with checkpointing
    // keeps more than modelled); then 1.99 % / 6.42 % once transformers 5's
    // grouped experts run in fp32 under autocast; 1.86 % / 6.20 % once a
    // reached sliding window makes SDPA expand grouped k/v; 1.79 % / 5.38 %
    // once a compiled block recomputes its SiLU output and SDPA gets a mask
    // (and repeated k/v) under torch.compile; 1.65 % once the LM head's
    // weight gradient counts from the head's backward on. Then sets 4–6 (70
    // rows: QLoRA, bitsandbytes' optimizers, Liger, float8, Accelerate, DDP,
    // FSDP2, Qwen2.5 7B–32B, 16k–32k tokens): 2.33 % / 8.74 % / −54.7 % as
    // measured; 1.85 % / 8.00 % / −19.8 % once DDP's buckets count on one rank,
    // Accelerate's fp32 outputs are held and a k-bit-prepared base without
    // autocast runs in fp32; 1.80 % / 7.40 % once a recomputed eager block's
    // backward holds two score-sized gradients (what stays above 7 %: the
    // reserved counter of FSDP2 and of very large logits, QLoRA without
    // autocast and without checkpointing); 1.78 % / 6.43 % once FSDP's
    // sharded gradients, freed between steps, stay reserved on the
    // reduce-scatter stream. Then 1.67 % / 6.88 % once GPT-2's rows take its
    // learned positions from the preset (they were read as rotary, whose
    // rotated q/k copies beside the fused qkv output GPT-2 does not make):
    // the fp32 rows come within 1 %, the fp16-autocast ones fell to −5 … −7 %
    // (what the copies had hidden); 1.65 % / 6.77 % once autocast's fp32 cast
    // of the Python GELU's input, which `pow` saves, is kept (those rows'
    // allocated peaks −0.15 %). Then 1.65 % / 6.34 % once the stated
    // bitsandbytes 0.50.2 saves no 4-bit matmul input without autocast
    // (QLoRA Mistral-7B pure bf16: +17.4 → −0.4 % allocated; with
    // checkpointing −1.3 → −4.9 %). Then 1.26 % at model version 19, and
    // 1.10 % once an adapter trained without recomputation reserves 2 % over
    // its allocated peak rather than 7 % (model version 20: the five such runs'
    // reserved and nvidia-smi counters +1.9 … +5.9 → −4.7 … +0.9 %). Then
    // 1.05 % / 5.42 % / −10.2 % at model version 22: the compiled,
    // checkpointed Llama-3.2-3B (tied head) keeps the loss's logits through
    // the blocks' backward (allocated −10.5 → +0.2 %), and FSDP2 gathers on
    // one rank (its two runs' allocated −1.2 / −1.1 → +0.5 / +0.6 %).
    // Then 1.10 % / 5.42 % / −8.0 % at model version 26, once a checkpointed
    // adapter's reserve holds the segments its blocks' forward left, idle
    // beside the loss (the Trainer's QLoRA run −10.2 → −8.0 % reserved, its
    // LoRA run −7.7 → −6.3 %, the plain QLoRA run −3.4 → −1.8 %; the LoRA
    // runs at 8 × 4096 and 1 × 16,384 −1.0 / −0.3 → +4.4 / +3.3 %).
    // Then 1.06 % / 4.86 % / −6.8 % at model version 27, once the logits the
    // Trainer drops before backward keep their segment (its LoRA run −6.3 →
    // −0.5 %, its QLoRA run −8.0 → −1.3 % reserved; the worst is now the
    // compiled fp32 GPT-2).
    assert!(median <= 1.1, "median |error| {median} %");
    assert!(p90 <= 5.0, "p90 |error| {p90} %");
    assert!(worst >= -7.2, "worst under-prediction {worst} %");
    // The allocated counter alone (69 rows), the one the caching allocator's
    // rounding leaves exact: median 0.21 % until a final norm kept what a
    // block norm keeps, the stacks' ends counted and a plain MLP's input took
    // one autocast cast (0.08 %).
    let mut allocated: Vec<f64> = r
        .cases
        .iter()
        .filter(|c| c.metric == "max_allocated" && !c.oom)
        .filter_map(|c| c.error_pct.map(f64::abs))
        .collect();
    allocated.sort_by(f64::total_cmp);
    assert_eq!(allocated.len(), 69);
    let median = allocated[34];
    assert!(median <= 0.1, "allocated median |error| {median} %");
}

/// Eighteen model families no measured run covers (GPT-NeoX/Pythia, OPT, BLOOM,
/// Falcon, GPT-J, Phi-1.5, Gemma, Qwen3, OLMo-2, SmolLM2, Qwen1.5-MoE,
/// GPT-2 large, Gemma-3, StarCoder2 — no preset; the encoder RoBERTa-large and the encoder–decoders T5-base,
/// FLAN-T5-base and BART-large), each from its published config.json, trained six ways in a
/// plain loop (the four non-decoders also under fp16 autocast, with and
/// without checkpointing: 228 rows) and replayed through the CUDA caching allocator's rules
/// (`calibration/allocator_replay.py --families`: torch 2.15, transformers
/// 5.24, peft 0.21.2) — the instrument that reproduced the H200 runs'
/// `max_memory_allocated` within 7 MiB in 32 of 33. Replays, not
/// measurements, so they hold the activation count per family, not the
/// model's reserve. 2026-12-03, allocated (106 rows): median 1.04 %, p90
/// 17.15 %, worst −17.15 % / +56.16 % before OPT's ReLU, the configs' block
/// dropout (and, for a model no preset names, its positions' era), Qwen3's
/// and OLMo-2's q/k norms, PEFT's one adapter per fused projection, the
/// 16-bit loss of masked-LM and encoder–decoder heads and the
/// cross-attention's adapters were modelled; 0.21 %, 1.79 %, −5.27 % /
/// +2.47 % after (the worst: T5 with checkpointing, FLAN-T5 under autocast).
/// Twenty-eighth session, with the fp16 rows (114 allocated): 0.23 %, 2.01 %,
/// −7.23 % / +9.77 % before T5's `half_to_float` loss under fp16 autocast,
/// BART's fp32-promoted scores (`final_logits_bias`) and T5 v1.1's inner
/// dropout mask; 0.22 %, 1.98 %, −4.42 % / +2.47 % after. The whole set's
/// median moved 1.22 → 1.31 % as the reserved rows, which stay the
/// allocator's flat share (replayed 0.5–20 % over the allocated peak), moved
/// with their allocated peaks.
#[test]
fn replayed_model_families_hold_the_recorded_accuracy() {
    let r = project_set("replay-families-2026-12-03.csv");
    let s = &r.summary;
    assert_eq!((s.n, s.skipped), (228, 0));
    let mut allocated: Vec<f64> = Vec::new();
    for c in r.cases.iter().filter(|c| c.metric == "max_allocated") {
        let e = c.error_pct.unwrap();
        // 5 % before the stacks' ends were counted (T5 checkpointed −4.4 %,
        // FLAN-T5 under autocast −5.0 % once its replay cast the position
        // bias as CUDA's autocast does). Falcon-7B replayed under 5.24, whose
        // Falcon indexed v out of the fused output (a copy); the model
        // follows 5.25's view, which keeps that output (+2.8 / +3.2 % here,
        // 0.1 % against its 5.25 replay in replay-families-2026-12-05c.csv).
        let within = if c.id.starts_with("replay-falcon-7b-") {
            3.5
        } else {
            3.0
        };
        assert!(e.abs() <= within, "{}: {e:+.2} %", c.id);
        allocated.push(e.abs());
    }
    allocated.sort_by(f64::total_cmp);
    let p90 = allocated[(allocated.len() * 9).div_ceil(10) - 1];
    // 1.60 % and a 1.15 % median of all rows before the stacks' ends, a
    // plain MLP's one autocast cast and Falcon's mask (1.16 % and 0.78 %
    // after).
    assert!(p90 <= 1.3, "allocated p90 |error| {p90} %");
    let (median, p90, worst) = errors(s);
    assert!(median <= 0.85, "median |error| {median} %");
    assert!(p90 <= 6.5, "p90 |error| {p90} %");
    // −11.71 % until adapters without recomputation reserved 2 % over their
    // allocated peak rather than 7 % (model version 20): the replays of the
    // 256k-vocabulary families reserve 10–15 % there (Gemma-3-1B LoRA at
    // 4 × 2048 −7.8 → −12.1 %), the other fourteen 0.6–7.7 %.
    assert!(worst >= -12.5, "worst under-prediction {worst} %");
    // The reserved counter of the checkpointed LoRA runs (17 families): until
    // model version 26 the allocator's flat share, −8.8 … +4.4 %, median
    // |error| 6.12 %, twelve under by 4.7 % or more; since, with the segments
    // the blocks' forward left idle beside the loss, −8.1 … +14.7 % (FLAN-T5),
    // median 3.47 %; version 30's embedding-output leaf: FLAN-T5 +15.9 %.
    let mut ckpt_lora: Vec<f64> = r
        .cases
        .iter()
        .filter(|c| c.id.contains("-ckpt-") && c.id.ends_with("-lora-resv"))
        .map(|c| c.error_pct.unwrap())
        .collect();
    assert_eq!(ckpt_lora.len(), 17);
    for e in &ckpt_lora {
        assert!((-9.0..=16.5).contains(e), "{e:+.2} %");
    }
    ckpt_lora.iter_mut().for_each(|e| *e = e.abs());
    ckpt_lora.sort_by(f64::total_cmp);
    let median = ckpt_lora[8];
    assert!(
        median <= 4.0,
        "checkpointed LoRA reserved median |error| {median} %"
    );
}

/// Thirteen more families replayed (forty-second session, torch 2.15,
/// transformers 5.25): fused qkv and gate/up projections (Phi-3-mini),
/// soft-capped scores under eager attention and a 256k vocabulary
/// (Gemma-2-2B), q/k/v biases (Qwen2.5-1.5B), a tied 128k head
/// (Llama-3.2-1B), eight experts of top-2 (Mixtral-8x7B), latent attention
/// with routed and shared experts and a dense first block (DeepSeek-V2-Lite),
/// ALiBi under eager attention (MPT-7B), Falcon's new decoder (Falcon-40B),
/// Cohere's parallel block (Command-R), LayerNorms over SwiGLU blocks
/// (StableLM-2-1.6B), Granite's multipliers, and 64 and 128 experts (OLMoE,
/// Qwen3-30B-A3B). The first six and four of the seven came within 0.6 % on
/// the allocated counter with no change; StableLM-2 (+8.9 %: read as RMSNorm),
/// OLMoE (−4.4 %: no q/k norms) and MPT's LoRA (+6.1 %: three adapters for its
/// one fused `Wqkv`) did once presets described them. Falcon-40B's LoRA
/// without checkpointing (−4.8 %) came within once SDPA's always-present mask
/// repeated its grouped k/v (forty-third session). Left: MPT's checkpointed
/// LoRA (+4.4 %), Command-R's bf16 full fine-tune (+1.4 %). The reserved counter is the
/// allocator's share, −14.0 % (DeepSeek-V2-Lite in bf16 without
/// checkpointing) … +6.5 %.
#[test]
fn thirteen_more_replayed_families_hold_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-families-2026-12-05.csv",
        140,
        (0.5, 6.5, -14.5),
        |_| true,
        (70, 4.5),
    );
    let (_, p90) = allocated_median_p90(&r);
    assert!(p90 <= 0.5, "allocated p90 |error| {p90} %");
    // What the three presets (stablelm-2-1.6b, olmoe-1b-7b, mpt-7b) carry:
    // without them these rows were +8.9 %, −4.4 % and +6.1 %; and Falcon's
    // always-masked SDPA with its k/v repeated (−4.8 % without).
    rows_within(
        &r,
        &[
            ("stablelm-2-1.6b-bf16-nock-b4-s2048-full", 0.5),
            ("olmoe-1b-7b-bf16-nock-b4-s2048-full", 0.5),
            ("mpt-7b-bf16-nock-b4-s2048-lora", 0.5),
            ("falcon-40b-bf16-nock-b4-s2048-lora", 0.5),
        ],
    );
}

/// Fourteen more families replayed (forty-third session, torch 2.15,
/// transformers 5.25), most named by no preset when they were: StarCoderBase
/// (GPT-BigCode's multi-query `c_attn`), GPT-Neo (eager, Python GELU),
/// GLM-4 (sandwich norms), Nemotron (squared ReLU), Gemma-3-4B (sliding
/// layers), Command-R7B, SmolLM3, Granite-MoE (32 experts), Phi-3.5-MoE,
/// DistilBERT, XLM-R, ModernBERT, mT5 and NLLB-200. Five came within 0.6 %
/// on the allocated counter read from their columns alone (Command-R7B
/// within 1.6 %, DistilBERT 1.9 %); the rest did
/// once presets named them and the model learned what they showed: Gemma-3's
/// window (−18.8 % without), ModernBERT's fp32 masked-LM loss (−37.5 %
/// checkpointed), BART's lineage keeping no T5 MLP dropout (NLLB +19.6 %
/// without its preset, +8.9 % with it before), StarCoder's multi-query
/// (+10.9 % LoRA), mT5's Python GELU and dropout (−11.4 %), GLM-4's sandwich
/// norms (−10.6 %) and its one `gate_up_proj` adapter (LoRA +4.8 % counted
/// as two), GPT-Neo's Python GELU (−14.9 %). StarCoder in fp32 was the
/// replay's error (−7.8 %: SDPA's math composite dropped out through
/// `at::dropout`, whose meta-device path keeps an fp32 noise tensor where
/// CUDA keeps a 1-byte mask; its two rows replayed again with CUDA's).
/// Left: GPT-Neo's fp32 q and k (−2.2 %). Its checkpointed full
/// fine-tune's reserve was −17.2 % until model version 44 counted its first
/// forward's idle block segments (its eager fp32 scores') under the
/// stranded loss segments: −3.7 %.
#[test]
fn fourteen_more_replayed_families_hold_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-families-2026-12-05b.csv",
        180,
        (1.0, 6.5, -15.0),
        |_| true,
        (90, 2.5),
    );
    allocated_within(&r, 0.3, 1.2);
    let neo = "replay-gpt-neo-1.3b-bf16-ckpt-b8-s2048-full-resv";
    let e = r
        .cases
        .iter()
        .find(|c| c.id == neo)
        .unwrap()
        .error_pct
        .unwrap();
    assert!((-6.0..=3.0).contains(&e), "{neo}: {e:+.2} %");
    // What this session's presets and mechanisms carry (the error without
    // them in the comment).
    rows_within(
        &r,
        &[
            ("gemma-3-4b-bf16-nock-b4-s2048-full", 0.5), // −18.8 %
            ("modernbert-base-bf16-ckpt-b32-s512-full", 0.5), // −37.5 %
            ("nllb-200-600m-bf16-nock-b16-s512-full", 0.5), // +19.6 %
            ("mt5-base-amp-fp16-nock-b8-s512-full", 1.0), // −11.4 %
            ("starcoderbase-1b-bf16-nock-b4-s2048-lora", 0.5), // +10.9 %
            ("glm-4-9b-bf16-nock-b4-s2048-full", 0.5),   // −10.6 %
            ("glm-4-9b-bf16-nock-b4-s2048-lora", 0.5),   // +4.8 %
            ("gpt-neo-1.3b-bf16-nock-b4-s2048-full", 2.5), // −14.9 %
        ],
    );
}

/// Ten more families and Falcon-7B again under transformers 5.25 (the same
/// session): three of BART's lineage (Marian's opus-mt, mBART-50, PEGASUS),
/// three MoE layouts (gpt-oss's sinks under eager attention, GLM-4.5-Air's
/// shared expert after a dense block, Llama-4-Scout's experts each on every
/// token) and four small decoders (EXAONE-4.0, ERNIE-4.5, Phi-4-mini,
/// Hunyuan). Read from their columns alone, allocated: PEGASUS +35.1 %
/// (read as T5), gpt-oss +33.5 % (an fp32 softmax where its sinks keep
/// bf16), Llama-4-Scout −20.7 % (top-1 where every expert runs), EXAONE
/// −9.1 % and Hunyuan −7.6 % (their q/k norms), ERNIE −8.0 % (128-wide heads
/// over a 1024 hidden), Phi-4-mini +12.8 % LoRA (its fused projections) and
/// −2.6 % (v's view of them kept under SDPA's own grouping); within 0.6 %
/// once presets and those mechanisms came, gpt-oss within 1 % once its
/// clamped GLU's tensors were counted (−6.2 % as SwiGLU). Left: EXAONE under
/// autocast (+2.7 %).
#[test]
fn ten_more_replayed_families_hold_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-families-2026-12-05c.csv",
        132,
        (1.0, 6.5, -11.5),
        |_| true,
        (66, 3.0),
    );
    allocated_within(&r, 0.3, 0.8);
    rows_within(
        &r,
        &[
            ("pegasus-large-bf16-nock-b16-s512-full", 0.5), // +35.1 %
            ("opus-mt-en-de-bf16-nock-b16-s512-full", 0.5), // +13.7 %
            ("mbart-large-50-bf16-nock-b16-s512-full", 0.5), // +11.6 %
            ("gpt-oss-20b-bf16-nock-b4-s2048-full", 1.5),   // +33.5 %, then −6.2 %
            ("llama-4-scout-bf16-nock-b4-s2048-full", 0.5), // −20.7 %
            ("exaone-4.0-1.2b-bf16-nock-b4-s2048-full", 0.5), // −9.1 %
            ("ernie-4.5-0.3b-fp32-nock-b2-s1024-full", 0.5), // −8.0 %
            ("hunyuan-1.8b-bf16-nock-b4-s2048-full", 0.5),  // −7.6 %
            ("phi-4-mini-bf16-nock-b4-s2048-lora", 0.5),    // +12.8 %
            ("phi-4-mini-bf16-nock-b4-s2048-full", 0.5),    // −2.6 %
            ("falcon-7b-bf16-nock-b4-s2048-full", 0.5),     // −3.0 % (5.24's copy)
            ("glm-4.5-air-bf16-nock-b4-s2048-full", 0.5),   // −2.0 %
        ],
    );
}

/// Seven more families (the same session): UMT5 and ByT5 (T5 v1.1's
/// multilingual and byte-level kin; ByT5's 18 encoder blocks over 6 decoder
/// ones), ELECTRA, OLMo-3, Ministral-8B, Mistral-NeMo-12B and Seed-OSS-36B.
/// Read from their columns alone, allocated: UMT5 −11.6 % and ByT5 −12.8 %
/// (T5 v1.1's Python GELU and dropout, which presets carry), OLMo-3 −17.1 %
/// (OLMo-2's q/k and post-norms, its preset's), Seed-OSS −10.2 % on every
/// counter (80 heads of 128 over a 5120 hidden: the head width the stated
/// parameter count gives); ELECTRA, Ministral and NeMo within 1.8 %. ByT5's
/// checkpointed LoRA (−8.6 %) held the end of a recomputed block's forward,
/// above its backward (model version 30).
#[test]
fn seven_more_replayed_families_hold_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-families-2026-12-05d.csv",
        96,
        (1.2, 7.0, -11.5),
        |_| true,
        (48, 9.0),
    );
    allocated_within(&r, 0.4, 2.0);
    rows_within(
        &r,
        &[
            ("umt5-base-amp-fp16-nock-b8-s512-full", 1.5), // −11.6 %
            ("byt5-base-amp-bf16-nock-b8-s512-full", 1.5), // −12.8 %
            ("olmo-3-7b-bf16-nock-b4-s2048-full", 0.5),    // −17.1 %
            ("seed-oss-36b-fp32-nock-b2-s1024-full", 0.5), // −10.2 %
            ("seed-oss-36b-bf16-nock-b4-s2048-full", 1.5), // −9.3 %
            ("byt5-base-bf16-ckpt-b32-s512-lora", 2.5),    // −8.6 %
        ],
    );
}

/// Fourteen families as two-label sequence classifiers (`--classifiers`: a
/// reward model's shape, PEFT's SEQ_CLS task; 164 rows): no vocabulary
/// logits, so a block's recompute or backward is the peak. Full fine-tunes
/// and LoRA on every linear or on PEFT's default q and v, checkpointed or
/// not. The LoRA rows with their MLP adapted and checkpointed were −8.3 %
/// (Llama-3.2-1B), −9.9 % (its autocast run) and −4.3 % (Phi-3-mini's fused
/// gate_up) before model version 30 counted the recomputed block's forward
/// past its backward; q and v alone were −3.3 % before the third MLP-wide
/// gradient. Gemma's eager attention (Gemma-2B, Gemma-2-2B) was over
/// (+8 … +14 %) until model version 36 made the MLP's and the attention's
/// backward two moments of a recomputed block. PEFT's embedding-output leaf under
/// checkpointing (version 30) moved the encoders' checkpointed LoRA rows up
/// (RoBERTa-large −1.2 → +0.2 %, ModernBERT −5.8 → −4.5 %) and OPT's over
/// (+4.8 → +6.1 %: its leaf is real, its embedding has no dropout mask).
/// Version 32's forward moment (the last block's adapted MLP in flight) and
/// 33's ModernBERT window brought the LoRA rows without checkpointing to
/// within ±0.7 % (XLM-RoBERTa −2.7 %, ModernBERT −3.1 % before).
#[test]
fn sequence_classifiers_replayed_hold_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-classifiers-2026-12-05.csv",
        164,
        (1.4, 6.0, -11.5),
        |_| true,
        (82, 6.5),
    );
    allocated_within(&r, 0.8, 2.0);
    rows_within(
        &r,
        &[
            ("llama-3.2-1b-cls-bf16-ckpt-b8-s2048-lora", 2.0), // −8.3 %
            ("llama-3.2-1b-cls-amp-bf16-ckpt-b8-s2048-lora", 1.0), // −9.9 %
            ("phi-3-mini-cls-bf16-ckpt-b8-s2048-lora", 1.5),   // −4.3 %
            ("llama-3.2-1b-cls-bf16-ckpt-b8-s2048-loraqv", 1.5), // −3.3 %
            ("mistral-nemo-12b-cls-bf16-ckpt-b8-s2048-lora", 1.5),
            ("roberta-large-cls-bf16-ckpt-b32-s512-lora", 1.5),
            ("xlm-roberta-base-cls-bf16-nock-b16-s512-lora", 0.5), // −2.7 %
            ("modernbert-base-cls-bf16-nock-b16-s512-lora", 1.0),  // −3.1 %
        ],
    );
    // The checkpointed full fine-tunes' reserve: the forward's block
    // segments idle through the step (model 35; SmolLM2 −13.0 %, RoBERTa
    // −11.4 % before).
    for c in r
        .cases
        .iter()
        .filter(|c| c.id.contains("-ckpt-") && c.id.ends_with("-full-resv"))
    {
        let e = c.error_pct.unwrap();
        assert!(e >= -6.0, "{}: {e} %", c.id);
    }
    // Gemma's eager checkpointed blocks: the MLP's backward and the
    // attention's are two moments, not one sum (+8 … +14 % before).
    for c in r
        .cases
        .iter()
        .filter(|c| c.id.contains("gemma-2") && c.metric == "max_allocated")
    {
        let e = c.error_pct.unwrap();
        assert!((-2.5..=4.0).contains(&e), "{}: {e} %", c.id);
    }
}

/// LoRA without dropout (`--no-lora-dropout`, Unsloth's and torchtune's
/// default; 102 rows): eleven families as their own LMs, six as
/// classifiers (the last five specs replayed after model 34 as a held-out
/// check: every allocated row within ±0.3 %), bf16 with and without
/// checkpointing and bf16 autocast checkpointed. Under
/// autocast each adapter keeps its own 16-bit copy of its input (the
/// classifiers were −4.9 … −1.4 % before model 34), and the top block's
/// recompute holds the final norm's fp32 gradient (the bf16 classifiers
/// −1.9 … −1.3 %).
#[test]
fn lora_without_dropout_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-lora-nodropout-2026-12-05.csv",
        102,
        (0.6, 6.0, -8.5),
        |_| true,
        (51, 0.7),
    );
    rows_within(
        &r,
        &[
            ("llama-3.2-1b-cls-amp-bf16-ckpt-b8-s2048-lora-nodrop", 0.5), // −4.9 %
            ("roberta-large-cls-amp-bf16-ckpt-b32-s512-lora-nodrop", 0.5), // −6.9 %
            ("llama-3.2-1b-cls-bf16-ckpt-b8-s2048-lora-nodrop", 0.5),     // −1.9 %
        ],
    );
}

/// QLoRA replayed (bitsandbytes NF4 with double quantization on the meta
/// device, bf16 autocast, LoRA r16 with dropout on every linear and on
/// PEFT's default q and v, with and without checkpointing; fifteen families,
/// 164 rows — PEFT names no default targets for Phi-3, OLMo-2, Granite and
/// Ministral, which run on every linear only — and, replayed after models 37
/// and 38 were written as a held-out check, Gemma-2-2B and BLOOM-1b7 under
/// eager attention, 24 rows, every allocated one within ±0.3 %): `--qlora-families` after
/// `prepare_model_for_kbit_training` (PEFT's recipe), `--qlora-noprep-families`
/// without it (TRL's `SFTTrainer` from 0.22.0). The 4-bit linears hand fp32
/// back under autocast after the preparation or behind a LayerNorm (models
/// 37 and 38: Llama-3.2-1B −3.35 %, Qwen2.5-1.5B −7.36 % prepared; OPT
/// −9.46 %, Falcon-7B −15.31 %, StableLM-2 −14.34 % unprepared, before), fused
/// qkv keeps no view of them (Pythia +5.9 %, Phi-3-mini +5.4 %), and a single
/// k/v head is copied to every head by autocast's cast (Falcon-7B −5.8 %).
#[test]
fn qlora_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-qlora-2026-12-05.csv",
        188,
        (0.8, 6.5, -10.5),
        |_| true,
        (94, 1.5),
    );
    allocated_within(&r, 0.4, 1.0);
    rows_within(
        &r,
        &[
            ("llama-3.2-1b-amp-bf16-nock-b2-s2048-qlora", 0.7), // −3.35 %
            ("qwen2.5-1.5b-amp-bf16-nock-b2-s2048-qlora", 0.7), // −7.36 %
            ("pythia-1.4b-amp-bf16-nock-b2-s2048-qlora", 1.0),  // +5.91 %
            ("phi-3-mini-amp-bf16-nock-b2-s2048-qlora", 1.0),   // +5.40 %
            ("falcon-7b-amp-bf16-nock-b2-s2048-qlora", 1.0),    // −5.79 %
            ("opt-1.3b-amp-bf16-nock-b2-s2048-qlora-noprep", 1.0), // −9.46 %
            ("falcon-7b-amp-bf16-nock-b2-s2048-qlora-noprep", 1.0), // −15.31 %
            ("stablelm-2-1.6b-amp-bf16-nock-b2-s2048-qlora-noprep", 1.0), // −14.34 %
        ],
    );
}

/// The replayed QLoRA of TRL's `SFTTrainer` up to 0.21 (prepared, then the
/// embeddings and LM head put back in bf16, `peft_module_casting_to_bf16`;
/// `calibration/allocator_replay.py --qlora-trl-families`), seventeen
/// families: every allocated row within 2 % (Pythia's `embed_in`/`embed_out`,
/// which TRL's names miss, stay fp32: −1.9 %). Read as fully prepared they
/// had been over (Llama-3.2-1B +5.4 %), and Gemma's and OLMo-2's norms, which
/// cast back to their input's dtype, over by far more when the fp32 norms
/// were taken to promote the stream (Gemma-2B +18.3 %, Gemma-3-1B +16.8 %,
/// OLMo-2-7B +18.5 % without checkpointing).
#[test]
fn qlora_trl_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-qlora-trl-2026-12-05.csv",
        94,
        (1.0, 8.0, -10.5),
        |_| true,
        (47, 2.0),
    );
    allocated_within(&r, 0.5, 1.2);
    rows_within(
        &r,
        &[
            ("llama-3.2-1b-amp-bf16-nock-b2-s2048-qlora-trl", 0.7), // +5.40 %
            ("gemma-2b-amp-bf16-nock-b2-s2048-qlora-trl", 0.7),     // +18.28 %
            ("gemma-3-1b-amp-bf16-nock-b2-s2048-qlora-trl", 0.7),   // +16.84 %
            ("olmo-2-7b-amp-bf16-nock-b2-s2048-qlora-trl", 0.7),    // +18.53 %
        ],
    );
}

/// TRL's own fused LM head (trl 1.16.0's `add_fused_lm_head` and
/// `ChunkedLogProbFunction`, replayed with its own code on the meta device,
/// `calibration/allocator_replay.py --trl-fused-head`), six families six ways:
/// every allocated row within 2 % (the same runs under the Trainer's loss
/// hold their logits: SmolLM2-360M checkpointed, 8 × 2048, 13.66 GiB against
/// 3.95). Read with the logits they would be several times over. The reserve
/// of a pure-bf16 checkpointed full fine-tune was under (−16.4 … −2.1 %)
/// until model version 43 kept the blocks' segments the first step's states
/// took idle, as a classifier's (−9.5 … +8.0 %).
#[test]
fn trl_fused_head_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-trl-fused-head-2026-12-05.csv",
        72,
        (1.0, 5.5, -14.0),
        |_| true,
        (36, 2.0),
    );
    allocated_within(&r, 0.5, 1.2);
    checkpointed_full_reserve_within(&r, -10.5, 9.0);
    // Read with the Trainer's loss (the logits held), as a TRL row that
    // states no release is read.
    let text = std::fs::read_to_string(format!(
        "{}/../calibration/replay-trl-fused-head-2026-12-05.csv",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .replace("; trl 1.16.0 fused LM head", "; fused LM head");
    let standard = calibrate(&text).unwrap();
    let row = |r: &cost_model::calibrate::Report, id: &str| {
        r.cases
            .iter()
            .find(|c| c.id == id)
            .unwrap()
            .error_pct
            .unwrap()
    };
    let id = "replay-smollm2-360m-bf16-ckpt-b8-s2048-full-alloc";
    assert!(row(&r, id).abs() < 1.0);
    assert!(row(&standard, id) > 100.0, "{} %", row(&standard, id));
}

/// TRL 1.16's DPO (`DPOTrainer._compute_loss`: chosen and rejected
/// concatenated, the policy's fused-head forward, then the reference's under
/// `no_grad` — the adapters disabled, or a frozen copy for a full fine-tune —
/// and the sigmoid loss), replayed with TRL's fused head on the meta device
/// (`calibration/allocator_replay.py --trl-dpo`), four families five ways:
/// every allocated row within 2 %. A LoRA run's peak is its SFT run's on twice
/// the sequences (Llama-3.2-1B under autocast, checkpointed: 7.739 GiB both);
/// the reference pass under the fused head adds nothing at the peak. The
/// pure-bf16 checkpointed full fine-tunes' reserve: −13.1 … −1.9 % before
/// model version 43, now −7.7 … −1.9 %.
#[test]
fn trl_dpo_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-trl-dpo-2026-12-05.csv",
        40,
        (0.6, 6.0, -8.5),
        |_| true,
        (20, 2.0),
    );
    allocated_within(&r, 0.3, 1.5);
    checkpointed_full_reserve_within(&r, -8.5, 1.0);
}

/// TRL's DPO through the model's logits, as 0.29 to 1.13 ran it without
/// Liger (`calibration/allocator_replay.py --trl-dpo-logits`, trl 1.13.0's
/// `_compute_loss` copied): Llama-3.2-1B, Qwen2.5-1.5B, SmolLM2-360M,
/// Qwen3-0.6B and Gemma-2-2B, under the Trainer's AMP (fp32 logits through
/// Accelerate's `convert_outputs_to_fp32`) and in pure bf16, LoRA and full.
/// Read with the causal-LM loss's tensors they were −20.8 … +44.0 %
/// allocated (model version 39); now within ±0.5 % (Gemma-2 −3 … −17 %
/// until its soft-capped logits' kept tanh output was counted). Reserved
/// within −10.7 … +10.0 % (median 0.35 % on every row): the AMP LoRA runs
/// were 4–9 % under until the reference's own dropped 16-bit output was
/// counted beside the policy's, the pure-bf16 full fine-tunes −11 … +0.7 %
/// before the optimizer's states were counted straying into the 16-bit
/// logits' segments as they do into the standard loss's fp32 ones.
#[test]
fn trl_dpo_logits_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-trl-dpo-logits-2026-12-05.csv",
        60,
        (0.5, 3.0, -11.0),
        |_| true,
        (30, 0.5),
    );
    allocated_within(&r, 0.3, 0.4);
}

/// TRL's SFT through the Trainer's loss (`loss_type="nll"`, its default up
/// to 1.6), with the metrics it logs from the logits — the entropy over a
/// flattened copy of the shifted logits, the token accuracy — replayed with
/// trl 1.6.0's `compute_loss` copied (`--trl-sft-logits`), five families:
/// the copy never raises the allocated peak, which stays the Trainer's loss
/// as the model counts it (within 1.3 %). The reserve: under AMP the copy
/// (one position a sequence short of the logits) takes a segment of its own
/// wherever the caching allocator's 2 MiB rounding tells the two sizes apart
/// (Qwen's 151,936 entries, Gemma-2's 256,000, not Llama's 128,256 at these
/// batches); counted for checkpointed adapters (`trl_metrics_copy_segment`),
/// their rows −14.6 … −16.9 % → −0.3 … +2.0 %. Worst now −11.7 % (Gemma-2's
/// AMP full fine-tune), pure-bf16 full fine-tunes up to +17.9 %.
#[test]
fn trl_sft_logits_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-trl-sft-logits-2026-12-05.csv",
        60,
        (1.0, 6.5, -12.0),
        |_| true,
        (30, 1.3),
    );
    allocated_within(&r, 0.5, 1.1);
}

/// LLaMA-Factory's DPO (`CustomDPOTrainer`, llamafactory 0.9.5's code
/// copied; `--llamafactory-dpo`), five families: its `concatenated_forward`
/// upcasts the logits to fp32 whatever the precision and takes a whole
/// log-softmax. Under the Trainer's AMP it peaks where TRL's path does; in
/// pure bf16 the model had read 16-bit logits (−19 … −44 % allocated on
/// Llama-3.2-1B) until the framework's own upcast was counted.
#[test]
fn llamafactory_dpo_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-llamafactory-dpo-2026-12-05.csv",
        60,
        (1.5, 13.0, -11.0),
        |_| true,
        (30, 1.0),
    );
    allocated_within(&r, 0.4, 0.8);
}

/// TRL's ORPO as 1.14 to 1.16 run it (`ORPOTrainer`, trl 1.16.0's copied,
/// its log-probabilities' Triton kernel; `--trl-orpo-kernel`), five
/// families: read as TRL's fused LM head (which that trainer never takes)
/// they were −75.7 … −9.4 % allocated; now within 0.5 %. The reserve's worst
/// rows are full fine-tunes' (Gemma-2's under AMP, −15.7 %).
#[test]
fn trl_orpo_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-trl-orpo-2026-12-05.csv",
        60,
        (0.5, 5.5, -16.0),
        |_| true,
        (30, 0.5),
    );
    allocated_within(&r, 0.3, 0.45);
}

/// The same trainer with trl ≤ 1.13's row-wise `selective_log_softmax`
/// (`--trl-orpo`; the rows state 1.13.0, so the kernel is off): −28.3 …
/// +86.4 % allocated read as the causal-LM loss, now within 0.5 %. Its
/// row-by-row temporaries fragment the reserve more than any term counts
/// (checkpointed runs under AMP to −21 %).
#[test]
fn trl_orpo_before_its_kernel_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-trl-orpo-1.13-2026-12-05.csv",
        60,
        (0.5, 9.5, -22.5),
        |_| true,
        (30, 0.5),
    );
    allocated_within(&r, 0.3, 0.45);
}

/// LLaMA-Factory's ORPO (`CustomDPOTrainer` with `pref_loss: orpo`, no
/// reference; `--llamafactory-orpo`): allocated within 0.4 % as before; the
/// reserve's p90 14.7 → 6.3 %, worst −19.1 → −11.7 % (Gemma-2's AMP full
/// fine-tune) once the segment its shifted logits part from the full ones
/// is counted.
#[test]
fn llamafactory_orpo_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-llamafactory-orpo-2026-12-05.csv",
        60,
        (0.5, 6.5, -12.0),
        |_| true,
        (30, 0.45),
    );
    allocated_within(&r, 0.3, 0.45);
}

/// LLaMA-Factory's KTO (`CustomKTOTrainer`, its code copied;
/// `--llamafactory-kto`), five families: read as the causal-LM loss's
/// tensors over one sequence an example they were −37.1 … −3.6 % allocated;
/// now −1.5 … +0.4 %. AMP's full fine-tunes were +3.9 … +6.7 % over until
/// model 56 took the loss after autocast's weight copies are gone (the
/// Trainer's autocast wraps the forward alone; they leave at its exit,
/// before the reference's pass, where the logits peak).
#[test]
fn llamafactory_kto_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-llamafactory-kto-2026-12-05.csv",
        60,
        (1.4, 6.5, -14.0),
        |_| true,
        (30, 1.5),
    );
    allocated_within(&r, 0.2, 0.4);
}

/// TRL 1.7 to 1.14's SFT default, its chunked NLL (`loss_type="chunked_nll"`,
/// trl 1.14.2's `_chunked_cross_entropy_loss` copied; `--trl-chunked-nll`),
/// five families: read as the Trainer's loss (every TRL row before 1.15 was)
/// they were +14.8 … +610 % allocated; now within 1.6 %. The pure-bf16
/// checkpointed full fine-tunes' reserve was under by up to 17.7 % (−17.7 …
/// −2.2 %) until model version 43 kept the blocks' segments the first
/// step's states took idle, as under TRL's fused head (−10.8 … +1.8 %).
#[test]
fn trl_chunked_nll_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-trl-chunked-nll-2026-12-05.csv",
        60,
        (0.6, 4.5, -11.5),
        |_| true,
        (30, 1.6),
    );
    allocated_within(&r, 0.3, 0.6);
    checkpointed_full_reserve_within(&r, -11.5, 2.5);
}

/// TRL 0.15 to 0.28's DPO (`concatenated_forward`, trl 0.24.0's copied;
/// `--trl-dpo-logits-0.24`), read from the release the rows state
/// ([`cost_model::plan::TrlRelease::V0_19To0_28`]): nothing of the outputs
/// kept once the forward returns, the reference's hidden states held, no
/// entropy. Allocated within 0.5 % on every row (read as 0.29–1.13's, the
/// pure-bf16 rows were +6.7 … +34 % over); the checkpointed pure-bf16 rows'
/// reserve is over by up to 10.2 % (the idle block segments the count keeps
/// beside the loss, which this release's smaller tensors partly reuse), the
/// rest within 2.8 %.
#[test]
fn trl_dpo_logits_0_15_to_0_28_holds_its_release() {
    let r = holds_its_accuracy(
        "replay-trl-dpo-logits-0.24-2026-12-05.csv",
        24,
        (0.5, 8.5, -3.0),
        |_| true,
        (12, 0.5),
    );
    for c in &r.cases {
        let e = c.error_pct.unwrap();
        let over = if c.id.contains("-bf16-ckpt-") && c.metric == "max_reserved" {
            10.5
        } else {
            2.8
        };
        assert!((-3.0..=over).contains(&e), "{}: {e} %", c.id);
    }
}

/// TRL 0.12 to 0.14's DPO (trl 0.13.0's `concatenated_forward` copied;
/// `--trl-dpo-logits-0.13`, the configs' cache on as published, off where
/// the model checkpoints in training mode as transformers 4.46–4.48 turned
/// it off), read from the release the rows state
/// ([`cost_model::plan::TrlRelease::V0_12To0_14`]): a whole log-softmax of
/// the logits saved, nothing of the outputs kept, the reference's cache
/// beside its log-softmax where it runs unchecked, one dropped 16-bit output
/// idle under AMP. Read as 0.29's the allocated rows were +5.1 … +29.6 %
/// over; now within 1.8 % (Qwen3-0.6B's, not looked at while the count was
/// built, within 1.8 %); the reserve within −9.3 … +4.7 % (the AMP
/// checkpointed adapters' +9.0 … +14.0 % while two dropped outputs were
/// counted, as for the releases that keep the policy's logits).
#[test]
fn trl_dpo_logits_0_12_to_0_14_holds_its_release() {
    let r = holds_its_accuracy(
        "replay-trl-dpo-logits-0.13-2026-12-07.csv",
        36,
        (0.6, 4.0, -9.5),
        |_| true,
        (18, 1.8),
    );
    reserved_within(&r, -9.5, 5.0);
}

/// TRL 0.9 to 0.11's DPO (trl 0.11.4's `concatenated_forward` copied;
/// `--trl-dpo-logits-0.11`), read from the release the rows state
/// ([`cost_model::plan::TrlRelease::V0_9To0_11`]): the policy's logits
/// returned and held beside their whole log-softmax and the chosen half's
/// NLL through the reference's pass. Read as 0.29's the allocated rows were
/// −8.5 … −1.4 % under; now within 0.5 % (SmolLM2-360M's, not looked at
/// while the count was built, within 0.4 %). The reserve is under by up to
/// 8.8 % (the segments the reference's pass leaves between the policy's
/// tensors; one dropped 16-bit output counted).
#[test]
fn trl_dpo_logits_0_9_to_0_11_holds_its_release() {
    let r = holds_its_accuracy(
        "replay-trl-dpo-logits-0.11-2026-12-07.csv",
        36,
        (1.4, 7.5, -9.0),
        |_| true,
        (18, 0.5),
    );
    reserved_within(&r, -9.0, 1.0);
}

/// TRL 0.5 to 0.8's DPO (trl 0.8.6's copied; `--trl-dpo-logits-0.8`): as
/// 0.9–0.11 without the NLL. Allocated within 0.5 % (read as 0.29's, the
/// same rows sat within 0.9 %: 0.29's three tensors and entropy chunk at the
/// forward, four in backward, land near these releases' four at the
/// reference's log-softmax); the reserve within −7.4 … +4.9 %.
#[test]
fn trl_dpo_logits_0_5_to_0_8_holds_its_release() {
    let r = holds_its_accuracy(
        "replay-trl-dpo-logits-0.8-2026-12-07.csv",
        24,
        (0.5, 5.5, -7.5),
        |_| true,
        (12, 0.5),
    );
    reserved_within(&r, -7.5, 5.0);
}

/// TRL 1.16's QLoRA as its `SFTTrainer` runs it (no k-bit preparation from
/// 0.22, the trainable parameters cast to bf16 from 0.26, its fused LM head),
/// replayed with bitsandbytes NF4 and TRL's head on the meta device
/// (`calibration/allocator_replay.py --trl-qlora`), six families: allocated
/// within 3.5 % (PEFT's default q and v targets checkpointed had been −1.8 …
/// −4.4 % while the count left a 4-bit down projection's input as kept);
/// the checkpointed runs' reserve is under by up to 18 % — the quantizing
/// load's partly used segments, the QLoRA replays' known gap, which no
/// logits segment now hides.
#[test]
fn trl_qlora_replayed_holds_the_recorded_accuracy() {
    let r = holds_its_accuracy(
        "replay-trl-qlora-2026-12-05.csv",
        34,
        (2.0, 7.5, -19.0),
        |_| true,
        (17, 3.5),
    );
    allocated_within(&r, 1.5, 2.5);
}

/// A reward model or a sequence classifier written as other sources write
/// it — in the notes (TRL's `RewardTrainer`, a `*ForSequenceClassification`
/// class, "reward model") or as the task (`reward`, `classification`,
/// `seq_cls`) — is read with its classification head; it had been read as a
/// language model (+320 % on the classifier replay's Llama-3.2-1B row).
#[test]
fn reward_models_and_classifiers_are_read_with_their_head() {
    use cost_model::calibrate::case_plan;
    use cost_model::model::ModelHead;
    let text = project_text("replay-classifiers-2026-12-05.csv");
    let id = "replay-llama-3.2-1b-cls-bf16-ckpt-b8-s2048-lora-alloc";
    let records = cost_model::csv::parse(&text).unwrap();
    let header = &records[0].fields;
    let row = records.iter().find(|r| r.fields[0] == id).unwrap();
    let at = |name: &str| header.iter().position(|c| c == name).unwrap();
    let quoted = |f: &[String]| {
        f.iter()
            .map(|v| format!("\"{}\"", v.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(",")
    };
    let with = |task: &str, notes: &str| {
        let mut f = row.fields.clone();
        f[at("task")] = task.to_string();
        f[at("notes")] = notes.to_string();
        let csv = format!("{}\n{}\n", quoted(header), quoted(&f));
        case_plan(&csv, id).unwrap().model.head
    };
    for (task, notes) in [
        ("lora", "reward model trained with TRL"),
        ("lora", "trl RewardTrainer, Llama-3.2-1B"),
        ("lora", "LlamaForSequenceClassification (2 labels)"),
        ("lora", "peft task_type SEQ_CLS"),
        ("reward", ""),
        ("classification", ""),
        ("seq_cls", ""),
    ] {
        assert_eq!(with(task, notes), ModelHead::Classifier, "{task} / {notes}");
    }
    for (task, notes) in [
        ("lora", "SFT on Alpaca"),
        ("sft", "classifier-free guidance"),
    ] {
        assert_eq!(with(task, notes), ModelHead::Lm, "{task} / {notes}");
    }
}

/// A head width the columns cannot give comes from the stated parameter
/// count: Seed-OSS-36B's 80 heads of 128 over a 5120 hidden; a row whose
/// count the usual width meets keeps it, and one no common width explains
/// (a vision tower) is left as it is.
#[test]
fn the_stated_parameter_count_gives_a_head_width_the_columns_cannot() {
    use cost_model::calibrate::case_plan;
    let text = project_text("replay-families-2026-12-05d.csv");
    let id = "replay-seed-oss-36b-fp32-nock-b2-s1024-full-alloc";
    let seed = case_plan(&text, id).unwrap().model;
    assert_eq!((seed.hidden / seed.heads, seed.head_dim), (64, 128));
    let with_total = |total: &str| {
        let mut lines = text.lines();
        let header = lines.next().unwrap();
        let row = lines.find(|l| l.starts_with(&format!("{id},"))).unwrap();
        // The row's stated count, 36.1511 (B), is its only such field.
        let row = row.replacen(",36.1511,", &format!(",{total},"), 1);
        case_plan(&format!("{header}\n{row}\n"), id)
            .unwrap()
            .model
            .head_dim
    };
    // Unstated, or a count that 64-wide heads give: the usual width.
    assert_eq!(with_total(""), 64);
    let usual = ModelSpec {
        head_dim: 64,
        ..seed.clone()
    }
    .params() as f64
        / 1e9;
    assert_eq!(with_total(&format!("{usual:.4}")), 64);
    // A count no common width meets (a vision tower beside the text model).
    assert_eq!(with_total("60.0"), 64);
}

/// torchtune's published peak memory (its 0.6.1 README, read from the PyPI
/// wheel's metadata) with each run's recipe config: a framework no public
/// case comes from. Two rows contradict their stated settings and are graded
/// C (excluded from the statistics).
#[test]
fn torchtune_readme_rows_hold_the_recorded_accuracy() {
    let r = project_set("torchtune-readme-0.6.1.csv");
    let s = &r.summary;
    assert_eq!((s.n, s.skipped), (15, 0));
    let (median, p90, worst) = errors(s);
    // 2026-11-30, before torchtune's own mechanisms (fused AdamW, its eager
    // standard loss under compile, chunked CE kept as 16-bit chunks when
    // compiled, FSDP2's head unit, gradients offloaded with the parameters,
    // the tied head's gradient under optimizer-in-backward, torchao's
    // double-quantized NF4): 8.69 % / 43.80 % / −15.7 %; after: 3.57 % /
    // 9.67 % / −14.3 % (the 8-bit AdamW row, whose optimizer is not named).
    // Then 4.42 % / 9.67 % / −15.6 % once the LM head's weight gradient waits
    // for the head's backward instead of meeting the loss's chunk gradient.
    assert!(median <= 4.5, "median |error| {median} %");
    assert!(p90 <= 10.0, "p90 |error| {p90} %");
    assert!(worst >= -16.0, "worst under-prediction {worst} %");
}

/// Signed errors (%) of a case file's rows graded A or B.
fn graded_errors(text: &str) -> Vec<f64> {
    let recs = cost_model::csv::parse(text).unwrap();
    let q = recs[0].fields.iter().position(|h| h == "quality").unwrap();
    let id = recs[0].fields.iter().position(|h| h == "id").unwrap();
    let c_rows: Vec<&str> = recs[1..]
        .iter()
        .filter(|r| r.fields.get(q).is_some_and(|v| v == "C"))
        .map(|r| r.fields[id].as_str())
        .collect();
    calibrate(text)
        .unwrap()
        .cases
        .into_iter()
        .filter(|c| !c_rows.contains(&c.id.as_str()))
        .filter_map(|c| c.error_pct)
        .collect()
}

/// The band every estimate shows is where eight runs in ten of the
/// calibration sets fall: its edges are the 90th and 10th percentiles of the
/// signed errors (the truth is predicted / (1 + e)), and the constants may
/// not drift more than half a point from them when the model changes.
#[test]
fn the_uncertainty_band_is_the_spread_of_the_residuals() {
    use cost_model::estimate::{BAND_ABOVE, BAND_BELOW};
    let mut e = graded_errors(&cases());
    for f in ["h200-2026-11-30.csv", "torchtune-readme-0.6.1.csv"] {
        e.extend(graded_errors(&project_text(f)));
    }
    assert!(e.len() >= 300, "{} graded rows", e.len());
    e.sort_by(|a, b| a.total_cmp(b));
    // Linear interpolation between the closest ranks.
    let pct = |p: f64| {
        let k = (e.len() - 1) as f64 * p;
        let (i, f) = (k.floor() as usize, k.fract());
        e[i] + (e[(i + 1).min(e.len() - 1)] - e[i]) * f
    };
    let below = 1.0 - 1.0 / (1.0 + pct(0.9) / 100.0);
    let above = 1.0 / (1.0 + pct(0.1) / 100.0) - 1.0;
    assert!(
        (BAND_BELOW - below).abs() <= 0.005,
        "BAND_BELOW {BAND_BELOW}, residuals give {below:.4}"
    );
    assert!(
        (BAND_ABOVE - above).abs() <= 0.005,
        "BAND_ABOVE {BAND_ABOVE}, residuals give {above:.4}"
    );
}

#[test]
fn malformed_case_files_are_rejected_with_the_line() {
    assert!(calibrate("").unwrap_err().contains("empty"));
    assert!(calibrate("foo,bar\n1,2\n")
        .unwrap_err()
        .contains("line 1: header has no `id` column"));
    let bad = "id,metric,measured_gib,n_layers,hidden\nx,max_allocated,3,notanumber,4\n";
    let r = calibrate(bad).unwrap();
    assert!(
        r.cases[0].skipped.as_deref().unwrap().contains("line 2"),
        "{:?}",
        r.cases[0].skipped
    );
}

/// Counts and capacities out of range say which and why, not "not a number"
/// for a number, and no column is quietly replaced (0 GPUs was read as 1).
#[test]
fn out_of_range_values_are_named_for_what_is_wrong() {
    let id = "litgpt_resource_tables_2023-10-001";
    let why = |field: &str, v: &str| {
        calibrate(&with_fields(id, &[(field, v)])).unwrap().cases[0]
            .skipped
            .clone()
            .unwrap_or_default()
    };
    assert!(why("micro_batch", "-1").contains("`-1` is negative"));
    assert!(why("seq_len", "4294967296").contains("too large"));
    assert!(why("micro_batch", "1.5").contains("not a whole number"));
    assert!(why("num_gpus", "0").contains("num_gpus is 0"));
    assert!(why("gpu_mem_gib", "0").contains("gpu_mem_gib: `0` is not a capacity"));
    assert!(why("gpu_mem_gib", "-24").contains("is not a capacity"));
}

fn v100_head(csv: &str) -> cost_model::model::ModelHead {
    cost_model::calibrate::case_plan(csv, "hf_transformers_perf_train_gpu_one-128")
        .unwrap()
        .model
        .head
}

#[test]
fn method_details_stated_in_the_notes_reach_the_plan() {
    use cost_model::calibrate::case_plan;
    let csv = cases();
    let method = |id: &str| match case_plan(&csv, id).unwrap().training.finetune {
        Finetune::Adapter { method, .. } => method,
        other => panic!("{id}: {other:?}"),
    };
    assert_eq!(
        method("litgpt_resource_tables_2023-10-024"),
        AdapterMethod::LlamaAdapter
    );
    assert_eq!(
        method("litgpt_resource_tables_2023-10-030"),
        AdapterMethod::LlamaAdapterV2
    );
    assert_eq!(method("peft_metamathqa_benchmark-157"), AdapterMethod::Ia3);
    assert_eq!(
        method("peft_metamathqa_benchmark-159"),
        AdapterMethod::LnTuning
    );
    assert_eq!(method("peft_metamathqa_benchmark-162"), AdapterMethod::Boft);
    // "OSF on q+k+v+o+gate+up+down": the adapted matrices, read off the notes.
    match case_plan(&csv, "peft_metamathqa_benchmark-161")
        .unwrap()
        .training
        .finetune
    {
        Finetune::Adapter { targets, .. } => {
            assert_eq!(targets, cost_model::plan::LoraTargets::ALL_LINEAR)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        method("peft_metamathqa_benchmark-160"),
        AdapterMethod::Generic
    );
    // OSF rebuilt the weight until PEFT 0.21 factored it; a stated version says which.
    assert_eq!(
        method("peft_metamathqa_benchmark-161"),
        AdapterMethod::OsfReconstruct
    );
    let id = "peft_metamathqa_benchmark-161";
    let osf = |notes: &str| match case_plan(&with_fields(id, &[("notes", notes)]), id)
        .unwrap()
        .training
        .finetune
    {
        Finetune::Adapter { method, .. } => method,
        other => panic!("{other:?}"),
    };
    assert_eq!(osf("OSF on q+v; PEFT 0.21.2"), AdapterMethod::Osf);
    assert_eq!(osf("OSF on q+v; PEFT 1.0"), AdapterMethod::Osf);
    assert_eq!(
        osf("OSF on q+v; PEFT 0.20.0"),
        AdapterMethod::OsfReconstruct
    );
    assert_eq!(osf("HRA r8 on q+v"), AdapterMethod::Hra);
    assert_eq!(osf("VB-LoRA on q+v"), AdapterMethod::CastInputs);
    // SHiRA is not HiRA: its own rebuilt weights and sparse update.
    assert_eq!(osf("SHiRA on q+v"), AdapterMethod::Shira);
    assert_eq!(osf("HiRA on q+v"), AdapterMethod::DeltaWeight);
    assert_eq!(osf("PEANuT on q+v"), AdapterMethod::DeltaWeight);
    assert_eq!(osf("LiLy on q+v"), AdapterMethod::CastInputs);
    assert_eq!(osf("BOFT block 4 on q+v"), AdapterMethod::Boft);
    assert_eq!(osf("Cartridges (20 tokens)"), AdapterMethod::PrefixTuning);
    assert_eq!(
        osf("prefix tuning: 20 virtual tokens"),
        AdapterMethod::PrefixTuning
    );
    // LoRA variants and dropout: "DoRA (use_dora)", "LoRA-FA optimizer";
    // "LoRA alpha32 dropout 0.1"; unstated in a plain loop: PEFT's default 0.
    let lora = |id: &str| match case_plan(&csv, id).unwrap().training.finetune {
        Finetune::Lora {
            variant, dropout, ..
        } => (variant, dropout),
        other => panic!("{id}: {other:?}"),
    };
    use cost_model::plan::LoraVariant;
    assert_eq!(lora("peft_metamathqa_benchmark-155").0, LoraVariant::Dora);
    assert_eq!(lora("peft_metamathqa_benchmark-156").0, LoraVariant::LoraFa);
    assert_eq!(
        lora("peft_metamathqa_benchmark-152"),
        (LoraVariant::Lora, false)
    );
    assert_eq!(lora("peft_readme_raft-144"), (LoraVariant::Lora, true));
    // LitGPT's model code has no dropout; a transformers GPT-2/BERT has.
    assert!(
        !case_plan(&csv, "litgpt_resource_tables_2023-10-001")
            .unwrap()
            .training
            .dropout
    );
    assert!(
        case_plan(&csv, "hf_transformers_perf_train_gpu_one-128")
            .unwrap()
            .training
            .dropout
    );
    // "custom LayerNorm/GELU"; "sequence classification head only".
    let scratch = case_plan(&csv, "rasbt_llms_from_scratch_speed-180").unwrap();
    assert!(scratch.model.python_norm && scratch.model.gelu_new);
    let native = case_plan(&csv, "rasbt_llms_from_scratch_speed-182").unwrap();
    assert!(!native.model.python_norm && !native.model.gelu_new);
    assert_eq!(v100_head(&csv), cost_model::model::ModelHead::Classifier);
    let prompt = case_plan(&csv, "peft_metamathqa_benchmark-158").unwrap();
    assert_eq!(prompt.training.finetune.virtual_tokens(), 200);
    assert_eq!(prompt.training.seq_len, 768);
    // "NVML used memory … incl. ~1343 MiB CUDA context": a measured context.
    let v100 = case_plan(&csv, "hf_transformers_perf_train_gpu_one-128").unwrap();
    assert_eq!(v100.runtime.cuda_context_mib, 1343);
    let other = case_plan(&csv, "peft_metamathqa_benchmark-158").unwrap();
    assert_eq!(
        other.runtime.cuda_context_mib,
        cost_model::estimate::CUDA_CONTEXT_MIB
    );
}

/// The public file's header and one row, with some columns set.
#[test]
fn notes_that_state_padded_rows_give_sdpa_its_mask() {
    // The H200's padded Trainer run says so; vocabulary padding, packed,
    // padding-free and length-bucketed batches (the longest rows, truncated
    // alike, together) and flash-attn's varlen path do not.
    let padded = |notes: &str| {
        let id = "peft_metamathqa_benchmark-152";
        cost_model::calibrate::case_plan(&with_fields(id, &[("notes", notes)]), id)
            .unwrap()
            .training
            .padded
    };
    assert!(padded(
        "last 25 % of every row padding (attention_mask 0; labels -100)"
    ));
    assert!(padded("short tweets padded per batch"));
    assert!(padded("left-padded to max_length 64; causal LM"));
    assert!(!padded("step 9 vocab padded to 50304; dropout 0.1"));
    assert!(!padded(
        "seq_len is the 768 cap (length-bucketed batches padded to longest)"
    ));
    assert!(!padded("packed to 4096; padded samples dropped"));
    // Packing said to be off leaves the padding the notes state.
    assert!(padded("packing=False; padded per batch"));
    assert!(!padded("packing=True; padded samples dropped"));
    assert!(!padded("padding_free; DataCollatorWithFlattening"));
    assert!(!padded(
        "attn_implementation flash_attention_2; padded to longest"
    ));
    assert!(!padded("adapter weights fp32"));
    assert!(padded(
        "padded to longest; DDP gradient_as_bucket_view=True"
    ));
    let h200 = project_text("h200-2026-11-30.csv");
    assert!(
        cost_model::calibrate::case_plan(
            &h200,
            "h200-2026-11-30-trainer-q05-ampbf16-pad-b8-s1024-alloc"
        )
        .unwrap()
        .training
        .padded
    );
}

fn with_fields(id: &str, set: &[(&str, &str)]) -> String {
    let text = cases();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row = lines.find(|l| l.starts_with(&format!("{id},"))).unwrap();
    let mut fields: Vec<&str> = row.split(',').collect();
    for (c, v) in set {
        let i = header.iter().position(|h| h == c).unwrap();
        fields[i] = v;
    }
    format!("{}\n{}\n", header.join(","), fields.join(","))
}

/// … with columns emptied ("empty means unknown").
fn with_blanks(id: &str, cols: &[&str]) -> String {
    let set: Vec<(&str, &str)> = cols.iter().map(|c| (*c, "")).collect();
    with_fields(id, &set)
}

/// What the columns cannot say about a model's architecture comes from the
/// preset its name finds, hub id or not; how transformers implements it only
/// from a hub id. BLOOM has ALiBi, no rotary; Falcon-40B's block runs
/// attention and MLP side by side; a from-scratch GPT-2 is not transformers'.
#[test]
fn a_named_model_brings_its_architecture_and_a_hub_id_its_implementation() {
    use cost_model::calibrate::case_plan;
    use cost_model::model::Positions;
    let plan = |id: &str, set: &[(&str, &str)]| case_plan(&with_fields(id, set), id).unwrap();
    let bloom = plan("peft_readme_raft-144", &[]).model;
    assert_eq!(bloom.positions, Positions::Alibi);
    assert!(bloom.fused_projections && bloom.linear_bias);
    let falcon = plan("litgpt_resource_tables_2023-10-021", &[]).model;
    assert!(falcon.parallel_residual && !falcon.linear_bias);
    assert_eq!(falcon.norms_per_layer, 2);
    // The same architecture from a free-form name; transformers' fused
    // projections and Python GELU only from the hub id.
    let scratch = "rasbt_llms_from_scratch_speed-182"; // native GELU
    let free = plan(scratch, &[]).model;
    assert_eq!(free.positions, Positions::Learned);
    assert_eq!(free.max_positions, 1024);
    assert!(!free.gelu_new && !free.fused_projections);
    for (model, framework) in [
        ("openai-community/gpt2", "plain-pytorch"),
        ("gpt2", "plain-pytorch"),
        ("GPT-2 (124M)", "hf-trainer"),
    ] {
        let hub = plan(scratch, &[("model", model), ("framework", framework)]).model;
        assert!(
            hub.gelu_new && hub.fused_projections,
            "{model} under {framework}"
        );
    }
    // A name whose dimensions disagree with the row's brings its family's
    // implementation, not its dimensions (Llama's: rotary, no biases).
    let other = plan("peft_readme_raft-144", &[("model", "Llama 2 7B")]).model;
    assert_eq!(other.positions, Positions::Rotary);
    assert!(!other.linear_bias && !other.fused_projections);
    // So does a size of a family no preset has: Pythia-70M is GPT-NeoX's
    // parallel block with fused q/k/v; Falcon-180B is Falcon-40B's new
    // decoder, which always hands SDPA a mask. Read from the columns alone
    // they were a sequential block with separate projections.
    let pythia = [
        ("model", "EleutherAI/pythia-70m-deduped"),
        ("n_layers", "6"),
        ("hidden", "512"),
        ("n_heads", "8"),
        ("n_kv_heads", "8"),
        ("ffn_hidden", "2048"),
        ("vocab", "50304"),
        ("tied_embeddings", "false"),
        ("params_total", "0.0703"),
    ];
    let pythia = plan("peft_readme_raft-144", &pythia).model;
    assert!(pythia.parallel_residual && pythia.fused_projections);
    assert_eq!(pythia.positions, Positions::Rotary);
    let falcon = [
        ("model", "tiiuae/falcon-180B"),
        ("n_layers", "80"),
        ("hidden", "14848"),
        ("n_heads", "232"),
        ("n_kv_heads", "8"),
        ("ffn_hidden", "59392"),
        ("vocab", "65024"),
        ("params_total", "179.5"),
    ];
    let falcon = plan("peft_readme_raft-144", &falcon).model;
    assert!(falcon.sdpa_mask && falcon.parallel_residual && falcon.fused_projections);
    assert_eq!(falcon.norms_per_layer, 2);
    let unknown = plan("peft_readme_raft-144", &[("model", "our-own-7b")]).model;
    assert!(!unknown.parallel_residual && !unknown.sdpa_mask);
    // The named checkpoint's config says whether its blocks drop out: BLOOM's
    // 0.0 though its MLP is plain; OPT's 0.1, and its MLP's ReLU (a model
    // property, whatever code runs it). A model no preset names is read by
    // its positions' era: a plain decoder (rotary, as StarCoder2) without
    // dropout, an encoder (learned positions, BERT's lineage) with it.
    let bloom = plan("peft_readme_raft-144", &[]);
    assert!(!bloom.training.dropout && !bloom.model.relu);
    let opt = [
        ("model", "facebook/opt-1.3b"),
        ("n_layers", "24"),
        ("hidden", "2048"),
        ("n_heads", "32"),
        ("n_kv_heads", "32"),
        ("ffn_hidden", "8192"),
        ("vocab", "50272"),
        ("params_total", "1.316"),
    ];
    let opt = plan("peft_readme_raft-144", &opt);
    assert!(opt.training.dropout && opt.model.relu);
    let unnamed = plan("peft_readme_raft-144", &[("model", "our-own-7b")]);
    assert!(!unnamed.training.dropout && !unnamed.model.relu);
    let encoder = [("model", "our-own-encoder"), ("arch", "encoder")];
    assert!(plan("peft_readme_raft-144", &encoder).training.dropout);
}

#[test]
fn empty_columns_take_the_named_preset_and_the_documented_defaults() {
    let id = "litgpt_resource_tables_2023-10-042"; // Llama-2-7b LoRA r8 q+v, 2 GPUs FSDP
    let full = calibrate(&with_blanks(id, &[])).unwrap().cases[0].clone();
    assert!(full.skipped.is_none(), "{full:?}");
    // Architecture from the preset the hub id names; r = 8 on q+v (PEFT's and
    // LitGPT's defaults); LitGPT shards two GPUs with FSDP.
    let blanks = [
        "arch",
        "n_layers",
        "hidden",
        "n_heads",
        "n_kv_heads",
        "ffn_hidden",
        "mlp",
        "vocab",
        "tied_embeddings",
        "lora_rank",
        "lora_targets",
        "sharding",
    ];
    let filled = calibrate(&with_blanks(id, &blanks)).unwrap().cases[0].clone();
    assert_eq!(filled.predicted_gib, full.predicted_gib, "{filled:?}");
    // The task follows from a stated rank.
    let task = calibrate(&with_blanks(id, &["task"])).unwrap().cases[0].clone();
    assert_eq!(task.predicted_gib, full.predicted_gib, "{task:?}");
    // The model named as people write it ("GPT-2 124M (LLMs-from-scratch …)")
    // fills the dimensions too; without a preset to take them from, empty
    // dimensions are named.
    let scratch_id = "rasbt_llms_from_scratch_speed-180";
    let named = calibrate(&with_blanks(scratch_id, &["hidden", "n_layers", "n_heads"]))
        .unwrap()
        .cases[0]
        .clone();
    let stated = calibrate(&with_blanks(scratch_id, &[])).unwrap().cases[0].clone();
    assert_eq!(named.predicted_gib, stated.predicted_gib, "{named:?}");
    let scratch = calibrate(&with_fields(
        scratch_id,
        &[("hidden", ""), ("model", "GPTModel (LLMs-from-scratch)")],
    ))
    .unwrap()
    .cases[0]
        .clone();
    let why = scratch.skipped.unwrap();
    assert!(
        why.contains("hidden is empty") && why.contains("names no preset"),
        "{why}"
    );
    // An unknown batch is skipped, except on an OOM row (a lower bound).
    let mb = calibrate(&with_blanks(id, &["micro_batch"])).unwrap().cases[0].clone();
    assert!(mb.skipped.unwrap().contains("micro_batch is empty"));
    let oom = calibrate(&with_blanks("peft_readme_raft-143", &["micro_batch"]))
        .unwrap()
        .cases[0]
        .clone();
    assert!(
        oom.skipped.is_none() && oom.predicted_gib.unwrap() > 80.0,
        "{oom:?}"
    );
}

#[test]
fn an_other_optimizer_is_modelled_by_its_states_when_the_notes_name_it() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::Optimizer;
    let id = "litgpt_resource_tables_2023-10-042";
    let with_notes = |notes: &str| with_fields(id, &[("optimizer", "other"), ("notes", notes)]);
    let opt = |notes: &str| case_plan(&with_notes(notes), id).map(|p| p.training.optimizer);
    assert_eq!(opt("Adam-mini optimizer"), Ok(Optimizer::SgdMomentum));
    assert_eq!(opt("torch.optim.RMSprop"), Ok(Optimizer::SgdMomentum));
    assert_eq!(opt("SophiaG"), Ok(Optimizer::Adamw));
    assert_eq!(opt("AdamWScheduleFree"), Ok(Optimizer::Adamw));
    assert_eq!(opt("plain Adam"), Ok(Optimizer::Adamw));
    assert_eq!(opt("Muon (AdamW for embeddings)"), Ok(Optimizer::Muon));
    assert_eq!(opt("torch.optim.Muon; lr 0.02"), Ok(Optimizer::Muon));
    assert_eq!(opt("MuonClip"), Ok(Optimizer::Muon));
    assert_eq!(opt("timm Adan"), Ok(Optimizer::Adan));
    assert_eq!(opt("apex FusedLAMB"), Ok(Optimizer::Adamw));
    assert_eq!(opt("LAMB; lr 1e-3"), Ok(Optimizer::Adamw));
    assert_eq!(opt("prodigyopt Prodigy d0 1e-6"), Ok(Optimizer::Adan));
    assert_eq!(opt("AdEMAMix (bitsandbytes)"), Ok(Optimizer::Ademamix));
    assert_eq!(opt("bnb AdEMAMix8bit"), Ok(Optimizer::Ademamix8bit));
    assert_eq!(opt("optim ademamix_8bit"), Ok(Optimizer::Ademamix8bit));
    assert_eq!(opt("AdEMAMix 8-bit; lr 1e-4"), Ok(Optimizer::Ademamix8bit));
    assert_eq!(opt("8-bit AdEMAMix"), Ok(Optimizer::Ademamix8bit));
    // An 8-bit base elsewhere in the notes is not the optimizer's.
    assert_eq!(
        opt("AdEMAMix over an 8-bit base (LLM.int8)"),
        Ok(Optimizer::Ademamix)
    );
    assert_eq!(opt("CAME optimizer"), Ok(Optimizer::SgdMomentum));
    assert_eq!(opt("ADOPT (Taniguchi et al.)"), Ok(Optimizer::Adamw));
    // Adam's moments quantized, by name: torchao's 4-bit, 8-bit and fp8.
    assert_eq!(opt("torchao.optim.AdamW4bit"), Ok(Optimizer::Adamw4bit));
    assert_eq!(opt("optim adamw_torch_4bit"), Ok(Optimizer::Adamw4bit));
    assert_eq!(opt("torchao AdamW8bit"), Ok(Optimizer::Adamw8bit));
    assert_eq!(opt("AdamWFp8 (torchao)"), Ok(Optimizer::Adamw8bit));
    // A 4-bit base beside a plain Adam is not a 4-bit optimizer.
    assert_eq!(opt("QLoRA 4-bit NF4 base; Adam"), Ok(Optimizer::Adamw));
    // Adam's states in bf16, as torchtitan and Megatron-Core name them.
    let bf16_states = |notes: &str| {
        case_plan(&with_fields(id, &[("notes", notes)]), id)
            .unwrap()
            .training
            .optimizer_states_16bit
    };
    assert!(bf16_states(
        "optimizer.implementation=fused_opt_states_bf16"
    ));
    assert!(bf16_states(
        "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16"
    ));
    assert!(bf16_states("exp_avg_dtype=bf16"));
    assert!(bf16_states("BF16 optimizer states"));
    assert!(!bf16_states("--use-precision-aware-optimizer"));
    assert!(!bf16_states("bf16 weights; fp32 optimizer states"));
    // "came" as English is not the optimizer.
    assert!(opt("the figure came from the logs").is_err());
    // "lambda" is not LAMB.
    assert!(opt("lambda scheduler").is_err());
    // LOMO and AdaLomo fuse the update into the backward pass.
    let in_bwd = |notes: &str| {
        case_plan(&with_notes(notes), id)
            .map(|p| (p.training.optimizer, p.training.optimizer_in_backward))
    };
    assert_eq!(in_bwd("LOMO (collie)"), Ok((Optimizer::Sgd, true)));
    assert_eq!(in_bwd("AdaLomo"), Ok((Optimizer::Adafactor, true)));
    assert_eq!(in_bwd("SophiaG"), Ok((Optimizer::Adamw, false)));
    // Named in the optimizer column itself.
    let col = |o: &str| {
        case_plan(&with_fields(id, &[("optimizer", o)]), id).map(|p| p.training.optimizer)
    };
    assert_eq!(col("muon"), Ok(Optimizer::Muon));
    assert_eq!(col("Adan"), Ok(Optimizer::Adan));
    assert_eq!(col("lamb"), Ok(Optimizer::Adamw));
    assert_eq!(col("ademamix"), Ok(Optimizer::Ademamix));
    assert_eq!(col("paged_ademamix_8bit"), Ok(Optimizer::Ademamix8bit));
    assert_eq!(col("came"), Ok(Optimizer::SgdMomentum));
    assert_eq!(col("lion_32bit"), Ok(Optimizer::Lion));
    assert_eq!(col("lion_8bit"), Ok(Optimizer::Lion8bit));
    assert_eq!(col("paged_lion_8bit"), Ok(Optimizer::Lion8bit));
    assert_eq!(col("adopt"), Ok(Optimizer::Adamw));
    // "adopt" as English in the notes is not the optimizer.
    assert!(opt("we adopt the paper's settings").is_err());
    let lomo = case_plan(&with_fields(id, &[("optimizer", "lomo")]), id).unwrap();
    assert!(lomo.training.optimizer == Optimizer::Sgd && lomo.training.optimizer_in_backward);
    assert_eq!(opt("GaLore AdamW rank 128"), Ok(Optimizer::Galore));
    for unmodelled in [
        "GaLore Adafactor",
        "SOAP",
        "Madanapalle cluster",
        "some optimizer",
    ] {
        let e = opt(unmodelled).unwrap_err();
        assert!(e.contains("optimizer `other`"), "{unmodelled}: {e}");
    }
}

#[test]
fn other_spellings_of_the_schema_values_read_as_the_values() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::{Offload, Optimizer, OptimizerImpl, Precision, Sharding};
    let id = "litgpt_resource_tables_2023-10-042"; // Llama-2-7b LoRA, 2 GPUs FSDP
    let plan = |col: &str, v: &str| case_plan(&with_fields(id, &[(col, v)]), id);
    // "Empty means unknown": a setting written `unknown` (or `N/A`, `?`) reads
    // as the empty column does.
    for col in [
        "precision",
        "optimizer",
        "activation_checkpointing",
        "compile",
        "sharding",
        "offload",
        "grad_accum",
        "n_kv_heads",
        "gpu_mem_gib",
        "framework",
    ] {
        let empty = plan(col, "").unwrap_or_else(|e| panic!("{col} empty: {e}"));
        for v in ["unknown", "N/A", "?"] {
            assert_eq!(plan(col, v).as_ref(), Ok(&empty), "{col} = {v}");
        }
    }
    // transformers' `optim` ids, with the kernel they name.
    for (name, opt, kernel) in [
        (
            "adamw_torch_fused",
            Optimizer::Adamw,
            Some(OptimizerImpl::Fused),
        ),
        (
            "adamw_torch",
            Optimizer::Adamw,
            Some(OptimizerImpl::Foreach),
        ),
        ("adamw_hf", Optimizer::Adamw, Some(OptimizerImpl::ForLoop)),
        ("adamw_bnb_8bit", Optimizer::Adamw8bit, None),
        ("adamw_torch_4bit", Optimizer::Adamw4bit, None),
        ("adamw-4bit", Optimizer::Adamw4bit, None),
        ("paged_adamw_32bit", Optimizer::PagedAdamw, None),
        ("paged_adamw_8bit", Optimizer::PagedAdamw8bit, None),
        ("lion_32bit", Optimizer::Lion, None),
        ("sgd_nesterov", Optimizer::SgdMomentum, None),
        ("Adafactor", Optimizer::Adafactor, None),
    ] {
        let p = plan("optimizer", name).unwrap();
        assert_eq!(p.training.optimizer, opt, "{name}");
        if let Some(k) = kernel {
            assert_eq!(p.training.optimizer_impl, k, "{name}");
        }
    }
    // GaLore with its rank and, layerwise, in backward.
    let p = case_plan(
        &with_fields(
            id,
            &[
                ("optimizer", "galore_adamw_8bit_layerwise"),
                ("notes", "optim_args rank=1024"),
            ],
        ),
        id,
    )
    .unwrap();
    assert_eq!(p.training.optimizer, Optimizer::Galore8bit);
    assert_eq!(p.training.galore_rank, Some(1024));
    assert!(p.training.optimizer_in_backward);
    let p = plan("optimizer", "apollo_adamw").unwrap();
    assert_eq!(
        (p.training.optimizer, p.training.galore_rank),
        (Optimizer::Apollo, None)
    );
    let p = case_plan(
        &with_fields(id, &[("optimizer", "other"), ("notes", "APOLLO-Mini")]),
        id,
    )
    .unwrap();
    assert_eq!(
        (p.training.optimizer, p.training.galore_rank),
        (Optimizer::Apollo, Some(1))
    );
    let p = plan("optimizer", "galore_adamw").unwrap();
    assert_eq!(
        (p.training.optimizer, p.training.galore_rank),
        (Optimizer::Galore, None)
    );
    assert!(!p.training.optimizer_in_backward);
    // CAME and LOMO are read by their states (the other-optimizer test).
    for unmodelled in ["galore_adafactor", "sm3", "shampoo"] {
        let e = plan("optimizer", unmodelled).unwrap_err();
        assert!(e.contains("not in the schema"), "{unmodelled}: {e}");
    }
    for (name, prec) in [
        ("tf32", Precision::Fp32),
        ("mixed-bf16", Precision::AmpBf16),
        ("fp16_amp", Precision::AmpFp16),
        ("bfloat16", Precision::Bf16),
        ("float16", Precision::Fp16),
        // Autocast without its dtype is CUDA's default, fp16.
        ("amp", Precision::AmpFp16),
        ("FP8-E4M3", Precision::Fp8),
        // Prose brackets around the name; Lightning's Transformer Engine.
        ("AMP (bf16)", Precision::AmpBf16),
        ("bf16 (mixed)", Precision::AmpBf16),
        ("(fp32)", Precision::Fp32),
        ("transformer-engine", Precision::Fp8),
        // Lightning 1.x's `precision=16`: native AMP in fp16.
        ("16", Precision::AmpFp16),
    ] {
        assert_eq!(
            plan("precision", name).unwrap().training.precision,
            prec,
            "{name}"
        );
    }
    for (name, sharding) in [
        ("deepspeed-zero3", Sharding::Zero3),
        ("DS stage 2", Sharding::Zero2),
        ("zero_stage_1", Sharding::Zero1),
        ("deepspeed zero0", Sharding::Ddp),
        ("FSDP_HYBRID_SHARD", Sharding::Hsdp),
        ("fsdp-full-shard", Sharding::FsdpFull),
        ("fsdp_shard_grad_op", Sharding::FsdpGradOp),
        ("megatron-dp", Sharding::Ddp),
    ] {
        assert_eq!(
            plan("sharding", name).unwrap().parallel.sharding,
            sharding,
            "{name}"
        );
    }
    // ZeRO++ is stage 3 with hpZ's secondary partition, which the model
    // counts (refused before it did).
    let zero_pp = plan("sharding", "zero++").unwrap();
    assert_eq!(zero_pp.parallel.sharding, Sharding::Zero3);
    assert!(zero_pp.parallel.hpz_partition_size > 1);
    // A stage written with its offload, the offload column empty: ZeRO-Offload
    // (the optimizer) under stage 1/2, transformers' "ZeRO-3 Offload" (both)
    // under stage 3; an offload column that says otherwise stands.
    let both = |sharding: &str, offload: &str| {
        case_plan(
            &with_fields(id, &[("sharding", sharding), ("offload", offload)]),
            id,
        )
        .unwrap()
        .parallel
    };
    let p = both("ZeRO-2 offload", "");
    assert_eq!(
        (p.sharding, p.offload),
        (Sharding::Zero2, Offload::OPTIMIZER_CPU)
    );
    let p = both("zero3_offload", "");
    assert_eq!((p.sharding, p.offload), (Sharding::Zero3, Offload::ALL_CPU));
    assert_eq!(both("ZeRO-2 offload", "none").offload, Offload::NONE);
    // Tools written in the framework column with more than their name.
    for (name, fw) in [
        ("trl-sft", cost_model::framework::Framework::Trl),
        (
            "huggingface-trainer",
            cost_model::framework::Framework::HfTrainer,
        ),
        (
            "mosaic-composer",
            cost_model::framework::Framework::PlainPytorch,
        ),
        ("axolotl-v0.6", cost_model::framework::Framework::Axolotl),
    ] {
        assert_eq!(plan("framework", name).unwrap().framework, fw, "{name}");
    }
    assert!(plan("framework", "sft-trainer-x").is_err());
    // Checkpointing with its kept inputs on the host, by that name.
    let t = plan("activation_checkpointing", "offload")
        .unwrap()
        .training;
    assert_eq!(
        (t.checkpointing, t.activation_offload),
        (cost_model::plan::Checkpointing::Full, true)
    );
    assert_eq!(
        plan("offload", "params").unwrap().parallel.offload,
        Offload::ALL_CPU
    );
    for written in ["optimizer_cpu", "optimizer:cpu"] {
        assert_eq!(
            plan("offload", written).unwrap().parallel.offload,
            Offload::OPTIMIZER_CPU,
            "{written}"
        );
    }
    assert!(plan("offload", "cpu")
        .unwrap_err()
        .contains("offload `cpu`"));
    use cost_model::framework::Framework;
    for (name, fw) in [
        ("PEFT", Framework::Peft),
        ("accelerate", Framework::HfAccelerate),
        ("transformers", Framework::HfTrainer),
        ("Megatron-LM", Framework::Megatron),
        ("lit-gpt", Framework::Litgpt),
        ("PyTorch Lightning", Framework::PlainPytorch),
        ("Hugging Face Transformers", Framework::HfTrainer),
        ("HF", Framework::HfTrainer),
        ("Megatron-DeepSpeed", Framework::Megatron),
        ("OpenRLHF", Framework::Deepspeed),
        ("nanoGPT", Framework::PlainPytorch),
        ("llm-foundry", Framework::PlainPytorch),
        ("Colossal-AI", Framework::PlainPytorch),
        ("PyTorch FSDP", Framework::PlainPytorch),
    ] {
        assert_eq!(plan("framework", name).unwrap().framework, fw, "{name}");
    }
    use cost_model::plan::Checkpointing;
    for (name, want) in [
        ("gradient_checkpointing", Checkpointing::Full),
        ("selective-op", Checkpointing::OpSelective),
        // A switch's spellings, and LitGPT's policy (every Block).
        ("on", Checkpointing::Full),
        ("1", Checkpointing::Full),
        ("Block", Checkpointing::Full),
        ("every layer", Checkpointing::Full),
        ("off", Checkpointing::None),
        ("0", Checkpointing::None),
    ] {
        assert_eq!(
            plan("activation_checkpointing", name)
                .unwrap()
                .training
                .checkpointing,
            want,
            "{name}"
        );
    }
    // Every k-th block recomputed in full, however the column counts it.
    for (name, k) in [
        ("every 2 layers", 2),
        ("every other block", 2),
        ("full (every 4 layers)", 4),
        ("every 3rd layer", 3),
    ] {
        let t = plan("activation_checkpointing", name).unwrap().training;
        assert_eq!(
            (t.checkpointing, t.checkpoint_every),
            (Checkpointing::Full, k),
            "{name}"
        );
    }
    assert_eq!(
        plan("activation_checkpointing", "op")
            .unwrap()
            .training
            .checkpointing,
        Checkpointing::OpSelective
    );
    for bad in ["every 0 layers", "every few layers"] {
        assert!(plan("activation_checkpointing", bad).is_err(), "{bad}");
    }
    // The loss by its tools' and classes' names (a LitGPT row: its chunked
    // loss keeps the chunks).
    use cost_model::plan::Loss;
    for (name, loss) in [
        ("liger", Loss::Fused),
        ("cut_cross_entropy", Loss::Fused),
        ("FLCE", Loss::Fused),
        ("chunked (8 chunks)", Loss::ChunkedKeep),
        ("CEWithChunkedOutputLoss", Loss::ChunkedKeep),
        ("cross_entropy", Loss::Standard),
    ] {
        assert_eq!(plan("loss", name).unwrap().training.loss, loss, "{name}");
    }
    // LoRA targets as a config lists them, or as module paths.
    use cost_model::plan::LoraTargets;
    for written in [
        // (CSV-quoted: the list has a comma.)
        r#""[""q_proj"", ""v_proj""]""#,
        "['q_proj' 'v_proj']",
        "model.layers.*.self_attn.q_proj+model.layers.*.self_attn.v_proj",
    ] {
        match plan("lora_targets", written).unwrap().training.finetune {
            cost_model::plan::Finetune::Lora { targets, .. } => {
                assert_eq!(targets, LoraTargets::QV, "{written}")
            }
            f => panic!("{written}: {f:?}"),
        }
    }
    assert!(plan("lora_targets", "[]").is_err());
    // Unsloth's checkpointing named in the column offloads what it keeps.
    let unsloth = plan("activation_checkpointing", "unsloth")
        .unwrap()
        .training;
    assert!(unsloth.checkpointing == Checkpointing::Full && unsloth.activation_offload);
    assert_eq!(
        plan("sharding", "DP").unwrap().parallel.sharding,
        Sharding::Ddp
    );
    for name in ["jax", "MaxText", "TensorFlow", "MLX"] {
        let why = plan("framework", name).unwrap_err();
        assert!(why.contains("is not PyTorch"), "{name}: {why}");
    }
    // Devices outside the CUDA/ROCm caching allocator are named as such;
    // GPUs, AMD's and Ascend's included, are read.
    for name in [
        "TPU v4",
        "tpuv5e",
        "Gaudi2",
        "HPU",
        "AWS Trainium",
        "trn1",
        "Apple M2 Ultra",
        "MPS",
        "CPU",
    ] {
        let why = plan("gpu", name).unwrap_err();
        assert!(
            why.contains("not a GPU under PyTorch's CUDA"),
            "{name}: {why}"
        );
    }
    for name in [
        "MI300X",
        "A100 (MIG 3g.40gb)",
        "H100 NVL",
        "RTX 6000 Ada",
        "Ascend 910B",
        "A100 + CPU offload",
    ] {
        assert!(plan("gpu", name).is_ok(), "{name}");
    }
    assert!(plan("framework", "acme-trainer")
        .unwrap_err()
        .contains("framework `acme-trainer` is not in the schema"));
    use cost_model::plan::{AdapterMethod, Finetune, LoraVariant};
    for name in ["pretrain", "full_finetune"] {
        assert_eq!(
            plan("task", name).unwrap().training.finetune,
            Finetune::Full,
            "{name}"
        );
    }
    // A task that names what the run trains on, not which weights: LoRA where
    // the row gives a rank or targets (this one does), else every weight.
    for name in ["SFT", "instruction tuning", "DPO", "peft"] {
        assert!(
            matches!(
                plan("task", name).unwrap().training.finetune,
                Finetune::Lora { rank: 8, .. }
            ),
            "{name}"
        );
    }
    for name in ["SFT", "instruction tuning", "DPO"] {
        let p = case_plan(
            &with_fields(
                id,
                &[("task", name), ("lora_rank", ""), ("lora_targets", "")],
            ),
            id,
        )
        .unwrap();
        assert_eq!(p.training.finetune, Finetune::Full, "{name}");
    }
    // Bit widths and compilers by name; approximate and footnoted figures.
    for (written, bits) in [
        ("nf4", 4),
        ("int8", 8),
        ("8-bit", 8),
        ("bf16", 16),
        ("4", 4),
    ] {
        let p = case_plan(
            &with_fields(id, &[("task", "lora"), ("base_weight_bits", written)]),
            id,
        )
        .unwrap();
        assert!(
            matches!(p.training.finetune, Finetune::Lora { base_bits, .. } if base_bits == bits),
            "{written}"
        );
    }
    assert!(plan("compile", "torch.compile").unwrap().training.compile);
    assert!(plan("compile", "inductor").unwrap().training.compile);
    assert!(!plan("compile", "eager").unwrap().training.compile);
    assert!(plan("base_weight_bits", "nf5").is_err());
    // Counts with separators, nouns or names; degrees written none or -;
    // a board's capacity with its unit (its GB are GiB).
    // (quoted: the comma is the CSV's too)
    let p = plan("seq_len", "\"2,048\"").unwrap();
    assert_eq!(p.training.seq_len, 2048);
    assert_eq!(
        plan("seq_len", "4096 tokens").unwrap().training.seq_len,
        4096
    );
    assert_eq!(plan("vocab", "32 000").unwrap().model.vocab, 32000);
    for rank in ["r=16", "rank 16", "r16", "16"] {
        assert!(
            matches!(
                plan("lora_rank", rank).unwrap().training.finetune,
                Finetune::Lora { rank: 16, .. }
            ),
            "{rank}"
        );
    }
    assert_eq!(plan("tp", "none").unwrap().parallel.tp, 1);
    assert_eq!(plan("cp", "-").unwrap().parallel.cp, 1);
    assert_eq!(plan("grad_accum", "none").unwrap().training.grad_accum, 1);
    for cap in ["40GB", "40 GiB", "40960 MiB", "40"] {
        assert_eq!(
            plan("gpu_mem_gib", cap).unwrap().gpu.capacity_mib,
            40960,
            "{cap}"
        );
    }
    assert!(plan("gpu_mem_gib", "40 bananas").is_err());
    // A count with a note or as a multiplier; a precision's words in any
    // order; where the blocks' inputs went.
    for gpus in ["8x", "8 GPUs", "8 (1 node)"] {
        assert_eq!(
            plan("num_gpus", gpus).unwrap().parallel.num_gpus,
            8,
            "{gpus}"
        );
    }
    for (written, prec) in [
        ("bfloat16 AMP", Precision::AmpBf16),
        ("mixed precision bf16", Precision::AmpBf16),
        ("half (AMP)", Precision::AmpFp16),
    ] {
        assert_eq!(
            plan("precision", written).unwrap().training.precision,
            prec,
            "{written}"
        );
    }
    assert!(plan("precision", "bf16 fp16 mixed").is_err());
    assert!(
        plan("activation_offload", "cpu")
            .unwrap()
            .training
            .activation_offload
    );
    assert!(
        !plan("activation_offload", "none")
            .unwrap()
            .training
            .activation_offload
    );
    assert!(plan("seq_len", "\"2,04\"").is_err());
    let lora = |task: &str| match case_plan(
        &with_fields(id, &[("task", task), ("base_weight_bits", "")]),
        id,
    )
    .unwrap()
    .training
    .finetune
    {
        Finetune::Lora {
            variant, base_bits, ..
        } => (variant, base_bits),
        f => panic!("{task}: {f:?}"),
    };
    assert_eq!(lora("DoRA").0, LoraVariant::Dora);
    assert_eq!(lora("lora-fa").0, LoraVariant::LoraFa);
    assert_eq!(lora("LoRA+").0, LoraVariant::Lora);
    assert_eq!(lora("qlora_4bit"), (LoraVariant::Lora, 4));
    let adapter = |task: &str| {
        let p = case_plan(
            &with_fields(id, &[("task", task), ("trainable_params", "1.5")]),
            id,
        )
        .unwrap();
        match p.training.finetune {
            Finetune::Adapter { method, .. } => method,
            f => panic!("{task}: {f:?}"),
        }
    };
    assert_eq!(adapter("IA3"), AdapterMethod::Ia3);
    assert_eq!(adapter("adaption_prompt"), AdapterMethod::LlamaAdapter);
    assert_eq!(adapter("vera"), AdapterMethod::CastInputs);
    assert_eq!(adapter("prompt-tuning"), AdapterMethod::Generic);
    assert!(plan("task", "distillation")
        .unwrap_err()
        .contains("task `distillation`"));
    use cost_model::calibrate::Counter;
    for (name, counter) in [
        ("allocated", Counter::Allocated),
        ("max_memory_active", Counter::Allocated),
        ("reserved", Counter::Reserved),
        ("peak", Counter::Reserved),
        ("gpu_memory_used", Counter::DeviceUsed),
        // As the call that printed it, in other case and separators.
        ("torch.cuda.max_memory_allocated()", Counter::Allocated),
        ("max_memory_reserved()", Counter::Reserved),
        ("Max Reserved", Counter::Reserved),
        ("MAX-ALLOCATED", Counter::Allocated),
        ("nvidia-smi", Counter::DeviceUsed),
        ("NVML used", Counter::DeviceUsed),
        ("memory.used", Counter::DeviceUsed),
        // Unknown written out, as the schema's `attention` and `loss` spell it.
        ("unknown", Counter::Reserved),
        ("N/A", Counter::Reserved),
        // A unit in brackets; a table's column header in words.
        ("max_reserved [MiB]", Counter::Reserved),
        ("Peak memory (GB)", Counter::Reserved),
        ("Peak Memory Active (GiB)", Counter::Allocated),
        ("Peak Memory per GPU", Counter::Reserved),
        ("GPU memory used", Counter::DeviceUsed),
        ("peak VRAM usage", Counter::Reserved),
        ("Peak memory usage (GB)", Counter::Reserved),
        ("peak GPU RAM", Counter::Reserved),
        // PyTorch's name for the reserved counter before 1.4.
        ("torch.cuda.max_memory_cached()", Counter::Reserved),
    ] {
        assert_eq!(Counter::from_metric(name), Some(counter), "{name}");
    }
    for none in [
        "throughput",
        "max CPU RSS",
        "peak host memory",
        "peak RAM",
        "tokens/s",
    ] {
        assert_eq!(Counter::from_metric(none), None, "{none}");
    }
}

/// The Llama-2-7b LitGPT row (32 blocks, 2 GPUs) with its task and notes
/// replaced and no LoRA columns.
fn llama_row_as(task: &str, notes: &str) -> cost_model::Plan {
    let id = "litgpt_resource_tables_2023-10-042";
    let fields = [
        ("task", task),
        ("notes", notes),
        ("lora_rank", ""),
        ("lora_targets", ""),
    ];
    cost_model::calibrate::case_plan(&with_fields(id, &fields), id).unwrap()
}

/// The method and trainable count a PEFT row of the Llama-2-7b LitGPT row
/// gets with its task and notes replaced and no count stated.
fn adapter_row_as(task: &str, notes: &str) -> Result<(AdapterMethod, u64), String> {
    let id = "litgpt_resource_tables_2023-10-042";
    let fields = [
        ("task", task),
        ("notes", notes),
        ("lora_rank", ""),
        ("lora_targets", ""),
        ("trainable_params", ""),
    ];
    let plan = cost_model::calibrate::case_plan(&with_fields(id, &fields), id)?;
    match plan.training.finetune {
        Finetune::Adapter {
            method,
            trainable_params,
            ..
        } => Ok((method, trainable_params)),
        other => panic!("{task} / {notes}: {other:?}"),
    }
}

#[test]
fn an_adapter_row_without_its_count_takes_the_count_the_method_gives_on_the_model() {
    use AdapterMethod::*;
    for (task, notes, method, count) in [
        // LitGPT's names (`finetune_adapter`, `finetune_adapter_v2`) in the
        // task column or the notes, in any case; counts as LitGPT prints them.
        ("adapter", "", LlamaAdapter, 1_229_760),
        ("Adapter", "", LlamaAdapter, 1_229_760),
        ("adapter_v2", "", LlamaAdapterV2, 4_279_744),
        (
            "other-peft",
            "litgpt finetune_adapter_v2 on Alpaca",
            LlamaAdapterV2,
            4_279_744,
        ),
        ("other-peft", "LLaMA-Adapter V2", LlamaAdapterV2, 4_279_744),
        (
            "other-peft",
            "LLaMA-Adapter; prompt length 10",
            LlamaAdapter,
            1_229_760,
        ),
        (
            "other-peft",
            "litgpt finetune_adapter",
            LlamaAdapter,
            1_229_760,
        ),
        // PEFT's: IA³ on k, v and down; the norms; a prefix of 20 tokens.
        ("ia3", "", Ia3, 614_400),
        ("other-peft", "LN tuning", LnTuning, 266_240),
        (
            "other-peft",
            "prefix tuning with 20 virtual tokens",
            PrefixTuning,
            5_242_880,
        ),
    ] {
        assert_eq!(
            adapter_row_as(task, notes),
            Ok((method, count)),
            "{task} / {notes}"
        );
    }
    // A stated count wins over the derived one.
    let id = "litgpt_resource_tables_2023-10-042";
    let stated = with_fields(
        id,
        &[
            ("task", "adapter"),
            ("trainable_params", "1.5"),
            ("lora_rank", ""),
            ("lora_targets", ""),
        ],
    );
    match cost_model::calibrate::case_plan(&stated, id)
        .unwrap()
        .training
        .finetune
    {
        Finetune::Adapter {
            trainable_params, ..
        } => assert_eq!(trainable_params, 1_500_000),
        other => panic!("{other:?}"),
    }
    // A method whose count depends on settings the row does not carry (a
    // rank, a prefix length) is still refused, saying which column is empty.
    for notes in ["VeRA", "prefix tuning", ""] {
        let e = adapter_row_as("other-peft", notes).unwrap_err();
        assert!(e.contains("trainable_params is empty"), "{notes}: {e}");
    }
    // A LoRA row whose notes call its LoRA weights an adapter stays LoRA.
    let lora = llama_row_as("lora", "LoRA adapter on q+v; adapter merged after training");
    assert!(matches!(lora.training.finetune, Finetune::Lora { .. }));
}

#[test]
fn frozen_layers_stated_in_the_notes_reach_a_full_fine_tune() {
    let frozen = |task: &str, notes: &str| llama_row_as(task, notes).training.frozen_layers;
    assert_eq!(frozen("full", "frozen_layers=8"), 8);
    assert_eq!(
        frozen("full", "Freeze the first 12 layers and the embeddings"),
        12
    );
    assert_eq!(frozen("full", "bottom 4 layers frozen"), 4);
    assert_eq!(frozen("full", "16 frozen layers"), 16);
    assert_eq!(frozen("full", "all layers train"), 0);
    // An adapter freezes its base anyway.
    assert_eq!(frozen("lora", "frozen_layers=8"), 0);
}

#[test]
fn a_preference_objective_named_in_the_notes_or_the_task_reaches_the_plan() {
    use cost_model::plan::{Finetune, Objective};
    let objective = |task: &str, notes: &str| {
        let p = llama_row_as(task, notes);
        (
            p.training.objective,
            matches!(p.training.finetune, Finetune::Full),
        )
    };
    assert_eq!(
        objective("full", "TRL DPOTrainer; beta 0.1"),
        (Objective::Dpo, true)
    );
    assert_eq!(objective("DPO", ""), (Objective::Dpo, true));
    assert_eq!(
        objective("lora", "DPO with LoRA r16"),
        (Objective::Dpo, false)
    );
    assert_eq!(objective("full", "SimPO"), (Objective::Orpo, true));
    // LLaMA-Factory's `stage: dpo` with a reference-free `pref_loss` loads no
    // reference model: the loss named is the one run.
    assert_eq!(
        objective("lora", "LLaMA-Factory stage dpo; pref_loss orpo"),
        (Objective::Orpo, false)
    );
    assert_eq!(objective("KTO", ""), (Objective::Kto, true));
    assert_eq!(objective("full", "plain SFT"), (Objective::Sft, true));
    // Not a word of its own: no objective.
    assert_eq!(objective("full", "dpos1 run"), (Objective::Sft, true));
}

/// TRL's ORPO and CPO trainers take the model's logits whatever TRL release
/// a row states (its fused LM head is its SFT, DPO and KTO trainers').
#[test]
fn trls_orpo_rows_take_the_logits_at_any_release() {
    use cost_model::plan::{Loss, Objective};
    let id = "litgpt_resource_tables_2023-10-042";
    let loss = |notes: &str| {
        let fields = [("framework", "trl"), ("loss", "standard"), ("notes", notes)];
        let p = cost_model::calibrate::case_plan(&with_fields(id, &fields), id).unwrap();
        (p.training.objective, p.training.loss)
    };
    assert_eq!(
        loss("TRL 1.16.0 ORPOTrainer"),
        (Objective::Orpo, Loss::Standard)
    );
    assert_eq!(
        loss("TRL 1.16.0 DPOTrainer"),
        (Objective::Dpo, Loss::TiledLogprob)
    );
    // Its log-probabilities' Triton kernel from 1.14.0; an unstated release
    // is an earlier one.
    let kernel = |notes: &str| {
        let fields = [("framework", "trl"), ("notes", notes)];
        let p = cost_model::calibrate::case_plan(&with_fields(id, &fields), id).unwrap();
        p.training.logprob_kernel
    };
    assert!(kernel("trl 1.14.0; ORPOTrainer"));
    assert!(!kernel("trl 1.13.0; ORPOTrainer"));
    assert!(!kernel("ORPOTrainer"));
}

#[test]
fn encoder_decoder_stacks_stated_in_the_notes_reach_the_plan() {
    use cost_model::calibrate::case_plan;
    let id = "peft_readme_raft-137"; // T0_3B: "n_layers is per stack (24 enc + 24 dec)"
    let stacks = |notes: &str| {
        let m = case_plan(&with_fields(id, &[("seq_len", "64"), ("notes", notes)]), id)
            .unwrap()
            .model;
        (m.encoder_layers, m.layers)
    };
    assert_eq!(stacks("n_layers is per stack (24 enc + 24 dec)"), (24, 24));
    assert_eq!(
        stacks("t5 with 12 encoder layers + 6 decoder layers"),
        (12, 6)
    );
    assert_eq!(stacks("24 enc+6 dec"), (24, 6));
    // Not stated: n_layers per stack.
    assert_eq!(stacks("lr 1e-3 + warmup"), (24, 24));
}

/// A row whose `seq_len` column is empty runs the length its notes state as
/// the one run — padded or packed to it, `run_clm.py`'s blocks, or named —
/// and is skipped, as before, when they state only a cap or another length.
#[test]
fn a_length_run_stated_in_the_notes_stands_for_an_empty_seq_len() {
    use cost_model::calibrate::{calibrate, case_plan};
    let id = "peft_readme_raft-144"; // bloomz-7b1 LoRA, seq_len 64 in its column
    let seq = |notes: &str| {
        case_plan(&with_fields(id, &[("seq_len", ""), ("notes", notes)]), id)
            .map(|p| p.training.seq_len)
    };
    assert_eq!(seq("causal LM; left-padded to max_length 64"), Ok(64));
    assert_eq!(seq("padded to 512 tokens"), Ok(512));
    assert_eq!(seq("SFT; packed to 4096"), Ok(4096));
    assert_eq!(seq("run_clm.py --block_size 1024"), Ok(1024));
    assert_eq!(seq("Sequence length: 2048; bf16"), Ok(2048));
    assert_eq!(seq("seq_len=256"), Ok(256));
    // Named as the frameworks' flags and people write it.
    assert_eq!(seq("Megatron --seq-length 2048"), Ok(2048));
    assert_eq!(seq("seqlen 4k"), Ok(4096));
    assert_eq!(seq("bf16; seq 1024"), Ok(1024));
    assert_eq!(seq("sequence_length=8192"), Ok(8192));
    // Counted per sample.
    assert_eq!(seq("2048 tokens per sample"), Ok(2048));
    assert_eq!(seq("4k-token sequences"), Ok(4096));
    assert_eq!(seq("sequences of 512 tokens"), Ok(512));
    // A cap every row filled: packed into it, or padded to it.
    assert_eq!(seq("packing=True; max_seq_length=2048"), Ok(2048));
    assert_eq!(
        seq("axolotl sequence_len: 4096; sample_packing: true"),
        Ok(4096)
    );
    assert_eq!(
        seq("torchtune dataset.packed=True tokenizer.max_seq_len=2048"),
        Ok(2048)
    );
    assert_eq!(seq("padding='max_length'; max_length=512"), Ok(512));
    assert_eq!(
        seq("pad_to_sequence_len: true; sequence_len 1024"),
        Ok(1024)
    );
    // Caps, other lengths and nothing at all: still unknown, and said so.
    for notes in [
        "max_length 128; padded per batch",
        "max_seq_length 2048",
        "max sequence length 2048",
        "max-seq-length 2048",
        "truncated to 512",
        "labels padded to 32",
        "vocab padded to 50304",
        "padded per batch (length unknown)",
        "padded to 0",
        // A cap the notes say was not filled.
        "packing=False; max_seq_length 2048",
        "sample_packing: false; sequence_len 2048",
        "no packing; max_seq_len 2048",
        "pad_to_max_length=False; max_length 128",
        "LLaMA-Factory cutoff_len 1024",
        // A name that only starts like one, a count that is no length.
        "seq2seq; max_length 128",
        "llama3 tokens per sample",
        // A mean or a bound.
        "avg seq 300",
        "average sequence length 412",
        "avg 300 tokens per sample",
        "up to 2048 tokens each",
    ] {
        let e = seq(notes).unwrap_err();
        assert!(e.contains("seq_len is empty"), "{notes}: {e}");
    }
    // The column wins over the notes.
    let p = case_plan(&with_fields(id, &[("notes", "packed to 4096")]), id).unwrap();
    assert_eq!(p.training.seq_len, 64);
    // And the report predicts the row instead of skipping it, as the column would.
    let report = |set: &[(&str, &str)]| calibrate(&with_fields(id, set)).unwrap().cases[0].clone();
    let from_notes = report(&[("seq_len", ""), ("notes", "left-padded to max_length 64")]);
    let from_column = report(&[("notes", "left-padded to max_length 64")]);
    assert_eq!(from_notes.skipped, None);
    assert_eq!(from_notes.predicted_gib, from_column.predicted_gib);
}

/// Likewise an empty `micro_batch` column: the per-GPU batch the notes name
/// as such stands for it; a plain, global or effective "batch size" does not.
#[test]
fn a_per_gpu_batch_stated_in_the_notes_stands_for_an_empty_micro_batch() {
    use cost_model::calibrate::case_plan;
    let id = "peft_readme_raft-144"; // micro_batch 8 in its column
    let mb = |notes: &str| {
        case_plan(
            &with_fields(id, &[("micro_batch", ""), ("notes", notes)]),
            id,
        )
        .map(|p| p.training.micro_batch)
    };
    assert_eq!(
        mb("--per_device_train_batch_size 4 --gradient_accumulation_steps 8"),
        Ok(4)
    );
    assert_eq!(
        mb("ds_config: train_micro_batch_size_per_gpu=2; train_batch_size=64"),
        Ok(2)
    );
    assert_eq!(
        mb("Megatron --micro-batch-size 1 --global-batch-size 512; micro_batch_size: 1"),
        Ok(1)
    );
    assert_eq!(mb("micro-batch 16, 8 micro-batches per step"), Ok(16));
    assert_eq!(mb("batch size per GPU: 8"), Ok(8));
    assert_eq!(mb("Megatron --micro-batch-size 4 only"), Ok(4));
    assert_eq!(mb("MBS=2; GBS 256"), Ok(2));
    assert_eq!(mb("per-device batch 4"), Ok(4));
    assert_eq!(mb("bs 4 per GPU"), Ok(4));
    assert_eq!(mb("batch of 2 per device"), Ok(2));
    // torchtune's recipes batch per device; elsewhere `batch_size` is
    // anyone's (a global one, often).
    let tt = |notes: &str| {
        case_plan(
            &with_fields(
                id,
                &[
                    ("micro_batch", ""),
                    ("framework", "torchtune"),
                    ("notes", notes),
                ],
            ),
            id,
        )
        .map(|p| p.training.micro_batch)
    };
    assert_eq!(tt("config batch_size=4"), Ok(4));
    assert!(tt("global_batch_size=64").is_err());
    assert!(mb("batch_size=4").is_err());
    for notes in [
        "4 per GPU",
        "8 GPUs per node",
        "max micro-batch 16",
        "batch size 512",
        "global batch size 1024",
        "train_batch_size=64",
        "effective batch size 128",
        "eval batch size 32",
        "8 micro-batches per step",
    ] {
        let e = mb(notes).unwrap_err();
        assert!(e.contains("micro_batch is empty"), "{notes}: {e}");
    }
    let p = case_plan(
        &with_fields(id, &[("notes", "per_device_train_batch_size 2")]),
        id,
    )
    .unwrap();
    assert_eq!(p.training.micro_batch, 8, "the column wins");
}

#[test]
fn an_encoder_decoder_target_length_stated_in_the_notes_reaches_the_plan() {
    use cost_model::calibrate::case_plan;
    let id = "peft_readme_raft-137"; // T0_3B, an encoder–decoder
    let target = |notes: &str| {
        case_plan(
            &with_fields(id, &[("seq_len", "512"), ("notes", notes)]),
            id,
        )
        .unwrap()
        .training
        .target_len
    };
    assert_eq!(
        target("run_summarization.py; max_target_length=128"),
        Some(128)
    );
    assert_eq!(target("PEFT example; target_max_length 4"), Some(4));
    assert_eq!(target("Target length: 64; source 512"), Some(64));
    assert_eq!(target("labels padded to 32"), Some(32));
    assert_eq!(target("a 150 target tokens summary"), Some(150));
    // Not stated, or stated as nothing: the decoder runs seq_len.
    assert_eq!(target("short tweets padded per batch"), None);
    assert_eq!(target("max_target_length=0"), None);
    // A decoder-only row has no target length whatever its notes say.
    let bloom = "peft_readme_raft-144";
    let p = case_plan(
        &with_fields(bloom, &[("notes", "max_target_length 16")]),
        bloom,
    )
    .unwrap();
    assert_eq!(p.training.target_len, None);
    // And the estimate follows it: a short target shrinks the logits.
    let est = |notes: &str| {
        let p = case_plan(
            &with_fields(id, &[("seq_len", "512"), ("notes", notes)]),
            id,
        )
        .unwrap();
        cost_model::estimate(&p).unwrap().peak.allocated
    };
    assert!(est("max_target_length 8") < est(""));
}

#[test]
fn the_optimizer_kernel_and_the_pytorch_deepspeed_and_transformers_releases_in_notes_reach_the_plan(
) {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::OptimizerImpl;
    let id = "hf_transformers_perf_train_gpu_one-128"; // "Trainer default adamw_hf"
    let plan = |notes: &str| case_plan(&with_fields(id, &[("notes", notes)]), id).unwrap();
    let t = plan("Trainer default adamw_hf (fp32 states)").training;
    assert_eq!(t.optimizer_impl, OptimizerImpl::ForLoop);
    assert!(t.zero_grad_set_to_none);
    assert_eq!(
        plan("optim adamw_torch_fused").training.optimizer_impl,
        OptimizerImpl::Fused
    );
    assert_eq!(
        plan("fused AdamW").training.optimizer_impl,
        OptimizerImpl::Fused
    );
    assert_eq!(
        plan("optim adamw_torch").training.optimizer_impl,
        OptimizerImpl::Foreach
    );
    // PyTorch 1.x: zero_grad kept the gradients, AdamW looped per parameter.
    let old = plan("torch 1.13.1").training;
    assert!(!old.zero_grad_set_to_none);
    assert_eq!(old.optimizer_impl, OptimizerImpl::ForLoop);
    // A stated context of an eagerly loaded CUDA (PyTorch < 1.13) says as much;
    // a lazily loaded one says nothing.
    let eager = plan("NVML used after trainer.train(): incl. ~1343 MiB CUDA context").training;
    assert!(!eager.zero_grad_set_to_none);
    assert_eq!(eager.optimizer_impl, OptimizerImpl::ForLoop);
    let lazy = plan("incl. ~620 MiB CUDA context").training;
    assert!(lazy.zero_grad_set_to_none);
    // Nothing stated: the framework's defaults.
    let t = plan("").training;
    assert!(t.zero_grad_set_to_none);
    assert_eq!(t.optimizer_impl, OptimizerImpl::Fused);
    // The PyTorch release the notes state; a 1.x run of unknown minor (a
    // bare "PyTorch 1.x", an eagerly loaded context) as 1.10 or older.
    use cost_model::plan::PytorchRelease;
    for (notes, release) in [
        ("torch 1.10.2", PytorchRelease::V1_10OrOlder),
        ("PyTorch 1.9.0+cu111", PytorchRelease::V1_10OrOlder),
        ("torch 1.11.0", PytorchRelease::V1_11To1_12),
        ("torch 1.13.1", PytorchRelease::V1_13To2_1),
        ("torch==2.1.2", PytorchRelease::V1_13To2_1),
        ("torch 2.2.0", PytorchRelease::Current),
        ("torch 2.11.0+cu130", PytorchRelease::Current),
        ("PyTorch 1.x", PytorchRelease::V1_10OrOlder),
        (
            "NVML used after trainer.train(): incl. ~1343 MiB CUDA context",
            PytorchRelease::V1_10OrOlder,
        ),
        ("incl. ~620 MiB CUDA context", PytorchRelease::Current),
        ("", PytorchRelease::Current),
    ] {
        assert_eq!(plan(notes).training.pytorch, release, "{notes}");
    }
    // The DeepSpeed release, at whichever mention of DeepSpeed states one.
    use cost_model::plan::DeepspeedRelease;
    for (notes, release) in [
        ("DeepSpeed v0.9.5", DeepspeedRelease::V0_18_2OrOlder),
        ("deepspeed==0.14.4", DeepspeedRelease::V0_18_2OrOlder),
        ("deepspeed 0.18.2", DeepspeedRelease::V0_18_2OrOlder),
        ("deepspeed 0.18.3", DeepspeedRelease::V0_18_3To0_18),
        ("DeepSpeed 0.18", DeepspeedRelease::V0_18_3To0_18),
        (
            "DeepSpeed ZeRO-2 on one rank; transformers 5.17.0 + deepspeed 0.19.8",
            DeepspeedRelease::Current,
        ),
        ("DeepSpeed ZeRO-2", DeepspeedRelease::Current),
        ("", DeepspeedRelease::Current),
        // Not stated: that of the PyTorch stated (0.18.3 in December 2025,
        // 0.19.0 in May 2026, beside PyTorch 2.10 and 2.11).
        ("torch 2.1.2", DeepspeedRelease::V0_18_2OrOlder),
        ("PyTorch 1.x", DeepspeedRelease::V0_18_2OrOlder),
        ("torch 2.10.0", DeepspeedRelease::V0_18_3To0_18),
        ("torch 2.11.0+cu130", DeepspeedRelease::Current),
        ("torch 2.1.2 + deepspeed 0.19.1", DeepspeedRelease::Current),
    ] {
        assert_eq!(plan(notes).parallel.deepspeed, release, "{notes}");
    }
    // The transformers release, at whichever mention states one.
    use cost_model::plan::TransformersRelease;
    for (notes, release) in [
        ("transformers 4.46.3", TransformersRelease::V4_46To4_48),
        (
            "transformers==4.47.1; trl 0.13",
            TransformersRelease::V4_46To4_48,
        ),
        ("transformers v4.48.0", TransformersRelease::V4_46To4_48),
        ("transformers 4.45.2", TransformersRelease::Current),
        ("transformers 4.49.0", TransformersRelease::Current),
        (
            "torch 2.11.0+cu130 + transformers 5.17.0",
            TransformersRelease::Current,
        ),
        (
            "the transformers' guide's config; transformers 4.46.1",
            TransformersRelease::V4_46To4_48,
        ),
        ("", TransformersRelease::Current),
    ] {
        assert_eq!(plan(notes).training.transformers, release, "{notes}");
    }
    // The torchtune release (FSDP1 and the shifted logits before 0.3).
    use cost_model::plan::TorchtuneRelease;
    for (notes, release) in [
        ("torchtune 0.2.1 README table", TorchtuneRelease::V0_2),
        ("torchtune==0.1.1", TorchtuneRelease::V0_1),
        ("torchtune v0.2.0; torch 2.3.1", TorchtuneRelease::V0_2),
        ("torchtune 0.3.0", TorchtuneRelease::Current),
        (
            "torchtune (recipe); torchtune 0.6.1",
            TorchtuneRelease::Current,
        ),
        ("", TorchtuneRelease::Current),
    ] {
        assert_eq!(plan(notes).training.torchtune, release, "{notes}");
    }
    // The torchtitan release (k and v repeated up to 0.2.1, one fused qkv
    // from 0.3).
    use cost_model::plan::TorchtitanRelease;
    for (notes, release) in [
        (
            "torchtitan 0.1.0; torch nightly",
            TorchtitanRelease::V0_2_1OrOlder,
        ),
        ("TorchTitan v0.2.1", TorchtitanRelease::V0_2_1OrOlder),
        ("torchtitan==0.2.2", TorchtitanRelease::V0_2_2),
        ("torchtitan 0.2", TorchtitanRelease::V0_2_2),
        ("torchtitan 0.3.0", TorchtitanRelease::Current),
        ("torchtitan (main)", TorchtitanRelease::Current),
        ("", TorchtitanRelease::Current),
    ] {
        assert_eq!(plan(notes).training.torchtitan, release, "{notes}");
    }
    // The TRL release, on a row that runs TRL's trainers (its DPO saves a
    // whole log-softmax up to 0.14, returns no logits from 0.12 to 0.28;
    // 0.4 had no DPO trainer); a plain loop's is the current one.
    use cost_model::plan::TrlRelease;
    let trl = |notes: &str| {
        case_plan(
            &with_fields(id, &[("framework", "trl"), ("notes", notes)]),
            id,
        )
        .unwrap()
        .training
        .trl
    };
    for (notes, release) in [
        ("trl 0.24.0", TrlRelease::V0_19To0_28),
        ("trl 0.19.1", TrlRelease::V0_19To0_28),
        ("TRL==0.15.2", TrlRelease::V0_15To0_18),
        ("trl 0.18", TrlRelease::V0_15To0_18),
        ("trl v0.28.0; DPO", TrlRelease::V0_19To0_28),
        ("trl 0.14.0", TrlRelease::V0_12To0_14),
        ("trl==0.12.2", TrlRelease::V0_12To0_14),
        ("trl 0.11.4", TrlRelease::V0_9To0_11),
        ("trl 0.9.6", TrlRelease::V0_9To0_11),
        ("trl 0.8.6", TrlRelease::V0_5To0_8),
        ("trl 0.7.10", TrlRelease::V0_5To0_8),
        ("trl 0.5.0", TrlRelease::V0_5To0_8),
        ("trl 0.4.7", TrlRelease::Current),
        ("trl 0.29.0", TrlRelease::Current),
        ("trl 1.13.0", TrlRelease::Current),
        ("", TrlRelease::Current),
    ] {
        assert_eq!(trl(notes), release, "{notes}");
    }
    let loop_row = with_fields(
        id,
        &[("framework", "plain-pytorch"), ("notes", "trl 0.24.0")],
    );
    assert_eq!(
        case_plan(&loop_row, id).unwrap().training.trl,
        TrlRelease::Current
    );
}

/// `compile = true` is `torch.compile` (Inductor), and Lightning Thunder's
/// `torchcompile` executor, which hands it every op; Thunder's default
/// executors (nvFuser for the element-wise regions, `torchcompile_cat` for
/// RoPE's cat) are a compiler the model has no count for, read as eager.
#[test]
fn only_inductor_compiles_a_row_thunder_with_nvfuser_is_read_as_eager() {
    use cost_model::calibrate::{calibrate, case_plan};
    let id = "litgpt_thunder_pretrain-091";
    let plan = |notes: &str| case_plan(&with_fields(id, &[("notes", notes)]), id).unwrap();
    let compiled = |notes: &str| plan(notes).training.compile;
    assert!(compiled("pretraining from scratch; torch.compile"));
    assert!(compiled(""));
    assert!(compiled(
        "compile = Lightning Thunder jit (executors: sdpa+torchcompile) not torch.compile"
    ));
    assert!(!compiled(
        "compile = Lightning Thunder jit (executors: sdpa+torchcompile_cat+nvfuser+torch)"
    ));
    // Thunder's defaults, unstated: nvFuser.
    assert!(!compiled("thunder.jit; FSDP"));
    // The column still decides first.
    let eager = case_plan(&with_fields(id, &[("compile", "false")]), id).unwrap();
    assert!(!eager.training.compile);
    // The published row: Thunder's FSDP with nvFuser kept 0.7 GiB less than
    // eager LitGPT's FSDP (088), where torch.compile's count keeps 6 GiB less
    // (−26.1 % before this reading).
    let r = calibrate(&cases()).unwrap();
    let err = |id: &str| {
        r.cases
            .iter()
            .find(|c| c.id == id)
            .and_then(|c| c.error_pct)
            .unwrap()
    };
    assert!((0.0..6.0).contains(&err(id)), "{id}: {} %", err(id));
    assert!(err("litgpt_thunder_pretrain-092").abs() < 5.0);
}

#[test]
fn a_bitsandbytes_release_stated_in_the_notes_reaches_the_plan() {
    use cost_model::calibrate::case_plan;
    let id = "litgpt_resource_tables_2023-10-002"; // QLoRA phi-1.5, bnb NF4
    let bnb_0_43_2 = |notes: &str| {
        case_plan(&with_fields(id, &[("notes", notes)]), id)
            .unwrap()
            .training
            .bnb_0_43_2
    };
    for notes in [
        "bitsandbytes 0.50.2; random weights",
        "bnb==0.43.2",
        "requires bitsandbytes>=0.44.0",
        "bitsandbytes v0.45",
        "bitsandbytes 0.43.3",
        "bitsandbytes 1.0",
        // transformers 5 loads a 4-bit base only over bitsandbytes ≥ 0.46.1.
        "transformers 5.2.0; peft 0.18",
        "transformers==5.25.0",
    ] {
        assert!(bnb_0_43_2(notes), "{notes}");
    }
    // Unless an older bitsandbytes is named; transformers 4 asked for 0.41.3.
    assert!(!bnb_0_43_2("transformers 5.0.0; bitsandbytes 0.42.0"));
    assert!(!bnb_0_43_2("transformers 4.57.1"));
    for notes in [
        "bnb nf4 base; paged optimizer",
        "bitsandbytes 0.41.1",
        "bnb 0.42.0",
        "bnb==0.43.1",
        "bitsandbytes>=0.43",
        "bnb nf4 + double quant; quant_storage bf16",
        "bnb.nf4-dq",
        "bnb 4bit",
        "",
        // LitGPT pinned bitsandbytes 0.42.0 up to 0.5.4.
        "litgpt 0.5.4",
        "LitGPT v0.4.10",
    ] {
        assert!(!bnb_0_43_2(notes), "{notes}");
    }
    // From 0.5.5 LitGPT pins bitsandbytes ≥ 0.44.0 on Linux (the row is
    // LitGPT's): a stated LitGPT release places the run, unless the notes name
    // a bitsandbytes release of their own.
    for notes in ["litgpt 0.5.5", "LitGPT v0.5.11; bnb.nf4", "litgpt==0.6.0"] {
        assert!(bnb_0_43_2(notes), "{notes}");
    }
    assert!(!bnb_0_43_2("litgpt 0.5.7; bitsandbytes 0.42.0"));
    // Another framework's row is not read by LitGPT's pins.
    let peft = "peft_metamathqa_benchmark-152";
    let plan = case_plan(
        &with_fields(
            peft,
            &[
                ("task", "qlora"),
                ("base_weight_bits", "4"),
                ("notes", "litgpt 0.5.7"),
            ],
        ),
        peft,
    )
    .unwrap();
    assert!(!plan.training.bnb_0_43_2);
}

#[test]
fn a_trainer_based_tool_a_fused_loss_and_kbit_preparation_named_in_the_notes_reach_the_plan() {
    use cost_model::calibrate::case_plan;
    use cost_model::framework::Framework;
    use cost_model::plan::Loss;
    let id = "peft_metamathqa_benchmark-158"; // plain PyTorch loop, standard loss
    let plan = |set: &[(&str, &str)]| case_plan(&with_fields(id, set), id).unwrap();
    // `other` is a plain loop unless the notes name a Trainer-based tool.
    let other = |notes: &str| plan(&[("framework", "other"), ("notes", notes)]).framework;
    assert_eq!(other("own training loop"), Framework::PlainPytorch);
    assert_eq!(other("axolotl 0.21 example config"), Framework::Axolotl);
    assert_eq!(other("LLaMA-Factory sft"), Framework::LlamaFactory);
    assert_eq!(other("ms-swift 4.6; swift sft"), Framework::MsSwift);
    assert_eq!(other("ms-swift Megatron-SWIFT; TP 4"), Framework::Megatron);
    let column = |f: &str| plan(&[("framework", f)]).framework;
    assert_eq!(column("swift"), Framework::MsSwift);
    assert_eq!(column("LLaMA-Factory"), Framework::LlamaFactory);
    assert_eq!(column("unsloth"), Framework::Unsloth);
    assert_eq!(column("axolotl"), Framework::Axolotl);
    assert_eq!(other("TRL SFTTrainer; packed"), Framework::Trl);
    // A tool that runs TRL's trainers is read as the tool.
    assert_eq!(
        other("Unsloth notebook; TRL SFTTrainer"),
        Framework::Unsloth
    );
    assert_eq!(other("axolotl rl: dpo (TRL)"), Framework::Axolotl);
    assert_eq!(other("control run"), Framework::PlainPytorch);
    assert_eq!(other("NeMo 2.0 recipe; TP 2"), Framework::Megatron);
    assert_eq!(
        other("nanotron, accumulate_grad_in_fp32"),
        Framework::Megatron
    );
    assert_eq!(other("nemotron data"), Framework::PlainPytorch);
    // A chunked or unknown loss that the notes call Cut Cross-Entropy is fused.
    let loss = |col: &str, notes: &str| plan(&[("loss", col), ("notes", notes)]).training.loss;
    assert_eq!(loss("chunked", "CutCrossEntropyPlugin"), Loss::Fused);
    assert_eq!(loss("unknown", "Cut Cross-Entropy (CCE) on"), Loss::Fused);
    assert_eq!(loss("chunked", "cce; packed"), Loss::Fused);
    assert_eq!(loss("chunked", "succeeded"), Loss::ChunkedFree);
    // The column wins over the notes when it says standard.
    assert_eq!(loss("standard", "CCE installed but off"), Loss::Standard);
    // PEFT's k-bit preparation, named in the notes.
    let prep = |notes: &str| plan(&[("notes", notes)]).training.kbit_fp32_prep;
    assert!(prep(
        "QLoRA; prepare_model_for_kbit_training before get_peft_model"
    ));
    assert!(!prep("QLoRA"));
    // Named with a negation, it did not run (TRL's SFTTrainer from 0.22.0
    // prepares nothing): "no prepare_model_for_kbit_training" had been read
    // as prepared (replayed QLoRA without it: +8 … +28 % allocated).
    assert!(!prep(
        "QLoRA; no prepare_model_for_kbit_training (norms bf16)"
    ));
    assert!(!prep("QLoRA; without prepare_model_for_kbit_training"));
    assert!(!prep("prepare_model_for_kbit_training not called"));
    assert!(!prep("QLoRA; no k-bit preparation (norms left bf16)"));
    // Unsloth's checkpointing offloads the checkpointed inputs.
    let offload = |notes: &str| {
        let t = plan(&[("notes", notes)]).training;
        (t.activation_offload, t.checkpointing)
    };
    assert_eq!(
        offload("unsloth; use_gradient_checkpointing=unsloth"),
        (true, cost_model::plan::Checkpointing::Full)
    );
    assert!(!offload("unsloth; use_gradient_checkpointing=True").0);
}

/// A public QLoRA row (Llama-2-7b, one GPU) read with the `base` columns and
/// then `set`'s over them.
fn qlora_row(base: &[(&str, &str)], set: &[(&str, &str)]) -> cost_model::plan::TrainingSpec {
    let id = "litgpt_resource_tables_2023-10-012";
    let fields: Vec<(&str, &str)> = base.iter().chain(set).copied().collect();
    cost_model::calibrate::case_plan(&with_fields(id, &fields), id)
        .unwrap()
        .training
}

#[test]
fn trl_prepares_a_quantized_model_by_its_release() {
    use cost_model::plan::Checkpointing;
    let read = |set: &[(&str, &str)]| {
        let base = [
            ("framework", "trl"),
            ("precision", "amp-bf16"),
            ("activation_checkpointing", "none"),
        ];
        let t = qlora_row(&base, set);
        (t.kbit_fp32_prep, t.kbit_embeddings_16bit)
    };
    let notes = |n: &str| read(&[("notes", n)]);
    // Up to 0.21 TRL prepares the model, and from 0.7.5 puts a 4-bit model's
    // embeddings and head back in bf16 under bf16=True; unstated, a release
    // before 0.22.
    assert_eq!(notes("SFTTrainer; packed"), (true, true));
    assert_eq!(notes("trl 0.21.0; SFTTrainer"), (true, true));
    assert_eq!(notes("TRL 0.7.5"), (true, true));
    assert_eq!(notes("trl==0.7.4"), (true, false));
    assert_eq!(
        notes("TRL 0.4.7; prepare_model_for_int8_training"),
        (true, false)
    );
    // From 0.22 it prepares nothing.
    assert_eq!(notes("TRL 0.22.1"), (false, false));
    assert_eq!(notes("trl 1.16.0"), (false, false));
    // The cast back is for 4-bit models under bf16 only.
    let fp16 = read(&[("precision", "amp-fp16"), ("notes", "")]);
    assert_eq!(fp16, (true, false));
    let int8 = read(&[("base_weight_bits", "8"), ("notes", "")]);
    assert_eq!(int8, (true, false));
    // What the notes say of the preparation wins.
    assert_eq!(notes("no prepare_model_for_kbit_training"), (false, false));
    // Not TRL: its profile (the Trainer does not prepare).
    let trainer = read(&[("framework", "hf-trainer"), ("notes", "")]);
    assert_eq!(trainer, (false, false));
    // The Trainer's column with TRL's trainers named: TRL's (the schema has
    // no `trl` value; PEFT's QLoRA guides' rows are written so).
    let named_trl = read(&[
        ("framework", "hf-trainer"),
        ("notes", "TRL SFTTrainer; packed"),
    ]);
    assert_eq!(named_trl, (true, true));
    let controlled = read(&[("framework", "hf-trainer"), ("notes", "control run")]);
    assert_eq!(controlled, (false, false));
    // A tool that hands TRL a model it wrapped itself is not TRL's recipe.
    let unsloth = read(&[
        ("framework", "hf-trainer"),
        ("notes", "Unsloth notebook; TRL SFTTrainer"),
    ]);
    assert_eq!(unsloth, (false, false));
    // TRL hands the preparation its own `gradient_checkpointing` argument: an
    // empty column stays TRL's default, not PEFT's checkpointed one.
    let ckpt = |n: &str| {
        let set = [
            ("framework", "trl"),
            ("precision", "amp-bf16"),
            ("activation_checkpointing", ""),
            ("notes", n),
        ];
        qlora_row(&set, &[]).checkpointing
    };
    assert_eq!(ckpt("TRL 0.21.0"), Checkpointing::None);
    // Named in the notes, the cast reaches the plan whatever the framework.
    let named = read(&[
        ("framework", "plain-pytorch"),
        (
            "notes",
            "prepare_model_for_kbit_training then peft_module_casting_to_bf16",
        ),
    ]);
    assert_eq!(named, (true, true));
}

#[test]
fn trl_computes_the_loss_through_its_fused_lm_head_from_1_15_and_its_chunked_nll_from_1_7() {
    use cost_model::plan::Loss;
    let read = |set: &[(&str, &str)]| qlora_row(&[("precision", "bf16")], set).loss;
    let row = |framework: &str, loss: &str, notes: &str| {
        read(&[("framework", framework), ("loss", loss), ("notes", notes)])
    };
    // A stated 1.15 or later: TRL's tiles, whatever the loss column says.
    for loss in ["standard", "chunked", "unknown", ""] {
        assert_eq!(row("trl", loss, "trl 1.16.0"), Loss::TiledLogprob, "{loss}");
        assert_eq!(
            row("hf-trainer", loss, "TRL SFTTrainer; TRL 1.15.0"),
            Loss::TiledLogprob,
            "{loss}"
        );
    }
    // From 1.7 to 1.14 its SFTTrainer's own default, the chunked NLL — not
    // with Liger, nor where the notes name the plain NLL, nor for DPO (its
    // trainer takes the model's logits).
    for notes in [
        "trl 1.7.0",
        "trl 1.10.0; SFTTrainer",
        "TRL 1.14.2",
        "trl>=1.8",
        "TRL version 1.10.0",
        "Trl: v1.12.1",
        "pip install trl==1.11.0",
    ] {
        assert_eq!(row("trl", "standard", notes), Loss::ChunkedNll, "{notes}");
    }
    assert_eq!(
        row("trl", "standard", "trl 1.10.0; loss_type nll"),
        Loss::Standard
    );
    // "ctrl 1.6" is no TRL release.
    assert_eq!(row("trl", "standard", "CTRL 1.6 tokenizer"), Loss::Standard);
    assert_eq!(
        row("trl", "standard", "DPOTrainer; trl 1.10.0"),
        Loss::Standard
    );
    // Unstated or older: the model's logits, as the Trainer's loss takes them
    // (TRL's planner profile starts on its fused head).
    assert_eq!(row("trl", "", "SFTTrainer"), Loss::Standard);
    assert_eq!(row("trl", "unknown", "trl 1.6.0"), Loss::Standard);
    assert_eq!(
        row("hf-trainer", "standard", "TRL SFTTrainer; packed"),
        Loss::Standard
    );
    // Liger's fused cross-entropy under an older TRL stays what the column says.
    assert_eq!(
        row("trl", "fused", "trl 1.14.2; use_liger_kernel"),
        Loss::Fused
    );
    // Not TRL's row: its release says nothing of the loss.
    assert_eq!(
        row("plain-pytorch", "standard", "trl 1.16.0"),
        Loss::Standard
    );
}

#[test]
fn a_trainer_row_naming_trls_trainers_runs_trls_profile() {
    use cost_model::framework::Framework;
    let id = "litgpt_resource_tables_2023-10-012";
    let framework = |notes: &str| {
        let text = with_fields(id, &[("framework", "hf-trainer"), ("notes", notes)]);
        cost_model::calibrate::case_plan(&text, id)
            .unwrap()
            .framework
    };
    assert_eq!(framework("TRL SFTTrainer; packed"), Framework::Trl);
    assert_eq!(framework("DPOTrainer"), Framework::Trl);
    // A tool that wraps the model before TRL sees it keeps its own profile
    // (`other_framework`'s order), and a plain Trainer row stays one.
    assert_ne!(framework("Unsloth; TRL SFTTrainer"), Framework::Trl);
    assert_eq!(framework("Trainer; bf16=True"), Framework::HfTrainer);
}

#[test]
fn a_precomputed_reference_is_read_from_the_notes() {
    let read = |notes: &str| {
        qlora_row(
            &[("precision", "bf16")],
            &[("framework", "trl"), ("notes", notes)],
        )
        .precompute_ref
    };
    assert!(read("DPOTrainer; precompute_ref_log_probs"));
    assert!(read("DPO; precompute_ref_log_probs=True"));
    assert!(!read("DPO; precompute_ref_log_probs=False"));
    assert!(!read("DPOTrainer"));
}

#[test]
fn trl_keeps_the_adapters_in_16_bits_by_its_release() {
    let read = |set: &[(&str, &str)]| {
        let base = [
            ("framework", "hf-trainer"),
            ("precision", "amp-bf16"),
            ("activation_checkpointing", "full"),
        ];
        qlora_row(&base, set).adapters_16bit
    };
    let notes = |n: &str| read(&[("notes", n)]);
    // Unstated: PEFT's fp32, which keeps more; and not TRL: PEFT's fp32.
    assert!(!notes("TRL SFTTrainer; packed"));
    assert!(!read(&[
        ("framework", "plain-pytorch"),
        ("notes", "trl 1.16.0")
    ]));
    // From 0.26 a quantized model's trainable parameters go to bf16.
    assert!(notes("TRL 0.26.0 SFTTrainer"));
    assert!(notes("trl==1.16.0"));
    assert!(!notes("TRL 0.25.1"));
    // 0.7.5–0.8.6 cast every LoRA layer under bf16=True; 0.9.2 did not.
    assert!(notes("TRL 0.8.6"));
    assert!(!notes("TRL 0.9.2"));
    assert!(!read(&[("precision", "amp-fp16"), ("notes", "TRL 0.8.6")]));
    // A sharded 4-bit model's adapters are made in its storage dtype from 0.9.2.
    let sharded = |n: &str| {
        read(&[
            ("num_gpus", "2"),
            ("sharding", "fsdp-full"),
            ("precision", "bf16"),
            ("notes", n),
        ])
    };
    assert!(sharded("TRL 0.9.2; FSDP QLoRA"));
    assert!(!sharded("TRL 0.8.6; FSDP QLoRA"));
    assert!(!sharded("TRL SFTTrainer; FSDP QLoRA"));
    // ZeRO-3 over a 16-bit base from 1.13.
    let zero3 = |n: &str| {
        read(&[
            ("task", "lora"),
            ("base_weight_bits", "16"),
            ("num_gpus", "8"),
            ("sharding", "zero3"),
            ("notes", n),
        ])
    };
    assert!(zero3("TRL 1.13.0"));
    assert!(!zero3("TRL 1.12.0"));
    // Said in the notes, whatever the framework.
    let stated = |n: &str| read(&[("framework", "plain-pytorch"), ("notes", n)]);
    assert!(stated("get_peft_model with autocast_adapter_dtype=False"));
    assert!(stated("autocast_adapter_dtype = False"));
    assert!(!stated("autocast_adapter_dtype=True"));
}

#[test]
fn parallel_layouts_the_schema_has_no_column_for_are_read_from_the_notes() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::PipelineSchedule;
    let id = "litgpt_resource_tables_2023-10-042"; // Llama-2-7b LoRA, 2 GPUs
    let layout = |framework: &str, tp: &str, pp: &str, notes: &str| {
        let set = [
            ("framework", framework),
            ("task", "full"),
            ("lora_rank", ""),
            ("lora_targets", ""),
            ("num_gpus", "64"),
            ("sharding", "zero1"),
            ("tp", tp),
            ("pp", pp),
            ("notes", notes),
        ];
        case_plan(&with_fields(id, &set), id).unwrap().parallel
    };
    // torchtitan's "selective" is its per-op policy, Megatron's the attention core.
    let ckpt = |framework: &str| {
        let set = [
            ("framework", framework),
            ("activation_checkpointing", "selective"),
        ];
        case_plan(&with_fields(id, &set), id)
            .unwrap()
            .training
            .checkpointing
    };
    use cost_model::plan::Checkpointing;
    assert_eq!(ckpt("torchtitan"), Checkpointing::OpSelective);
    assert_eq!(ckpt("megatron"), Checkpointing::Selective);
    // … unless its `selective_ac_option` names every k-th block.
    let titan = |notes: &str| {
        let set = [
            ("framework", "torchtitan"),
            ("activation_checkpointing", "selective"),
            ("notes", notes),
        ];
        let t = case_plan(&with_fields(id, &set), id).unwrap().training;
        (t.checkpointing, t.checkpoint_every)
    };
    assert_eq!(
        titan("selective_ac_option = \"2\""),
        (Checkpointing::Full, 2)
    );
    assert_eq!(
        titan("--activation_checkpoint.selective_ac_option 3"),
        (Checkpointing::Full, 3)
    );
    assert_eq!(
        titan("selective_ac_option='op'").0,
        Checkpointing::OpSelective
    );
    assert_eq!(titan("").0, Checkpointing::OpSelective);
    // torchtitan's TP always shards the sequence; Megatron's only when stated.
    assert!(layout("torchtitan", "8", "1", "").sequence_parallel);
    assert!(!layout("megatron", "8", "1", "").sequence_parallel);
    assert!(layout("megatron", "8", "1", "TP 8 + SP").sequence_parallel);
    assert!(layout("megatron", "8", "1", "--sequence-parallel").sequence_parallel);
    assert!(!layout("megatron", "8", "1", "SPMD launch").sequence_parallel);
    // Expert parallelism and the interleaved schedule.
    assert_eq!(layout("megatron", "2", "4", "EP=8").ep, 8);
    assert_eq!(
        layout("megatron", "2", "4", "expert parallel 4; bf16").ep,
        4
    );
    assert_eq!(layout("megatron", "2", "4", "STEP 8 of EPOCH 2").ep, 1);
    let vpp = layout("megatron", "2", "4", "VPP 2");
    assert_eq!(
        (vpp.virtual_stages, vpp.pp_schedule),
        (2, PipelineSchedule::Interleaved)
    );
    // No pipeline, no virtual stages.
    assert_eq!(layout("megatron", "2", "1", "VPP 2").virtual_stages, 1);
    // The pipeline's micro-batches, counted or from the global batch over
    // micro-batch × DP (64 GPUs / (TP 2 × PP 4) = DP 8; the row's micro-batch
    // is 1); else 0, and the plan runs as many as it accumulates (128 here).
    let mbs = |notes: &str| layout("megatron", "2", "4", notes).pp_microbatches;
    assert_eq!(mbs("16 microbatches"), 16);
    assert_eq!(mbs("n_microbatches=12; 1F1B"), 12);
    assert_eq!(mbs("num micro-batches: 6"), 6);
    assert_eq!(mbs("GBS 512"), 64);
    assert_eq!(mbs("global batch size 1024; seq 4096"), 128);
    assert_eq!(mbs("global_batch_size=256"), 32);
    assert_eq!(mbs("bf16"), 0);
    // A global batch smaller than one micro-batch per replica says nothing.
    assert_eq!(mbs("GBS 4"), 0);
    // Neither stated nor accumulated: as many as there are stages.
    let unstated = |notes: &str| {
        let set = [
            ("framework", "megatron"),
            ("num_gpus", "64"),
            ("tp", "2"),
            ("pp", "4"),
            ("grad_accum", ""),
            ("notes", notes),
        ];
        case_plan(&with_fields(id, &set), id)
            .unwrap()
            .parallel
            .pp_microbatches
    };
    assert_eq!(unstated(""), 4);
    assert_eq!(unstated("GBS 512"), 64);
    // Without a pipeline the count is not read.
    assert_eq!(
        layout("megatron", "2", "1", "16 microbatches").pp_microbatches,
        0
    );
    // Megatron's distributed optimizer is ZeRO-1's layout, whatever the
    // sharding column says of data parallelism.
    use cost_model::plan::Sharding;
    let sharding = |framework: &str, col: &str, notes: &str| {
        let set = [
            ("framework", framework),
            ("num_gpus", "64"),
            ("sharding", col),
            ("tp", "8"),
            ("notes", notes),
        ];
        case_plan(&with_fields(id, &set), id)
            .unwrap()
            .parallel
            .sharding
    };
    for notes in [
        "--use-distributed-optimizer; bf16",
        "use_distributed_optimizer=True",
        "Distributed optimizer on",
    ] {
        assert_eq!(
            sharding("megatron", "ddp", notes),
            Sharding::Zero1,
            "{notes}"
        );
        assert_eq!(sharding("megatron", "", notes), Sharding::Zero1, "{notes}");
    }
    assert_eq!(sharding("megatron", "ddp", ""), Sharding::Ddp);
    assert_eq!(
        sharding("megatron", "ddp", "use_distributed_optimizer=False"),
        Sharding::Ddp
    );
    assert_eq!(
        sharding("hf-trainer", "ddp", "distributed optimizer"),
        Sharding::Ddp
    );
}

#[test]
fn a_free_text_gpu_name_finds_its_catalogue_entry_by_chip() {
    use cost_model::calibrate::case_plan;
    let id = "litgpt_resource_tables_2023-10-001";
    let gpu = |name: &str, mem: &str| {
        case_plan(&with_fields(id, &[("gpu", name), ("gpu_mem_gib", mem)]), id)
            .unwrap()
            .gpu
    };
    for (name, mem, want) in [
        ("H100-SXM5-80GB", "80", "h100-sxm-80gb"),
        ("NVIDIA H100 80GB HBM3", "", "h100-sxm-80gb"),
        ("8x A100-SXM4-40GB", "40", "a100-sxm4-40gb"),
        ("A100", "40", "a100-sxm4-40gb"),
        ("V100-32GB", "32", "v100-sxm2-32gb"),
        ("GeForce RTX 3090", "", "rtx3090-24gb"),
        ("RTX4090", "24", "rtx4090-24gb"),
        ("Tesla T4", "", "t4-16gb"),
        ("A40", "48", "a40-48gb"),
        ("RTX A6000", "", "a6000-48gb"),
        ("AMD Instinct MI300X", "", "mi300x-192gb"),
        // A chip is not its neighbour by substring: an H20 is no GH200, an
        // RTX A4000 no A40, an L40 no L40S.
        ("H20", "96", "h20-96gb"),
        ("NVIDIA H20 96GiB", "", "h20-96gb"),
        ("RTX A4000", "16", "rtx-a4000-16gb"),
        ("L40", "", "l40-48gb"),
        ("L40S", "", "l40s-48gb"),
        ("L20 48GB", "", "l20-48gb"),
        ("RTX 2080 Ti 11GB", "", "rtx2080ti-11gb"),
        ("Titan RTX 24 GB", "", "titan-rtx-24gb"),
        ("MI325X", "", "mi325x-256gb"),
    ] {
        assert_eq!(gpu(name, mem).id, want, "{name}");
    }
    // A chip the catalogue lacks is not its neighbour either: an RTX A4500 is
    // no A40 or A4000; it gets the stated capacity.
    for (name, mem, mib) in [("RTX A4500", "20", 20_480), ("H30", "96", 98_304)] {
        let g = gpu(name, mem);
        assert_eq!((g.id.as_str(), g.capacity_mib), ("custom", mib), "{name}");
    }
    // Without the column, the board size the name states: of a chip the
    // catalogue lacks, or to tell an A100's two sizes apart.
    for (name, mib) in [
        ("Quadro RTX 8000 48GB", 49_152),
        ("RTX 4060 Ti 16GB", 16_384),
        ("Tesla K80 12 GB", 12_288),
        ("TITAN V 12GB", 12_288),
    ] {
        let g = gpu(name, "");
        assert_eq!((g.id.as_str(), g.capacity_mib), ("custom", mib), "{name}");
    }
    assert_eq!(gpu("A100 80G", "").id, "a100-sxm4-80gb");
    assert_eq!(gpu("A100 40 GB", "").id, "a100-sxm4-40gb");
    // An OOM row's measurement is the capacity it hit (the schema's lower
    // bound), so a chip the catalogue lacks is judged against it, not against
    // a default.
    let oom_id = "peft_readme_raft-143"; // bloomz-7b1 full FT: OOM at 80
    let oom = case_plan(
        &with_fields(
            oom_id,
            &[
                ("gpu", "Quadro RTX 8000"),
                ("gpu_mem_gib", ""),
                ("measured_gib", "48"),
            ],
        ),
        oom_id,
    )
    .unwrap();
    assert_eq!(oom.gpu.capacity_mib, 48 * 1024);
    // A capacity that contradicts the name wins over it.
    assert_eq!(gpu("A100", "80").id, "a100-sxm4-80gb");
    assert_eq!(gpu("24GB GPU (model not stated)", "24").id, "custom");
    // A count in the GPU column is no chip, and gives the GPU count when the
    // num_gpus column is empty (a stated one wins).
    let plan = |name: &str, n: &str| {
        case_plan(
            &with_fields(id, &[("gpu", name), ("gpu_mem_gib", ""), ("num_gpus", n)]),
            id,
        )
        .unwrap()
    };
    for (name, chip, count) in [
        ("8x H100-80GB", "h100-sxm-80gb", 8),
        ("8 x A100-SXM4-80GB", "a100-sxm4-80gb", 8),
        ("A100-SXM4-80GB x8", "a100-sxm4-80gb", 8),
        ("2×RTX 4090", "rtx4090-24gb", 2),
        ("4*A100-SXM4-40GB", "a100-sxm4-40gb", 4),
        ("RTX 6000 Ada", "rtx6000-ada-48gb", 1),
        ("GeForce RTX 3090", "rtx3090-24gb", 1),
    ] {
        let p = plan(name, "");
        assert_eq!(
            (p.gpu.id.as_str(), p.parallel.num_gpus),
            (chip, count),
            "{name}"
        );
    }
    assert_eq!(plan("8x H100-80GB", "2").parallel.num_gpus, 2);
}

#[test]
fn enum_columns_are_read_in_any_case_and_with_the_frameworks_own_spellings() {
    // Llama-2-7b LoRA on two GPUs with FSDP, bf16 (LitGPT's resource table).
    let id = "litgpt_resource_tables_2023-10-042";
    let base = calibrate(&with_fields(id, &[])).unwrap().cases[0].clone();
    assert!(base.skipped.is_none(), "{base:?}");
    let same = [
        ("sharding", "FSDP_Full"),
        ("sharding", "full_shard"),
        ("sharding", "fsdp"),
        // FSDP2's API, and notes in parentheses: the strategy inside, else
        // the one before.
        ("sharding", "fully_shard"),
        ("sharding", "FSDP (FULL_SHARD)"),
        ("sharding", "fsdp (2 GPUs)"),
        ("framework", "LitGPT (finetune/lora.py)"),
        ("framework", "other (litgpt)"),
        ("precision", "bf16-true"),
        ("precision", "BF16"),
        ("optimizer", "Adam"),
        ("framework", "LitGPT"),
        ("offload", "None"),
        ("compile", "False"),
        ("metric", "Max_Allocated"),
        ("metric", "max_memory_allocated"),
        ("task", "LoRA"),
        ("arch", "causal-lm"),
        ("arch", "Decoder-only"),
        ("mlp", "SwiGLU"),
    ];
    for (col, v) in same {
        let c = calibrate(&with_fields(id, &[(col, v)])).unwrap().cases[0].clone();
        assert_eq!(c.predicted_gib, base.predicted_gib, "{col} = {v}: {c:?}");
    }
    // Lengths written in k, 1024 tokens each.
    let at = |seq: &str| {
        calibrate(&with_fields(id, &[("seq_len", seq)]))
            .unwrap()
            .cases[0]
            .clone()
    };
    assert_eq!(at("2k").predicted_gib, at("2048").predicted_gib);
    assert_eq!(at("32K").predicted_gib, at("32768").predicted_gib);
    assert!(at("2k").skipped.is_none(), "{:?}", at("2k"));
    assert!(at("k").skipped.as_deref().unwrap().contains("seq_len"));
    // A GELU MLP has two matrices where SwiGLU has three.
    let plain = calibrate(&with_fields(id, &[("mlp", "gelu")]))
        .unwrap()
        .cases[0]
        .clone();
    assert!(plain.predicted_gib < base.predicted_gib, "{plain:?}");
    // Different values really change the prediction (the spellings above are
    // not ignored): mixed precision keeps fp32 weights; SHARD_GRAD_OP keeps
    // them unsharded between forward and backward.
    for (col, v) in [
        ("precision", "bf16-mixed"),
        ("sharding", "SHARD_GRAD_OP"),
        ("sharding", "FSDP (SHARD_GRAD_OP)"),
        // SDPA's math backend keeps the scores as eager attention does.
        ("attention", "sdpa (math)"),
    ] {
        let c = calibrate(&with_fields(id, &[(col, v)])).unwrap().cases[0].clone();
        assert!(c.skipped.is_none(), "{c:?}");
        assert_ne!(c.predicted_gib, base.predicted_gib, "{col} = {v}");
    }
    // A tool in the framework column is read as `other` with the tool in the notes.
    let a = calibrate(&with_fields(id, &[("framework", "axolotl")]))
        .unwrap()
        .cases[0]
        .clone();
    let b = calibrate(&with_fields(
        id,
        &[("framework", "other"), ("notes", "trained with axolotl")],
    ))
    .unwrap()
    .cases[0]
        .clone();
    assert!(a.skipped.is_none(), "{a:?}");
    assert_eq!(a.predicted_gib, b.predicted_gib);
    // The math backend is eager attention by another name.
    let eager = calibrate(&with_fields(id, &[("attention", "eager")]))
        .unwrap()
        .cases[0]
        .clone();
    for v in ["math", "sdpa_math", "SDPA (math)"] {
        let c = calibrate(&with_fields(id, &[("attention", v)]))
            .unwrap()
            .cases[0]
            .clone();
        assert_eq!(c.predicted_gib, eager.predicted_gib, "attention = {v}");
    }
    // Other tools by their project names.
    for (v, same_as) in [
        ("torch-titan", "torchtitan"),
        ("mosaicml", "plain-pytorch"),
        ("llmfoundry", "plain-pytorch"),
        ("metaseq", "plain-pytorch"),
        ("gpt-neox", "megatron"),
        ("nanotron", "megatron"),
        ("oumi", "hf-trainer"),
        ("torchtune (recipe)", "torchtune"),
    ] {
        let got = |f: &str| {
            calibrate(&with_fields(id, &[("framework", f)]))
                .unwrap()
                .cases[0]
                .clone()
        };
        let (c, d) = (got(v), got(same_as));
        assert!(c.skipped.is_none(), "{v}: {c:?}");
        assert_eq!(c.predicted_gib, d.predicted_gib, "{v} as {same_as}");
    }
    // ZeRO++: stage 3 with its hpZ group — a node, or as the notes state it.
    let hpz = |fields: &[(&str, &str)]| {
        cost_model::calibrate::case_plan(&with_fields(id, fields), id)
            .map(|p| (p.parallel.sharding, p.parallel.hpz_partition_size))
    };
    use cost_model::plan::Sharding;
    assert_eq!(
        hpz(&[("sharding", "ZeRO++"), ("num_gpus", "16")]),
        Ok((Sharding::Zero3, 8))
    );
    assert_eq!(
        hpz(&[("sharding", "zero++"), ("num_gpus", "4")]),
        Ok((Sharding::Zero3, 4))
    );
    assert_eq!(
        hpz(&[
            ("sharding", "zero3"),
            ("num_gpus", "16"),
            ("notes", "zero_hpz_partition_size 4; zero_quantized_weights"),
        ]),
        Ok((Sharding::Zero3, 4))
    );
    assert_eq!(
        hpz(&[("sharding", "zero3"), ("num_gpus", "16")]),
        Ok((Sharding::Zero3, 1))
    );
    assert_eq!(
        hpz(&[
            ("sharding", "zero2"),
            ("num_gpus", "16"),
            ("notes", "hpZ 8"),
        ]),
        Ok((Sharding::Zero2, 1))
    );
    // Still not guessed: a value no spelling explains is named with its column.
    let bad = calibrate(&with_fields(id, &[("sharding", "zero4")]))
        .unwrap()
        .cases[0]
        .clone();
    assert!(
        bad.skipped.as_deref().unwrap().contains("sharding `zero4`"),
        "{bad:?}"
    );
    // … with the values it could have held.
    for (col, v, listed) in [
        ("arch", "vision", "decoder, encoder or encoder-decoder"),
        ("mlp", "moe", "gated or plain"),
        ("offload", "cpu", "none, optimizer or params+optimizer"),
    ] {
        let c = calibrate(&with_fields(id, &[(col, v)])).unwrap().cases[0].clone();
        let why = c.skipped.unwrap_or_default();
        assert!(
            why.contains(&format!("{col} `{v}`")) && why.contains(listed),
            "{why}"
        );
    }
}

/// A row that offloads parameters where its sharding column cannot hold
/// them is read as the run went: DeepSpeed ignores `offload_param` below
/// stage 3 (the optimizer alone went to the host), and with no sharding named
/// the parameters were offloaded by the framework's FSDP, else by ZeRO-3.
#[test]
fn parameter_offload_is_read_with_the_runtime_that_does_it() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::{Offload, Sharding};
    let id = "peft_readme_raft-145";
    let plan = |set: &[(&str, &str)]| case_plan(&with_fields(id, set), id).unwrap();
    let predicted = |set: &[(&str, &str)]| {
        let c = calibrate(&with_fields(id, set)).unwrap().cases[0].clone();
        assert!(c.skipped.is_none(), "{c:?}");
        c.predicted_gib
    };
    let zero2 = plan(&[("sharding", "zero2")]);
    assert_eq!(zero2.parallel.sharding, Sharding::Zero2);
    assert_eq!(zero2.parallel.offload, Offload::OPTIMIZER_CPU);
    assert_eq!(
        predicted(&[("sharding", "zero2")]),
        predicted(&[("sharding", "zero2"), ("offload", "optimizer")])
    );
    for none in ["none", ""] {
        let p = plan(&[("sharding", none)]);
        assert_eq!(p.parallel.sharding, Sharding::Zero3, "{none:?}");
        assert_eq!(p.parallel.offload, Offload::ALL_CPU);
        assert_eq!(predicted(&[("sharding", none)]), predicted(&[]));
    }
    for set in [
        &[("sharding", "ddp"), ("framework", "torchtune")][..],
        &[("sharding", "none"), ("framework", "plain-pytorch")],
        &[("sharding", "none"), ("notes", "FSDP CPUOffload")],
    ] {
        assert_eq!(plan(set).parallel.sharding, Sharding::FsdpFull, "{set:?}");
    }
}

/// The columns of a DeepSeek-MoE-shaped row (2048 wide, 16 heads, gated,
/// 102400 tokens, top-6) with these layers, width, experts and count.
fn moe_columns<'a>(
    model: &'a str,
    layers: &'a str,
    ffn: &'a str,
    experts: &'a str,
    params: &'a str,
) -> [(&'a str, &'a str); 11] {
    [
        ("model", model),
        ("n_layers", layers),
        ("hidden", "2048"),
        ("n_heads", "16"),
        ("n_kv_heads", "16"),
        ("ffn_hidden", ffn),
        ("mlp", "gated"),
        ("vocab", "102400"),
        ("n_experts", experts),
        ("experts_per_token", "6"),
        ("params_total", params),
    ]
}

#[test]
fn shared_experts_stated_in_the_notes_reach_the_model() {
    use cost_model::calibrate::case_plan;
    // A DeepSeek-MoE-16B-like row: 64 routed experts of width 1408, 6 active,
    // 2 shared, on LitGPT's Phi row as a template.
    let id = "litgpt_resource_tables_2023-10-001";
    let moe = moe_columns(
        "an MoE of our own (DeepSeek-MoE-16B-like)",
        "28",
        "1408",
        "64",
        "16.4",
    );
    let plan_with = |notes: &str| {
        let mut set = moe.to_vec();
        set.push(("notes", notes));
        case_plan(&with_fields(id, &set), id).unwrap()
    };
    let none = plan_with("no word of them");
    assert_eq!(none.model.shared_experts, 0);
    for notes in [
        "2 shared experts; first layer dense",
        "n_shared_experts=2",
        "num_shared_experts: 2",
    ] {
        let p = plan_with(notes);
        assert_eq!(p.model.shared_experts, 2, "{notes}");
        // Two more experts' weights per layer: 28 · 2 · 3 · 2048 · 1408 ≈ 0.48 B.
        let extra = p.model.params() - none.model.params();
        assert_eq!(extra, 28 * 2 * 3 * 2048 * 1408, "{notes}");
    }
    // A dense model ignores the words.
    let dense = case_plan(&with_fields(id, &[("notes", "2 shared experts")]), id).unwrap();
    assert_eq!(dense.model.shared_experts, 0);
}

/// A row naming an MoE preset gets the layout its columns cannot hold: the
/// shared experts and the dense blocks (DeepSeek-MoE-16B: 2 shared, the first
/// block dense, 10944 wide), whether `n_experts` counts the routed experts or
/// all of them and `ffn_hidden` the experts' width or the dense one; then
/// its columns give the published 16.4 B. Experts that disagree keep the
/// columns' model.
#[test]
fn a_named_moe_preset_brings_its_shared_experts_and_dense_blocks() {
    use cost_model::calibrate::case_plan;
    let id = "litgpt_resource_tables_2023-10-001";
    let row = |experts: &str, ffn: &str| {
        with_fields(
            id,
            &moe_columns(
                "deepseek-ai/deepseek-moe-16b-base",
                "28",
                ffn,
                experts,
                "16.4",
            ),
        )
    };
    for (experts, ffn) in [("64", "1408"), ("66", "1408"), ("64", "10944")] {
        let csv = row(experts, ffn);
        let m = case_plan(&csv, id).unwrap().model;
        assert_eq!(
            (
                m.experts,
                m.ffn,
                m.shared_experts,
                m.dense_layers,
                m.dense_ffn
            ),
            (64, 1408, 2, 1, 10944),
            "{experts} experts, ffn {ffn}"
        );
        assert!(calibrate(&csv).unwrap().warnings.is_empty());
    }
    let other = case_plan(&row("32", "1408"), id).unwrap().model;
    assert_eq!(
        (other.experts, other.shared_experts, other.dense_layers),
        (32, 0, 0)
    );
    // DeepSeek-V2-Lite's latent attention comes with its name too.
    let lite = with_fields(
        id,
        &moe_columns("deepseek-ai/DeepSeek-V2-Lite", "27", "1408", "64", "15.7"),
    );
    let m = case_plan(&lite, id).unwrap().model;
    assert_eq!((m.head_dim, m.mla.map(|a| a.kv_rank)), (192, Some(512)));
    assert!(calibrate(&lite).unwrap().warnings.is_empty());
}

#[test]
fn rows_whose_columns_disagree_with_their_parameter_count_are_named() {
    let params_warnings = |csv: &str| calibrate(csv).map(|r| r.warnings);
    // Every public row's columns give its published count (within 2 %).
    assert_eq!(params_warnings(&cases()).unwrap(), Vec::<String>::new());
    // A row claiming 8 B parameters for Phi-1.5's columns (1.42 B).
    let id = "litgpt_resource_tables_2023-10-001";
    let w = params_warnings(&with_fields(id, &[("params_total", "8.0")])).unwrap();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("line 2 (litgpt_resource_tables_2023-10-001)")
            && w[0].contains("params_total states 8 B"),
        "{w:?}"
    );
}

/// A row naming a multimodal checkpoint whose `params_total` passes its text
/// columns by more than 5 %: the rest is its vision encoder, held as frozen
/// weights. Qwen2.5-VL-7B's language-model columns give 7.616 B of its
/// published 8.292 B; the same figures under a text model's name stay a
/// mismatch, named on standard error.
#[test]
fn a_multimodal_checkpoints_parameters_beyond_its_text_columns_are_its_vision_encoder() {
    use cost_model::calibrate::case_plan;
    let id = "litgpt_resource_tables_2023-10-042";
    let row = |model: &str, params: &str| {
        with_fields(
            id,
            &[
                ("model", model),
                ("n_layers", "28"),
                ("hidden", "3584"),
                ("n_heads", "28"),
                ("n_kv_heads", "4"),
                ("ffn_hidden", "18944"),
                ("mlp", "gated"),
                ("vocab", "152064"),
                ("tied_embeddings", "false"),
                ("params_total", params),
                ("task", "full"),
                ("trainable_params", ""),
                ("lora_rank", ""),
                ("lora_targets", ""),
            ],
        )
    };
    let vl = row("Qwen/Qwen2.5-VL-7B-Instruct", "8.292166656");
    let m = case_plan(&vl, id).unwrap().model;
    assert_eq!(m.params(), 8_292_166_656);
    assert!(
        m.vision_params.abs_diff(676_550_144) < 200_000,
        "{}",
        m.vision_params
    );
    assert!(calibrate(&vl).unwrap().warnings.is_empty());
    let text = row("Qwen/Qwen2.5-7B-Instruct", "8.292166656");
    assert_eq!(case_plan(&text, id).unwrap().model.vision_params, 0);
    assert_eq!(calibrate(&text).unwrap().warnings.len(), 1);
    // Unstated, the named preset's encoder; a stated count within 5 % of it
    // (a rounded "8") changes nothing.
    for params in ["", "8"] {
        let named = row("Qwen/Qwen2.5-VL-7B-Instruct", params);
        assert_eq!(
            case_plan(&named, id).unwrap().model.vision_params,
            676_550_144,
            "{params}"
        );
    }
    // A multimodal name no preset holds, its count within 5 % of the text
    // columns': no encoder.
    let near = row("someone/MyVL-7B", "7.9");
    assert_eq!(case_plan(&near, id).unwrap().model.vision_params, 0);
}

#[test]
fn a_megatron_lora_row_without_rank_or_targets_takes_megatron_bridges_defaults() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::{Finetune, LoraTargets};
    let id = "litgpt_resource_tables_2023-10-042"; // Llama-2-7b LoRA
    let lora = |framework: &str| {
        let set = [
            ("framework", framework),
            ("lora_rank", ""),
            ("lora_targets", ""),
            ("notes", ""),
        ];
        match case_plan(&with_fields(id, &set), id)
            .unwrap()
            .training
            .finetune
        {
            Finetune::Lora {
                rank,
                targets,
                dropout,
                ..
            } => (rank, targets, dropout),
            f => panic!("{f:?}"),
        }
    };
    // `LoRA(dim=32, dropout=0.0)` over linear_qkv, linear_proj, linear_fc1, linear_fc2.
    assert_eq!(lora("megatron"), (32, LoraTargets::ALL_LINEAR, false));
    // PEFT's r = 8 on q and v elsewhere.
    let (rank, targets, _) = lora("hf-trainer");
    assert_eq!((rank, targets), (8, LoraTargets::QV));
}

#[test]
fn a_spreadsheet_export_in_a_decimal_comma_locale_reads_the_same() {
    // Excel's "CSV UTF-8" in such a locale: a byte-order mark, `;` between
    // fields (the notes' own `;` quoted), CRLF, `6,74` for 6.74.
    let text = cases();
    let decimal_comma = |f: &str| match f.split_once('.') {
        Some((a, b))
            if !a.is_empty()
                && !b.is_empty()
                && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit()) =>
        {
            format!("{a},{b}")
        }
        _ => f.to_string(),
    };
    let mut sheet = String::from("\u{feff}");
    for (i, line) in text.lines().enumerate() {
        let fields: Vec<String> = line
            .split(',')
            .map(|f| {
                if i == 0 {
                    f.to_string()
                } else {
                    decimal_comma(f)
                }
            })
            .map(|f| {
                if f.contains(';') {
                    format!("\"{f}\"")
                } else {
                    f
                }
            })
            .collect();
        sheet.push_str(&fields.join(";"));
        sheet.push_str("\r\n");
    }
    assert!(sheet.contains(";6,74;"), "the export has decimal commas");
    // … and a hand-edited header: other case, spaces for `_`.
    let header = sheet.lines().next().unwrap().to_string();
    let sheet = sheet.replacen(
        &header,
        &header
            .to_uppercase()
            .replace("MEASURED_GIB", "Measured GiB"),
        1,
    );
    assert_same_report(&text, &sheet);
}

/// Two case files give byte-identical reports.
fn assert_same_report(a: &str, b: &str) {
    let report = |t: &str| serde_json::to_string(&calibrate(t).unwrap()).unwrap();
    assert_eq!(report(a), report(b));
}

#[test]
fn the_cases_as_tab_separated_values_read_the_same() {
    // A sheet copied out of a spreadsheet, or saved as TSV: a tab between
    // fields (the public file has no quoted fields, so splitting is exact).
    let text = cases();
    let tsv: String = text
        .lines()
        .map(|l| l.split(',').collect::<Vec<_>>().join("\t") + "\n")
        .collect();
    assert!(!text.contains('"') && tsv.lines().all(|l| !l.contains(',')));
    assert_same_report(&text, &tsv);
}

#[test]
fn a_case_file_saved_in_windows_1252_or_utf16_reads_the_same() {
    use cost_model::calibrate::decode_case_file;
    let text = cases();
    // Excel's plain "CSV" on Western Windows: Windows-1252, where the notes'
    // "–" is byte 0x96 and "µ" 0xB5.
    let edited = text.replacen("incl. ~1343 MiB", "incl. – µ ~1343 MiB", 1);
    assert_ne!(edited, text);
    let cp1252: Vec<u8> = edited
        .chars()
        .map(|c| match c {
            '–' => 0x96,
            'µ' => 0xB5,
            c => u8::try_from(c as u32).expect("ASCII"),
        })
        .collect();
    let (read, enc) = decode_case_file(&cp1252);
    assert_eq!(enc, Some("Windows-1252"));
    assert_eq!(read, edited);
    assert_same_report(&read, &text);
    // "Unicode text": UTF-16LE with its byte-order mark; and big-endian.
    let mut le = vec![0xFF, 0xFE];
    let mut be = vec![0xFE, 0xFF];
    for u in edited.encode_utf16() {
        le.extend_from_slice(&u.to_le_bytes());
        be.extend_from_slice(&u.to_be_bytes());
    }
    assert_eq!(decode_case_file(&le), (edited.clone(), Some("UTF-16LE")));
    assert_eq!(decode_case_file(&be), (edited.clone(), Some("UTF-16BE")));
    // UTF-8 stays as it is, with no note.
    assert_eq!(decode_case_file(edited.as_bytes()), (edited.clone(), None));
}

#[test]
fn a_measurement_written_with_its_unit_reads_in_gib_and_an_empty_one_is_named() {
    let id = "litgpt_resource_tables_2023-10-001"; // measured 4.489 GiB
    let graded = |v: &str| {
        let r = calibrate(&with_fields(id, &[("measured_gib", v)])).unwrap();
        (r.cases[0].measured_gib, r.cases[0].skipped.clone())
    };
    let gib = |v: &str| (graded(v).0 * 1000.0).round() / 1000.0;
    assert_eq!(gib("4.489"), 4.489);
    assert_eq!(gib("4.489 GiB"), 4.489);
    assert_eq!(gib("4597 MiB"), 4.489); // nvidia-smi's unit
    assert_eq!(gib("4.82GB"), 4.489); // 10^9 bytes
    assert_eq!(gib("4820 mb"), 4.489);
    // Approximate, or with a table's footnote mark: the figure.
    assert_eq!(gib("~4.82 GB"), 4.489);
    assert_eq!(gib("≈4.489"), 4.489);
    assert_eq!(gib("4.489*"), 4.489);
    // Unreadable or missing: the row is skipped, saying why and where.
    let (_, why) = graded("");
    assert_eq!(why.as_deref(), Some("line 2: measured_gib is empty"));
    let (_, why) = graded("4.5 bananas");
    assert!(why.unwrap().contains("unit `bananas`"));
    let (_, why) = graded("lots");
    assert!(why.unwrap().contains("`lots` is not a number"));
    let (_, why) = graded("-1");
    assert!(why.unwrap().contains("`-1` is not a memory size"));
    // An OOM row needs no measurement: the capacity it hit is the bound.
    let oom = calibrate(&with_fields(id, &[("measured_gib", ""), ("oom", "true")])).unwrap();
    assert_eq!(oom.cases[0].skipped, None);
    assert_eq!(oom.summary.oom_total, 1);
    // The report prints an unknown measurement as a dash, and JSON as null.
    let r = calibrate(&with_fields(id, &[("measured_gib", "")])).unwrap();
    assert!(cost_model::calibrate::markdown(&r).contains("| — |"));
    assert!(serde_json::to_string(&r)
        .unwrap()
        .contains("\"measured_gib\":null"));
}

#[test]
fn double_quantization_stated_in_the_notes_saves_what_the_litgpt_pairs_measured() {
    // LitGPT's resource table runs each QLoRA set-up with `bnb.nf4` and
    // `bnb.nf4-dq`, all else equal: the measured difference is the double
    // quantization's saving (0.047 bytes per quantized weight), which the
    // model must reproduce from the notes ("nf4 + double quant").
    let r = calibrate(&cases()).unwrap();
    let case = |id: &str| {
        let id = format!("litgpt_resource_tables_2023-10-{id}");
        r.cases.iter().find(|c| c.id == id).unwrap().clone()
    };
    for (nf4, dq) in [
        ("002", "003"),
        ("007", "008"),
        ("012", "013"),
        ("017", "018"),
        ("025", "026"),
        ("028", "029"),
        ("031", "032"),
        ("034", "035"),
    ] {
        let (a, b) = (case(nf4), case(dq));
        let measured = a.measured_gib - b.measured_gib;
        let predicted = a.predicted_gib.unwrap() - b.predicted_gib.unwrap();
        assert!(
            (predicted / measured - 1.0).abs() < 0.1,
            "{nf4}/{dq}: measured {measured:.3} GiB apart, predicted {predicted:.3}"
        );
    }
    // The notes' spellings, and bitsandbytes' flag set off.
    let id = "litgpt_resource_tables_2023-10-012";
    let dq = |notes: &str| {
        cost_model::calibrate::case_plan(&with_fields(id, &[("notes", notes)]), id)
            .unwrap()
            .training
            .nf4_double_quant
    };
    assert!(dq("bnb nf4 + double quant base"));
    assert!(dq("quantize=bnb.nf4-dq"));
    assert!(dq("bnb_4bit_use_double_quant=True"));
    assert!(dq("Double quantization on"));
    assert!(!dq("bnb_4bit_use_double_quant=False"));
    assert!(!dq("bnb nf4 base"));
}

mod free_text_never_panics {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Any model name, GPU name or measurement (no `,`, quote or line
        /// break: one field) gives a row that is predicted or skipped with its
        /// reason, never a panic; any name looks a preset up without one.
        #[test]
        fn model_gpu_and_measurement_columns(
            model in "[^,\"\r\n]{0,60}",
            gpu in "[^,\"\r\n]{0,40}",
            mem in "[^,\"\r\n]{0,12}",
            measured in "[^,\"\r\n]{0,12}",
            oom in proptest::bool::ANY,
            blank in proptest::bool::ANY,
        ) {
            let _ = cost_model::presets::by_name(&model);
            let oom = if oom { "true" } else { "false" };
            let mut set = vec![("model", model.as_str()), ("gpu", gpu.as_str()),
                ("gpu_mem_gib", mem.as_str()), ("measured_gib", measured.as_str()), ("oom", oom)];
            if blank {
                set.extend([("n_layers", ""), ("hidden", ""), ("n_heads", "")]);
            }
            let id = "litgpt_resource_tables_2023-10-011";
            let report = calibrate(&with_fields(id, &set)).unwrap();
            let c = &report.cases[0];
            prop_assert!(c.skipped.is_some() || c.predicted_gib.is_some(), "{c:?}");
        }

        /// Any notes and any text in the columns the notes stand in for
        /// (length, batch, GPUs, sharding) — multi-byte characters, digits
        /// and the words the readers look for among them — give a row that is
        /// predicted or skipped with its reason, never a panic.
        #[test]
        fn notes_and_the_columns_they_stand_in_for(
            notes in "([^,\"\r\n]|packing=|seq |tokens per sample|-token sequences|sequences of |mbs |\
                       per gpu|nodes|nproc_per_node|dp_shard|expandable_segments:|max_seq_len=|[0-9k]){0,40}",
            seq in "[^,\"\r\n]{0,16}",
            batch in "[^,\"\r\n]{0,16}",
            gpus in "[^,\"\r\n]{0,12}",
            hsdp in proptest::bool::ANY,
        ) {
            let sharding = if hsdp { "hsdp" } else { "fsdp-full" };
            let set = [("notes", notes.as_str()), ("seq_len", seq.as_str()),
                ("micro_batch", batch.as_str()), ("num_gpus", gpus.as_str()), ("sharding", sharding)];
            let id = "peft_docs_fsdp_70b-148";
            let report = calibrate(&with_fields(id, &set)).unwrap();
            let c = &report.cases[0];
            prop_assert!(c.skipped.is_some() || c.predicted_gib.is_some(), "{c:?}");
        }
    }
}

/// A LitGPT row that leaves `activation_checkpointing` empty gets what its
/// finetune scripts do on its GPU count: every block checkpointed on more than
/// one device (`FSDPStrategy(activation_checkpointing_policy={Block})`), none
/// on one (litgpt 0.5.13 `finetune/*.py`).
#[test]
fn litgpt_rows_without_a_checkpointing_column_take_its_policy_for_their_gpu_count() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::Checkpointing;
    let id = "litgpt_resource_tables_2023-10-042"; // Llama-2-7b LoRA, 2 GPUs FSDP, `full`
    let ckpt = |set: &[(&str, &str)]| {
        case_plan(&with_fields(id, set), id)
            .unwrap()
            .training
            .checkpointing
    };
    assert_eq!(ckpt(&[]), Checkpointing::Full);
    assert_eq!(
        ckpt(&[("activation_checkpointing", "")]),
        Checkpointing::Full
    );
    let one_gpu = [("num_gpus", "1"), ("sharding", "none")];
    assert_eq!(
        ckpt(&[one_gpu[0], one_gpu[1], ("activation_checkpointing", "")]),
        Checkpointing::None
    );
    // The count written in the GPU column when `num_gpus` is empty.
    assert_eq!(
        ckpt(&[
            ("num_gpus", ""),
            ("gpu", "4x A100-40GB"),
            ("activation_checkpointing", "")
        ]),
        Checkpointing::Full
    );
    // A stated policy wins; other frameworks keep theirs whatever the count.
    assert_eq!(
        ckpt(&[("activation_checkpointing", "none")]),
        Checkpointing::None
    );
    assert_eq!(
        ckpt(&[
            ("framework", "hf-accelerate"),
            ("activation_checkpointing", "")
        ]),
        Checkpointing::None
    );
}

/// A Trainer row whose optimizer column says only `adamw` gets the kernel the
/// Trainer defaulted to in the releases its notes state
/// (`Framework::trainer_default_optimizer_impl`): transformers' own looping
/// AdamW before 4.32, PyTorch's foreach AdamW until transformers 4.51 with
/// PyTorch 2.8, fused since; a kernel the row names wins.
#[test]
fn trainer_rows_take_the_default_optimizer_of_their_stated_releases() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::OptimizerImpl;
    let id = "peft_docs_fsdp_70b-148"; // hf-trainer, adamw
    let kernel = |notes: &str| {
        case_plan(&with_fields(id, &[("notes", notes)]), id)
            .unwrap()
            .training
            .optimizer_impl
    };
    assert_eq!(kernel("packed"), OptimizerImpl::Fused);
    assert_eq!(
        kernel("transformers 4.30.2; torch 2.0.1"),
        OptimizerImpl::ForLoop
    );
    assert_eq!(
        kernel("transformers 4.44.2 + torch 2.4.0"),
        OptimizerImpl::Foreach
    );
    assert_eq!(
        kernel("torch.compile off; torch 2.5.1"),
        OptimizerImpl::Foreach
    );
    assert_eq!(kernel("PyTorch 2.3"), OptimizerImpl::Foreach);
    assert_eq!(kernel("transformers==4.49.0"), OptimizerImpl::Foreach);
    assert_eq!(
        kernel("transformers 4.56.1; torch 2.8.0"),
        OptimizerImpl::Fused
    );
    assert_eq!(
        kernel("transformers 4.56.1; torch 2.7.1"),
        OptimizerImpl::Foreach
    );
    assert_eq!(
        kernel("torch 2.11.0+cu130 + transformers 5.17.0"),
        OptimizerImpl::Fused
    );
    assert_eq!(
        kernel("transformers 4.44.2; optim adamw_torch_fused"),
        OptimizerImpl::Fused
    );
    // Other frameworks keep their own kernel.
    let plain = case_plan(
        &with_fields(
            id,
            &[
                ("framework", "hf-accelerate"),
                ("notes", "transformers 4.30.2"),
            ],
        ),
        id,
    )
    .unwrap();
    assert_eq!(plain.training.optimizer_impl, OptimizerImpl::Foreach);
}

/// Notes that say the run reduced every micro-batch (Accelerate's
/// `sync_each_batch`) set it: no unsharded gradients accumulate under FSDP.
#[test]
fn sync_each_batch_stated_in_the_notes_is_read() {
    use cost_model::calibrate::case_plan;
    let id = "peft_docs_fsdp_70b-148"; // hf-trainer, FSDP, grad_accum 4
    let read = |notes: &str| {
        case_plan(&with_fields(id, &[("notes", notes)]), id)
            .unwrap()
            .training
            .sync_each_batch
    };
    assert!(!read("packed"));
    assert!(read(
        "packed; accelerator_config gradient_accumulation_kwargs sync_each_batch=True"
    ));
}

/// TRL's trainers checkpoint by default from TRL 0.22 (their configs'
/// `gradient_checkpointing=True`); a row naming TRL with the column empty gets
/// that, or the Trainer's off for a stated earlier release.
#[test]
fn trl_rows_without_a_checkpointing_column_take_trls_default() {
    use cost_model::calibrate::case_plan;
    use cost_model::framework::Framework;
    use cost_model::plan::Checkpointing;
    let id = "peft_docs_fsdp_70b-148"; // hf-trainer, `full` checkpointing stated
    let plan = |set: &[(&str, &str)]| case_plan(&with_fields(id, set), id).unwrap();
    let p = plan(&[
        ("framework", "other"),
        ("notes", "TRL SFTTrainer"),
        ("activation_checkpointing", ""),
    ]);
    assert_eq!(p.framework, Framework::Trl);
    assert_eq!(p.training.checkpointing, Checkpointing::Full);
    let p = plan(&[
        ("framework", "trl"),
        ("notes", "trl 0.19.1"),
        ("activation_checkpointing", ""),
    ]);
    assert_eq!(p.framework, Framework::Trl);
    assert_eq!(p.training.checkpointing, Checkpointing::None);
    let p = plan(&[
        ("framework", "trl"),
        ("notes", "TRL 0.24.0"),
        ("activation_checkpointing", ""),
    ]);
    assert_eq!(p.training.checkpointing, Checkpointing::Full);
    // A stated column wins.
    let p = plan(&[("framework", "trl"), ("activation_checkpointing", "none")]);
    assert_eq!(p.training.checkpointing, Checkpointing::None);
}

/// LLaMA-Factory and ms-swift checkpoint by default, as do axolotl's example
/// configs: a row naming them with the column empty gets their profile's
/// policy; one that says the argument is off, none.
#[test]
fn trainer_tools_that_checkpoint_by_default() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::Checkpointing;
    let id = "peft_docs_fsdp_70b-148";
    let ckpt = |notes: &str| {
        case_plan(
            &with_fields(
                id,
                &[
                    ("framework", "other"),
                    ("notes", notes),
                    ("activation_checkpointing", ""),
                ],
            ),
            id,
        )
        .unwrap()
        .training
        .checkpointing
    };
    assert_eq!(ckpt("LLaMA-Factory sft"), Checkpointing::Full);
    assert_eq!(ckpt("ms-swift 3.5 sft"), Checkpointing::Full);
    assert_eq!(ckpt("axolotl example"), Checkpointing::Full);
    assert_eq!(ckpt("own loop; Trainer"), Checkpointing::None);
    assert_eq!(
        ckpt("LLaMA-Factory; use_gradient_checkpointing=False"),
        Checkpointing::None
    );
}

/// A row whose notes say the base went through PEFT's
/// `prepare_model_for_kbit_training` and whose checkpointing column is empty
/// is checkpointed: the function turns it on by default.
#[test]
fn kbit_preparation_in_the_notes_checkpoints_an_unstated_policy() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::Checkpointing;
    let id = "peft_docs_fsdp_70b-149"; // QLoRA, 4-bit base
    let ckpt = |notes: &str, col: &str| {
        case_plan(
            &with_fields(id, &[("notes", notes), ("activation_checkpointing", col)]),
            id,
        )
        .unwrap()
        .training
        .checkpointing
    };
    assert_eq!(
        ckpt("prepare_model_for_kbit_training", ""),
        Checkpointing::Full
    );
    assert_eq!(
        ckpt("prepare_model_for_kbit_training", "none"),
        Checkpointing::None
    );
    assert_eq!(ckpt("packed", ""), Checkpointing::None);
}

/// Unsloth checkpoints with offloading by default (`use_gradient_checkpointing
/// = "unsloth"`): a row naming it that states neither the column nor the
/// argument gets that; a stated policy or argument wins.
#[test]
fn unsloth_rows_take_its_offloaded_checkpointing_by_default() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::Checkpointing;
    let id = "peft_docs_fsdp_70b-148";
    let plan = |notes: &str, col: &str| {
        case_plan(
            &with_fields(
                id,
                &[
                    ("framework", "other"),
                    ("notes", notes),
                    ("activation_checkpointing", col),
                ],
            ),
            id,
        )
        .unwrap()
        .training
    };
    let t = plan("Unsloth notebook", "");
    assert_eq!(t.checkpointing, Checkpointing::Full);
    assert!(t.activation_offload);
    let t = plan("Unsloth notebook; use_gradient_checkpointing=False", "");
    assert!(!t.activation_offload);
    assert_eq!(t.checkpointing, Checkpointing::None);
    let t = plan("Unsloth notebook; use_gradient_checkpointing=True", "");
    assert!(!t.activation_offload);
    assert_eq!(t.checkpointing, Checkpointing::Full);
    // Its fused kernels and fused linear cross-entropy come with the profile
    // when the loss column is empty; a stated loss wins.
    let t = plan("Unsloth notebook", "");
    assert!(t.fused_kernels);
    assert_eq!(t.loss, cost_model::plan::Loss::Standard); // the row says standard
    let loss = |col: &str| {
        case_plan(
            &with_fields(
                id,
                &[("framework", "other"), ("notes", "Unsloth"), ("loss", col)],
            ),
            id,
        )
        .unwrap()
        .training
        .loss
    };
    assert_eq!(loss(""), cost_model::plan::Loss::Fused);
    assert_eq!(loss("unknown"), cost_model::plan::Loss::Fused);
    // The framework column naming it, the notes silent: the same defaults.
    let t = case_plan(
        &with_fields(
            id,
            &[
                ("framework", "unsloth"),
                ("notes", ""),
                ("activation_checkpointing", ""),
            ],
        ),
        id,
    )
    .unwrap()
    .training;
    assert_eq!(t.checkpointing, Checkpointing::Full);
    assert!(t.activation_offload && t.fused_kernels);
    let t = plan("Unsloth notebook", "none");
    assert_eq!(t.checkpointing, Checkpointing::None);
    assert!(!t.activation_offload);
}

/// A LoRA row naming a tool built on the Trainer, with no rank or targets,
/// takes the tool's defaults (every linear; rank 8, 8, 32, 16); a stated
/// rank or target list wins, and other rows keep PEFT's (8, q and v).
#[test]
fn lora_rows_naming_a_tool_take_its_rank_and_targets() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::{Finetune, LoraTargets};
    let id = "peft_docs_fsdp_70b-148"; // LoRA on all-linear, rank 8
    let lora = |notes: &str, rank: &str, targets: &str| {
        let p = case_plan(
            &with_fields(
                id,
                &[
                    ("framework", "other"),
                    ("notes", notes),
                    ("lora_rank", rank),
                    ("lora_targets", targets),
                ],
            ),
            id,
        )
        .unwrap();
        match p.training.finetune {
            Finetune::Lora { rank, targets, .. } => (rank, targets),
            f => panic!("{f:?}"),
        }
    };
    let all = LoraTargets::ALL_LINEAR;
    assert_eq!(lora("LLaMA-Factory sft", "", ""), (8, all));
    assert_eq!(lora("ms-swift sft", "", ""), (8, all));
    assert_eq!(lora("axolotl example config", "", ""), (32, all));
    assert_eq!(lora("Unsloth notebook", "", ""), (16, all));
    assert_eq!(lora("own loop", "", ""), (8, LoraTargets::QV));
    assert_eq!(lora("Unsloth notebook", "64", "q+v"), (64, LoraTargets::QV));
}

/// Accelerate before 1.11 never paused FSDP2's reduction (an FSDP2 module has
/// no `no_sync`): a row naming FSDP2 and such a release — or axolotl 0.12,
/// which pinned accelerate 1.10 — reduces every micro-batch; FSDP1, later
/// releases and rows stating none accumulate the unsharded gradients.
#[test]
fn fsdp2_under_accelerate_before_1_11_reduces_every_micro_batch() {
    use cost_model::calibrate::case_plan;
    let id = "peft_docs_fsdp_70b-148"; // FSDP under the Trainer, 4 micro-batches
    let sync = |sharding: &str, notes: &str| {
        let p = case_plan(
            &with_fields(id, &[("sharding", sharding), ("notes", notes)]),
            id,
        )
        .unwrap();
        assert_eq!(p.training.grad_accum, 4);
        (p.training.sync_each_batch, p.accumulates_unsharded_grads())
    };
    assert_eq!(sync("fsdp2", "accelerate 1.10.0"), (true, false));
    assert_eq!(
        sync("fsdp-full", "FSDP2 (fully_shard); accelerate==1.8.1"),
        (true, false)
    );
    assert_eq!(
        sync("fsdp-full", "axolotl 0.12.2; fsdp_version: 2"),
        (true, false)
    );
    assert_eq!(sync("fsdp2", "accelerate 1.11.0"), (false, true));
    assert_eq!(sync("fsdp2", "axolotl 0.19.0"), (false, true));
    assert_eq!(sync("fsdp2", ""), (false, true));
    // FSDP1 has `no_sync` in every release.
    assert_eq!(sync("fsdp-full", "accelerate 1.10.0"), (false, true));
}

/// Empty expert columns are unknown, not dense: a row naming an MoE preset
/// takes its experts and their top-k; a stated 0 is a dense model.
#[test]
fn empty_expert_columns_take_the_named_presets_experts() {
    use cost_model::calibrate::case_plan;
    let id = "peft_docs_fsdp_70b-148";
    let model = |experts: &str, top_k: &str| {
        let p = case_plan(
            &with_fields(
                id,
                &[
                    ("model", "openai/gpt-oss-20b"),
                    ("n_layers", ""),
                    ("hidden", ""),
                    ("n_heads", ""),
                    ("n_kv_heads", ""),
                    ("ffn_hidden", ""),
                    ("vocab", ""),
                    ("mlp", ""),
                    ("tied_embeddings", ""),
                    ("params_total", ""),
                    ("n_experts", experts),
                    ("experts_per_token", top_k),
                ],
            ),
            id,
        )
        .unwrap();
        (p.model.experts, p.model.experts_per_token)
    };
    assert_eq!(model("", ""), (32, 4));
    assert_eq!(model("32", ""), (32, 4));
    assert_eq!(model("32", "2"), (32, 2));
    assert_eq!(model("0", "0"), (0, 0));
    assert_eq!(model("0", ""), (0, 0));
}

/// The A10 and the A10G are two boards: each name finds its own entry, and
/// both report the same 24 GB (23,028 MiB) where the row gives no capacity.
#[test]
fn the_a10_and_the_a10g_are_told_apart() {
    use cost_model::calibrate::case_plan;
    let id = "peft_docs_deepspeed_70b-147";
    let gpu = |name: &str| {
        case_plan(&with_fields(id, &[("gpu", name), ("gpu_mem_gib", "")]), id)
            .unwrap()
            .gpu
    };
    for (name, want) in [
        ("A10", "NVIDIA A10"),
        ("NVIDIA A10", "NVIDIA A10"),
        ("A10G", "NVIDIA A10G"),
        ("NVIDIA A10G (AWS g5)", "NVIDIA A10G"),
        ("A10 (OCI; 24 GB)", "NVIDIA A10"),
    ] {
        let g = gpu(name);
        assert_eq!(g.name, want, "{name}");
        assert_eq!(g.capacity_mib, 23_028, "{name}");
    }
    // Bracketed prose that names no board keeps the name as written.
    assert_eq!(gpu("40GB GPU (model not stated)").capacity_mib, 40_960);
    assert_eq!(gpu("H100 (SXM5)").name, "NVIDIA H100 80GB HBM3");
}

/// The tools built on the Trainer double-quantize a 4-bit base unless the
/// notes say otherwise; a Trainer row does only when they say so.
#[test]
fn tool_rows_double_quantize_a_4_bit_base_unless_told_not_to() {
    use cost_model::calibrate::case_plan;
    let id = "peft_docs_fsdp_70b-150"; // QLoRA, "bnb nf4 + double quant" in its notes
    let dq = |framework: &str, notes: &str| {
        case_plan(
            &with_fields(id, &[("framework", framework), ("notes", notes)]),
            id,
        )
        .unwrap()
        .nf4_double_quantized()
    };
    assert!(dq("other", "LLaMA-Factory qlora"));
    assert!(dq("other", "axolotl qlora example"));
    assert!(!dq("other", "LLaMA-Factory; double_quantization: false"));
    assert!(!dq("other", "Unsloth; bnb_4bit_use_double_quant=False"));
    assert!(!dq("hf-trainer", "bnb nf4"));
    assert!(dq("hf-trainer", "bnb nf4 + double quant"));
    assert!(!dq("hf-trainer", "bnb_4bit_use_double_quant=False"));
}

/// Counts, tasks, offload and bit widths as other files write them: a count
/// per device or by its flag, GPUs with their name, a task or an offload with
/// a note in parentheses (the device NVMe when it says so), ZeRO-Offload by
/// its name, NF4 with its scales quantized, Unsloth's offloading; a cap is
/// refused with its reason, not read as what ran.
#[test]
fn counts_tasks_and_offload_written_other_ways_read_as_the_values() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::{Offload, OffloadDevice};
    // Llama-2-70B QLoRA under ZeRO-3 on two GPUs, batch 2 × 2048.
    let id = "peft_docs_deepspeed_70b-147";
    let base = calibrate(&with_fields(id, &[])).unwrap().cases[0].clone();
    assert!(base.skipped.is_none(), "{base:?}");
    for (col, v) in [
        ("micro_batch", "2 per GPU"),
        ("micro_batch", "2/gpu"),
        ("micro_batch", "bs=2"),
        ("micro_batch", "per_device_train_batch_size=2"),
        ("num_gpus", "2x A100"),
        ("num_gpus", "2 × H100"),
        ("task", "LoRA (4-bit)"),
        ("task", "sft-qlora"),
        ("task", "peft-qlora"),
        ("base_weight_bits", "nf4-dq"),
        // A cap every packed row filled, an approximate length.
        ("seq_len", "max_seq_length=2048 (packing)"),
        ("seq_len", "max 2k (packed)"),
        ("seq_len", "~2048"),
        ("seq_len", "≈ 2048"),
    ] {
        let c = calibrate(&with_fields(id, &[(col, v)])).unwrap().cases[0].clone();
        assert_eq!(c.predicted_gib, base.predicted_gib, "{col} = {v}: {c:?}");
    }
    let plan = |set: &[(&str, &str)]| case_plan(&with_fields(id, set), id).unwrap();
    assert_eq!(
        plan(&[("offload", "optimizer (cpu)")]).parallel.offload,
        Offload::OPTIMIZER_CPU
    );
    assert_eq!(
        plan(&[("offload", "ZeRO-Offload")]).parallel.offload,
        Offload::OPTIMIZER_CPU
    );
    let nvme = plan(&[("offload", "params+optimizer (NVMe)")])
        .parallel
        .offload;
    assert_eq!(
        (nvme.params, nvme.optimizer),
        (OffloadDevice::Nvme, OffloadDevice::Nvme)
    );
    assert!(
        plan(&[("base_weight_bits", "nf4-dq"), ("notes", "")])
            .training
            .nf4_double_quant
    );
    assert!(
        plan(&[("activation_offload", "unsloth")])
            .training
            .activation_offload
    );
    // Not guessed: a cap, a fraction, a range.
    for (col, v, why) in [
        ("seq_len", "max_seq_length=2048", "is a cap"),
        ("seq_len", "up to 2048", "is a cap"),
        ("micro_batch", "1/2", "not a whole number"),
        ("seq_len", "2048/4096", "not a whole number"),
        ("seq_len", "max", "`max` is not a whole number"),
        // A cap the note does not say was filled.
        ("seq_len", "max_seq_length=2048 (no packing)", "is a cap"),
        ("seq_len", "max 2048 (padded per batch)", "is a cap"),
    ] {
        let c = calibrate(&with_fields(id, &[(col, v)])).unwrap().cases[0].clone();
        let skipped = c.skipped.unwrap_or_default();
        assert!(
            skipped.contains(col) && skipped.contains(why),
            "{col} = {v}: {skipped}"
        );
    }
}

/// An OOM written in words is an OOM (it had been read as a run that fitted
/// when the `oom` column said "OOM"); a measurement with a note or a spread
/// is its figure, in the spread's unit; tied embeddings in words.
#[test]
fn oom_in_words_and_measurements_with_notes_read_as_meant() {
    let id = "peft_docs_deepspeed_70b-147";
    let case = |set: &[(&str, &str)]| calibrate(&with_fields(id, set)).unwrap().cases[0].clone();
    for v in ["OOM", "out of memory", "true", "yes"] {
        let c = case(&[("oom", v)]);
        assert!(c.oom && c.skipped.is_none(), "oom = {v}: {c:?}");
    }
    assert!(case(&[("oom", ""), ("measured_gib", "OOM")]).oom);
    for v in ["fits", "false", ""] {
        assert!(!case(&[("oom", v)]).oom, "oom = {v}");
    }
    // A word that says neither is named, not read as a run that fitted.
    let maybe = case(&[("oom", "maybe")]);
    assert!(
        maybe
            .skipped
            .as_deref()
            .unwrap_or("")
            .contains("oom: `maybe`"),
        "{maybe:?}"
    );
    let gib = |v: &str| case(&[("measured_gib", v)]).measured_gib;
    assert_eq!(gib("34.1 (peak)"), 34.1);
    assert_eq!(gib("34.1±0.2"), 34.1);
    assert_eq!(gib("34.1 ± 0.2 GB"), gib("34.1 GB"));
    assert!((gib("34.1 GB") - 34.1e9 / (1u64 << 30) as f64).abs() < 1e-9);
    let pred = |v: &str| case(&[("tied_embeddings", v)]).predicted_gib;
    assert_eq!(pred("tied"), pred("true"));
    assert_eq!(pred("untied"), pred("false"));
    assert_ne!(pred("tied"), pred("untied"));
}

/// HSDP shards within a node (FSDP's `HYBRID_SHARD`: the intra-node group),
/// so the GPUs a node holds — stated per node, by the nodes the run spanned
/// (in the notes or beside the GPU count), or as the shard group itself —
/// decide its shard; where nothing says, a node holds eight.
#[test]
fn hsdp_shards_over_the_node_the_notes_state() {
    use cost_model::calibrate::case_plan;
    let id = "peft_docs_fsdp_70b-148"; // Llama-2-70B LoRA, FSDP on 8 × H100
    let set = |notes: &'static str, gpus: &'static str| {
        vec![("sharding", "hsdp"), ("num_gpus", gpus), ("notes", notes)]
    };
    let node = |notes: &'static str, gpus: &'static str| {
        case_plan(&with_fields(id, &set(notes, gpus)), id)
            .unwrap()
            .parallel
            .gpus_per_node
    };
    assert_eq!(node("", "32"), 8);
    assert_eq!(node("4 nodes x 8 GPUs", "32"), 8);
    assert_eq!(node("8 nodes of 4 GPUs", "32"), 4);
    assert_eq!(node("4 GPUs per node", "32"), 4);
    assert_eq!(node("torchrun --nnodes 16 --nproc_per_node 2", "32"), 2);
    assert_eq!(node("--nnodes=16", "32"), 2);
    assert_eq!(node("", "32 (16 nodes)"), 2);
    assert_eq!(node("torchtitan dp_shard=16 dp_replicate=2", "32"), 16);
    // A node count that does not divide the GPUs, or more per node than
    // the run has: the default stands.
    assert_eq!(node("3 nodes", "32"), 8);
    assert_eq!(node("64 GPUs per node", "32"), 8);
    // And the shard follows: a larger group holds less per GPU.
    let predicted = |notes: &'static str| {
        calibrate(&with_fields(id, &set(notes, "32")))
            .unwrap()
            .cases[0]
            .predicted_gib
            .unwrap()
    };
    let (two, eight, sixteen) = (
        predicted("16 nodes of 2 GPUs"),
        predicted(""),
        predicted("dp_shard 16"),
    );
    assert!(two > eight && eight > sixteen, "{two} {eight} {sixteen}");
    // FSDP's full shard does not depend on nodes.
    let full = |notes: &'static str| {
        let set = [
            ("sharding", "fsdp-full"),
            ("num_gpus", "32"),
            ("notes", notes),
        ];
        calibrate(&with_fields(id, &set)).unwrap().cases[0]
            .predicted_gib
            .unwrap()
    };
    assert_eq!(full("16 nodes of 2 GPUs"), full(""));
}

/// The allocator's expandable segments, where the notes say the run set
/// them, and not where they say it did not.
#[test]
fn expandable_segments_stated_in_the_notes_reach_the_plan() {
    use cost_model::calibrate::case_plan;
    let id = "peft_docs_fsdp_70b-148";
    let expandable = |notes: &str| {
        case_plan(&with_fields(id, &[("notes", notes)]), id)
            .unwrap()
            .runtime
            .expandable_segments
    };
    assert!(expandable(
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    ));
    assert!(expandable(
        "PYTORCH_ALLOC_CONF=\"expandable_segments: True\""
    ));
    assert!(expandable("FSDP2 with expandable segments"));
    assert!(!expandable(
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False"
    ));
    assert!(!expandable("no expandable segments"));
    assert!(!expandable("FSDP"));
    // Less stranded in the reserve.
    let reserved = |notes: &str| {
        let set = [("metric", "max_reserved"), ("notes", notes)];
        calibrate(&with_fields(id, &set)).unwrap().cases[0]
            .predicted_gib
            .unwrap()
    };
    assert!(reserved("expandable_segments:True") < reserved(""));
}

/// A row that names no attention kernel for a family transformers gives no
/// SDPA path (BLOOM, Gemma-2, GPT-Neo, MPT, gpt-oss) ran eager under
/// transformers' code; Gemma 1 and GPT-NeoX have SDPA, a stated kernel
/// stands, and LitGPT's own code has SDPA for every family.
#[test]
fn families_without_sdpa_in_transformers_run_eager_when_unstated() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::Attention;
    let id = "peft_readme_raft-144"; // bloomz-7b1 LoRA, plain PyTorch, eager stated
    let attention = |set: &[(&str, &str)]| {
        case_plan(&with_fields(id, set), id)
            .unwrap()
            .training
            .attention
    };
    assert_eq!(attention(&[("attention", "")]), Attention::Eager);
    assert_eq!(attention(&[("attention", "unknown")]), Attention::Eager);
    assert_eq!(attention(&[("attention", "flash")]), Attention::Flash);
    for (model, want) in [
        ("google/gemma-2-9b", Attention::Eager),
        ("EleutherAI/gpt-neo-1.3B", Attention::Eager),
        ("mosaicml/mpt-7b", Attention::Eager),
        ("openai/gpt-oss-20b", Attention::Eager),
        ("microsoft/deberta-v3-base", Attention::Eager),
        ("sentence-transformers/all-mpnet-base-v2", Attention::Eager),
        ("google/long-t5-tglobal-base", Attention::Eager),
        ("FacebookAI/xlm-roberta-large", Attention::Flash),
        ("distilbert/distilbert-base-uncased", Attention::Flash),
        ("google/gemma-2b", Attention::Flash),
        ("EleutherAI/gpt-neox-20b", Attention::Flash),
        ("meta-llama/Llama-2-7b-hf", Attention::Flash),
    ] {
        assert_eq!(
            attention(&[("attention", ""), ("model", model)]),
            want,
            "{model}"
        );
    }
    assert_eq!(
        attention(&[("attention", ""), ("framework", "litgpt")]),
        Attention::Flash
    );
}

/// A fused projection the LoRA targets or the notes name (ChatGLM's
/// `query_key_value`, Baichuan's `W_pack`, InternLM2's `wqkv`, MPT's `Wqkv`)
/// tells a model no preset describes computes q/k/v in one matmul, which
/// PEFT adapts as one module: fewer adapter inputs kept than three.
#[test]
fn a_fused_module_named_in_the_targets_or_notes_reads_as_fused() {
    use cost_model::calibrate::case_plan;
    let id = "peft_metamathqa_benchmark-152";
    let fused = |set: &[(&str, &str)]| {
        let mut all = vec![("model", "some-org/some-model-7b")];
        all.extend_from_slice(set);
        case_plan(&with_fields(id, &all), id)
            .unwrap()
            .model
            .fused_projections
    };
    assert!(!fused(&[("lora_targets", "q+k+v+o")]));
    assert!(fused(&[("lora_targets", "query_key_value+dense")]));
    assert!(fused(&[("lora_targets", "W_pack+o_proj")]));
    assert!(fused(&[("lora_targets", "wqkv")]));
    assert!(fused(&[
        ("lora_targets", "all-linear"),
        ("notes", "LoRA on the fused Wqkv")
    ]));
    // Fewer bytes kept for the one adapter than for three.
    let predicted = |targets: &str| {
        let set = [
            ("model", "some-org/some-model-7b"),
            ("lora_targets", targets),
        ];
        calibrate(&with_fields(id, &set)).unwrap().cases[0]
            .predicted_gib
            .unwrap()
    };
    assert!(predicted("query_key_value") < predicted("q+k+v"));
}

/// A `deepspeed` row split over TP is Megatron-DeepSpeed (Megatron-LM's
/// model code: vocab-parallel embedding and loss) unless its notes name
/// DeepSpeed's AutoTP, which gathers the logits on every TP rank.
#[test]
fn deepspeed_over_tensor_parallelism_reads_as_megatron_deepspeed_unless_autotp() {
    use cost_model::calibrate::case_plan;
    use cost_model::framework::Framework;
    let id = "peft_docs_deepspeed_70b-146";
    let read = |set: &[(&str, &str)]| case_plan(&with_fields(id, set), id).unwrap();
    let base = [
        ("framework", "deepspeed"),
        ("num_gpus", "8"),
        ("sharding", "zero1"),
    ];
    assert_eq!(read(&base).framework, Framework::Deepspeed);
    let tp = [&base[..], &[("tp", "4")]].concat();
    assert_eq!(read(&tp).framework, Framework::Megatron);
    let autotp = [
        &tp[..],
        &[("notes", "DeepSpeed AutoTP training (autotp_size 4)")],
    ]
    .concat();
    assert_eq!(read(&autotp).framework, Framework::Deepspeed);
    let calibrate = |set: &[(&str, &str)]| {
        cost_model::calibrate::calibrate(&with_fields(id, set))
            .unwrap()
            .cases[0]
            .clone()
    };
    // Megatron-DeepSpeed's split logits: less than AutoTP's whole ones.
    let (m, a) = (calibrate(&tp), calibrate(&autotp));
    assert!(m.skipped.is_none() && a.skipped.is_none(), "{m:?} {a:?}");
    assert!(m.predicted_gib < a.predicted_gib, "{m:?} {a:?}");
}

#[test]
fn a_pure_16_bit_full_fine_tune_reads_as_amp_where_the_framework_upcasts_its_trainable_weights() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::Precision;
    let id = "hf_transformers_perf_train_gpu_one-128";
    let precision = |set: &[(&str, &str)]| {
        case_plan(&with_fields(id, set), id)
            .unwrap()
            .training
            .precision
    };
    const FSDP: [(&str, &str); 4] = [
        ("precision", "bf16"),
        ("num_gpus", "4"),
        ("sharding", "fsdp-full"),
        ("notes", ""),
    ];
    let fsdp = FSDP;
    fn with<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        [&FSDP[..], extra].concat()
    }
    // The Trainer under FSDP: Accelerate's upcast, mixed precision on as its
    // recipes pass `--bf16`; fp16 alike.
    assert_eq!(precision(&fsdp), Precision::AmpBf16);
    assert_eq!(
        precision(&with(&[("precision", "fp16")])),
        Precision::AmpFp16
    );
    assert_eq!(
        precision(&with(&[("sharding", "hsdp")])),
        Precision::AmpBf16
    );
    assert_eq!(
        precision(&with(&[
            ("framework", "other"),
            ("notes", "TRL SFTTrainer")
        ])),
        Precision::AmpBf16
    );
    // Mixed precision stated off: pure, as the column says.
    for off in [
        "accelerate mixed_precision no",
        "mixed_precision: 'no'",
        "bf16=False",
        "pure bf16",
    ] {
        assert_eq!(
            precision(&with(&[("notes", off)])),
            Precision::Bf16,
            "{off}"
        );
    }
    // `--fp16` cannot step fp16 weights (its GradScaler refuses fp16
    // gradients): a Trainer's fp16 full fine-tune had fp32 ones, FSDP or not.
    assert_eq!(
        precision(&with(&[("precision", "fp16"), ("sharding", "ddp")])),
        Precision::AmpFp16
    );
    // Not sharded by FSDP, not a full fine-tune, not Accelerate's preparation.
    for other in [
        &[("sharding", "ddp")][..],
        &[("sharding", "zero2")],
        &[
            ("task", "lora"),
            ("lora_rank", "8"),
            ("lora_targets", "q+v"),
        ],
        &[("framework", "plain-pytorch")],
        &[("framework", "torchtitan")],
        &[
            ("framework", "torchtitan"),
            ("notes", "mixed_precision bf16"),
        ],
        &[
            ("framework", "other"),
            ("notes", "axolotl; fsdp_version: 2"),
        ],
    ] {
        assert_eq!(precision(&with(other)), Precision::Bf16, "{other:?}");
    }
    // Accelerate's own loop: only where the notes turn mixed precision on.
    let accelerate = with(&[("framework", "hf-accelerate")]);
    assert_eq!(precision(&accelerate), Precision::Bf16);
    for on in [
        "mixed_precision bf16",
        "--mixed_precision=bf16",
        "bf16=True",
    ] {
        let stated = [&accelerate[..], &[("notes", on)]].concat();
        assert_eq!(precision(&stated), Precision::AmpBf16, "{on}");
    }
    // LLaMA-Factory casts a full fine-tune's weights to fp32 on one GPU too,
    // not under DeepSpeed nor with `pure_bf16`.
    let llamafactory = [
        ("precision", "bf16"),
        ("framework", "other"),
        ("notes", "LLaMA-Factory"),
    ];
    let lf = |extra: &[(&str, &str)]| precision(&[&llamafactory[..], extra].concat());
    assert_eq!(lf(&[]), Precision::AmpBf16);
    assert_eq!(
        lf(&[("sharding", "zero3"), ("num_gpus", "4")]),
        Precision::Bf16
    );
    assert_eq!(
        lf(&[("notes", "LLaMA-Factory; pure_bf16: true")]),
        Precision::Bf16
    );
    // And the figures follow: fp32 weights, gradients and states on each rank.
    let predicted = |set: &[(&str, &str)]| {
        cost_model::calibrate::calibrate(&with_fields(id, set))
            .unwrap()
            .cases[0]
            .predicted_gib
            .unwrap()
    };
    let pure = predicted(&with(&[("notes", "mixed_precision no")]));
    assert!(predicted(&fsdp) > pure, "{pure}");
    assert_eq!(
        predicted(&fsdp),
        predicted(&with(&[("precision", "amp-bf16")]))
    );
}

/// Liger Kernel's Hugging Face example (calibration/liger-examples-2024.csv):
/// Qwen2-7B and Llama-3-8B fully fine-tuned under the Trainer's FSDP1 with
/// `--bf16` over a bf16 checkpoint, each batch padded to its longest Alpaca
/// sample under a 512-token cap. At the cap the model may only over-predict,
/// and the runs that went out of memory at their shorter lengths must not
/// fit at it. Read as pure bf16 (Accelerate's upcast ignored), the Liger
/// runs were under by 28–39 % and Qwen2-7B's OOM at 48 fitted.
#[test]
fn liger_examples_at_their_length_cap_are_not_under_predicted() {
    let report = project_set("liger-examples-2024.csv");
    assert_eq!(report.cases.len(), 12);
    for c in &report.cases {
        assert!(c.skipped.is_none(), "{c:?}");
        if !c.oom {
            let e = c.error_pct.unwrap();
            assert!((0.0..25.0).contains(&e), "{c:?}");
        }
    }
    let s = &report.summary;
    assert_eq!((s.oom_detected, s.oom_total), (3, 3));
}

/// torchtune 0.2.1's README table (calibration/torchtune-readme-0.2.1.csv):
/// Llama2-7B and -70B at the batch and length it states, read as its own
/// release's recipes — FSDP1, the shifted fp32 logits copied and their
/// transpose's contiguous copy, kept through backward where the recipe does
/// not `del` them (`TorchtuneRelease::V0_2`). The five rows the table's
/// length can hold come within 11 %; read as 0.3's recipes they were 10–15 %
/// under on three of them. The two the notes call inconsistent (a config
/// without checkpointing, a length the 70B LoRA run cannot have held) are
/// over, as an upper bound must be.
#[test]
fn torchtune_0_2_readme_rows_are_read_as_that_releases_recipes() {
    use cost_model::calibrate::case_plan;
    use cost_model::plan::Loss;
    let text = project_text("torchtune-readme-0.2.1.csv");
    let report = calibrate(&text).unwrap();
    assert_eq!(report.cases.len(), 7);
    let current = calibrate(&text.replace("torchtune 0.2.1", "torchtune")).unwrap();
    let (mut now, mut before) = (0.0, 0.0);
    for (c, b) in report.cases.iter().zip(&current.cases) {
        let e = c.error_pct.unwrap();
        if c.id.contains("70b-lora") || c.id.contains("lora-2x4090") {
            assert!(e > 50.0, "{c:?}");
            continue;
        }
        assert!(e.abs() < 11.0, "{c:?}");
        now += e.abs();
        before += b.error_pct.unwrap().abs();
    }
    assert!(now < before / 1.5, "{now} against {before}");
    // A loss the row leaves unstated is the only one those recipes had;
    // under the current release, the profile's chunked one.
    let id = "torchtune_readme_0.2.1-7b-lora-4090";
    let unstated = text.replace(",flash,standard,", ",flash,,");
    let loss = |t: &str| case_plan(t, id).unwrap().training.loss;
    assert_eq!(loss(&unstated), Loss::Standard);
    assert_ne!(
        loss(&unstated.replace("torchtune 0.2.1", "torchtune")),
        Loss::Standard
    );
}
