//! Segments the caching allocator strands: idle blocks' and the loss's freed segments that other tensors cannot reuse.

use super::*;

impl<'a> Ctx<'a> {
    /// The segments a checkpointed forward's blocks made for their
    /// transients, idle beside the loss: the reserve's floor from the end of
    /// the forward through the LM head's backward, for a frozen base trained
    /// with recomputation. Under checkpointing each block's forward makes
    /// every tensor it would save and frees them as it goes; the blocks after
    /// it make theirs in the segments it left, while the checkpoints they keep
    /// (each block's input) split those segments, so some are made again.
    /// The loss's tensors, the step's largest (logits-sized, fp32), fit none
    /// of them and get segments of their own, and a frozen base makes nothing
    /// parameter-shaped in backward that could fill them (a full fine-tune's
    /// gradients and optimizer states do, [`Self::stranded_loss_segments`]).
    /// What stays idle is about what a recomputed block makes again
    /// (`recomputed_block`, [`Self::activations`]): replayed through the
    /// caching allocator's rules (`calibration/allocator_replay.py`, LoRA r16
    /// on every linear, checkpointed, sixteen families), the free bytes at
    /// the allocated peak (the loss's backward) were 0.4 to 2.2 times it,
    /// median 0.9 (Pythia-1.4B 2,451 MiB for 1,765; OPT-1.3B 2,432 for 2,088;
    /// Falcon-7B 4,644 for 3,413; Gemma-2B 4,005 for 4,184; FLAN-T5-base 629
    /// for 1,614; BLOOM-1b7's eager scores 10,340 for 4,708), almost all in
    /// segments of the blocks' widest transient; the H200's FSDP2 LoRA run
    /// with CPU offload (calibration/h200-2026-12-04, `peak-fsdp2off-*.txt`)
    /// held 5,366 MiB of segments made by its blocks' forward (PEFT's LoRA
    /// layers, the base linears) beside 16,034 MiB made by the loss: 24,432
    /// MiB reserved over an 18,273 MiB allocated peak. Where the allocator's
    /// share of the phase is larger (a long vocabulary's logits), it stands.
    /// Not with expandable segments (pages, not blocks), activation offload
    /// (the blocks come back from the host), on a stage without the loss, or
    /// with a loss that makes no logits-sized tensor (chunked, fused; a
    /// classification head), whose pieces the idle segments can hold.
    /// The segment of TRL's SFT metrics' copy of the logits, idle beside the
    /// loss's backward: with the Trainer's loss `SFTTrainer.compute_loss`
    /// (TRL 0.16 to 1.6; 1.7 to 1.14 under a named "nll" `loss_type`) logs
    /// the token accuracy and, from about 0.22, the entropy from the
    /// model's shifted logits, copying them (`.contiguous()`, or
    /// `entropy_from_logits`'s `reshape`; trl 0.16.0–1.6.0
    /// `trainer/sft_trainer.py`). Under the Trainer's AMP the logits are
    /// Accelerate's fp32 conversion (`convert_outputs_to_fp32`), which takes
    /// the segment the loss's upcast just freed, so the copy — one position a
    /// sequence short of the logits — maps a segment of its own; the loss's
    /// backward makes logits-sized tensors, which fit it only where the
    /// caching allocator's 2 MiB rounding ([`ALLOCATOR_LARGE_ROUND`]) makes
    /// the two sizes one. Replayed (`calibration/allocator_replay.py
    /// --trl-sft-logits`, trl 1.6.0's code copied; the segment history):
    /// checkpointed LoRA under AMP, Qwen3-0.6B and Qwen2.5-1.5B (151,936
    /// entries) reserved 4.2 and 4.7 GiB over the count without it, Gemma-2-2B
    /// (256,000) 8.0, against copies of 4.6, 4.6 and 7.8 GiB; Llama-3.2-1B's
    /// and SmolLM2-360M's (128,256 and 49,152 entries × 4 sequences × 4 bytes,
    /// under 2 MiB a position) round to the logits' own size and were within
    /// 0.3 GiB. Only where the loss's segments are stranded anyway
    /// ([`Self::loss_strands_segments`]: an adapter, whose frozen base makes
    /// nothing parameter-shaped to fill them) under full checkpointing: in
    /// pure bf16 the 16-bit copy fits the freed fp32 upcast's segment, and
    /// without checkpointing the replays reused it.
    pub(super) fn trl_metrics_copy_segment(&self, s: u32) -> f64 {
        let t = &self.plan.training;
        let applies = self.plan.framework == Framework::Trl
            && t.objective == Objective::Sft
            && t.loss == Loss::Standard
            && t.checkpointing == Checkpointing::Full
            && self.runs_autocast()
            && !self.compiled_loss()
            && self.loss_strands_segments(s);
        if !applies {
            return 0.0;
        }
        self.shifted_logits_apart(FP32)
    }

