//! The logits and the loss: how each loss implementation and trainer holds them, forward and backward.

use super::*;

impl<'a> Ctx<'a> {
    /// Positions the LM head and the loss see on the last stage: an
    /// encoder–decoder's head reads the decoder's positions, and
    /// `nn.DataParallel` gathers every replica's output on GPU 0, where a
    /// loop computes the loss over them all — unless each replica computes
    /// its own share's ([`Self::replicas_compute_loss`]).
    pub(super) fn logit_positions(&self) -> f64 {
        let tokens = self.b * self.decoder_s();
        if self.plan.parallel.sharding == Sharding::DataParallel && !self.replicas_compute_loss() {
            tokens * self.plan.parallel.num_gpus as f64
        } else {
            tokens
        }
    }

    /// Under `nn.DataParallel`, each replica computes its own share's loss:
    /// the Trainer (and the tools on it) passes the labels into the model's
    /// `forward`, so a transformers model's standard loss runs on every
    /// replica (`compute_loss`: `outputs = model(**inputs)`; `training_step`:
    /// `loss.mean()` over the replicas' losses when `n_gpu > 1`;
    /// `_wrap_model` wraps in `nn.DataParallel` when `n_gpu > 1` — read in
    /// transformers 4.46.3 `trainer.py`). GPU 0 then gathers the replicas'
    /// outputs — the loss and the logits —
    /// ([`Self::data_parallel_gathered_logits`]), not their loss's tensors.
    /// A preference trainer computes its loss from the gathered logits, as a
    /// hand-written loop does, and so does the Trainer with a label smoother
    /// or a `compute_loss_func` (it pops the labels), which no plan sets.
    pub(super) fn replicas_compute_loss(&self) -> bool {
        self.plan.parallel.sharding == Sharding::DataParallel
            && self.plan.framework.trains_through_trainer()
            && self.plan.training.objective == Objective::Sft
            && self.plan.training.loss == Loss::Standard
    }

    /// The logits `nn.DataParallel` gathers on GPU 0 when the replicas
    /// computed their own loss ([`Self::replicas_compute_loss`]): every
    /// replica's, in the dtype the model returns them (`Gather` →
    /// `comm.gather`, a new tensor on the output device: torch 2.5
    /// `nn/parallel/_functions.py`), alive from the end of the forward until
    /// `compute_loss` returns the loss alone, before backward.
    pub(super) fn data_parallel_gathered_logits(&self) -> f64 {
        let p = &self.plan.parallel;
        if !self.replicas_compute_loss()
            || !p.has_data_parallel_replicas()
            || self.m.head != ModelHead::Lm
        {
            return 0.0;
        }
        p.num_gpus as f64 * self.logit_positions() * self.m.vocab as f64 / self.tv
            * self.held_logit_bytes()
    }

    /// One logits-sized tensor of the loss on this rank (vocab-parallel over
    /// TP), in the loss's dtype: the step's largest allocation, which the
    /// loss's reserve terms compare with the segments cached beside it.
    pub(super) fn loss_logits_tensor(&self) -> f64 {
        self.logits_tensor(self.loss_bytes())
    }

    /// One logits-sized tensor on this rank (split over TP under a
    /// vocab-parallel loss, [`Framework::tp_vocab_parallel_loss`]) of
    /// `bytes` per logit.
    pub(super) fn logits_tensor(&self, bytes: f64) -> f64 {
        self.logit_positions() * self.m.vocab as f64 / self.tv * bytes
    }

    /// The stage where the loss's logits-sized tensors meet cached segments
    /// they cannot use and a frozen base makes nothing parameter-shaped to
    /// fill: the last, under a standard loss over an LM head, without
    /// expandable segments (pages, not blocks) — where
    /// [`Self::idle_block_transients`] and [`Self::dropped_logits_segment`]
    /// can hold.
    pub(super) fn loss_strands_segments(&self, s: u32) -> bool {
        self.is_last(s)
            && self.plan.training.loss == Loss::Standard
            && self.m.head == ModelHead::Lm
            && !self.full_finetune()
            && !self.plan.runtime.expandable_segments
    }

