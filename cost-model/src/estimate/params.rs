//! What the model holds: its parameters by block and stage, the adapters, a quantized base's parts and copies.

use super::*;

impl<'a> Ctx<'a> {
    /// Without autocast, the fp32 norm and embedding weights that PEFT's
    /// `prepare_model_for_kbit_training` leaves ([`Self::kbit_fp32`]) carry
    /// the whole block in fp32: the embedding output and every norm output
    /// are fp32, and bitsandbytes' `Linear4bit.forward` computes in its
    /// 16-bit `compute_dtype` but casts its output back to the input's dtype
    /// (bitsandbytes 0.50.2 `nn/modules.py`: `inp_dtype = x.dtype` …
    /// `.to(inp_dtype)`), so attention and MLP save fp32 tensors. Measured on
    /// the H200 (calibration/h200-2026-11-30, set 5): QLoRA Mistral-7B r16 q+v,
    /// batch 2 × 2048, 73.3 GiB allocated after the forward in pure bf16
    /// against 35.9 GiB under bf16 autocast.
    pub(super) fn kbit_fp32_stream(&self) -> bool {
        self.kbit_fp32() && !self.runs_autocast() && self.prec != Precision::Fp32
    }

    pub(super) fn lora(&self) -> Option<(u32, LoraTargets, u32, bool)> {
        match self.plan.training.finetune {
            Finetune::Lora {
                rank,
                targets,
                base_bits,
                dropout,
                ..
            } => Some((rank, targets, base_bits, dropout)),
            _ => None,
        }
    }

    pub(super) fn lora_variant(&self) -> LoraVariant {
        match self.plan.training.finetune {
            Finetune::Lora { variant, .. } => variant,
            _ => LoraVariant::Lora,
        }
    }

    /// Bits of the frozen base, `None` for full training.
    pub(super) fn base_bits(&self) -> Option<u32> {
        self.plan.training.finetune.base_bits()
    }

    /// PEFT's `prepare_model_for_kbit_training` cast the unquantized
    /// parameters of a 4/8-bit base to fp32
    /// ([`crate::plan::TrainingSpec::kbit_fp32_prep`]). Not when FSDP or
    /// ZeRO-3 shards the quantized model: the tools skip it there to keep one
    /// dtype per flat parameter (axolotl `_prepare_model_for_quantization`:
    /// "Make sure everything is in the same dtype" under QLoRA + FSDP or
    /// ZeRO-3).
    pub(super) fn kbit_fp32(&self) -> bool {
        self.plan.training.kbit_fp32_prep
            && self.base_bits().is_some_and(|b| b <= 8)
            && !self.shards_params()
    }

    /// The embeddings and an unquantized LM head back in 16 bits after the
    /// preparation, the norms left fp32
    /// ([`crate::plan::TrainingSpec::kbit_embeddings_16bit`], TRL ≤ 0.21).
    /// Replayed (`calibration/allocator_replay.py --qlora-trl-families`):
    /// Llama-3.2-1B's checkpointed QLoRA allocated 1.01 GiB less than fully
    /// prepared — its tied 262.7 M-parameter embedding at 2 bytes instead of 4
    /// and no 16-bit cast of it for the head's matmul.
    ///
    /// Only under autocast, as TRL casts them (`args.bf16`): without it the
    /// fp32 norm outputs would meet a 16-bit head in a plain `F.linear`,
    /// which refuses mixed dtypes.
    pub(super) fn kbit_embeddings_16bit(&self) -> bool {
        self.kbit_fp32() && self.plan.training.kbit_embeddings_16bit && self.runs_autocast()
    }

    /// The prepared base's fp32 norm weights promote the norms' outputs, and
    /// so the residual stream, to fp32: always when the preparation left the
    /// embeddings fp32 (the stream starts fp32), and with them back in 16 bits
    /// ([`Self::kbit_embeddings_16bit`]) only where the norm multiplies its
    /// weight into the input's dtype (Llama's `self.weight *
    /// hidden_states.to(input_dtype)`) — not where it scales in fp32 and casts
    /// back (`ModelSpec::norm_fp32_affine`: Gemma's `.type_as(x)`, OLMo-2's
    /// `.to(input_dtype)`), whose outputs follow a 16-bit stream. Replayed
    /// (`--qlora-trl-families`): Gemma-2B, Gemma-2-2B, Gemma-3-1B without
    /// checkpointing allocated exactly what they did unprepared (37.289,
    /// 48.193, 26.564 GiB), 18.3, 11.5 and 16.8 % below the fp32-stream
    /// reading.
    pub(super) fn kbit_fp32_norm_outputs(&self) -> bool {
        self.kbit_fp32() && !(self.kbit_embeddings_16bit() && self.m.norm_fp32_affine)
    }