    /// The shifted logits (one position a sequence short) at `bytes` a
    /// logit, where the caching allocator's 2 MiB rounding
    /// ([`ALLOCATOR_LARGE_ROUND`]) makes their segment smaller than the full
    /// logits' — so that it cannot hold a full-sized tensor. That is certain
    /// once the position each sequence drops spans a rounding step (Qwen's
    /// 151,936 and Gemma's 256,000 entries over four fp32 sequences); under
    /// it the two sizes may round to one (Llama-3's 128,256 and SmolLM2's
    /// 49,152 did in the replays) and nothing is counted, so the term never
    /// falls as the batch or the sequence grows.
    pub(super) fn shifted_logits_apart(&self, bytes: f64) -> f64 {
        let positions = self.logit_positions();
        let sequences = positions / self.decoder_s().max(1.0);
        let per_position = self.m.vocab as f64 / self.tv * bytes;
        if sequences * per_position >= ALLOCATOR_LARGE_ROUND {
            (positions - sequences) * per_position
        } else {
            0.0
        }
    }

    /// The segments a reference-free preference loss's forward leaves that
    /// its backward's logits-sized tensors cannot use ([`Self::orpo_logits`]):
    /// TRL's ORPO makes its chosen half's contiguous copy and that half's
    /// log-softmax in segments of half the logits (one logits-sized tensor's
    /// worth, idle once the half's NLL has run backward), and wherever the
    /// caching allocator's 2 MiB rounding ([`ALLOCATOR_LARGE_ROUND`]) parts
    /// the shifted logits' size from the logits', a shifted tensor's segment
    /// cannot hold the full-sized gradient the shift's `slice_backward`
    /// makes. Replayed (`calibration/allocator_replay.py --trl-orpo-kernel`,
    /// `--llamafactory-orpo`, the segment history): Qwen3-0.6B (151,936
    /// entries), checkpointed LoRA in pure bf16, TRL's ORPO reserved four
    /// logits-sized segments and two halves over a peak of three tensors,
    /// LLaMA-Factory's four fp32 ones (and its dropped 16-bit output) over
    /// three.
    pub(super) fn orpo_idle_segments(&self, s: u32) -> f64 {
        if !self.orpo_logits() || !self.loss_strands_segments(s) {
            return 0.0;
        }
        let l = self.dpo_logit_bytes();
        let halves = if self.plan.framework == Framework::LlamaFactory {
            0.0
        } else if l > self.e {
            // Under the Trainer's AMP one fp32 half fits the segment of the
            // 16-bit output dropped for the fp32 logits ([`Self::dropped_output`]).
            self.logits_tensor(l) / 2.0
        } else {
            self.logits_tensor(l)
        };
        halves + self.shifted_logits_apart(l)
    }

    pub(super) fn idle_block_transients(&self, s: u32, recomputed_block: f64) -> f64 {
        if self.loss_strands_segments(s) {
            recomputed_block
        } else {
            0.0
        }
    }

