use super::*;
use crate::plan::TrlRelease;
use crate::presets::preset;

/// Latent attention's block keeps, beside what every block keeps, q and k
/// (192 wide a head for DeepSeek-V2-Lite), kv_b_proj's whole output (128 +
/// 128 a head, kept by the value view), a 128-wide output per head, and
/// the k/v latent's norm (512) and its normed output for kv_b: compared
/// with the same heads as ordinary attention (q, k, v and the output all
/// 192 wide a head), per token and block.
#[test]
fn latent_attention_keeps_its_latents_and_kv_b_output() {
    let mut p = Plan {
        model: preset("deepseek-v2-lite").unwrap().spec(),
        ..Plan::default()
    };
    p.set_framework(Framework::PlainPytorch);
    p.training.precision = Precision::Bf16;
    p.training.micro_batch = 1;
    p.training.seq_len = 1024;
    p.training.dropout = false;
    p.parallel.num_gpus = 1;
    p.parallel.sharding = Sharding::None;
    let mut mha = p.clone();
    mha.model.mla = None;
    let (c, plain) = (Ctx::new(&p, None), Ctx::new(&mha, None));
    assert_eq!(c.attention(), Attention::Flash);
    let (heads, e) = (16.0, 2.0);
    let latent =
        512.0 * (c.norm_saved_bytes() + c.norm_affine_bytes()) + 512.0 * c.linear_input_bytes();
    let mla = e * heads * (192.0 + 192.0 + 256.0 + 128.0) + latent;
    let ordinary = e * heads * (192.0 * 3.0 + 192.0);
    let per_token = (c.block_activations().0 - plain.block_activations().0) / 1024.0;
    assert!(
        (per_token - (mla - ordinary)).abs() < 1e-6,
        "{per_token} vs {}",
        mla - ordinary
    );
    // Its parameters: q_proj 2048 × 3072, kv_a 2048 × 576, the latent's
    // norm, kv_b 512 × 4096, o 2048 × 2048.
    assert_eq!(
        p.model.attention_params(),
        2048 * 3072 + 2048 * 576 + 512 + 512 * 4096 + 2048 * 2048
    );
}

/// TRL's fused LM head (1.15 on) keeps, beside the final norm's tensors,
/// the compacted hidden states and one 4,096 × 32,768 tile, and in
/// backward the input's fp32 gradient (and a trained head's fp32
/// accumulator): never the logits.
#[test]
fn trls_fused_lm_head_keeps_one_tile_and_fp32_gradients() {
    // 4 × 2048 = 8192 positions.
    let p = trl_lora_1b(4);
    assert_eq!(p.training.loss, Loss::TiledLogprob);
    let c = Ctx::new(&p, None);
    let lg = c.logits(0);
    let (tokens, h) = (8192.0, 2048.0);
    // The final norm's kept tensors and its output, the head's input.
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    let compact = tokens * h * 2.0;
    let tile = 4096.0 * 32768.0 * 2.0;
    assert_eq!(lg.forward, norm + compact + tile);
    assert_eq!(lg.loss_backward, norm + compact + tile + tokens * h * 4.0);
    assert_eq!(
        lg.head_backward,
        norm + compact + tile + tokens * h * (4.0 + 2.0)
    );
    // No logits-sized tensor: under the Trainer's loss the same step
    // holds 16-bit logits and fp32 copies of them (GiBs).
    let mut standard = p.clone();
    standard.training.loss = Loss::Standard;
    let logits = tokens * 128_256.0;
    assert!(Ctx::new(&standard, None).logits(0).loss_backward > lg.loss_backward + 4.0 * logits);
    // A full fine-tune under autocast: the head trains in fp32, so each
    // tile's head rows are cast to bf16 and its gradient accumulates in an
    // fp32 buffer the vocabulary's size; the fp32 hidden states are cast
    // per 4,096 positions.
    let mut full = p.clone();
    full.training.finetune = Finetune::Full;
    full.training.precision = Precision::AmpBf16;
    let c = Ctx::new(&full, None);
    let f = c.logits(0);
    let hidden = c.residual_bytes();
    assert_eq!(hidden, 4.0);
    let accumulator = 128_256.0 * h * 4.0;
    let fwd = tokens * h * hidden + tile + 4096.0 * h * 2.0 + 32768.0 * h * 2.0;
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    assert_eq!(f.forward, norm + fwd);
    assert_eq!(f.loss_backward, norm + fwd + tokens * h * 4.0 + accumulator);
    // Its casts back to fp32 are the fp32 tensors themselves: the head's
    // gradient is the accumulator (counted with the gradients), the
    // hidden states' gradient the fp32 one.
    assert_eq!(f.head_backward, norm + fwd + tokens * h * 4.0);
}