    /// Logits and loss on the last stage (split over TP under a vocab-parallel
    /// loss, [`Self::logits_tensor`]): what is
    /// alive at the end of the loss forward, as backward starts (the loss's
    /// backward) and at the LM head's backward, once the loss's tensors are
    /// freed and the 16-bit gradient of the logits (with whatever logits the
    /// loop still holds) meets the head's weight gradient.
    pub(super) fn logits(&self, s: u32) -> LogitsBytes {
        if !self.is_last(s) {
            return LogitsBytes::default();
        }
        let m = self.m;
        let tokens = self.logit_positions();
        let v = m.vocab as f64 / self.tv;
        let h = m.hidden as f64;
        // Final norm input (fp32 copy) and output (head input): the output
        // gathered whole before the head where the framework's TP keeps its
        // gathered inputs (torchtitan's `pre_lm_head_norm_config`; counted
        // with `calibration/saved_tensors.py --tp`: the norm and head keep
        // 10.00·hidden bytes per token unsplit, 4.00 under TP 4 with
        // sequence parallelism — the head's 16-bit input, 2.00, whole).
        let final_norm = (self.final_norm_kept_bytes() / self.rep
            + self.e / self.colwise_input_split())
            * tokens
            * h;
        if m.head == ModelHead::Classifier {
            // A classification head's logits are a few numbers per token (or
            // per sequence, pooled): nothing vocab-sized.
            return LogitsBytes {
                forward: final_norm,
                loss_backward: final_norm,
                head_backward: final_norm,
                norm_backward: self.final_norm_backward(tokens),
                blocks: 0.0,
                step: 0.0,
            };
        }
        let held = if self.loop_holds_logits() {
            self.held_logit_bytes()
        } else {
            0.0
        };
        // torchtune before 0.3: the shifted fp32 copy the recipe's `logits`
        // holds (its transpose is the loss's input) and, where the recipe
        // keeps it, through backward and the step
        // ([`Self::torchtune_shifted_logits`]).
        let (shifted, kept) = self.torchtune_shifted_logits();
        let compiled = self.plan.training.compile;
        let compiled_loss = self.compiled_loss();
        // Final-logit soft-capping keeps its tanh output wherever the logits
        // are taken whole (a preference loss's policy's; the reference's,
        // under `no_grad`, is not kept).
        let softcap = if self.m.softcap { self.e } else { 0.0 };
        // Bytes per logit at the end of the loss forward and as backward starts.
        let (fwd, bwd) = match self.plan.training.loss {
            // A transformers model computes its loss inside `forward`, so a
            // compiled model fuses the upcast, log-softmax and NLL into kernels
            // that save nothing logits-sized; backward makes one fp32-sized
            // gradient (measured on the H200: +4 B per logit over the held
            // logits at the start of backward, compiled Llama-3.2-1B and GPT-2).
            // A loss computed outside the compiled code runs eagerly
            // ([`Framework::compile_covers_unchunked_loss`]).
            // TRL's DPO through the model's logits: the policy's, the
            // reference's and the metrics' copy at the forward's end.
            Loss::Standard if self.dpo_logits() => {
                let l = self.dpo_logit_bytes();
                // `selective_log_softmax` (0.15 on): a 16-bit run keeps its
                // rows' log-softmax, an fp32 one the logits.
                let rows = if l < FP32 { l } else { 0.0 };
                let selective_bwd = if l < FP32 {
                    DPO_LOGITS_16BIT_BWD_TENSORS * l
                } else {
                    DPO_LOGITS_FP32_BWD_TENSORS * l
                };
                if self.dpo_whole_log_softmax() {
                    let (fwd, bwd) = self.dpo_whole_log_softmax_moments(l, s, tokens * v);
                    (fwd + softcap, bwd + softcap)
                } else if self.dpo_returns_no_logits() {
                    // TRL 0.15–0.28. What backward keeps of the policy's
                    // log-probabilities, the logits' size either way: the
                    // fp32 logits a logsumexp saved, or the 16-bit rows'
                    // log-softmax.
                    let saved = l;
                    // The policy's mask copy, beside its 16-bit logits while
                    // their rows are built.
                    let policy = saved + rows + DPO_MEAN_LOGITS_COPY * l;
                    // The reference's logits and mask copy, with what else
                    // its pass returns (hidden states, a cache).
                    let returned =
                        self.dpo_reference_hidden_states(s) + self.dpo_reference_kv_cache(s);
                    let reference = if self.plan.training.precompute_ref {
                        0.0
                    } else {
                        saved + l + DPO_MEAN_LOGITS_COPY * l + returned / (tokens * v).max(1.0)
                    };
                    (policy.max(reference) + softcap, selective_bwd + softcap)
                } else {
                    // Reference log-probabilities computed before training: no
                    // reference logits beside the policy's.
                    let tensors = if self.plan.training.precompute_ref {
                        DPO_LOGITS_METRICS_TENSORS - 1.0
                    } else {
                        DPO_LOGITS_METRICS_TENSORS
                    };
                    (tensors * l + rows + softcap, selective_bwd + softcap)
                }
            }
            Loss::Standard if self.orpo_logits() => {
                let l = self.dpo_logit_bytes();
                let rowwise = self.plan.framework != Framework::LlamaFactory
                    && !self.plan.training.logprob_kernel
                    && l >= FP32;
                let bwd = if rowwise {
                    ORPO_ROWWISE_FP32_BWD_TENSORS
                } else {
                    ORPO_LOGITS_BWD_TENSORS
                };
                (ORPO_LOGITS_FWD_TENSORS * l + softcap, bwd * l + softcap)
            }
            Loss::Standard if self.kto_logits() => {
                let l = self.dpo_logit_bytes();
                // Reference log-probabilities computed before training: no
                // reference logits or log-softmax beside the policy's.
                let fwd = if self.plan.training.precompute_ref {
                    KTO_LOGITS_FWD_TENSORS - 1.0
                } else {
                    KTO_LOGITS_FWD_TENSORS
                };
                (fwd * l + softcap, ORPO_LOGITS_BWD_TENSORS * l + softcap)
            }
            Loss::Standard if compiled_loss => (FP32 + held, FP32 + held),
            // Megatron's vocab-parallel loss: the fp32 copy beside the 16-bit
            // logits inside the loss forward (`.float()` copies nothing in an
            // fp32 run), then only the saved softmax, which backward turns
            // into the gradient in place.
            Loss::Standard if self.defaults().inplace_cross_entropy => {
                (self.beside_fp32() + FP32, FP32)
            }
            // At the loss's forward the upcast copy and the log-softmax output
            // are alive (the copy is dropped as the loss returns); backward
            // makes the NLL's gradient and the input's, beside the output.
            Loss::Standard => {
                let up = self.loss_bytes();
                let half_to_float = self.half_to_float_loss();
                let copy = self.loss_upcast_copy(held);
                let grad = if half_to_float { HALF } else { up };
                let fwd = copy + up + held + softcap + shifted;
                // transformers 4.46–4.48 also copy the shifted upcast logits
                // inside the loss, while the model's output is still alive
                // ([`Self::loss_copies_shifted_logits`]).
                let fwd = if self.loss_copies_shifted_logits() {
                    // The output is the held logits, or the head's 16-bit
                    // scores the loop drops once `forward` returns.
                    fwd.max(held.max(self.e) + copy + LOSS_SHIFTED_COPIES * up + up + softcap)
                } else {
                    fwd
                };
                // PyTorch ≤ 1.10's log-softmax keeps its input, the upcast
                // copy, until its backward ([`Self::softmax_input_bytes`]).
                let kept_input = if self.plan.training.pytorch.softmax_saves_input() {
                    copy
                } else {
                    0.0
                };
                let bwd =
                    (LOSS_STANDARD_TENSORS - 1.0) * up + grad + held + softcap + kept_input + kept;
                (fwd, bwd)
            }
            // The kept chunks and, in backward, all their 16-bit gradients.
            Loss::ChunkedKeep => (
                LOSS_CHUNKED_KEEP_BYTES_PER_LOGIT,
                LOSS_CHUNKED_KEEP_BYTES_PER_LOGIT + self.e,
            ),
            Loss::ChunkedFree if compiled => {
                (self.e, self.e * (1.0 + 1.0 / LOSS_CHUNKED_FREE_CHUNKS))
            }
            Loss::ChunkedFree => (
                self.e + LOSS_CHUNKED_FREE_EAGER_BYTES_PER_LOGIT,
                LOSS_CHUNKED_FREE_EAGER_BYTES_PER_LOGIT
                    + (LOSS_CHUNKED_FREE_EAGER_CHUNK_TENSORS_FP32 * FP32 + self.e)
                        / LOSS_CHUNKED_FREE_CHUNKS,
            ),
            Loss::Fused | Loss::TiledLogprob | Loss::ChunkedNll => (0.0, 0.0),
        };
        let fused_chunk = if self.plan.training.loss == Loss::Fused {
            // One 16-bit chunk of logits (its gradient in place) and the
            // input's gradient.
            let inc = (v / (FUSED_LOSS_CHUNK_MEM_CONST * h)).ceil().max(1.0);
            let chunk = (tokens / inc).ceil().max(1.0);
            let chunk = 2f64.powf(chunk.log2().ceil()).min(tokens);
            chunk * v * self.e + tokens * h * self.e
        } else {
            0.0
        };
        // An entropy chunk of the metrics ([`TRL_ENTROPY_CHUNK_ROWS`]), which
        // TRL logs from 0.29 (and LLaMA-Factory's DPO, read as it).
        let entropy_chunk = if self.plan.training.loss == Loss::Standard
            && self.dpo_logits()
            && !self.dpo_returns_no_logits()
            && !self.dpo_whole_log_softmax()
        {
            TRL_ENTROPY_CHUNK_ROWS.min(tokens)
                * v
                * TRL_ENTROPY_CHUNK_TENSORS
                * self.dpo_logit_bytes()
        } else {
            0.0
        };
        let (tiled_fwd, tiled_loss_bwd, tiled_head_bwd) = match self.plan.training.loss {
            Loss::TiledLogprob => self.tiled_logprob_moments(tokens, v, h),
            Loss::ChunkedNll => self.chunked_nll_moments(tokens, v, h),
            _ => (0.0, 0.0, 0.0),
        };
        // At the head's backward: the logits' 16-bit gradient, beside the
        // logits the loop holds (LitGPT's chunks, a transformers output); a
        // fused loss has no separate moment (it makes the head's gradient in
        // forward), so its head moment is its loss moment.
        let head = match self.plan.training.loss {
            // Compiled, the loss's fp32-sized gradient is still alive as the
            // head's weight gradient is made: the allocator's history of the
            // H200 runs (calibration/h200-2026-12-04, peak-*.txt) shows the
            // three logit-sized 16-bit buffers (the held output and two of the
            // loss's) beside the new head gradient, the untied Llama-3.2-1B's
            // peak. (A tied head's compiled runs without recomputation peak
            // at the loss's backward, as the eager count of this moment
            // gives: [`Self::compiled_tied_head_keeps_logits`].)
            // The shift's `slice_backward` gradient and, under the wrapper's
            // `.float()`, its 16-bit cast for the head's matmul.
            Loss::Standard if self.preference_logits() => {
                let l = self.dpo_logit_bytes();
                if l > self.e {
                    l + self.e
                } else {
                    l
                }
            }
            Loss::Standard if compiled_loss && !self.trains_tied_head() => FP32 + held,
            // The fp32 gradient and its 16-bit cast for the head's matmul.
            Loss::Standard if self.defaults().inplace_cross_entropy => FP32 + self.beside_fp32(),
            Loss::Standard => self.e + held + kept,
            Loss::ChunkedKeep => HALF + self.e,
            Loss::ChunkedFree => self.e,
            Loss::Fused | Loss::TiledLogprob | Loss::ChunkedNll => 0.0,
        };
        let logits = tokens * v;
        // The held output outlives backward: the loops that keep it drop it
        // when the next iteration rebinds it (or `del`s it after the step, as
        // calibration/measure.py does), so it sits beside the optimizer's
        // step. Replayed through the allocator (calibration/allocator_replay.py)
        // and measured: Qwen2.5-7B in bf16, 2 × 4096, checkpointed, peaked in
        // the first step at weights, gradients, states, AdamW's temporaries and
        // the 2.3 GiB of 16-bit logits, 73.5 GiB.
        let step = match self.plan.training.loss {
            Loss::Standard => (held + kept) * logits,
            Loss::ChunkedKeep => held * logits,
            _ => 0.0,
        };
        let blocks = if self.compiled_tied_head_keeps_logits() {
            (FP32 + held) * logits
        } else {
            0.0
        };
        // Under `nn.DataParallel` with the loss on the replicas, GPU 0's
        // gather after its loss returned: the upcast copy dropped, every
        // replica's logits beside what its own loss saved.
        let gathered = self.data_parallel_gathered_logits();
        let fwd = if gathered > 0.0 {
            // A compiled loss makes no separate copy.
            let copy = if compiled_loss {
                0.0
            } else {
                self.loss_upcast_copy(held)
            };
            (fwd * logits).max((fwd - copy) * logits + gathered)
        } else {
            fwd * logits
        };
        LogitsBytes {
            forward: final_norm + fwd + fused_chunk + tiled_fwd + entropy_chunk,
            loss_backward: final_norm + bwd * logits + fused_chunk + tiled_loss_bwd,
            head_backward: final_norm + head * logits + fused_chunk + tiled_head_bwd,
            norm_backward: self.final_norm_backward(tokens) + blocks,
            blocks,
            step,
        }
    }