    /// The segments a checkpointed forward's blocks made for their
    /// transients ([`Self::idle_block_transients`]), idle through the
    /// backward and the step of a full fine-tune whose head makes no
    /// logits-sized tensor — a classifier (a reward model), or a language
    /// model whose loss never holds the logits whole (TRL's chunked NLL and
    /// fused LM head, a fused linear cross-entropy): the checkpoints the
    /// forward kept split those segments (each block's output lands in the
    /// free part of one its transients left, so the next block's widest
    /// transient takes a new one), and nothing logits-sized comes to be
    /// stranded beside them as a standard loss's full fine-tune strands
    /// ([`Self::stranded_loss_segments`]): the first step's optimizer states
    /// take the blocks' freed segments instead, and the second step's blocks
    /// map theirs again. Replayed through the
    /// caching allocator's rules (`calibration/allocator_replay.py
    /// --classifiers`, checkpointed bf16 full fine-tunes): the reserve over
    /// the allocated peak was 0.15 to 1.6 times what a recomputed block
    /// makes, median 1.0 (SmolLM2-360M: fifteen 80 MiB segments made by the
    /// first forward's MLPs; reserved −13.0 → −5.5 %, RoBERTa-large −11.4 →
    /// −5.5 %, Llama-3.2-1B −5.0 → +1.4 %; Gemma's eager blocks, whose
    /// recomputed scores the count includes, +3.7 → +13.3 %). The same
    /// replays of TRL's chunked NLL (`--trl-chunked-nll`), its fused head
    /// (`--trl-fused-head`) and its DPO through that head (`--trl-dpo`),
    /// pure bf16 full fine-tunes checkpointed (Qwen3-0.6B, SmolLM2-360M,
    /// Qwen2.5-1.5B, Llama-3.2-1B, Gemma): 0.55 to 1.9 times, median 1.4
    /// (reserved −17.7 … −2.1 % → −10.8 … +8.0 %). Their segment history
    /// shows the states' part: SmolLM2-360M's first step made 1.35 GiB of
    /// bf16 AdamW states but mapped 0.46 GiB at its step — the rest took the
    /// segments the blocks' transients had freed — and the second step's
    /// forward then mapped twelve 80 MiB MLP segments again, its backward
    /// nine more (1.58 GiB over the first step's reserve; Qwen3-0.6B 1.82,
    /// Llama-3.2-1B 1.99, Gemma-2-2B 4.05, Gemma-2B 2.95). Where the
    /// allocator's share of the phase is larger, it stands (every autocast
    /// run replayed: its fp32 weights and states make the share the larger).
    /// A language model's only on one GPU, `nn.DataParallel` and DDP, which
    /// make the states on the blocks' stream (ZeRO and FSDP make them from
    /// buffers of their own, as [`Self::stranded_loss_segments`] says).
    pub(super) fn idle_block_segments_without_logits(&self, recomputed_block: f64) -> f64 {
        let no_logits = match self.m.head {
            ModelHead::Classifier => true,
            ModelHead::Lm => {
                matches!(
                    self.plan.training.loss,
                    Loss::ChunkedNll | Loss::TiledLogprob | Loss::Fused
                ) && self.plan.parallel.sharding.is_replicated()
            }
        };
        if self.full_finetune() && no_logits && !self.plan.runtime.expandable_segments {
            recomputed_block
        } else {
            0.0
        }
    }