/// DPO through the model's logits (TRL 0.29 to 1.13's `_compute_loss`):
/// at its metrics the policy's logits, the reference's and the
/// entropy's flattened copy — and, for 16-bit logits, the per-row
/// log-softmax outputs kept for backward — beside one 128-row entropy
/// chunk; fp32 logits (Accelerate's `convert_outputs_to_fp32` under the
/// Trainer's AMP) go through a logsumexp that keeps none, and their
/// backward holds four fp32 logits-sized tensors.
#[test]
fn trls_dpo_through_the_logits_keeps_them_with_the_references() {
    // 4 pairs × 2048 = 16,384 positions.
    let p = trl_dpo_lora_1b();
    let c = Ctx::new(&p, None);
    assert!(c.dpo_logits());
    let lg = c.logits(0);
    let (tokens, h, v) = (16384.0, 2048.0, 128_256.0);
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    let chunk = 128.0 * v * 3.0 * 2.0;
    assert_eq!(lg.forward, norm + 4.0 * 2.0 * tokens * v + chunk);
    assert_eq!(lg.loss_backward, norm + 2.0 * 2.0 * tokens * v);
    assert_eq!(lg.head_backward, norm + 2.0 * tokens * v);
    // The Trainer's AMP: fp32 logits.
    let mut amp = p.clone();
    amp.training.precision = Precision::AmpBf16;
    let c = Ctx::new(&amp, None);
    assert_eq!(c.dpo_logit_bytes(), 4.0);
    let lg = c.logits(0);
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    assert_eq!(
        lg.forward,
        norm + 3.0 * 4.0 * tokens * v + 128.0 * v * 3.0 * 4.0
    );
    assert_eq!(lg.loss_backward, norm + 4.0 * 4.0 * tokens * v);
    assert_eq!(lg.head_backward, norm + (4.0 + 2.0) * tokens * v);
    // A plain loop's autocast leaves them 16-bit; supervised fine-tuning
    // is the causal-LM loss as before.
    let mut plain = amp.clone();
    plain.set_framework(Framework::PlainPytorch);
    plain.training.loss = Loss::Standard;
    assert_eq!(Ctx::new(&plain, None).dpo_logit_bytes(), 2.0);
    let mut sft = p.clone();
    sft.training.objective = Objective::Sft;
    assert!(!Ctx::new(&sft, None).dpo_logits());
}

/// TRL 0.15 to 0.28's DPO returns no logits from `concatenated_forward`:
/// 16-bit, the policy's logits and their rows' log-softmax beside the mean
/// logits' half-sized mask copy, then the reference's logits and (from
/// 0.19) its hidden states (one residual-stream tensor per block and one
/// more) beside the kept rows — no entropy; fp32 (the Trainer's AMP), the
/// logits the logsumexps saved take the rows' place. Backward is 0.29's.
#[test]
fn trl_dpo_before_0_29_keeps_no_outputs_but_the_references_hidden_states() {
    let p = p_with(&trl_dpo_lora_1b(), TrlRelease::V0_19To0_28);
    let c = Ctx::new(&p, None);
    assert!(c.dpo_returns_no_logits());
    let lg = c.logits(0);
    let (tokens, h, v) = (16384.0, 2048.0, 128_256.0);
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    let hidden = 17.0 * tokens * h * 2.0;
    assert_eq!(c.dpo_reference_hidden_states(0), hidden);
    let logits = tokens * v;
    let reference = 2.5 * 2.0 * logits + hidden;
    assert!(
        (lg.forward - (norm + reference)).abs() < 1.0,
        "{}",
        lg.forward
    );
    assert_eq!(lg.loss_backward, norm + 2.0 * 2.0 * logits);
    // 0.15–0.18 ask for no hidden states; checkpointed, the adapters'
    // reference pass builds no cache either.
    let early = p_with(&p, TrlRelease::V0_15To0_18);
    assert_eq!(early.training.checkpointing, Checkpointing::Full);
    let c = Ctx::new(&early, None);
    assert!(c.dpo_returns_no_logits());
    assert_eq!(c.dpo_reference_hidden_states(0), 0.0);
    assert_eq!(c.dpo_reference_kv_cache(0), 0.0);
    assert!((c.logits(0).forward - (norm + 2.5 * 2.0 * logits)).abs() < 1.0);
    // Without checkpointing (or a full fine-tune's own reference model) the
    // pass keeps its keys and values: 2 × 16 blocks × 512 wide, 16-bit.
    let mut unchecked = early.clone();
    unchecked.training.checkpointing = Checkpointing::None;
    let kv = 2.0 * 16.0 * tokens * 512.0 * 2.0;
    assert_eq!(Ctx::new(&unchecked, None).dpo_reference_kv_cache(0), kv);
    let mut full = early.clone();
    full.training.finetune = Finetune::Full;
    assert_eq!(Ctx::new(&full, None).dpo_reference_kv_cache(0), kv);
    assert_eq!(
        Ctx::new(&p_with(&full, TrlRelease::V0_19To0_28), None).dpo_reference_kv_cache(0),
        0.0
    );
    // Without the reference's pass, the policy's moment: 2.5 logits.
    let mut pre = p.clone();
    pre.training.precompute_ref = true;
    let lg = Ctx::new(&pre, None).logits(0);
    assert!((lg.forward - (norm + 2.5 * 2.0 * logits)).abs() < 1.0);
    // The Trainer's AMP: the saved fp32 logits, the reference's and the copy.
    let mut amp = p.clone();
    amp.training.precision = Precision::AmpBf16;
    let c = Ctx::new(&amp, None);
    let lg = c.logits(0);
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    let reference = 2.5 * 4.0 * logits + c.dpo_reference_hidden_states(0);
    assert!((lg.forward - (norm + reference)).abs() < 1.0);
    assert_eq!(lg.loss_backward, norm + 4.0 * 4.0 * logits);
    // Only TRL reads it, and only for DPO.
    let mut llf = p.clone();
    llf.set_framework(Framework::LlamaFactory);
    llf.training.loss = Loss::Standard;
    llf.training.trl = TrlRelease::V0_19To0_28;
    assert!(!Ctx::new(&llf, None).dpo_returns_no_logits());
    let mut sft = p.clone();
    sft.training.objective = Objective::Sft;
    assert!(!Ctx::new(&sft, None).dpo_returns_no_logits());
    // The whole estimate falls by the 1.5 logits-sized 16-bit tensors (and
    // the entropy chunk) the forward no longer holds, less the reference's
    // hidden states.
    let current = estimate(&p_with(&p, TrlRelease::Current)).unwrap();
    let old = estimate(&p).unwrap();
    assert!(
        current.peak.allocated.0 as f64 - old.peak.allocated.0 as f64
            >= 1.5 * 2.0 * logits - hidden,
        "{:?} vs {:?}",
        current.peak.allocated,
        old.peak.allocated
    );
}