    /// The standard loss's fp32 copy of the scores per logit (`.float()`),
    /// alive in its forward: none when the loss reads the 16-bit scores as
    /// they are (CUDA's `half_to_float`, or a loss in 16 bits), nor when the
    /// loop's `held` output is the promoted fp32 scores, the loss's input.
    fn loss_upcast_copy(&self, held: f64) -> f64 {
        let up = self.loss_bytes();
        let promoted_held = held > 0.0 && self.promoted_logits();
        if self.half_to_float_loss() || up < FP32 || promoted_held {
            0.0
        } else {
            up
        }
    }

    /// DPO through the model's logits (the standard loss under
    /// [`Objective::Dpo`]), as TRL's `DPOTrainer._compute_loss` ran it from
    /// 0.29.0 to 1.13.0 without Liger (trl 1.13.0 `trainer/dpo_trainer.py`):
    /// the policy's logits and their per-token log-probabilities
    /// (`selective_log_softmax`), the reference's logits under `no_grad`, the
    /// sigmoid loss, then the metrics it logs from the policy's logits —
    /// their entropy over a flattened copy, the mean chosen and rejected
    /// logits. (trl 1.14.0 computes the log-probabilities with a Triton
    /// kernel, 1.15.0 with its fused LM head, [`Loss::TiledLogprob`].)
    /// Replayed through the caching allocator with trl 1.13.0's code
    /// (`calibration/allocator_replay.py --trl-dpo-logits`).
    pub(super) fn dpo_logits(&self) -> bool {
        self.plan.training.objective == Objective::Dpo && !self.compiled_loss()
    }