    /// The segment of the 16-bit logits a loop drops before backward, idle
    /// at the loss's backward: the Trainer's `compute_loss` returns only the
    /// loss, so the model's output is freed as backward starts
    /// ([`Self::loop_holds_logits`]), but the caching allocator keeps its
    /// segment, and the loss's backward makes only fp32 logits-sized
    /// tensors (the upcast's gradients), which it cannot hold; the first
    /// tensor it fits, the logits' own 16-bit gradient, comes at the head's
    /// backward. Replayed through the allocator's rules
    /// (`calibration/allocator_replay.py`'s loop with the output deleted
    /// before `loss.backward()`, the Trainer's order; torch 2.15,
    /// transformers 5.24, peft 0.21.2): the reserved peak stays where the
    /// loop holding the output put it while the allocated peak falls by the
    /// logits, so the reserve over it grows by exactly their bytes —
    /// Llama-3.1-8B LoRA 4 × 2048 checkpointed +1.957 GiB (29.357 allocated
    /// as the H200's Trainer run measured 29.36, 33.658 reserved against its
    /// 34.11), Llama-3.2-1B 8 × 2048 +3.914 (and under autocast), Pythia
    /// +1.535, Gemma-2B +7.812, Qwen3-0.6B +4.637, Falcon-7B +1.984, GPT-2
    /// large +0.768, OPT-1.3B and Pythia without checkpointing +0.768. None
    /// where the loss's tensors are no wider than the logits: fp32 logits
    /// (Llama-3.2-1B in fp32, +0.000), or a loss in the logits' dtype
    /// (T5's and BART's bf16 cross-entropy, +0.000). A full fine-tune is left
    /// to [`Self::stranded_loss_segments`] (the measured Trainer runs that
    /// train every weight sit 2–7 % above their reserved peak without it).
    /// Only on one GPU, `nn.DataParallel`, DDP and ZeRO-1/2 (which over a
    /// frozen base flattens only the adapters): ZeRO-3 and FSDP free large
    /// segments on the default stream as they shard and move the
    /// model at start-up, and the logits are carved from those — the H200's
    /// ZeRO-3 and FSDP1 LoRA runs (the Trainer's order too) list no segment
    /// of the logits' size at their reserved peak (`peak-ds3-*.txt`,
    /// `peak-fsdp1-*.txt`: only the loss's three fp32 ones, beside
    /// start-up's), and sat within 2 % of it without this term (+4 to +6 %
    /// with it). The allocator's share of the phase, where larger, stands (a
    /// run without checkpointing whose activations dwarf the logits).
    pub(super) fn dropped_logits_segment(&self, s: u32) -> f64 {
        let unsharded = self.plan.parallel.sharding.is_replicated();
        // ZeRO-1/2 flattens only what trains: over a frozen base its
        // start-up segments ([`Self::zero12_flatten_cache`]) are the
        // adapters', at most their partition in fp32, which the logits
        // outgrow as they outgrow them.
        let small_start_up = || {
            self.zero12() && self.stage_trainable(s) / self.shard * FP32 < self.loss_logits_tensor()
        };
        // ZeRO-3 with everything on the host builds the model under
        // `zero.Init`, each parameter partitioned to the host as it is made:
        // start-up leaves a module's worth of segments (2,258 MiB for the
        // H200's Llama-3.2-3B, `peak-ds3off-l3b-*.txt`, beside its 4,008 MiB
        // logits, which mapped their own), and the GPU makes nothing
        // parameter-shaped to fill theirs, a full fine-tune included.
        let zero3_on_host = self.plan.parallel.sharding == Sharding::Zero3
            && self.offload.params_offloaded()
            && self.offload.optimizer_offloaded();
        if zero3_on_host || (self.loss_strands_segments(s) && (unsharded || small_start_up())) {
            self.dropped_output(s)
        } else {
            0.0
        }
    }

    /// The segment idle as DPO's reference pass takes its log-probabilities
    /// at the forward's end: under the Trainer's AMP the reference's 16-bit
    /// output is dropped for its fp32 copy, and the log-softmax that follows
    /// is twice its size — one of the outputs [`Self::dropped_output`]
    /// counts, where that segment stays idle
    /// ([`Self::dropped_logits_segment`]). It bears on the
    /// estimate where the reference's moment is the step's peak: TRL 0.5 to
    /// 0.11, whose policy's logits and log-softmax are still held then
    /// (replayed, `calibration/allocator_replay.py --trl-dpo-logits-0.8`,
    /// `-0.11`: Llama-3.2-1B's AMP LoRA, checkpointed, 2 × 2 × 2048, reserved
    /// 4.63 GiB over its allocated peak, where the count gave 1.56 without
    /// this 1.96 GiB segment and gives 2.95 with it, the phase's floor; the
    /// segment is read from the code, not listed from the replay's segment
    /// history).
    pub(super) fn dpo_reference_dropped_output(&self, s: u32) -> f64 {
        if self.dpo_logits() && !self.plan.training.precompute_ref {
            self.dropped_logits_segment(s) / self.dpo_dropped_outputs()
        } else {
            0.0
        }
    }