/// TRL 0.5 to 0.14's DPO gathers from a whole log-softmax of the logits:
/// 0.12–0.14 return nothing of the outputs (the policy's moment: logits,
/// log-softmax, the mean logits' mask copy; the reference's: the saved
/// log-softmax beside its logits and log-softmax, and its cache where the
/// pass runs unchecked); up to 0.11 the policy's logits are held through
/// the reference's pass, 0.9–0.11 with the chosen half's NLL (its
/// contiguous copy and saved log-softmax, half the rows each). Backward:
/// the saved log-softmax, the gather's gradient and the log-softmax's.
#[test]
fn trl_dpo_up_to_0_14_saves_a_whole_log_softmax() {
    let (tokens, h, v) = (16384.0, 2048.0, 128_256.0);
    let l = 2.0 * tokens * v;
    let base = trl_dpo_lora_1b();
    let forward = |trl| {
        let p = p_with(&base, trl);
        let c = Ctx::new(&p, None);
        let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
        let lg = c.logits(0);
        assert!(c.dpo_whole_log_softmax());
        assert_eq!(lg.loss_backward, norm + 3.0 * l);
        lg.forward - norm
    };
    // Checkpointed adapters: no cache in any release.
    assert!((forward(TrlRelease::V0_12To0_14) - 3.0 * l).abs() < 1.0);
    let f = forward(TrlRelease::V0_9To0_11);
    assert!((f - 4.5 * l).abs() < 1.0, "{} logits", f / l);
    assert!((forward(TrlRelease::V0_5To0_8) - 4.0 * l).abs() < 1.0);
    // 0.12–0.14's reference pass, unchecked, holds its cache beside its
    // log-softmax; 0.5–0.8's drops it before, where the logits outgrow it.
    let mut unchecked = base.clone();
    unchecked.training.checkpointing = Checkpointing::None;
    let kv = 2.0 * 16.0 * tokens * 512.0 * 2.0;
    let p = p_with(&unchecked, TrlRelease::V0_12To0_14);
    let c = Ctx::new(&p, None);
    assert_eq!(c.dpo_reference_kv_cache(0), kv);
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    assert!((c.logits(0).forward - norm - (3.0 * l + kv)).abs() < 1.0);
    let p = p_with(&unchecked, TrlRelease::V0_5To0_8);
    let c = Ctx::new(&p, None);
    assert_eq!(c.dpo_reference_kv_cache(0), kv);
    assert!((c.logits(0).forward - norm - 4.0 * l).abs() < 1.0);
    assert_eq!(
        Ctx::new(&p_with(&unchecked, TrlRelease::V0_9To0_11), None).dpo_reference_kv_cache(0),
        0.0
    );
    // Without the reference's pass, the policy's moment.
    let mut pre = p_with(&base, TrlRelease::V0_9To0_11);
    pre.training.precompute_ref = true;
    let c = Ctx::new(&pre, None);
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    assert!((c.logits(0).forward - norm - 3.0 * l).abs() < 1.0);
    // Not the selective releases, and only TRL's DPO.
    for trl in [
        TrlRelease::Current,
        TrlRelease::V0_15To0_18,
        TrlRelease::V0_19To0_28,
    ] {
        assert!(!Ctx::new(&p_with(&base, trl), None).dpo_whole_log_softmax());
    }
    let mut llf = p_with(&base, TrlRelease::V0_9To0_11);
    llf.set_framework(Framework::LlamaFactory);
    llf.training.loss = Loss::Standard;
    assert!(!Ctx::new(&llf, None).dpo_whole_log_softmax());
    // The whole estimate: 0.9–0.11 above the current release (the held
    // logits, log-softmax and NLL through the reference's pass), 0.12–0.14
    // below every other.
    let peak = |trl| estimate(&p_with(&base, trl)).unwrap().peak.allocated.0;
    assert!(peak(TrlRelease::V0_9To0_11) > peak(TrlRelease::V0_5To0_8));
    assert!(peak(TrlRelease::V0_9To0_11) > peak(TrlRelease::Current));
    assert!(peak(TrlRelease::V0_5To0_8) > peak(TrlRelease::V0_12To0_14));
    assert!(peak(TrlRelease::V0_12To0_14) < peak(TrlRelease::Current));
}