    /// DPO through the model's logits as TRL 0.15 to 0.28 ran it
    /// ([`crate::plan::TrlRelease::dpo_returns_no_logits`]):
    /// `concatenated_forward` takes the per-token log-probabilities
    /// (`selective_log_softmax`: a logsumexp row by row over fp32 logits,
    /// which saves them; a log-softmax row by row over 16-bit ones, whose
    /// outputs are saved) and the mean chosen and rejected logits (a
    /// boolean-mask copy of each half, [`DPO_MEAN_LOGITS_COPY`]), and returns
    /// neither the logits nor the model's outputs; the reference's pass then
    /// does the same under `no_grad`, holding its logits and, from 0.19, the
    /// hidden states it asked for ([`Self::dpo_reference_hidden_states`]);
    /// no entropy is logged (trl 0.24.0 `DPOTrainer.concatenated_forward`,
    /// `get_batch_loss_metrics`, `trainer/utils.py` `selective_log_softmax`).
    /// Replayed with 0.24.0's code (`calibration/allocator_replay.py
    /// --trl-dpo-logits-0.24`).
    pub(super) fn dpo_returns_no_logits(&self) -> bool {
        self.trl_dpo() && self.plan.training.trl.dpo_returns_no_logits()
    }

    /// DPO through the model's logits as TRL 0.5 to 0.14 ran it
    /// ([`crate::plan::TrlRelease::dpo_whole_log_softmax`]):
    /// `concatenated_forward` gathers the per-token log-probabilities from a
    /// whole `log_softmax` of the shifted logits, whose output backward reads;
    /// up to 0.11 it returns the logits (the chosen and rejected halves,
    /// views held until the mean logits are logged after the reference's
    /// pass) and from 0.9 to 0.11 also takes the chosen half's NLL in every
    /// step; from 0.12 it returns neither, as 0.15–0.28 (trl 0.8.6, 0.11.4,
    /// 0.13.0 `DPOTrainer.concatenated_forward`, `get_batch_logps`). Replayed
    /// with their code (`calibration/allocator_replay.py
    /// --trl-dpo-logits-0.8`, `-0.11`, `-0.13`).
    pub(super) fn dpo_whole_log_softmax(&self) -> bool {
        self.trl_dpo() && self.plan.training.trl.dpo_whole_log_softmax()
    }

    /// Bytes per logit at the forward's end and as backward starts of TRL
    /// 0.5–0.14's DPO ([`Self::dpo_whole_log_softmax`]), `l` bytes a logit
    /// over `logits` of them: the larger of the policy's moment — its logits
    /// and log-softmax, with 0.12–0.14's mask copy or 0.9–0.11's NLL (the
    /// contiguous copy beside its log-softmax) — and the reference's — its
    /// logits and log-softmax beside what the policy left (the saved
    /// log-softmax, up to 0.11 the logits it returns, 0.9–0.11's NLL's saved
    /// log-softmax), with its cache beside both where the pass holds its
    /// outputs until it returns (0.12–0.14), else dropped with them before
    /// the log-softmax; backward, [`DPO_LOG_SOFTMAX_BWD_TENSORS`].
    fn dpo_whole_log_softmax_moments(&self, l: f64, s: u32, logits: f64) -> (f64, f64) {
        let trl = self.plan.training.trl;
        let returns_logits = !trl.dpo_returns_no_logits();
        let nll = if trl.dpo_chosen_nll() {
            DPO_CHOSEN_NLL_SHARE * l
        } else {
            0.0
        };
        let kept = l + if returns_logits { l } else { 0.0 } + nll;
        let extra = if returns_logits {
            2.0 * nll
        } else {
            DPO_MEAN_LOGITS_COPY * l
        };
        let policy = l + l + extra;
        let cache = self.dpo_reference_kv_cache(s) / logits.max(1.0);
        let reference = if self.plan.training.precompute_ref {
            0.0
        } else if returns_logits {
            kept + l + l.max(cache)
        } else {
            kept + l + l + cache
        };
        (policy.max(reference), DPO_LOG_SOFTMAX_BWD_TENSORS * l)
    }

    /// DPO through the model's logits under TRL ([`Self::dpo_logits`]).
    fn trl_dpo(&self) -> bool {
        self.plan.framework == Framework::Trl && self.dpo_logits()
    }

    /// The hidden states TRL 0.19–0.28's reference pass returns beside its
    /// logits (`model_kwargs["output_hidden_states"] = True` in
    /// `concatenated_forward`, trl 0.19.0–0.28.0; not before): under
    /// `no_grad` nothing else of the pass is kept, so the tuple — the
    /// embeddings' output and every block's, the last normed — is the pass's
    /// own, a residual-stream tensor per block and one more on the stage.
    /// The policy's are what its backward saves anyway.
    pub(super) fn dpo_reference_hidden_states(&self, s: u32) -> f64 {
        if self.plan.training.trl.dpo_reference_hidden_states() {
            (self.stage_layers(s) + 1.0) * self.layer_input_bytes()
        } else {
            0.0
        }
    }