    /// The 16-bit outputs a DPO step with a reference pass leaves idle under
    /// the Trainer's AMP ([`Self::dropped_output`]): two
    /// ([`DPO_DROPPED_OUTPUTS`]) where the policy's fp32 logits outlive its
    /// forward — returned (up to TRL 0.11, from 0.29), or saved by a
    /// logsumexp (0.15–0.28's `selective_log_softmax`) — so the reference's
    /// output maps a segment of its own; one where a whole log-softmax saves
    /// its output and the logits go as the forward returns (TRL 0.12–0.14):
    /// the reference's output is carved from their freed block (the replay of
    /// 0.13.0's code, Llama-3.2-1B's AMP LoRA checkpointed, 2 × 2 × 2048,
    /// maps one 2,004 MiB segment in its first step where 0.8.6's maps two,
    /// and 0.11.4's three with its NLL's copy; `allocator_replay.py
    /// --segments`, the spec ending `:lora`).
    fn dpo_dropped_outputs(&self) -> f64 {
        if self.dpo_whole_log_softmax() && self.dpo_returns_no_logits() {
            1.0
        } else {
            DPO_DROPPED_OUTPUTS
        }
    }

    /// The 16-bit logits a loop drops before backward on the last stage,
    /// when the loss works on wider logits-sized tensors that cannot reuse
    /// their segment ([`Self::dropped_logits_segment`] says where that
    /// segment stays idle); zero otherwise.
    pub(super) fn dropped_output(&self, s: u32) -> f64 {
        let logits = if self.promoted_logits() { FP32 } else { self.e };
        // DPO through the model's logits: under the Trainer's AMP the
        // policy's and the reference's 16-bit outputs are each dropped for
        // their fp32 copies, and the policy's segment, split by the small
        // tensors of its log-probabilities, no longer holds the reference's:
        // two idle segments beside the four fp32 tensors of backward (the
        // allocator's replay of the AMP LoRA runs, `--trl-dpo-logits`).
        // Without a reference pass (precomputed, or a reference-free loss)
        // only the policy's output is dropped.
        let (outputs, wider) = if self.dpo_logits() && !self.plan.training.precompute_ref {
            (self.dpo_dropped_outputs(), self.dpo_logit_bytes() > logits)
        } else if self.dpo_logits() || self.orpo_logits() {
            (1.0, self.dpo_logit_bytes() > logits)
        } else {
            let wider = !self.compiled_loss()
                && !self.defaults().inplace_cross_entropy
                && !self.half_to_float_loss()
                && !self.loop_holds_logits()
                && self.loss_bytes() > logits;
            (1.0, wider)
        };
        let dropped = wider
            && self.is_last(s)
            && self.plan.training.loss == Loss::Standard
            && self.m.head == ModelHead::Lm
            && !self.plan.runtime.expandable_segments;
        if dropped {
            outputs * self.logits_tensor(logits)
        } else {
            0.0
        }
    }

    /// The loss's segments stranded by the first step, which every later
    /// step's loss reserves again: the segments of `L` bytes (one upcast
    /// logits tensor) the optimizer's states land in — `states + L/2`, the
    /// segments a run of that many bytes touches when it begins halfway into
    /// one, at least one segment and at most the loss's
    /// [`LOSS_STANDARD_TENSORS`]. The replays counted one segment for states
    /// of 0.3 and 0.6 `L`, about two for 1.2 and 1.5 `L`, three for 6 `L`; a
    /// whole number of segments, `⌈states / L⌉·L`, fits them too but falls as
    /// the sequence grows past a multiple of the states, where this grows
    /// with it.
    ///
    /// The mechanism, from `calibration/allocator_replay.py` (each H200 run's
    /// allocations replayed through the caching allocator's rules,
    /// `c10/cuda/CUDACachingAllocator.cpp`: best fit within a pool, blocks
    /// split, segments never returned; it reproduces the H200 runs'
    /// `max_memory_reserved` within 0.6 % for 24 of 33): the fp32 loss
    /// tensors are the step's largest allocations, so the first step gives
    /// each a segment of its own. Under full checkpointing, once they are
    /// freed those segments are the only large free blocks, so best fit puts
    /// the gradients and then the optimizer's states, made by the first step,
    /// into them; a state lives on, and the second step's loss finds no whole
    /// block and maps its segments again. Qwen2.5-7B, 2 × 4096, checkpointed:
    /// 73.5 GiB allocated, 87.8 reserved (measured and replayed alike), three
    /// 4.6 GiB fp32 logits tensors more than the first step's peak. Only a
    /// full fine-tune's states stray there (an adapter's, under 1 MiB a
    /// tensor, are in the small pool), only the eager standard loss makes
    /// logits-sized tensors, expandable segments map pages, not blocks, and
    /// only one GPU, `nn.DataParallel` and DDP make the gradients and states
    /// on the loss's stream: ZeRO and FSDP make them from communication
    /// buffers on streams of their own, whose blocks the allocator keeps
    /// apart (the H200's FSDP2 Llama-3.2-3B reserved 12.5 GiB over its
    /// allocated peak where this term would add 23.5).
    pub(super) fn stranded_loss_segments(&self, s: u32, states: f64) -> f64 {
        let t = &self.plan.training;
        if !self.plan.parallel.sharding.is_replicated() {
            return 0.0;
        }
        let standard = t.loss == Loss::Standard
            && !t.compile
            && !self.defaults().inplace_cross_entropy
            && self.m.head == ModelHead::Lm;
        if self.plan.runtime.expandable_segments
            || !self.is_last(s)
            || !standard
            || t.checkpointing != Checkpointing::Full
            || !self.full_finetune()
            || self.paged_optimizer()
            || states <= 0.0
        {
            return 0.0;
        }
        // DPO's logits-sized tensors are its logits, in the dtype it reads
        // them in ([`Self::dpo_logits`]): 16-bit in a pure-bf16 run (the
        // replayed full fine-tunes, `--trl-dpo-logits`, within −6.2 … +6.6 %
        // reserved with them; −11.2 … +0.7 % without the term, up to +16 %
        // counting fp32 ones).
        let l = if self.dpo_logits() || self.orpo_logits() {
            self.logits_tensor(self.dpo_logit_bytes())
        } else {
            self.loss_logits_tensor()
        };
        if l <= 0.0 {
            return 0.0;
        }
        (states + l / 2.0).max(l).min(LOSS_STANDARD_TENSORS * l)
    }