/// Under the Trainer's AMP a preference loss is taken after autocast has
/// exited: a full fine-tune's 16-bit weight copies are gone from the loss's
/// moment (their segments stay cached idle), and the reference's dropped
/// 16-bit output keeps its segment beside the log-softmax.
#[test]
fn a_preference_loss_after_autocast_meets_only_the_saved_weight_copies() {
    let mut full = p_with(&trl_dpo_lora_1b(), TrlRelease::V0_5To0_8);
    full.training.finetune = Finetune::Full;
    full.training.precision = Precision::AmpBf16;
    let c = Ctx::new(&full, None);
    assert!(c.loss_after_autocast());
    let casts = c.autocast_copies(0);
    assert!(casts.forward > casts.after_forward);
    let e = estimate(&full).unwrap();
    let fwd = e.stages[0]
        .phases
        .iter()
        .find(|p| p.phase == Phase::Forward)
        .unwrap();
    let tmp = fwd.breakdown.temporaries.as_f64();
    assert!(tmp < casts.forward, "{tmp} vs {}", casts.forward);
    let reserve = fwd.breakdown.allocator_reserve.as_f64();
    assert!(reserve >= casts.forward - casts.after_forward, "{reserve}");
    // A plain loop's autocast spans its loss: the copies are still there.
    let mut own = full.clone();
    own.set_framework(Framework::PlainPytorch);
    own.training.objective = Objective::Sft;
    assert!(!Ctx::new(&own, None).loss_after_autocast());
    // LoRA: the reference's dropped output idles beside its log-softmax.
    let mut lora = p_with(&trl_dpo_lora_1b(), TrlRelease::V0_5To0_8);
    lora.training.precision = Precision::AmpBf16;
    let c = Ctx::new(&lora, None);
    assert!(c.dpo_reference_dropped_output(0) > 0.0);
    assert_eq!(c.dpo_reference_dropped_output(0) * 2.0, c.dropped_output(0));
    // 0.12–0.14 free the policy's fp32 logits as its forward returns: the
    // reference's output is carved from them, one 16-bit segment idle.
    let one = Ctx::new(&p_with(&lora, TrlRelease::V0_12To0_14), None).dropped_output(0);
    assert_eq!(one * 2.0, c.dropped_output(0));
    for trl in [
        TrlRelease::V0_15To0_18,
        TrlRelease::Current,
        TrlRelease::V0_9To0_11,
    ] {
        assert_eq!(
            Ctx::new(&p_with(&lora, trl), None).dropped_output(0),
            c.dropped_output(0)
        );
    }
}

fn p_with(p: &Plan, trl: TrlRelease) -> Plan {
    let mut q = p.clone();
    q.training.trl = trl;
    q
}