    /// The keys and values a reference pass of TRL's DPO may return as a
    /// cache ([`crate::plan::TrlRelease::dpo_reference_may_cache`]): 0.5.0 to
    /// 0.7.10 and 0.12.0 to 0.17.0 pass no `use_cache=False` to the model
    /// (0.7.11 to 0.11 and 0.18.0 on do), and transformers then builds a
    /// `DynamicCache` (`use_cache` defaults to the config's, on for causal
    /// LMs) unless gradient checkpointing is on in training mode, which turns
    /// it off — so where the pass runs without checkpointing (the plan's
    /// policy, or a full fine-tune's separate reference model, whose
    /// checkpointing is not known), every block's post-rotary k and v are
    /// held with its outputs. Counted for 0.7.11–0.8 and 0.18 too, which keep
    /// none: over, where the one setting cannot tell.
    pub(super) fn dpo_reference_kv_cache(&self, s: u32) -> f64 {
        let unchecked =
            self.plan.training.checkpointing == Checkpointing::None || self.full_finetune();
        if self.plan.training.trl.dpo_reference_may_cache() && unchecked {
            2.0 * self.stage_layers(s) * self.s * self.b * self.m.kv_width() as f64 * self.e
                / self.t
        } else {
            0.0
        }
    }

    /// ORPO, SimPO or CPO through the model's logits, without a reference
    /// model or an entropy: as TRL's `ORPOTrainer` and `CPOTrainer` run them
    /// (and the tools that call them: axolotl, Unsloth) — the chosen rows'
    /// NLL over a contiguous copy of their shifted logits, then every row's
    /// per-token log-probabilities — and as LLaMA-Factory's
    /// `CustomDPOTrainer` runs `pref_loss: orpo` or `simpo` (its DPO forward,
    /// a whole log-softmax of the fp32 logits, without the reference pass:
    /// `use_ref_model` false, llamafactory 0.9.5
    /// `hparams/finetuning_args.py`). Both hold [`ORPO_LOGITS_FWD_TENSORS`]
    /// logits-sized tensors at the forward's end and
    /// [`ORPO_LOGITS_BWD_TENSORS`] in backward (replayed,
    /// `calibration/allocator_replay.py --trl-orpo-kernel` and
    /// `--llamafactory-orpo`).
    pub(super) fn orpo_logits(&self) -> bool {
        self.plan.training.objective == Objective::Orpo && !self.compiled_loss()
    }

    /// KTO through the model's logits as LLaMA-Factory's `CustomKTOTrainer`
    /// runs it (its own `forward`: the logits upcast in any precision, a
    /// whole log-softmax gathered; the KL completions' forward under
    /// `no_grad`; the desirable and undesirable rows' logits copied by
    /// boolean mask; the reference's passes under `no_grad`):
    /// [`KTO_LOGITS_FWD_TENSORS`] at the forward's peak, backward as its
    /// reference-free DPO code's ([`ORPO_LOGITS_BWD_TENSORS`]). TRL's own KTO
    /// up to 1.14 (from 1.15 its fused head) is not replayed and keeps the
    /// causal-LM loss's count.
    pub(super) fn kto_logits(&self) -> bool {
        self.plan.training.objective == Objective::Kto
            && self.plan.framework == Framework::LlamaFactory
            && !self.compiled_loss()
    }

    /// Autocast runs around the model's forward alone: Accelerate's native
    /// AMP wraps `model.forward` in `autocast` and `convert_outputs_to_fp32`
    /// (the Trainer's `bf16=True`/`fp16=True` and the tools on it, Accelerate
    /// itself; accelerate `utils/operations.py` `convert_outputs_to_fp32`,
    /// `Accelerator.prepare_model`).
    pub(super) fn autocast_wraps_forward(&self) -> bool {
        let f = self.plan.framework;
        self.runs_autocast() && (f.trains_through_trainer() || f == Framework::HfAccelerate)
    }

    /// A preference loss taken from the model's logits after its forward
    /// returns — DPO, ORPO or KTO through the logits — where autocast wraps
    /// that forward alone ([`Self::autocast_wraps_forward`]): autocast's
    /// cache of 16-bit weight copies is cleared as the forward exits
    /// (`torch.autocast.__exit__` calls `torch.clear_autocast_cache()`), so
    /// the loss's logits-sized tensors meet only the copies autograd saved.
    /// Replayed (`calibration/allocator_replay.py --trl-dpo-logits-0.8`): an
    /// AMP full fine-tune of Llama-3.2-1B's peak is its reference pass's
    /// log-softmax, with none of the 2.36 GiB of copies the forward held.
    pub(super) fn loss_after_autocast(&self) -> bool {
        self.preference_logits() && self.autocast_wraps_forward()
    }

    /// A preference loss through the model's logits: DPO, ORPO or KTO
    /// ([`Self::dpo_logits`], [`Self::orpo_logits`], [`Self::kto_logits`]).
    fn preference_logits(&self) -> bool {
        self.dpo_logits() || self.orpo_logits() || self.kto_logits()
    }

    /// Bytes per logit of the logits DPO reads ([`Self::dpo_logits`]): fp32
    /// where Accelerate's native AMP wraps the model's forward in
    /// `convert_outputs_to_fp32` (the Trainer's `bf16=True`, TRL's default;
    /// [`Self::held_logit_bytes`]), a head's fp32 bias promotes them
    /// ([`Self::promoted_logits`]) or the model computes in fp32; the compute
    /// dtype otherwise (transformers ≥ 4.45 upcasts only for its own loss,
    /// which DPO does not ask for: it passes no labels). LLaMA-Factory's DPO
    /// upcasts them itself whatever the precision (llamafactory 0.9.5
    /// `train/dpo/trainer.py` `concatenated_forward`:
    /// `.logits.to(torch.float32)`; replayed with its code,
    /// `calibration/allocator_replay.py --llamafactory-dpo`).
    pub(super) fn dpo_logit_bytes(&self) -> f64 {
        let f = self.plan.framework;
        if self.autocast_wraps_forward() || f == Framework::LlamaFactory || self.promoted_logits() {
            FP32
        } else {
            self.e
        }
    }

    /// The LM head's weights are stored in fp32: the model's stored dtype,
    /// trained in fp32 or a frozen fp32 base.
    pub(super) fn lm_head_fp32(&self) -> bool {
        if self.full_finetune() {
            self.trainable_weight_bytes() >= FP32
        } else {
            self.base_bits().is_some_and(|b| b >= 32)
        }
    }

    /// An fp32 LM head whose matmul autocast runs in the 16-bit `compute`
    /// dtype: TRL's own heads cast it piece by piece
    /// ([`Self::tiled_logprob_moments`], [`Self::chunked_nll_moments`]).
    pub(super) fn casts_an_fp32_head(&self, compute: f64) -> bool {
        self.lm_head_fp32() && self.runs_autocast() && compute < FP32
    }