    /// Parameters of stage `s` outside the blocks that the preparation makes
    /// fp32 and [`Self::kbit_embeddings_16bit`] puts back in 16 bits: the
    /// embeddings and a head that is not quantized (not the final norm).
    pub(super) fn kbit_recast_edge_params(&self, s: u32) -> f64 {
        if !self.kbit_embeddings_16bit() {
            return 0.0;
        }
        let final_norm = if self.is_last(s) {
            self.m.norm_params() as f64
        } else {
            0.0
        };
        (self.edge_params(s) - final_norm - self.quantized_head_params(s)).max(0.0)
    }

    // ----- parameters per rank --------------------------------------------

    /// This context for one kind of block of the stack: the expert block
    /// (this model) or the dense one, each as if every block were of its kind.
    pub(super) fn block_ctx<'b>(&self, m: &'b ModelSpec) -> Ctx<'b>
    where
        'a: 'b,
    {
        let mut c = Ctx {
            m,
            dense: None,
            layer_acts: Default::default(),
            ..self.clone()
        };
        c.layer_matrix = c.layer_matrix_params_of_model();
        c
    }

    /// A per-block quantity averaged over the stack's blocks: an MoE model's
    /// expert blocks and its dense ones ([`ModelSpec::dense_layers`]) in
    /// their numbers; `f` of this context when every block is alike. The
    /// pipeline split stays even in blocks, so a stage holds the average
    /// block (DeepSeek's and GLM-4.5's dense blocks sit on the first stage,
    /// which this spreads over all).
    pub(super) fn mixed(&self, f: impl Fn(&Ctx<'_>) -> f64) -> f64 {
        let Some(dense) = self.dense else {
            return f(self);
        };
        let w = self.expert_block_share();
        w * f(&self.block_ctx(self.m)) + (1.0 - w) * f(&self.block_ctx(dense))
    }

    /// The stack's kinds of block with their shares of the blocks: this
    /// model's (with experts) and, when it has dense blocks too, the dense
    /// one's ([`ModelSpec::dense_layers`]).
    pub(super) fn block_kinds(&self) -> impl Iterator<Item = (&'a ModelSpec, f64)> {
        let w = self.expert_block_share();
        [(self.m, w), (self.dense.unwrap_or(self.m), 1.0 - w)]
            .into_iter()
            .filter(|(_, share)| *share > 0.0)
    }

    /// `f` of every matrix of the average block that `tg` targets, times its
    /// copies (MoE experts), summed ([`Self::block_kinds`]).
    pub(super) fn per_targeted_matrix(
        &self,
        tg: LoraTargets,
        f: impl Fn(&BlockMatrix) -> f64,
    ) -> f64 {
        self.block_kinds()
            .map(|(m, share)| {
                let per: f64 = block_matrices_of(m, tg, self.fused_adapters())
                    .iter()
                    .filter(|x| x.targeted)
                    .map(|x| mlp_copies_of(m, x) * f(x))
                    .sum();
                share * per
            })
            .sum()
    }

    /// The stack's share of blocks that hold experts.
    pub(super) fn expert_block_share(&self) -> f64 {
        if self.dense.is_some() {
            self.m.moe_layers() as f64 / self.m.layers.max(1) as f64
        } else {
            1.0
        }
    }

    /// Blocks on pipeline rank `s`: an even split, the first ranks taking
    /// one more where it does not divide, or the framework's own split
    /// ([`Framework::pp_split_counts_edges_as_blocks`]) summed over the
    /// rank's model chunks (`s`, `s + pp`, … under the interleaved schedule).
    pub(super) fn stage_layers(&self, s: u32) -> f64 {
        let l = self.m.total_layers();
        let p = &self.plan.parallel;
        let pp = p.pp;
        if pp > 1 && self.plan.framework.pp_split_counts_edges_as_blocks() {
            let v = match p.pp_schedule {
                PipelineSchedule::OneFOneB => 1,
                PipelineSchedule::Interleaved => p.virtual_stages.max(1),
            };
            let n = pp.saturating_mul(v);
            // `num_effective_layers = num_layers + input_weight + output_weight`,
            // spread evenly, the first stages taking the remainder; the first
            // and the last stage then give one block to the embedding and
            // the head.
            let eff = l.saturating_add(2);
            let blocks = |i: u32| {
                let e = eff / n + u32::from(i < eff % n);
                if i == 0 || i + 1 == n {
                    e.saturating_sub(1)
                } else {
                    e
                }
            };
            return (0..v)
                .map(|k| blocks(s.saturating_add(k.saturating_mul(pp))) as f64)
                .sum();
        }
        let base = l / pp;
        let extra = if s < l % pp { 1 } else { 0 };
        (base + extra) as f64
    }

    pub(super) fn is_first(&self, s: u32) -> bool {
        s == 0
    }
    pub(super) fn is_last(&self, s: u32) -> bool {
        s + 1 == self.plan.parallel.pp
    }

    /// Per-rank block matrix parameters of one layer (TP splits them; EP splits experts).
    pub(super) fn layer_matrix_params(&self) -> f64 {
        self.layer_matrix
    }

    /// [`Self::layer_matrix_params`] from the model and the parallel layout.
    pub(super) fn layer_matrix_params_of_model(&self) -> f64 {
        let m = self.m;
        // Decoder blocks of an encoder–decoder model add cross-attention: the
        // average block holds (encoder + 2 × decoder) / (encoder + decoder) attentions.
        let attn = m.attention_params() as f64
            * if m.arch == Arch::EncoderDecoder {
                (m.encoder_layers as f64 + 2.0 * m.layers as f64) / m.total_layers().max(1) as f64
            } else {
                1.0
            };
        let mlp = if m.is_moe() {
            let routed =
                m.experts as f64 * m.one_mlp_params() as f64 / self.plan.parallel.ep as f64;
            routed + m.shared_experts as f64 * m.one_mlp_params() as f64
        } else {
            m.mlp_params() as f64
        };
        (attn + mlp) / self.t
    }

    pub(super) fn layer_norm_params(&self) -> f64 {
        self.m.norms_per_layer as f64 * self.m.norm_params() as f64
    }

    /// Per-rank parameters of one block, its matrices and norms: FSDP's
    /// wrapping unit.
    pub(super) fn block_params(&self) -> f64 {
        self.layer_matrix_params() + self.layer_norm_params()
    }

    /// Embedding / head parameters on stage `s`, per rank: the head split
    /// over TP, the embedding where the framework splits it
    /// ([`Framework::tp_shards_embedding`]).
    pub(super) fn edge_params(&self, s: u32) -> f64 {
        let m = self.m;
        let mut p = 0.0;
        if self.is_first(s) {
            p += m.embedding_params() as f64 / self.te;
        }
        if self.is_last(s) {
            p += m.norm_params() as f64;
            let head = if m.tied_embeddings && m.arch != Arch::Encoder && m.head == ModelHead::Lm {
                // A tied head on a later stage keeps its own copy of the
                // embedding, split as the embedding is.
                if self.plan.parallel.pp > 1 {
                    m.vocab as f64 * m.hidden as f64 / self.te
                } else {
                    0.0
                }
            } else {
                m.head_params() as f64 / self.t
            };
            p += head;
        }
        p
    }

    /// The LM head's weight on stage `s` (the embedding when tied, split
    /// over TP as the embedding is), if last.
    pub(super) fn lm_head_params(&self, s: u32) -> f64 {
        let m = self.m;
        if !self.is_last(s) || m.head != ModelHead::Lm {
            return 0.0;
        }
        let split = if m.tied_embeddings { self.te } else { self.t };
        m.vocab as f64 * m.hidden as f64 / split
    }

    /// Full fine-tuning: every parameter trains, those outside the blocks too.
    pub(super) fn full_finetune(&self) -> bool {
        matches!(self.plan.training.finetune, Finetune::Full)
    }

    /// With the optimizer step in backward, each parameter steps and drops
    /// its gradient once the gradient is complete
    /// (`register_post_accumulate_grad_hook`, torchtune
    /// `training.register_optim_in_bwd_hooks`). The LM head's gradient exists
    /// as backward starts; a tied head's keeps accumulating until the
    /// embedding's backward, the very last, so it lives through the whole
    /// backward. Returns (at the loss backward, through the blocks').
    pub(super) fn optim_in_bwd_head_grads(&self, s: u32) -> (f64, f64) {
        if !self.plan.training.optimizer_in_backward || !self.full_finetune() {
            return (0.0, 0.0);
        }
        let g = self.lm_head_params(s) * self.grad_bytes();
        let tied = self.m.tied_embeddings && self.plan.parallel.pp == 1;
        (g, if tied { g } else { 0.0 })
    }

    pub(super) fn stage_params(&self, s: u32) -> f64 {
        self.stage_layers(s) * self.block_params() + self.edge_params(s) + self.vision_params(s)
    }

    /// A multimodal model's vision encoder on stage `s` ([`ModelSpec::vision_params`]):
    /// frozen weights before the first block, on the first stage, whole on
    /// every tensor-parallel rank (transformers' TP plans and LLaMA-Factory's
    /// Megatron path split the language model only).
    pub(super) fn vision_params(&self, s: u32) -> f64 {
        if self.is_first(s) {
            self.m.vision_params as f64
        } else {
            0.0
        }
    }

    /// Trainable adapter parameters per block: A and B of every targeted
    /// matrix, plus DoRA's magnitude vector (one per output); under LoRA-FA
    /// only B trains.
    pub(super) fn lora_layer_params(&self, rank: u32, tg: LoraTargets) -> f64 {
        let (a, b, outs) = self.lora_layer_parts(rank, tg);
        match self.lora_variant() {
            LoraVariant::Lora => a + b,
            LoraVariant::Dora => a + b + outs,
            LoraVariant::LoraFa => b,
        }
    }

    /// Frozen adapter parameters per block (LoRA-FA's A matrices), stored in
    /// the adapters' dtype beside the trained ones.
    pub(super) fn frozen_adapter_layer_params(&self) -> f64 {
        match (self.lora(), self.lora_variant()) {
            (Some((rank, tg, _, _)), LoraVariant::LoraFa) => self.lora_layer_parts(rank, tg).0,
            _ => 0.0,
        }
    }

    /// Elements per token of the distinct 16-bit inputs of the matrices `tg`
    /// adapts, none of which a frozen block keeps: q, k and v share theirs (the
    /// normed block input), as gate and up do; o's is the attention output
    /// (made contiguous after eager attention), down's the gated product
    /// (per MLP a token runs through).
    pub(super) fn distinct_inputs(&self, tg: LoraTargets) -> f64 {
        let (m, t, rep) = (self.m, self.t, self.rep);
        let k = self.mlp_runs_per_token();
        let [q, kk, v, o, g, u, d, _, _] = self.block_matrices(tg).map(|x| x.targeted);
        let h = m.hidden as f64;
        let mut inputs = 0.0;
        if q || kk || v {
            inputs += h / rep;
        }
        // A fused kernel's output is o's input, already kept (`layer_activations`).
        if o && self.attention() == Attention::Eager {
            inputs += m.attn_out_width() as f64 / t;
        }
        // Latent attention's q_b and kv_b read the normed latents.
        if let Some(a) = m.mla {
            if q && a.q_rank > 0 {
                inputs += a.q_rank as f64 / rep;
            }
            if kk || v {
                inputs += a.kv_rank as f64 / rep;
            }
        }
        if g || u {
            inputs += h / rep;
        }
        if d {
            inputs += k * m.ffn as f64 / t;
        }
        inputs
    }

    /// MLPs each token runs through: the routed experts plus the shared ones
    /// of an MoE block (every expert where all run every token,
    /// [`ModelSpec::dense_experts`]), else one.
    pub(super) fn mlp_runs_per_token(&self) -> f64 {
        if self.runs_dense_experts() {
            (self.m.experts + self.m.shared_experts) as f64
        } else if self.m.is_moe() {
            (self.m.experts_per_token + self.m.shared_experts) as f64
        } else {
            1.0
        }
    }

    /// Whether every expert runs every token: the model's own code does so
    /// ([`ModelSpec::dense_experts`]: transformers' Llama-4), and the
    /// framework runs that code — torchtune's, torchtitan's and Megatron's
    /// MoE layers run the chosen experts alone (grouped GEMMs).
    pub(super) fn runs_dense_experts(&self) -> bool {
        self.m.is_moe() && self.m.dense_experts && self.plan.framework.runs_the_models_own_code()
    }

    /// The adapter method of a `Finetune::Adapter` plan.
    pub(super) fn adapter_method(&self) -> Option<AdapterMethod> {
        match self.plan.training.finetune {
            Finetune::Adapter { method, .. } => Some(method),
            _ => None,
        }
    }

    /// The rank of a per-matrix adapter method: a block's trainable parameters
    /// over what one rank costs across its adapted matrices (MoE experts each).
    pub(super) fn adapter_rank(&self, per_rank: impl Fn(&BlockMatrix) -> f64) -> f64 {
        let Finetune::Adapter {
            trainable_params,
            targets,
            ..
        } = self.plan.training.finetune
        else {
            return 0.0;
        };
        let per_block = self.params_per_block(trainable_params);
        let cost = self.per_targeted_matrix(targets, per_rank);
        if cost > 0.0 {
            (per_block / cost).max(0.0)
        } else {
            0.0
        }
    }

    /// A count of parameters spread evenly over every block of the model.
    pub(super) fn params_per_block(&self, params: u64) -> f64 {
        params as f64 / self.m.total_layers().max(1) as f64
    }

    /// OSF's trained rank r: `out + in + 1` parameters per rank and matrix
    /// (the `U_low` column, `V_low` row and `S_low` value).
    pub(super) fn osf_rank(&self) -> f64 {
        self.adapter_rank(|x| x.din + x.dout + 1.0)
    }

    /// HRA's number of reflections: one `in`-long vector per reflection and matrix.
    pub(super) fn hra_rank(&self) -> f64 {
        self.adapter_rank(|x| x.din)
    }

    /// [`mlp_copies_of`] this model.
    pub(super) fn mlp_copies(&self, x: &BlockMatrix) -> f64 {
        mlp_copies_of(self.m, x)
    }

    /// Frozen OSF factors a block stores beside its base weights (PEFT
    /// `_osf_*` buffers, in the base weight's dtype): see [`AdapterMethod::Osf`]
    /// and [`AdapterMethod::OsfReconstruct`].
    pub(super) fn osf_buffer_layer_params(&self) -> f64 {
        let Finetune::Adapter {
            method: method @ (AdapterMethod::Osf | AdapterMethod::OsfReconstruct),
            targets,
            ..
        } = self.plan.training.finetune
        else {
            return 0.0;
        };
        let r = self.osf_rank();
        self.per_targeted_matrix(targets, |x| {
            let high = (x.din.min(x.dout) - r).max(0.0);
            match method {
                // U_high, S_high, V_high.
                AdapterMethod::OsfReconstruct => high * (x.din + x.dout + 1.0),
                // The initial triplets, and the unrecoverable high factor.
                _ => {
                    r * (x.din + x.dout + 1.0)
                        + if x.dout > x.din { high * x.dout } else { 0.0 }
                        + if x.din > x.dout { high * x.din } else { 0.0 }
                }
            }
        })
    }

    /// (A parameters, B parameters, targeted outputs) of the average block's
    /// adapters ([`Self::mixed`]).
    pub(super) fn lora_layer_parts(&self, rank: u32, tg: LoraTargets) -> (f64, f64, f64) {
        let r = rank as f64;
        let (mut a, mut b, mut outs) = (0.0, 0.0, 0.0);
        for (m, share) in self.block_kinds() {
            for mat in block_matrices_of(m, tg, self.fused_adapters())
                .iter()
                .filter(|x| x.targeted)
            {
                let n = share * mlp_copies_of(m, mat);
                a += n * r * mat.din;
                b += n * r * mat.dout;
                outs += n * mat.dout;
            }
        }
        (a, b, outs)
    }

    /// [`block_matrices_of`] this model, as its adapters see them.
    pub(super) fn block_matrices(&self, tg: LoraTargets) -> [BlockMatrix; 9] {
        block_matrices_of(self.m, tg, self.fused_adapters())
    }

    /// Whether one adapter covers each fused projection: transformers' fused
    /// modules under PEFT, not LitGPT's per-part `LoRAQKVLinear`
    /// ([`crate::framework::FrameworkDefaults::lora_qkv_grouped`]).
    pub(super) fn fused_adapters(&self) -> Fused {
        if self.defaults().lora_qkv_grouped {
            Fused::default()
        } else {
            Fused::of(self.m)
        }
    }

    /// Frozen blocks of stage `s`: the bottom [`crate::plan::TrainingSpec::frozen_layers`]
    /// of a full fine-tune, counted from the first stage up.
    pub(super) fn frozen_blocks(&self, s: u32) -> f64 {
        let n = self.plan.training.frozen_layers;
        if n == 0 || !self.full_finetune() {
            return 0.0;
        }
        let below: f64 = (0..s).map(|k| self.stage_layers(k)).sum();
        (n as f64 - below).clamp(0.0, self.stage_layers(s))
    }

    /// The embedding is frozen with the bottom blocks, unless the head (which
    /// trains) shares its weight.
    pub(super) fn embedding_frozen(&self) -> bool {
        self.plan.training.frozen_layers > 0 && self.full_finetune() && !self.m.tied_embeddings
    }

    /// Parameters of stage `s` that a partly frozen full fine-tune freezes.
    pub(super) fn stage_frozen(&self, s: u32) -> f64 {
        let mut p = self.frozen_blocks(s) * self.block_params();
        if self.is_first(s) && self.embedding_frozen() {
            p += self.m.embedding_params() as f64 / self.te;
        }
        p
    }

    pub(super) fn stage_trainable(&self, s: u32) -> f64 {
        if let Finetune::Adapter {
            trainable_params, ..
        } = self.plan.training.finetune
        {
            // Spread over the blocks; the stage holds its share.
            let share = self.stage_layers(s) / self.m.total_layers().max(1) as f64;
            return trainable_params as f64 * share;
        }
        match self.lora() {
            None => {
                // The vision encoder is frozen ([`Self::vision_params`]).
                let all = self.stage_params(s) - self.vision_params(s);
                // (Frozen layers checked first: this runs a dozen times per stage.)
                if self.plan.training.frozen_layers == 0 {
                    all
                } else {
                    (all - self.stage_frozen(s)).max(0.0)
                }
            }
            Some((rank, tg, _, _)) => {
                let mut p = self.stage_layers(s) * self.lora_layer_params(rank, tg);
                if tg.lm_head && self.is_last(s) {
                    p += rank as f64 * (self.m.hidden as f64 + self.m.vocab as f64);
                }
                p
            }
        }
    }

    pub(super) fn trainable_total(&self) -> u64 {
        if let Finetune::Adapter {
            trainable_params, ..
        } = self.plan.training.finetune
        {
            return trainable_params;
        }
        match self.lora() {
            None => {
                let m = self.m;
                let frozen_blocks = self.plan.training.frozen_layers.min(m.total_layers()) as u64;
                let embedding = if self.embedding_frozen() {
                    m.embedding_params()
                } else {
                    0
                };
                let block = self
                    .block_kinds()
                    .map(|(m, share)| share * m.layer_params() as f64)
                    .sum::<f64>() as u64;
                m.params()
                    .saturating_sub(m.vision_params)
                    .saturating_sub(frozen_blocks.saturating_mul(block))
                    .saturating_sub(embedding)
            }
            Some((rank, tg, _, _)) => {
                let mut p = self.m.total_layers() as f64 * self.lora_layer_params(rank, tg);
                if tg.lm_head {
                    p += rank as f64 * (self.m.hidden as f64 + self.m.vocab as f64);
                }
                p as u64
            }
        }
    }

    // ----- bytes per parameter ----------------------------------------------

    pub(super) fn defaults(&self) -> &crate::framework::FrameworkDefaults {
        &self.d
    }

    /// The plan's framework's defaults, as the release the plan names runs
    /// them: torchtitan before 0.3 splits no fused qkv and gates its router
    /// on the 16-bit input ([`crate::plan::TorchtitanRelease::fuses_qkv`]),
    /// and up to 0.2.1 repeats grouped k and v to every head before SDPA
    /// ([`crate::plan::TorchtitanRelease::repeats_kv`]), as LitGPT does.
    pub(super) fn defaults_of(plan: &Plan) -> crate::framework::FrameworkDefaults {
        let mut d = plan.framework.defaults();
        if plan.framework == Framework::Torchtitan {
            let release = plan.training.torchtitan;
            d.qkv_split_copies = release.fuses_qkv();
            d.router_fp32_autocast = release.fuses_qkv();
            d.expands_gqa_kv = release.repeats_kv();
        }
        d
    }

    /// Bytes of a trainable weight as stored: fp32 under fp32/AMP (PyTorch AMP
    /// keeps fp32 parameters, DESIGN.md §3), 16-bit for pure 16-bit and for
    /// DeepSpeed/Megatron mixed precision (ZeRO paper: 2Ψ).
    ///
    /// Adapters stated 16-bit ([`crate::plan::TrainingSpec::adapters_16bit`])
    /// are 2 bytes in any precision but fp32.
    pub(super) fn trainable_weight_bytes(&self) -> f64 {
        let prec = self.prec;
        if self.base_bits().is_some()
            && self.adapter_method() != Some(AdapterMethod::OsfReconstruct)
        {
            if self.plan.training.adapters_16bit && prec != Precision::Fp32 {
                return HALF;
            }
            if self.peft_adapters_fp32() {
                return FP32;
            }
        }
        if prec == Precision::Fp32 || (prec.fp32_weights() && !self.master_in_optimizer()) {
            FP32
        } else {
            HALF
        }
    }

    /// 16-bit weights with the fp32 master copy inside the optimizer: DeepSpeed's
    /// ZeRO optimizers keep fp32 partitions of the weights whatever launched
    /// them (ZeRO paper §3: 2Ψ + 2Ψ + 12Ψ), Megatron's mixed-precision optimizer likewise.
    pub(super) fn master_in_optimizer(&self) -> bool {
        self.defaults().fp32_master_in_optimizer || self.zero_sharding()
    }

    /// Whether `torch.autocast` runs the forward: an AMP precision, unless the
    /// runtime keeps the fp32 master in its optimizer ([`Self::master_in_optimizer`])
    /// and so runs a 16-bit model without autocast. DeepSpeed's engine casts
    /// the module to 16 bits for its `bf16`/`fp16` modes and enters autocast
    /// only when its config asks (`torch_autocast`, off by default:
    /// deepspeed 0.19.8 `runtime/engine.py`); Accelerate leaves native AMP off
    /// under DeepSpeed and Megatron (`Accelerator.__init__`: `native_amp` only
    /// for the other distributed types), so the Trainer's `bf16=True` does not
    /// autocast there; Megatron runs its `Float16Module` without autocast.
    /// Measured on the H200 (calibration/h200-2026-12-04-deepspeed): LoRA'd
    /// Llama-2-70B blocks under ZeRO-3 with `bf16=True` kept each adapter's
    /// input as PEFT's fp32 cast (`_cast_input_dtype`, 4 bytes an element),
    /// which autocast would have kept as a 16-bit cast.
    pub(super) fn runs_autocast(&self) -> bool {
        self.prec.is_autocast() && !self.master_in_optimizer()
    }

    /// A ZeRO stage: DeepSpeed's optimizer wraps the model (and does its own
    /// mixed precision).
    pub(super) fn zero_sharding(&self) -> bool {
        self.plan.parallel.sharding.is_zero()
    }

    /// PEFT creates adapters in fp32 (`autocast_adapter_dtype=True`, PEFT ≥ 0.12);
    /// the tools built on the Trainer keep that default (LLaMA-Factory also
    /// casts every trainable parameter to fp32, `cast_trainable_params_to_fp32`,
    /// llamafactory 0.9.5; ms-swift only when no `lora_dtype` is set, 4.6.0
    /// `tuners/peft.py`; Unsloth's patch of `_cast_adapter_dtype` keeps it,
    /// 2026.10.9 `import_fixes.py`).
    pub(super) fn peft_adapters_fp32(&self) -> bool {
        let f = self.plan.framework;
        f.trains_through_trainer()
            || matches!(
                f,
                Framework::HfAccelerate
                    | Framework::Peft
                    | Framework::FsdpQlora
                    | Framework::PlainPytorch
            )
    }

    /// LM-head parameters stored quantized with the blocks on stage `s`
    /// ([`Framework::quantizes_lm_head`]; an untied head on the last stage).
    pub(super) fn quantized_head_params(&self, s: u32) -> f64 {
        match self.base_bits() {
            Some(bits)
                if bits <= 8
                    && self.plan.framework.quantizes_lm_head()
                    && !self.m.tied_embeddings
                    && self.m.head == ModelHead::Lm
                    && self.is_last(s) =>
            {
                self.lm_head_params(s)
            }
            _ => 0.0,
        }
    }

    /// bitsandbytes dequantizes a frozen 4- or 8-bit weight to the compute
    /// dtype for every matmul, forward and backward (`MatMul4Bit.forward`:
    /// `F.dequantize_4bit(B, quant_state).to(A.dtype)`, and again for
    /// `grad_A`; `MatMul8bitLt.backward` likewise): one 16-bit copy of the
    /// matrix in flight, freed after its matmul — two where the 4-bit state
    /// dequantizes to fp16 and the compute dtype is not fp16, the fp16 copy
    /// and its `.to(A.dtype)` cast alive together
    /// ([`Self::dequantized_bytes_per_weight`]). (block matrix, LM head).
    pub(super) fn dequantized_weights(&self, s: u32) -> (f64, f64) {
        match self.base_bits() {
            Some(bits) if bits <= 8 => {
                let per_weight = self.dequantized_bytes_per_weight();
                // A dense block's MLP may be the largest (DeepSeek-MoE's 10944 wide).
                let largest = self
                    .block_kinds()
                    .flat_map(|(m, _)| block_matrices_of(m, LoraTargets::ALL_LINEAR, Fused::of(m)))
                    .map(|x| x.din * x.dout)
                    .fold(0.0, f64::max);
                (
                    per_weight * largest / self.t,
                    per_weight * self.quantized_head_params(s),
                )
            }
            _ => (0.0, 0.0),
        }
    }

    /// LLM.int8's matmul keeps, beside its input, the int8 copy of it a
    /// weight gradient would need, whenever the input needs a gradient —
    /// though a frozen base never computes that gradient
    /// (`MatMul8bitLt.forward`: `CA, CAt, SCA, SCAt, coo_tensorA =
    /// F.double_quant(A.to(torch.float16), ...)`, then `ctx.tensors = (CAt,
    /// subA, A)` if `any(ctx.needs_input_grad[:2])`; bitsandbytes 0.41.1 and
    /// 0.43.0 alike): [`INT8_INPUT_COPY_BYTES`] per input element of every
    /// 8-bit block matrix, each quantizing its input for itself (q, k and v
    /// three copies of the norm output; one where LitGPT fuses them). Bytes
    /// per token of one block (attention, one run of the MLP); the
    /// row-parallel inputs (o, down) shard under TP. From 0.45.0 the copy is
    /// made only for a weight that trains (`if ctx.needs_input_grad[1]`, else
    /// `CAt = None`): a plan that states a recent release
    /// ([`crate::plan::TrainingSpec::bnb_0_43_2`]) counts none; unstated, the
    /// older release's count, the safe side, as for the 4-bit input.
    pub(super) fn int8_input_copies(&self) -> (f64, f64) {
        if self.base_bits() != Some(8) || self.plan.training.bnb_0_43_2 {
            return (0.0, 0.0);
        }
        let m = self.m;
        let one_qkv = self.defaults().fused_qkv && !m.fused_projections && m.mla.is_none();
        let (mut attn, mut mlp) = (0.0, 0.0);
        let matrices = block_matrices_of(m, LoraTargets::ALL_LINEAR, Fused::of(m));
        for (i, x) in matrices.iter().enumerate() {
            // k and v (block_matrices_of's second and third) are q's fused
            // matmul there.
            if one_qkv && (i == 1 || i == 2) {
                continue;
            }
            // A row-parallel input is split across the TP ranks; the rest
            // read the whole (under sequence parallelism, gathered) state.
            let split = if x.row_parallel { self.t } else { self.rep };
            let bytes = INT8_INPUT_COPY_BYTES * x.din / split;
            if x.mlp {
                mlp += bytes;
            } else {
                attn += bytes;
            }
        }
        (attn, mlp)
    }

    /// Bytes per weight of a dequantized matrix in flight: the compute-dtype
    /// copy, plus the fp16 one it is cast from where a 4-bit base was
    /// quantized from fp16 ([`Framework::quantizes_4bit_from_fp16`]: the
    /// quantization state records fp16, `dequantize_4bit` returns fp16 and
    /// `MatMul4Bit` casts it to the input's dtype: `.to(A.dtype)`, read in
    /// bitsandbytes 0.41.1, 0.42.0, 0.43.0 and 0.45.0) and the compute dtype
    /// is not fp16. The 2023 LitGPT QLoRA rows
    /// (bf16-true) fall short by about one such fp16 LM head without it:
    /// StableLM-3B 0.41 GiB for its 0.39, phi-1.5 0.24 for 0.20.
    pub(super) fn dequantized_bytes_per_weight(&self) -> f64 {
        let fp16_state = matches!(self.base_bits(), Some(b) if b <= 4)
            && self.plan.framework.quantizes_4bit_from_fp16()
            && !matches!(
                self.plan.training.precision,
                Precision::Fp16 | Precision::AmpFp16
            );
        if fp16_state {
            self.e + HALF
        } else {
            self.e
        }
    }

    /// Bytes per weight of a frozen block matrix that FSDP or ZeRO-3 shards,
    /// gathers and offloads with the parameter: bitsandbytes' packed 4-bit
    /// codes without their scales ([`Self::replicated_quant_state_bytes`]);
    /// torchao's NF4 (torchtune) shards its scales with the codes (torchao
    /// 0.18.0 `NF4Tensor.fsdp_pre_all_gather` gathers `quantized_scalers`,
    /// `quantization_factor` and `quantized_data`); a 16/32-bit base whole.
    pub(super) fn sharded_matrix_bytes(&self, base_bits: u32) -> f64 {
        self.frozen_matrix_bytes(base_bits) - self.replicated_quant_state_bytes(base_bits)
    }

    /// Bytes per weight of a bitsandbytes 4-bit base's block scales, which
    /// every rank keeps whole on the GPU however the parameters are sharded
    /// or offloaded: `Params4bit._quantize` stores the `QuantState` on the
    /// parameter and on its `Linear4bit` module (`self.module.quant_state =
    /// quant_state`), FSDP's flat parameter drops it and `Linear4bit.forward`
    /// takes the module's back ("the quant state got lost when the parameter
    /// got converted. This happens for example for fsdp", bitsandbytes
    /// 0.43.1 `nn/modules.py`); neither FSDP's nor DeepSpeed's sharding or
    /// CPU offload sees a plain attribute. Zero for torchao's NF4 and for
    /// 8- to 32-bit bases (LLM.int8's row scales are negligible).
    pub(super) fn replicated_quant_state_bytes(&self, base_bits: u32) -> f64 {
        if base_bits == 4 && !self.plan.framework.quantizes_with_torchao() {
            self.frozen_matrix_bytes(4) - NF4_PACKED_BYTES_PER_PARAM
        } else {
            0.0
        }
    }

    /// Bytes of a frozen block matrix weight (LoRA base).
    pub(super) fn frozen_matrix_bytes(&self, base_bits: u32) -> f64 {
        match base_bits {
            4 if self.plan.nf4_double_quantized() => NF4_DOUBLE_QUANT_BYTES_PER_PARAM,
            4 => NF4_BYTES_PER_PARAM,
            8 => INT8_BYTES_PER_PARAM,
            32 => FP32,
            _ => HALF,
        }
    }
}