/// ORPO through TRL's `ORPOTrainer` (no fused head, no reference): two
/// logits-sized tensors at its chosen rows' NLL (the logits, the chosen
/// half's contiguous copy and its log-softmax), three as the
/// log-probabilities' kernel runs backward, in the dtype the Trainer
/// hands them over in (fp32 under its AMP); LLaMA-Factory's ORPO runs
/// its DPO code without the reference's logits; the default loss under
/// TRL is the model's logits for ORPO and the fused head otherwise.
#[test]
fn orpo_counts_its_trainers_logits() {
    // 4 pairs × 2048 = 16,384 positions.
    let mut p = trl_lora_1b(4);
    p.training.objective = Objective::Orpo;
    assert_eq!(p.default_loss(), Loss::Standard);
    p.training.loss = p.default_loss();
    let c = Ctx::new(&p, None);
    assert!(c.orpo_logits() && !c.dpo_logits());
    let lg = c.logits(0);
    let (tokens, h, v) = (16384.0, 2048.0, 128_256.0);
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    assert_eq!(lg.forward, norm + 2.0 * 2.0 * tokens * v);
    assert_eq!(lg.loss_backward, norm + 3.0 * 2.0 * tokens * v);
    assert_eq!(lg.head_backward, norm + 2.0 * tokens * v);
    let mut amp = p.clone();
    amp.training.precision = Precision::AmpBf16;
    let c = Ctx::new(&amp, None);
    let lg = c.logits(0);
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    assert_eq!(lg.forward, norm + 2.0 * 4.0 * tokens * v);
    assert_eq!(lg.loss_backward, norm + 3.0 * 4.0 * tokens * v);
    assert_eq!(lg.head_backward, norm + (4.0 + 2.0) * tokens * v);
    // TRL ≤ 1.13's row-wise log-probabilities (no kernel): four and a
    // half fp32 tensors in backward; 16-bit logits as with the kernel.
    assert!(amp.training.logprob_kernel);
    let mut rowwise = amp.clone();
    rowwise.training.logprob_kernel = false;
    let lg = Ctx::new(&rowwise, None).logits(0);
    assert_eq!(lg.loss_backward, norm + 4.5 * 4.0 * tokens * v);
    let mut rowwise16 = p.clone();
    rowwise16.training.logprob_kernel = false;
    let (a, b) = (Ctx::new(&rowwise16, None), Ctx::new(&p, None));
    assert_eq!(a.logits(0).forward, b.logits(0).forward);
    assert_eq!(a.logits(0).loss_backward, b.logits(0).loss_backward);
    // SFT and DPO under TRL keep its fused head as their default.
    let mut sft = p.clone();
    sft.training.objective = Objective::Sft;
    assert_eq!(sft.default_loss(), Loss::TiledLogprob);
    sft.training.objective = Objective::Dpo;
    assert_eq!(sft.default_loss(), Loss::TiledLogprob);
    // LLaMA-Factory: the same counts, its logits fp32 in any precision.
    let mut lf = p.clone();
    lf.set_framework(Framework::LlamaFactory);
    lf.training.objective = Objective::Orpo;
    lf.training.loss = Loss::Standard;
    let c = Ctx::new(&lf, None);
    assert!(c.orpo_logits() && !c.dpo_logits());
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    assert_eq!(c.logits(0).loss_backward, norm + 3.0 * 4.0 * tokens * v);
}

/// LLaMA-Factory's KTO: at the forward's peak the policy's fp32 logits,
/// their log-softmax and the desirable and undesirable rows' copies, and
/// the reference's logits and log-softmax — five fp32 logits-sized
/// tensors over one sequence an example (four without a reference pass);
/// three in backward. TRL's KTO through the logits keeps the causal-LM
/// loss's count.
#[test]
fn llamafactory_kto_counts_its_logits() {
    // 8 examples × 2048 = 16,384 positions.
    let mut p = trl_lora_1b(8);
    p.set_framework(Framework::LlamaFactory);
    p.training.objective = Objective::Kto;
    p.training.loss = Loss::Standard;
    let c = Ctx::new(&p, None);
    assert!(c.kto_logits());
    let (tokens, h, v) = (16384.0, 2048.0, 128_256.0);
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    let lg = c.logits(0);
    assert_eq!(lg.forward, norm + 5.0 * 4.0 * tokens * v);
    assert_eq!(lg.loss_backward, norm + 3.0 * 4.0 * tokens * v);
    let mut pre = p.clone();
    pre.training.precompute_ref = true;
    let lg = Ctx::new(&pre, None).logits(0);
    assert_eq!(lg.forward, norm + 4.0 * 4.0 * tokens * v);
    let mut trl = p.clone();
    trl.set_framework(Framework::Trl);
    trl.training.objective = Objective::Kto;
    trl.training.loss = Loss::Standard;
    assert!(!Ctx::new(&trl, None).kto_logits());
}