    /// TRL's chunked NLL over `tokens` positions of a `v`-wide vocabulary
    /// ([`Loss::ChunkedNll`]; trl 1.7.0–1.14.2 `_chunked_cross_entropy_loss`):
    /// at its forward's end, at its backward and as that returns. Forward: the
    /// packed copy of the final hidden states (in the residual stream's
    /// dtype; the shifted, flattened copy it is packed from is freed as it is
    /// made) and one chunk's fp32 tensors ([`CHUNKED_NLL_CHUNK_FP32_TENSORS`]).
    /// Backward: the same, recomputed chunk by chunk, beside the hidden
    /// states' gradient that the chunks' slices accumulate. Under autocast an
    /// fp32 head is cast for each chunk's matmul, one cast alive at a time.
    pub(super) fn chunked_nll_moments(&self, tokens: f64, v: f64, h: f64) -> (f64, f64, f64) {
        let packed = tokens * h * self.residual_bytes() / self.rep;
        let chunk = CHUNKED_NLL_TOKENS.min(tokens) * v * CHUNKED_NLL_CHUNK_FP32_TENSORS * FP32;
        // An fp32 head under autocast: each chunk's matmul casts all of it
        // (cached through a trained head's forward, saved by the recomputed
        // chunk's matmul for its backward), one cast alive at a time.
        let head_cast = if self.casts_an_fp32_head(self.e) {
            v * h * self.e
        } else {
            0.0
        };
        let chunk = chunk + head_cast;
        let fwd = packed + chunk;
        let bwd = fwd + packed;
        (fwd, bwd, packed + packed)
    }

    /// TRL's fused LM head over `tokens` positions of a `v`-wide vocabulary
    /// slice ([`Loss::TiledLogprob`]; trl 1.16.0 `ChunkedLogProbFunction`):
    /// what it holds at the end of its forward, as its backward runs, and as
    /// that backward returns.
    ///
    /// Forward: the final hidden states compacted to the labelled positions
    /// (`hidden_states[mask]`, a copy in the residual stream's dtype, saved
    /// for backward; every position counted, as a packed or pre-training batch
    /// labels them all), one tile of logits in the compute dtype, and the
    /// per-tile casts of the hidden rows and of the head's rows where they are
    /// not in it (fp32 under autocast). Backward: the same tile and casts,
    /// the input's gradient accumulated in fp32 (`grad_hidden`) and, when the
    /// head trains, its fp32 gradient accumulator (`grad_weight`); it returns
    /// their casts to the tensors' dtypes, the fp32 ones and the tile still
    /// alive (the head's cast is the gradient the step keeps, counted with
    /// the other gradients; an fp32 head's is its accumulator). Replayed
    /// through the caching allocator with trl 1.16.0's own code on the meta
    /// device (`calibration/allocator_replay.py --trl-fused-head` and
    /// `--trl-dpo`).
    pub(super) fn tiled_logprob_moments(&self, tokens: f64, v: f64, h: f64) -> (f64, f64, f64) {
        let hidden = self.residual_bytes();
        let compute = self.e;
        let rows = tokens.min(TILED_LOGPROB_TOKENS);
        let cols = v.min(TILED_LOGPROB_VOCAB);
        let compact = tokens * h * hidden / self.rep;
        let tile = rows * cols * compute;
        let hidden_cast = if hidden > compute {
            rows * h * compute / self.rep
        } else {
            0.0
        };
        let head_trains = self.full_finetune();
        // Each tile's rows of an fp32 head are cast under autocast.
        let head_cast = if self.casts_an_fp32_head(compute) {
            cols * h * compute
        } else {
            0.0
        };
        let accumulator = if head_trains { v * h * FP32 } else { 0.0 };
        let grad_hidden = tokens * h * FP32 / self.rep;
        let fwd = compact + tile + hidden_cast + head_cast;
        let loss_bwd = fwd + grad_hidden + accumulator;
        // The returned casts: `.to(torch.float32)` of an fp32 accumulator is
        // the accumulator itself, so an fp32 head's gradient (counted with
        // the gradients) is its accumulator and fp32 hidden states get theirs.
        let hidden_grad_cast = if hidden < FP32 {
            tokens * h * hidden / self.rep
        } else {
            0.0
        };
        let head_accumulator = if self.lm_head_fp32() {
            0.0
        } else {
            accumulator
        };
        // The tile and the last tile's casts are the backward's locals, alive
        // as it returns.
        let head_bwd = fwd + grad_hidden + hidden_grad_cast + head_accumulator;
        (fwd, loss_bwd, head_bwd)
    }

    /// The unchunked loss runs inside the compiled graph: a compiled
    /// transformers model whose loss upcasts its logits
    /// ([`Framework::compile_covers_unchunked_loss`]).
    pub(super) fn compiled_loss(&self) -> bool {
        self.plan.training.compile
            && self.plan.training.loss == Loss::Standard
            && self.plan.training.fp32_upcasts
            && self.plan.framework.compile_covers_unchunked_loss()
    }

    /// A compiled model whose trained LM head is tied to its embedding keeps
    /// the loss's logit-sized buffers (and the held output) through the
    /// blocks' backward: the shared weight's gradient, the head's product
    /// plus the embedding's, is made at the end of the compiled backward
    /// graph, and the logits' gradient it reads lives until then. Measured on
    /// the H200 (calibration/h200-2026-12-04, the allocator's history at each
    /// peak): compiled and checkpointed, Llama-3.2-1B and -3B (tied) peak
    /// inside a block's recomputed attention with the three 4008 MiB buffers
    /// of 4 × 4096 × 128,256 logits still alive (23.28 and 37.87 GiB
    /// allocated), while the same 1B shape with an untied head peaks at the
    /// head's backward and is 1.4 GiB lower despite its 0.26 B more
    /// parameters. Eager runs free them as the head's backward ends. Only
    /// seen with recomputation: the compiled tied runs without checkpointing
    /// (Llama-3.2-1B bf16 and amp-bf16, GPT-2 fp32; calibration/h200-2026-11-30)
    /// peak at the loss's backward, 2.2–6.5 % under what keeping the logits
    /// beside a block's backward with all its activations would give.
    pub(super) fn compiled_tied_head_keeps_logits(&self) -> bool {
        self.compiled_loss()
            && self.trains_tied_head()
            && self.plan.training.checkpointing != Checkpointing::None
    }