    /// The backward's reserve raised to what the second step's loss needs:
    /// what the first step reserved at its own peak — its forward or backward
    /// without the states it had not yet made, with the allocator's share or,
    /// where more, the segments its checkpointed blocks' transients left idle
    /// (`recomputed_block`, as [`Self::idle_block_transients`] counts them for
    /// an adapter: until the first backward nothing parameter-shaped exists
    /// to fill them), or its optimizer step, whose parameter-shaped tensors
    /// split the blocks backward freed (the replays reserved within 0.5 % of
    /// allocated there) — plus [`Self::stranded_loss_segments`]. GPT-Neo-1.3B
    /// in bf16 at 8 × 2048, checkpointed (`calibration/allocator_replay.py
    /// --segments --families gpt-neo-1.3b:bf16:ckpt:8:2048`): its first
    /// forward mapped 17.8 GiB of segments for an 11.9 GiB allocated peak (its
    /// eager blocks' fp32 scores), its first step reserved 20.9 GiB, and the
    /// second step's loss mapped two 3,142 MiB logits segments again, 27.0 GiB
    /// reserved (−17.2 % counted with the share alone, −3.7 % with the blocks'
    /// segments). The encoder–decoders' full fine-tunes go over with it as
    /// their adapters did (T5-base +7.2 → +13.8 %, its LoRA row +8.7 %: their
    /// forward left 0.2 GiB idle, less than a recomputed block).
    pub(super) fn reserve_stranded_loss_segments(
        &self,
        s: u32,
        backward: &mut PhaseEstimate,
        forward: &PhaseEstimate,
        step: &PhaseEstimate,
        states: f64,
        recomputed_block: f64,
    ) {
        let stranded = self.stranded_loss_segments(s, states);
        if stranded <= 0.0 {
            return;
        }
        let frac = self.reserve_fraction();
        let before_states = |p: &PhaseEstimate| {
            let a = p.counters.allocated.as_f64() - states;
            a + (a * frac).max(recomputed_block)
        };
        let first_step = before_states(forward)
            .max(before_states(backward))
            .max(step.counters.allocated.as_f64());
        let needed = Bytes::from_f64(first_step + stranded);
        if needed > backward.counters.reserved {
            backward.breakdown.allocator_reserve =
                needed.saturating_sub(backward.counters.allocated);
            backward.counters.reserved = backward.breakdown.reserved();
            backward.counters.device_used = backward.breakdown.device_used();
        }
    }
}