/// TRL's chunked NLL (1.7 to 1.14's SFT default) keeps, beside the final
/// norm's tensors, the packed final hidden states and one 256-position
/// chunk's four fp32 tensors; in backward the hidden states' gradient too;
/// under autocast an fp32 head's cast for the chunk's matmul, and no whole
/// cast of the head kept with the others.
#[test]
fn trls_chunked_nll_keeps_the_packed_hidden_states_and_one_chunk() {
    // 8 × 2048 = 16,384 positions.
    let mut p = trl_lora_1b(8);
    p.training.loss = Loss::ChunkedNll;
    let c = Ctx::new(&p, None);
    let lg = c.logits(0);
    let (tokens, h, v) = (16384.0, 2048.0, 128_256.0);
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    let packed = tokens * h * 2.0;
    let chunk = 256.0 * v * 4.0 * 4.0;
    assert_eq!(lg.forward, norm + packed + chunk);
    assert_eq!(lg.loss_backward, norm + 2.0 * packed + chunk);
    assert_eq!(lg.head_backward, norm + 2.0 * packed);
    // LoRA over an fp32 base under autocast: the stream is fp32, and each
    // chunk's matmul casts the frozen head (one cast at a time); no whole
    // cast is kept with the blocks' casts.
    let mut amp = p.clone();
    amp.training.finetune.set_base_bits(32);
    amp.training.precision = Precision::AmpBf16;
    let c = Ctx::new(&amp, None);
    let lg = c.logits(0);
    let hidden = c.residual_bytes();
    let norm = (c.final_norm_kept_bytes() + 2.0) * tokens * h;
    let fwd = tokens * h * hidden + chunk + v * h * 2.0;
    assert_eq!(lg.forward, norm + fwd);
    let mut standard = amp.clone();
    standard.training.loss = Loss::Standard;
    let head_cast = v * h * 2.0;
    let kept = |p: &Plan| Ctx::new(p, None).autocast_copies(0).after_forward;
    assert!((kept(&standard) - kept(&amp) - head_cast).abs() < 1.0);
}

/// TRL's SFT metrics' fp32 copy of the shifted logits keeps a segment of
/// its own under the Trainer's AMP, checkpointed, over an adapter — where
/// the 2 MiB rounding tells it from the logits: Qwen's 151,936 entries ×
/// 4 sequences × 4 bytes is over 2 MiB a position, Llama-3's 128,256 is
/// not; not in pure bf16, nor for a full fine-tune, nor under TRL's later
/// losses.
#[test]
fn trls_sft_metrics_copy_keeps_a_segment_where_the_rounding_parts_it() {
    let mut p = trl_lora_1b(4);
    p.training.precision = Precision::AmpBf16;
    p.training.loss = Loss::Standard;
    p.training.checkpointing = Checkpointing::Full;
    assert_eq!(Ctx::new(&p, None).trl_metrics_copy_segment(0), 0.0);
    let mut qwen = p.clone();
    qwen.model.vocab = 151_936;
    let copy = 4.0 * 2047.0 * 151_936.0 * 4.0;
    assert_eq!(Ctx::new(&qwen, None).trl_metrics_copy_segment(0), copy);
    for change in [
        |p: &mut Plan| p.training.precision = Precision::Bf16,
        |p: &mut Plan| p.training.finetune = Finetune::Full,
        |p: &mut Plan| p.training.checkpointing = Checkpointing::None,
        |p: &mut Plan| p.training.loss = Loss::ChunkedNll,
        |p: &mut Plan| p.set_framework(Framework::HfAccelerate),
    ] {
        let mut q = qwen.clone();
        change(&mut q);
        assert_eq!(Ctx::new(&q, None).trl_metrics_copy_segment(0), 0.0);
    }
}

/// TRL's Llama-3.2-1B (hidden 2048, vocab 128,256) in pure bf16, LoRA r 8
/// on q and v over a bf16 base, `batch` × 2048 on one GPU.
/// [`trl_lora_1b`] at 4 pairs, DPO through the model's logits.
fn trl_dpo_lora_1b() -> Plan {
    let mut p = trl_lora_1b(4);
    p.training.objective = Objective::Dpo;
    p.training.loss = Loss::Standard;
    p
}

fn trl_lora_1b(batch: u32) -> Plan {
    let mut p = qlora("llama-3.2-1b", Framework::Trl);
    p.training.finetune.set_base_bits(16);
    p.training.precision = Precision::Bf16;
    p.training.micro_batch = batch;
    p.training.seq_len = 2048;
    p
}

/// A QLoRA plan (NF4 base, r 8 on q and v) of `model` under `fw`, one GPU.
fn qlora(model: &str, fw: Framework) -> Plan {
    let mut p = Plan {
        model: preset(model).unwrap().spec(),
        ..Plan::default()
    };
    p.parallel.num_gpus = 1;
    p.set_framework(fw);
    p.parallel.sharding = Sharding::None;
    p.training.finetune = Finetune::Lora {
        rank: 8,
        targets: LoraTargets::QV,
        base_bits: 4,
        dropout: false,
        variant: LoraVariant::Lora,
    };
    p
}