    /// The LM head is the embedding's weight, and it trains.
    pub(super) fn trains_tied_head(&self) -> bool {
        self.m.tied_embeddings && self.full_finetune()
    }

    /// A loss whose log-softmax reads fp16 logits straight into fp32 and
    /// hands back an fp16 gradient: CUDA's `log_softmax` given `dtype=float32`
    /// on an fp16 input takes `_log_softmax(input, dim, half_to_float=true)`
    /// (`aten/src/ATen/native/SoftMax.cpp`; a bf16 input is converted to fp32
    /// first), so under fp16 autocast a loss that does not upcast its logits
    /// itself — transformers' masked-LM heads (`BertForMaskedLM` calls
    /// `CrossEntropyLoss` on the 16-bit scores; its causal LMs call `.float()`
    /// first), and T5's, whose head has no bias — keeps no fp32 copy or
    /// gradient of them; the same mechanism as [`Ctx::loss_bytes`] in pure
    /// 16-bit. Not the BART lineage, whose fp32 `final_logits_bias` promotes
    /// the scores first ([`ModelSpec::logits_bias`]). Replayed
    /// (calibration/allocator_replay.py) and measured: BERT-large, amp-fp16,
    /// 32 × 512, 26.038 GiB allocated alike; replayed: T5-base and FLAN-T5-base
    /// keep 0.243 GiB (the fp16 scores of 8 × 512 × 32,128) less under fp16
    /// than under bf16 autocast, BART-large the same.
    pub(super) fn half_to_float_loss(&self) -> bool {
        self.prec == Precision::AmpFp16 && self.loss_reads_head_scores()
    }

    /// The loss reads the head's scores in the dtype the head made them:
    /// transformers' masked-LM and encoder–decoder heads call
    /// `CrossEntropyLoss` without `.float()` ([`Self::loss_bytes`]), unless
    /// an fp32 bias buffer has promoted them ([`Self::promoted_logits`]).
    /// Its causal LMs' loss upcasts first, and so does the masked-LM loss of
    /// its rotary encoders (ModernBERT, EuroBERT: `self.loss_function`, that
    /// is `ForMaskedLMLoss`, whose first line is `logits.float()`; BERT,
    /// RoBERTa, XLM-R and DistilBERT call `CrossEntropyLoss` themselves).
    /// Replayed (`calibration/allocator_replay.py --families`, transformers
    /// 5.25): ModernBERT-base at 32 × 512 with checkpointing, allocated
    /// −37.5 % with the 16-bit loss, −0.1 % with the fp32 one.
    pub(super) fn loss_reads_head_scores(&self) -> bool {
        match self.m.arch {
            Arch::Decoder => false,
            Arch::Encoder if self.m.positions == Positions::Rotary => false,
            _ => !self.promoted_logits(),
        }
    }

    /// The final norm's backward moment over `tokens` positions when it is an
    /// RMSNorm written as fp32 tensor ops (transformers' `LlamaRMSNorm`,
    /// LitGPT's and torchtune's `RMSNorm`: `x.float()`, `pow(2).mean()`,
    /// `rsqrt`, the products): its saved fp32 input and
    /// [`FINAL_NORM_BACKWARD_FP32_TENSORS`] fp32 gradients; nothing that
    /// outweighs the loss's moments for a fused norm (Liger's, Megatron's,
    /// Inductor's) or a LayerNorm (one kernel, its input's gradient).
    pub(super) fn final_norm_backward(&self, tokens: f64) -> f64 {
        if !self.rmsnorm_as_tensor_ops() || self.norm_saved_bytes() != FP32 {
            return 0.0;
        }
        (FP32 + FINAL_NORM_BACKWARD_FP32_TENSORS * FP32) * tokens * self.m.hidden as f64 / self.rep
    }

    /// Bytes per logit of the 16-bit tensor beside an fp32 copy of it: none
    /// when the run is fp32 (`.float()` returns the tensor itself).
    pub(super) fn beside_fp32(&self) -> f64 {
        if self.e < FP32 {
            self.e
        } else {
            0.0
        }
    }

    /// The LM head's weight gradient as autograd makes it in a full
    /// fine-tune, when no other term holds it: the gradients are not all
    /// alive already (accumulation, zeroed-not-freed, ZeRO-3's buffer), the
    /// optimizer does not step in backward ([`Self::optim_in_bwd_head_grads`])
    /// and the parameters are not sharded (ZeRO-3/FSDP count a unit's
    /// unsharded gradients with their buffers). It exists from the head's
    /// backward (from the loss forward with a fused linear-cross-entropy, which
    /// accumulates `grad_weight` chunk by chunk there: liger_kernel
    /// `fused_linear_cross_entropy_forward`) until the step.
    pub(super) fn head_grad_in_backward(&self, s: u32, grads_alive: bool) -> f64 {
        if grads_alive
            || !self.full_finetune()
            || self.plan.training.optimizer_in_backward
            || self.shards_params()
        {
            return 0.0;
        }
        self.lm_head_params(s) * self.grad_bytes()
    }

    /// Bytes per logit of the output the loop holds ([`Self::loop_holds_logits`]).
    /// Accelerate's own autocast (`mixed_precision="fp16"/"bf16"` without
    /// DeepSpeed, which does its own mixed precision) wraps the model's
    /// forward in `convert_outputs_to_fp32`, so the held logits are an fp32
    /// copy of the 16-bit ones (accelerate 1.15.0 `accelerator.py`
    /// `prepare_model`: `model.forward = convert_outputs_to_fp32(
    /// autocast_context(...))` under `native_amp`, which `__init__` leaves off
    /// for `DistributedType.DEEPSPEED`). Measured on the H200 (set 5):
    /// Llama-3.2-1B, batch 4 × 2048, peaked 1.96 GiB (2 B per logit) above
    /// the same loop under plain autocast.
    ///
    /// Scores a head's bias buffer promotes from 16 bits to fp32 are held as
    /// fp32 too ([`Self::promoted_logits`]).
    pub(super) fn held_logit_bytes(&self) -> f64 {
        // (Not under DeepSpeed, which runs no autocast: [`Self::runs_autocast`].)
        let accelerate_fp32 =
            self.plan.framework == Framework::HfAccelerate && self.runs_autocast();
        if accelerate_fp32 || self.promoted_logits() {
            FP32
        } else {
            self.e
        }
    }