/// torchtitan's split of Llama-3.1-70B's 80 blocks (its
/// `_generate_llm_fqn_per_model_part`, 82 effective layers): 8 stages
/// of 10, 11, 10 × 5, 9; interleaved over 16 virtual stages (5 + 1 on the
/// second, 5 − 1 on the first and last) each rank sums its two chunks.
/// Others split the 80 evenly.
#[test]
fn torchtitan_counts_embedding_and_head_as_a_block_each_in_its_pipeline_split() {
    let mut p = Plan {
        model: preset("llama-3.1-70b").unwrap().spec(),
        ..Plan::default()
    };
    p.set_framework(Framework::Torchtitan);
    p.parallel.num_gpus = 64;
    p.parallel.tp = 8;
    p.parallel.pp = 8;
    let per_rank = |p: &Plan| -> Vec<f64> {
        let c = Ctx::new(p, None);
        (0..p.parallel.pp).map(|s| c.stage_layers(s)).collect()
    };
    let one_f_one_b = per_rank(&p);
    assert_eq!(one_f_one_b, [10., 11., 10., 10., 10., 10., 10., 9.]);
    p.parallel.pp_schedule = PipelineSchedule::Interleaved;
    p.parallel.virtual_stages = 2;
    let interleaved = per_rank(&p);
    assert_eq!(interleaved, [10., 11., 10., 10., 10., 10., 10., 9.]);
    p.parallel.virtual_stages = 5;
    // 82 over 40 virtual stages: 2 each, the first two 3, the first and
    // the last one fewer; rank 1 holds the second, rank 7 the last.
    assert_eq!(per_rank(&p), [10., 11., 10., 10., 10., 10., 10., 9.]);
    // 80 virtual stages (one block each on average): the last is empty.
    p.parallel.virtual_stages = 10;
    let v10 = per_rank(&p);
    assert_eq!(v10, [10., 11., 10., 10., 10., 10., 10., 9.]);
    assert_eq!(v10.iter().sum::<f64>(), 80.0);
    p.parallel.pp_schedule = PipelineSchedule::OneFOneB;
    p.set_framework(Framework::Megatron);
    assert_eq!(per_rank(&p), [10.0; 8]);
    // More chunks than blocks is refused before any split.
    p.set_framework(Framework::Torchtitan);
    p.parallel.pp_schedule = PipelineSchedule::Interleaved;
    p.parallel.virtual_stages = 11;
    assert!(estimate(&p).is_err());
}

#[test]
fn llm_int8_keeps_an_int8_copy_of_every_matmul_input() {
    // Llama-2-7B over an 8-bit base: q, k, v, o read 4096 wide; gate and
    // up 4096, down 11008.
    // bitsandbytes before 0.45.0 (the planner starts on a current one).
    let mut p = qlora("llama-2-7b", Framework::PlainPytorch);
    p.training.finetune.set_base_bits(8);
    p.training.precision = Precision::Bf16;
    p.training.bnb_0_43_2 = false;
    let c = Ctx::new(&p, None);
    assert_eq!(
        c.int8_input_copies(),
        (4.0 * 4096.0, 2.0 * 4096.0 + 11008.0)
    );
    // Each copy is kept in the block: one byte per element per token.
    let (_, with) = c.block_activations();
    let tokens = c.b * c.s;
    let mut p4 = p.clone();
    p4.training.finetune.set_base_bits(4);
    let c4 = Ctx::new(&p4, None);
    assert_eq!(c4.int8_input_copies(), (0.0, 0.0));
    let (_, without) = c4.block_activations();
    assert!((with - without - tokens * (6.0 * 4096.0 + 11008.0)).abs() < 1.0);
    // LitGPT fuses q, k and v into one matmul: one copy of their input.
    let mut p = qlora("llama-2-7b", Framework::Litgpt);
    p.training.finetune.set_base_bits(8);
    p.training.bnb_0_43_2 = false;
    let c = Ctx::new(&p, None);
    assert_eq!(c.int8_input_copies().0, 2.0 * 4096.0);
    // A stated recent bitsandbytes (0.45.0 on) quantizes no input of a
    // frozen matrix.
    p.training.bnb_0_43_2 = true;
    assert_eq!(Ctx::new(&p, None).int8_input_copies(), (0.0, 0.0));
}

#[test]
fn bitsandbytes_dequantizes_the_weight_it_multiplies() {
    // Llama-2-7B (untied head, 32000 × 4096; largest block matrix 4096 × 11008).
    let p = qlora("llama-2-7b", Framework::PlainPytorch);
    let c = Ctx::new(&p, None);
    let (block, head) = c.dequantized_weights(0);
    assert_eq!(block, c.e * 4096.0 * 11008.0);
    // transformers keeps the LM head in 16 bits: nothing to dequantize.
    assert_eq!(head, 0.0);
    assert_eq!(c.quantized_head_params(0), 0.0);
    // LitGPT (Fabric's BitsandbytesPrecision) quantizes it too, from an
    // fp16 copy: in bf16 its matmuls hold the fp16 dequantized matrix
    // beside the bf16 cast; in fp16 the cast is the same tensor.
    let mut p = qlora("llama-2-7b", Framework::Litgpt);
    p.training.precision = Precision::Bf16;
    let c = Ctx::new(&p, None);
    assert_eq!(c.quantized_head_params(0), 32000.0 * 4096.0);
    assert_eq!(c.dequantized_weights(0).1, (2.0 + 2.0) * 32000.0 * 4096.0);
    assert_eq!(c.dequantized_weights(0).0, (2.0 + 2.0) * 4096.0 * 11008.0);
    p.training.precision = Precision::Fp16;
    let c = Ctx::new(&p, None);
    assert_eq!(c.dequantized_weights(0).1, 2.0 * 32000.0 * 4096.0);
    // transformers' bitsandbytes (0.43 on) quantizes the weights as loaded.
    let mut p = qlora("llama-2-7b", Framework::PlainPytorch);
    p.training.precision = Precision::Bf16;
    let c = Ctx::new(&p, None);
    assert_eq!(c.dequantized_weights(0).0, 2.0 * 4096.0 * 11008.0);
    // A 16-bit base dequantizes nothing.
    let mut p = qlora("llama-2-7b", Framework::Litgpt);
    p.training.finetune.set_base_bits(16);
    assert_eq!(Ctx::new(&p, None).dequantized_weights(0), (0.0, 0.0));
    // DeepSeek-MoE-16B: its dense block's MLP (2048 × 10944) is the
    // largest matrix, not an expert's (2048 × 1408).
    let p = qlora("deepseek-moe-16b", Framework::PlainPytorch);
    let dense = p.model.dense_block();
    let c = Ctx::new(&p, dense.as_ref());
    assert_eq!(c.dequantized_weights(0).0, c.e * 2048.0 * 10944.0);
}

/// Tensor parallelism splits the blocks' projections everywhere, but the
/// edges as each framework's TP plan does: transformers' `tp_plan` (the
/// Trainer, Accelerate's ND-parallel, `from_pretrained(tp_plan="auto")`)
/// keeps the whole embedding on every TP rank and gathers the head's
/// output; torchtune and DeepSpeed's AutoTP split the embedding but gather
/// the logits; Megatron-LM and torchtitan split both and run a
/// vocab-parallel loss.
#[test]
fn tensor_parallel_splits_the_edges_as_the_framework_does() {
    let llama = preset("llama-3.1-8b").unwrap().spec();
    let (vocab, hidden) = (llama.vocab as f64, llama.hidden as f64);
    let embedding = llama.embedding_params() as f64;
    assert_eq!(embedding, vocab * hidden);
    for (fw, embedding_split, logits_split) in [
        (Framework::HfTrainer, 1.0, 1.0),
        (Framework::HfAccelerate, 1.0, 1.0),
        (Framework::Trl, 1.0, 1.0),
        (Framework::PlainPytorch, 1.0, 1.0),
        (Framework::Torchtune, 4.0, 1.0),
        (Framework::Deepspeed, 4.0, 1.0),
        (Framework::Megatron, 4.0, 4.0),
        (Framework::Torchtitan, 4.0, 4.0),
    ] {
        let mut p = Plan {
            model: llama.clone(),
            ..Plan::default()
        };
        p.set_framework(fw);
        p.parallel.num_gpus = 4;
        p.parallel.sharding = Sharding::Ddp;
        p.parallel.tp = 4;
        let c = Ctx::new(&p, None);
        // Untied: the head is split by the vocabulary whatever the plan.
        let head = vocab * hidden / 4.0;
        assert_eq!(
            c.edge_params(0),
            embedding / embedding_split + llama.norm_params() as f64 + head,
            "{fw:?}"
        );
        assert_eq!(c.lm_head_params(0), head, "{fw:?}");
        let mut one = p.clone();
        one.parallel.tp = 1;
        one.parallel.num_gpus = 1;
        let one = Ctx::new(&one, None);
        assert_eq!(
            c.logits_tensor(4.0),
            one.logits_tensor(4.0) / logits_split,
            "{fw:?}"
        );
        // The loss's tensors: as without TP where the logits are gathered.
        let (split, whole) = (c.logits(0).loss_backward, one.logits(0).loss_backward);
        if logits_split > 1.0 {
            assert!(split < whole / 2.0, "{fw:?}: {split} vs {whole}");
        } else {
            assert_eq!(split, whole, "{fw:?}");
        }
    }
    // A tied embedding is the head: split as the embedding is.
    let mut p = Plan {
        model: preset("llama-3.2-1b").unwrap().spec(),
        ..Plan::default()
    };
    assert!(p.model.tied_embeddings);
    p.parallel.num_gpus = 2;
    p.parallel.sharding = Sharding::Ddp;
    p.parallel.tp = 2;
    let tied = (p.model.vocab as f64) * p.model.hidden as f64;
    for (fw, split) in [(Framework::HfTrainer, 1.0), (Framework::Megatron, 2.0)] {
        p.set_framework(fw);
        assert_eq!(Ctx::new(&p, None).lm_head_params(0), tied / split, "{fw:?}");
    }
}