    /// The head's fp32 bias buffer promotes autocast's 16-bit scores to fp32
    /// ([`ModelSpec::logits_bias`]: `lm_logits = lm_head(x) +
    /// final_logits_bias` in transformers' BART lineage): the output holds
    /// the fp32 sum, which is also the loss's input, so no `.float()` copy is
    /// made beside it. Replayed (`calibration/allocator_replay.py`):
    /// BART-large under bf16 or fp16 autocast, 16 × 512 with checkpointing,
    /// backward starts with four fp32 score-sized tensors (the sum, the
    /// log-softmax output and the two gradients), 11.711 GiB allocated.
    /// The buffer has the model's stored dtype: fp32 when the weights are
    /// (AMP's full training, an fp32 frozen base), 16-bit when the model was
    /// loaded or cast to 16 bits (a bf16 base under LoRA, DeepSpeed's
    /// `.half()`/`.bfloat16()` module), which adds in 16 bits.
    pub(super) fn promoted_logits(&self) -> bool {
        if !self.m.logits_bias || !self.runs_autocast() {
            return false;
        }
        match self.base_bits() {
            None => self.trainable_weight_bytes() >= FP32,
            Some(bits) => bits >= 32,
        }
    }

    /// The loss is transformers' `ForCausalLMLoss` of 4.46 to 4.48
    /// ([`crate::plan::TransformersRelease::V4_46To4_48`]): a causal LM run
    /// in transformers' own model code (the frameworks that run the model's
    /// code, not a hand-written model's Python norms), its standard loss not
    /// compiled into the model, upcast to fp32. Inside that loss's forward
    /// the model's output (its head's 16-bit scores, whether or not the
    /// loop keeps them afterwards: the Trainer's `compute_loss` drops them
    /// only once `forward` has returned), the upcast, the shifted copy
    /// (`logits[..., :-1, :].contiguous()`) and the log-softmax's output are
    /// alive at once; the copy and the upcast are freed as the loss returns
    /// (nothing saves them: `contiguous`, slicing and `.float()` keep no
    /// input for backward, log-softmax keeps its output), so only the
    /// forward moment grows. With the Trainer's order that is 14 bytes per
    /// logit of 16-bit scores against the 12 of its backward's start
    /// (transformers 4.46.3 and 4.48.3 `loss/loss_utils.py`; 4.49.0 pads the
    /// labels instead and copies nothing).
    pub(super) fn loss_copies_shifted_logits(&self) -> bool {
        self.plan.training.transformers.loss_copies_shifted_logits()
            && self.plan.training.fp32_upcasts
            && self.m.arch == Arch::Decoder
            && !self.m.python_norm
            && self.plan.framework.runs_the_models_own_code()
            && !self.compiled_loss()
    }

    /// Bytes per logit of torchtune's shifted logits before 0.3
    /// ([`crate::plan::TorchtuneRelease::before_0_3`]), under its standard
    /// loss over an LM head: what the loss's forward holds beside the
    /// count of the current recipes, and what the recipe keeps through
    /// backward and the step. The 0.1–0.2 recipes upcast in the decoder
    /// (`self.output(h).float()`), copy the shifted logits
    /// (`logits[..., :-1, :].contiguous()`, dropping the upcast) and pass
    /// their transpose to `CrossEntropyLoss`, whose log-softmax makes the
    /// strided input contiguous before it writes its output (ATen
    /// `host_softmax`: `input_.contiguous()`): the shifted copy, that
    /// contiguous copy and the output are alive at once — one fp32 tensor
    /// more than 0.3's `reshape`d logits, whose upcast is the loss's input.
    /// The recipes that do not `del logits` keep the shifted copy until the
    /// next iteration rebinds it ([`TorchtuneRelease::loop_keeps_shifted_logits`]).
    /// Counted on the CPU allocator (`calibration/cpu_allocator.py
    /// torchtune-loss`, torch 2.15.0), bytes per logit at the forward's peak
    /// and backward's: 0.3's recipes 8.00 / 12.00, 0.2's 11.98 / 11.98 with
    /// `del logits` and 11.98 / 15.97 keeping them.
    ///
    /// [`TorchtuneRelease::loop_keeps_shifted_logits`]: crate::plan::TorchtuneRelease::loop_keeps_shifted_logits
    pub(super) fn torchtune_shifted_logits(&self) -> (f64, f64) {
        if !self.plan.old_torchtune()
            || self.plan.training.loss != Loss::Standard
            || self.m.head != ModelHead::Lm
        {
            return (0.0, 0.0);
        }
        let up = self.loss_bytes();
        let lora_distributed = !self.full_finetune() && self.plan.parallel.sharding.is_fsdp();
        let release = self.plan.training.torchtune;
        let kept = if release.loop_keeps_shifted_logits(lora_distributed) {
            up
        } else {
            0.0
        };
        (up, kept)
    }

    /// A transformers model returns its loss and logits in one `ModelOutput`,
    /// and the loops written around it keep that output alive through backward
    /// (`outputs = model(**batch); loss = outputs.loss;
    /// accelerator.backward(loss)` in Accelerate's and PEFT's examples), so the
    /// 16-bit logits stay beside the loss's fp32 tensors. The Trainer's
    /// `compute_loss` returns only the loss, and hand-written models usually
    /// compute the loss in a function that returns only it. LitGPT's loops keep
    /// `logits` in scope through `fabric.backward` (litgpt/pretrain.py `fit`,
    /// finetune scripts), which only matters for the unchunked loss (the kept
    /// chunks are the logits). Measured on the H200: 14 bytes per logit at the
    /// start of backward for Llama-3.2-1B in bf16 (2 + 3 × 4).
    pub(super) fn loop_holds_logits(&self) -> bool {
        (self.plan.training.fp32_upcasts
            && matches!(
                self.plan.framework,
                Framework::PlainPytorch | Framework::HfAccelerate
            ))
            || self.plan.framework == Framework::Litgpt
    }

    // ----- communication and runtime -------------------------------------------
}
