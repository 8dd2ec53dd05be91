//! A block's activations and its backward's moments: kept, recomputed, pipelined, offloaded.

use super::*;

impl<'a> Ctx<'a> {
    /// [`Self::layer_activations`] of one block at this length before any
    /// encoder–decoder cross-attention or float8 weight copies: its attention
    /// part and its whole.
    pub(super) fn block_activations(&self) -> (f64, f64) {
        let m = self.m;
        let (b, s, e, t, rep) = (self.b, self.s, self.e, self.t, self.rep);
        let sb = s * b;
        let h = m.hidden as f64;
        let hq = m.q_width() as f64;
        let hkv = m.kv_width() as f64;
        // The attention's output, o_proj's input.
        let out = m.attn_out_width() as f64;
        let f = m.ffn as f64;
        let a = m.heads as f64;
        let tg = match self.plan.training.finetune {
            Finetune::Full => LoraTargets::ALL_LINEAR,
            Finetune::Lora { targets, .. } => targets,
            Finetune::Adapter { .. } => LoraTargets::default(),
        };
        let dropout = self.plan.training.dropout;
        let norm = self.norm_kept_bytes();
        // How many copies of a norm's output the projections reading it keep:
        // one shared tensor, or one 16-bit cast each under autocast (one for
        // a fused projection).
        let inputs_kept = |targets: &[bool], fused: bool| -> f64 {
            let n = targets.iter().filter(|&&t| self.keeps_input(t)).count() as f64;
            if self.casts_inputs_per_matmul() && !fused {
                n
            } else {
                n.min(1.0)
            }
        };

        // Attention block.
        let mut attn = norm * sb * h / rep; // norm input
                                            // q/k/v input (the norm output, or its casts)
        let attn_inputs = inputs_kept(&[tg.q, tg.k, tg.v], m.fused_projections);
        let li = self.linear_input_bytes();
        let gathered = self.colwise_input_split();
        attn += attn_inputs * li * sb * h / gathered;
        // q, k, v (rotated) for the attention backward; grouped k/v are expanded
        // to every query head by HF's eager path (`repeat_kv`) and by LitGPT.
        let attention = self.attention();
        let expand = attention == Attention::Eager
            || self.defaults().expands_gqa_kv
            || self.sdpa_gets_a_mask();
        let kv = if expand { hq } else { hkv };
        match m.mla {
            // Latent attention (transformers `DeepseekV3Attention`): q
            // (`torch.cat` of its parts) and k (`new_empty`, filled) are new
            // tensors; v is a view of kv_b_proj's output, which it keeps whole
            // (every head's k_nope beside its value). Each latent's RMSNorm
            // keeps what a norm keeps of it and the projection after it its
            // output; kv_a's output itself is only split and cast (the norm's
            // `.to(float32)`, the rotary `k · cos`, neither saves it).
            Some(a) => {
                let heads = m.heads as f64;
                let nope = (m.head_dim as f64 - a.rope_dim as f64).max(0.0);
                attn += e * sb * (2.0 * hq + heads * (nope + a.v_dim as f64)) / t;
                let (qr, kvr) = (a.q_rank as f64, a.kv_rank as f64);
                attn += norm * sb * (qr + kvr) / rep;
                if a.q_rank > 0 && self.keeps_input(tg.q) {
                    attn += li * sb * qr / rep;
                }
                if self.keeps_input(tg.k || tg.v) {
                    attn += li * sb * kvr / rep;
                }
            }
            None => attn += e * sb * (hq + 2.0 * kv) / t,
        }
        if m.qk_norm {
            attn += self.qk_norm_bytes() * sb * (hq + hkv) / t;
        }
        // One fused qkv output: v is a view of it, so the whole tensor stays
        // alive beside the rotated q and k copies (transformers Phi-3,
        // GPT-NeoX, Falcon; measured on the H200: Phi-3-mini bf16 kept more than
        // the separate-projection count by about this much; counted exactly by
        // calibration/saved_tensors.py). That is with `use_cache=False`, as
        // training scripts set and gradient checkpointing forces: a KV cache in
        // the training forward copies v. LitGPT fuses qkv for every model.
        // With grouped or multi-query k/v that attention repeats (LitGPT's
        // expansion, transformers' `repeat_kv` under a mask), v is copied out
        // of the fused output, which frees it; unrepeated (SDPA's own grouped
        // attention, a single k/v head) the view stays, and the fused output
        // with it: transformers Phi-3/Phi-4-mini slice v out of `qkv_proj`'s
        // output, and from 5.25 Falcon `split`s it (5.24 indexed it out,
        // `[..., [-1], :]`, a copy). Replayed: Phi-4-mini (24 heads over 8)
        // bf16 at 4 × 2048, allocated −2.6 % counting v's copy, 0.0 % with
        // the view; counted under 5.25, a Falcon-7B-shaped block 26.44
        // bytes per token per hidden unit (24.32 under 5.24).
        // Not where bitsandbytes hands the fused output back in fp32 under
        // autocast ([`Self::quantized_outputs_in_fp32`]): SDPA then keeps
        // autocast's 16-bit copies of q, k and v, not views of it (replayed,
        // `allocator_replay.py --qlora-families`: Pythia-1.4B's blocks kept no
        // fused output).
        let keeps_qkv = (m.fused_projections || self.defaults().fused_qkv)
            && (m.kv_heads == m.heads || !expand)
            && m.mla.is_none()
            && !self.quantized_outputs_in_fp32();
        if keeps_qkv && m.positions == Positions::Rotary {
            attn += e * sb * (hq + hkv) / t;
        }
        match attention {
            Attention::Flash => {
                // The output, kept by the kernel and o_proj, and any mask SDPA
                // converted: every local query against every key.
                attn += e * sb * out / t;
                attn += self.sdpa_mask_bytes() * sb * s * self.plan.parallel.cp as f64;
                attn += FP32 * b * a * s / t; // per-row log-sum-exp
                if li < e && self.keeps_input(tg.o) {
                    // o_proj's own float8 copy of that output.
                    attn += li * sb * out / t;
                }
            }
            Attention::Eager => {
                let scores = self.score_elements();
                attn += self.eager_score_bytes() * scores;
                if self.keeps_input(tg.o) {
                    attn += li * sb * out / t;
                }
            }
        }
        if dropout {
            attn += MASK * sb * h / rep;
        }

        // MLP block (per routed token: top-k experts plus shared ones).
        let k = self.mlp_runs_per_token();
        // A parallel block with one norm (Phi, GPT-J, Falcon-7B) feeds the same
        // normalised tensor to attention and MLP: no second norm input, and the
        // MLP's input is the tensor attention already keeps (unless autocast
        // casts it once per matmul).
        let shared_norm = m.norms_per_layer == 1;
        // Parallel blocks with two norms (GPT-NeoX) normalise the same input:
        // kept once.
        let mut mlp = if shared_norm || m.parallel_residual {
            0.0
        } else {
            norm * sb * h / rep // norm input
        };
        let gated = m.mlp == Mlp::Gated;
        // The matmuls reading the MLP's input: up and, gated, gate (a plain
        // MLP has no gate to cast the input for).
        let mlp_inputs = if gated {
            inputs_kept(&[tg.up, tg.gate], m.gate_up_fused())
        } else {
            inputs_kept(&[tg.up], m.gate_up_fused())
        };
        let mlp_inputs = if shared_norm && attn_inputs > 0.0 && !self.casts_inputs_per_matmul() {
            0.0
        } else {
            mlp_inputs
        };
        let experts_fp32 = self.experts_in_fp32();
        // Experts in fp32: one fp32 copy of each routed input (gate and up are
        // one grouped weight, `gate_up_proj`) instead of per-matmul casts.
        mlp += if experts_fp32 {
            FP32 * sb * h / gathered * k
        } else {
            mlp_inputs * li * sb * h / gathered * if m.is_moe() { k } else { 1.0 }
        };
        let e = self.mlp_bytes();
        // fc2's input: in float8 under TE, else in the MLP's dtype.
        let down_in = if li < self.e { li } else { e };
        // T5's MLPs drop out the down projection's input (transformers
        // `T5DenseActDense` and v1.1's `T5DenseGatedActDense`: act, dropout,
        // `wo`), keeping the dropout's 1-byte mask per inner element. BART's
        // lineage (BART, M2M100/NLLB, Marian, mBART, Pegasus: learned or
        // sinusoidal positions) drops it out by `activation_dropout`, 0.0 in
        // their configs: nothing. Replayed (`calibration/allocator_replay.py
        // --families`): NLLB-200-600M (ReLU) at 16 × 512, allocated +8.9 %
        // with T5's mask and dropped-out copy counted.
        let inner_dropout =
            dropout && m.arch == Arch::EncoderDecoder && m.positions == Positions::Relative;
        let inner_mask = if inner_dropout { MASK * f / t } else { 0.0 };
        let mut per_token = if gated {
            // gate out (SiLU input), SiLU out and up out (the product's
            // inputs); a fused SwiGLU kernel recomputes the SiLU out, and so
            // does a compiled block (the partitioner recomputes the cheap
            // element-wise SiLU from the kept gate output: counted with
            // calibration/saved_tensors.py --compile, 32.57·hidden per token
            // per block for the small bf16 Llama against 43.07 eager).
            let kept = if m.clamped_glu {
                // The fused gate/up output (2), the gate's clamp, its sigmoid,
                // the gated product and `up + 1` ([`ModelSpec::clamped_glu`]).
                6.0
            } else if self.plan.training.fused_kernels
                || self.plan.training.compile
                || self.defaults().fused_swiglu
            {
                2.0
            } else {
                3.0
            };
            // Under autocast the Python tanh GELU's output is fp32 (its tanh
            // branch runs in fp32 from `pow`, and `0.5·x · (1 + tanh)`
            // promotes), and the gate × up product keeps it as it is
            // (transformers `T5DenseGatedActDense`: `act(wi_0(x)) *
            // wi_1(x)`). Replayed (`calibration/allocator_replay.py`):
            // FLAN-T5-base under bf16 autocast kept an fp32 GELU output per
            // inner element.
            let act_promoted = if kept == 3.0 && self.python_gelu() && self.runs_autocast() {
                FP32 - e
            } else {
                0.0
            };
            // With T5 v1.1's dropout, `wo` keeps the dropped-out product
            // instead of the product, which nothing else saves: the mask more.
            (kept * e + act_promoted) * f / t
                + inner_mask
                + if self.keeps_input(tg.down) {
                    down_in * f / t
                } else {
                    0.0
                }
        } else if m.relu {
            // ReLU keeps its output ([`ModelSpec::relu`]), which is fc2's
            // input unless a float8 fc2 casts it or T5's `DenseReluDense`
            // drops it out first (transformers `T5DenseActDense`: `wi`, act,
            // dropout, `wo`): then the mask and the dropped-out copy too.
            e * f / t
                + inner_mask
                + if self.keeps_input(tg.down) && (inner_dropout || down_in < e) {
                    down_in * f / t
                } else {
                    0.0
                }
        } else {
            // fc1 out (GELU input), GELU out (fc2 input)
            e * f / t
                + if self.keeps_input(tg.down) {
                    down_in * f / t
                } else {
                    0.0
                }
        };
        if self.python_gelu() {
            per_token += self.gelu_new_extra_bytes() * f / t;
        }
        mlp += k * sb * per_token;
        if m.is_moe() {
            mlp += FP32 * sb * m.experts as f64; // router logits / softmax
            if self.full_finetune() {
                // A trained router keeps its input, and what scoring the
                // routed tokens keeps for the scores' gradient
                // ([`MoeScoring`]). transformers' routing weights' gradient
                // needs each expert's output (`expert_out *
                // routing_weights`, Mixtral / Qwen-MoE): counted with
                // calibration/saved_tensors.py, 6·hidden B per token more
                // than the experts alone for a top-2 bf16 Mixtral block.
                // Where every expert runs every token, the input repeated for
                // each (`repeat(E, 1)`, which the scores' product keeps; that
                // product is each expert's input, counted above) and no
                // expert's output (Llama-4 sums them after the down `bmm`):
                // replayed, two hidden-wide tensors per expert.
                let scoring = match self.defaults().moe_scoring {
                    MoeScoring::ExpertOutput if self.runs_dense_experts() => e * m.experts as f64,
                    MoeScoring::ExpertOutput => e * k,
                    MoeScoring::Fp32Copy => FP32 * m.experts_per_token as f64,
                    MoeScoring::InActivation => 0.0,
                };
                // Under fp32 autocast the gate keeps an fp32 cast of its
                // input ([`crate::framework::FrameworkDefaults::router_fp32_autocast`]).
                let router_input = if self.defaults().router_fp32_autocast {
                    e.max(FP32)
                } else {
                    e
                };
                mlp += sb * h / rep * (router_input + scoring);
            }
        }
        if dropout {
            mlp += MASK * sb * h / rep;
        }
        let (int8_attn, int8_mlp) = self.int8_input_copies();
        attn += sb * int8_attn;
        mlp += k * sb * int8_mlp;

        // LoRA adapters: the dropped-out input copy (+ mask) and the rank-r
        // intermediate kept for lora_B's gradient, per targeted matrix (PEFT `Linear.forward`).
        // Those on q, k, v and o are the attention's: an encoder–decoder's
        // cross-attention has its own ([`Self::decoder_block`]).
        let mut lora = 0.0;
        let mut lora_attn = 0.0;
        if let Some((rank, tg, _, lora_dropout)) = self.lora() {
            let r = rank as f64;
            // The adapter's dropout copy and A-output are in its input dtype
            // ([`Self::lora_input_bytes`]).
            let e = self.lora_input_bytes();
            let casts = self.lora_copies_input();
            let variant = self.lora_variant();
            // One adapter reading an input of width `din`: its rank-r output
            // (`ranks` of them for a grouped adapter) and, with dropout, the
            // dropped-out input copy and its mask — without dropout, its own
            // wider cast of the input; `n` such adapters. A frozen A (LoRA-FA)
            // keeps no input (only dropout's mask). DoRA's magnitude keeps the
            // base output (16-bit) and the LoRA output (adapter dtype) of its
            // `dout` outputs; with dropout it recomputes the base output in the
            // adapter dtype (`F.linear(x, weight.to(x.dtype))`), keeping that
            // instead and the weight copy (PEFT `DoraLinearLayer.forward`).
            let adapter = |on: bool, din: f64, dout: f64, n: f64, ranks: f64| {
                if !on {
                    return 0.0;
                }
                let mut a = n * ranks * sb * e * r;
                let keeps_input = variant != LoraVariant::LoraFa;
                if lora_dropout {
                    a += n * sb * MASK * din;
                    if keeps_input {
                        a += n * sb * e * din;
                    }
                } else if casts && keeps_input {
                    a += n * sb * e * din;
                }
                if variant == LoraVariant::Dora {
                    a += if lora_dropout {
                        n * (sb * 2.0 * e * dout + e * din * dout)
                    } else {
                        n * sb * (self.e + e) * dout
                    };
                }
                a
            };
            if self.defaults().lora_qkv_grouped {
                // One adapter over the fused qkv input; `zero_pad` keeps its
                // output unless q, k and v are all adapted.
                let out = [(tg.q, hq), (tg.k, hkv), (tg.v, hkv)];
                let on = out.iter().filter(|(on, _)| *on);
                let ranks = on.clone().count() as f64;
                let outs = on.clone().map(|(_, d)| d).sum::<f64>();
                lora_attn += adapter(ranks > 0.0, h, outs, 1.0, ranks);
                if ranks > 0.0 && ranks < 3.0 {
                    lora_attn += outs * sb * self.e / t;
                }
            }
            // q, k, v separately unless grouped above; o and the MLP (routed
            // experts per token).
            let grouped = self.defaults().lora_qkv_grouped;
            for (i, mat) in self.block_matrices(tg).into_iter().enumerate() {
                if grouped && i < 3 {
                    continue;
                }
                if mat.mlp {
                    lora += adapter(mat.targeted, mat.din, mat.dout, k, 1.0);
                } else {
                    lora_attn += adapter(mat.targeted, mat.din, mat.dout, 1.0, 1.0);
                }
            }
        }
        lora += lora_attn;

        // LLaMA-Adapter v2 scales every linear's output by a trained vector
        // (`adapter_scale * (linear(x) + adapter_bias)`, LitGPT `AdapterV2Linear`),
        // so each output is kept. Counted from litgpt 0.5.13 blocks under torch
        // 2.15: Llama-2-7B kept 29·hidden bytes per token more than LLaMA-Adapter
        // v1 (these outputs plus the fp32 normalised tensors of the trained
        // RMSNorms, [`Self::norm_affine_bytes`]).
        if let Finetune::Adapter {
            method,
            targets: atg,
            trainable_params,
            ..
        } = self.plan.training.finetune
        {
            // Each adapted matrix (routed experts per token) keeps a cast of
            // its input; `delta-weight` methods also one `in × out` update.
            let le = self.lora_input_bytes();
            let (mut casts, mut weights) = (0.0, 0.0);
            for mat in self.block_matrices(atg).iter().filter(|x| x.targeted) {
                let n = if mat.mlp { k } else { 1.0 };
                casts += n * le * sb * mat.din;
                weights += n * mat.din * mat.dout / t;
            }
            // One weight-sized tensor per adapted matrix, in the adapter dtype.
            let deltas = le * weights;
            // The prefix attention's output, kept by the trained gate
            // (`y + self.gating_factor * ay`) in the blocks that have one
            // (the same probe: +2.3·hidden per token in those blocks).
            let prefix = e * sb * hq / t * self.adapter_prefix_share();
            lora += match method {
                AdapterMethod::Generic => 0.0,
                AdapterMethod::LlamaAdapter => prefix,
                AdapterMethod::LlamaAdapterV2 => {
                    let up = if gated { 2.0 * f } else { f };
                    prefix + e * sb * ((hq + 2.0 * hkv + k * up) / t + (1.0 + k) * h / rep)
                }
                // `result * ia3_scaling` keeps k's and v's outputs; the
                // feed-forward branch keeps `x.to(ia3_l.dtype)`.
                AdapterMethod::Ia3 => {
                    sb * (e * 2.0 * hkv + k * self.trainable_weight_bytes() * f) / t
                }
                // The trained norm weights keep their normalised tensors
                // ([`Self::norm_affine_bytes`], through `norms_train`).
                AdapterMethod::LnTuning => 0.0,
                // q and v share their input (kept once by the rotation
                // matmuls) and keep their outputs for the scale; each keeps
                // the rotation chain's `in × in` products.
                AdapterMethod::Boft => {
                    e * sb * (h / rep + (hq + hkv) / t)
                        + 2.0 * BOFT_ROTATION_MATRICES * e * h * h / t
                }
                AdapterMethod::CastInputs => casts,
                AdapterMethod::DeltaWeight => casts + deltas,
                // LoRA-like of rank 2r: the input (a cast per matrix when the
                // adapters are wider than it, else the shared 16-bit inputs),
                // the 2r-wide `h`, and the concatenated factors A (out × 2r)
                // and B (2r × in).
                AdapterMethod::Osf => {
                    let r2 = 2.0 * self.osf_rank();
                    let mut a = if self.lora_casts_input() {
                        casts
                    } else {
                        e * sb * self.distinct_inputs(atg)
                    };
                    for mat in self.block_matrices(atg).iter().filter(|x| x.targeted) {
                        let n = if mat.mlp { k } else { 1.0 };
                        a += n * le * (sb * r2 + r2 * (mat.din + mat.dout) / t);
                    }
                    a
                }
                // The input casts, r + 1 `in × in` reflection products and
                // two `out × in` weights (the base's fp32 copy, the rotated
                // one) per adapted matrix.
                AdapterMethod::Hra => {
                    let r = self.hra_rank();
                    let mut a = casts;
                    for mat in self.block_matrices(atg).iter().filter(|x| x.targeted) {
                        let n = if mat.mlp { k } else { 1.0 };
                        a +=
                            n * le * ((r + 1.0) * mat.din * mat.din + 2.0 * mat.dout * mat.din) / t;
                    }
                    a
                }
                // Prefix tuning: SDPA's expanded k/v ([`Self::sdpa_gets_a_mask`]).
                AdapterMethod::PrefixTuning => 0.0,
                // The 16-bit inputs `F.linear` keeps, each adapted matrix's
                // rebuilt weight in the compute dtype, and the sparse
                // update's indices and values ([`SHIRA_BYTES_PER_VALUE`] a
                // trained value).
                AdapterMethod::Shira => {
                    e * sb * self.distinct_inputs(atg)
                        + e * weights
                        + SHIRA_BYTES_PER_VALUE * self.params_per_block(trainable_params) / t
                }
                // The rebuilt weights (`deltas`: out × in each, in the adapter
                // dtype), `U_low·S_low` (out × r) each, and the 16-bit inputs
                // `F.linear` keeps.
                AdapterMethod::OsfReconstruct => {
                    let r = self.osf_rank();
                    let mut a = deltas + e * sb * self.distinct_inputs(atg);
                    for mat in self.block_matrices(atg).iter().filter(|x| x.targeted) {
                        let n = if mat.mlp { k } else { 1.0 };
                        a += n * le * mat.dout * r / t;
                    }
                    a
                }
            };
        }

        // Sandwich norms (Gemma-2/3: a norm after attention and after the MLP
        // too) save what the pre-norms save; their outputs go into the residual
        // add, which keeps nothing.
        let extra_norms = (m.norms_per_layer as f64 - 2.0).max(0.0) * norm * sb * h / rep;

        (attn + lora_attn, attn + mlp + lora + extra_norms)
    }

    /// Float8 copies of one block's linear weights that a Transformer Engine
    /// run makes ([`FP8_WEIGHT_COPY_BYTES`]); none without TE float8.
    pub(super) fn fp8_weight_copies_per_layer(&self) -> f64 {
        if self.te_float8() {
            FP8_WEIGHT_COPY_BYTES * self.layer_matrix_params()
        } else {
            0.0
        }
    }

    /// The copies are weights when TE caches them for the run
    /// ([`Framework::te_caches_fp8_weights`]), else each layer's activations.
    pub(super) fn fp8_weight_copies_cached(&self) -> bool {
        self.plan.framework.te_caches_fp8_weights()
    }

    /// What a recomputed block's forward holds beside the block's own saved
    /// tensors at its largest moment, when PEFT LoRA adapts its MLP — a
    /// moment above the MLP backward it is compared with. Two candidates:
    ///
    /// - the end: the recompute runs on to the last tensor the block saves
    ///   (non-reentrant checkpointing stops there, `_StopRecomputationError`),
    ///   the down adapter's — its `lora_B` input, or with dropout after the
    ///   MLP (T5, BART, GPT-2) the dropout's mask, past `lora_B`, whose fp32
    ///   output and the scaled one are then alive too. Live: the down
    ///   projection's input (the MLP product, which a frozen base does not
    ///   save), the base output, and with adapter dropout PEFT's cast of the
    ///   input to the adapters' wider dtype (`_cast_input_dtype`; without
    ///   dropout the cast is the saved copy) — under autocast also the
    ///   dropped-out copy in that width, whose 16-bit cast is what `lora_A`
    ///   keeps ([`Self::lora_input_bytes`]);
    /// - the up (or fused gate_up) adapter's scaled output: the base output,
    ///   `lora_B`'s output and the scaled one (2·MLP wide for a fused
    ///   projection), less what the block saves only after that moment.
    ///
    /// Both with the gradients flowing into the block
    /// ([`HIDDEN_GRADS_IN_MLP_BACKWARD`], the residual stream's dtype; at the
    /// top block, the first recomputed, also the final norm's fp32 input
    /// gradient where that norm upcasts a 16-bit residual — replayed: 4 bytes
    /// per token per hidden unit at Llama-3.2-1B's, Qwen2.5's and Phi-3's
    /// peaks, freed once the block's own backward starts), the
    /// MLP's input (the norm's output, the MLP call's argument) unless saved,
    /// and, where the post-attention norm saves a copy rather than its input,
    /// the residual. The cast is not made under FSDP's mixed precision, whose
    /// gathered adapters are 16-bit. Replayed through the caching allocator
    /// (`calibration/allocator_replay.py` rules; torch 2.15, transformers
    /// 5.25, peft 0.21.2; LoRA r16 with dropout on every linear, full
    /// checkpointing): ByT5-base at 32 × 512 (bf16) held 6·ffn + 16·hidden
    /// bytes per token at the end; Llama-3.2-1B as a sequence classifier at
    /// 8 × 2048 6·ffn + 10·hidden in bf16 and 10·ffn + 14·hidden under bf16
    /// autocast over fp32 weights; Phi-3-mini's fused gate_up adapter peaked
    /// above its end. Without this term: −8.6 %, −8.3 %, −9.9 % and −4.3 %
    /// allocated. An MoE block's last expert runs on its share of the tokens
    /// alone: not counted. Outside a recompute (`recompute` false: the
    /// forward's last block, on top of every block's saved tensors) no
    /// gradient flows yet and the block runs past `lora_B`: with no logits
    /// above it (a classifier), the forward's peak. Replayed: Llama-3.2-1B as
    /// a classifier, LoRA without checkpointing, peaked at its last block's
    /// down adapter (−0.95 → +0.18 % allocated; ModernBERT −3.1 → −2.0 %,
    /// XLM-RoBERTa −2.7 → 0.0 %).
    pub(super) fn mlp_adapter_transients(&self, recompute: bool) -> f64 {
        let Some((_, tg, _, lora_dropout)) = self.lora() else {
            return 0.0;
        };
        let m = self.m;
        let [_, _, _, _, g, u, d, _, _] = self.block_matrices(tg);
        if !(u.targeted || d.targeted) || m.is_moe() || self.defaults().lora_qkv_grouped {
            return 0.0;
        }
        let (e, rb) = (self.e, self.residual_bytes());
        // What an adapter keeps of its input ([`Self::lora_input_bytes`]),
        // and the dtype its `lora_B` output and the scaled one are in.
        let le = self.lora_input_bytes();
        // PEFT's cast of an adapter's input to the adapters' dtype.
        let cast = if self.adapters_computed_wider() && self.peft_adapters_fp32() {
            self.trainable_weight_bytes()
        } else {
            0.0
        };
        let f = m.ffn as f64 / self.t;
        let h = m.hidden as f64 / self.rep;
        // What the down adapter saves: its input copy (dropped out, or cast)
        // and with dropout the mask.
        let down_saved = if !d.targeted {
            0.0
        } else if lora_dropout {
            (le + MASK) * f
        } else if self.lora_casts_input() {
            le * f
        } else {
            0.0
        };
        // The end: the down adapter's `lora_B` input.
        let end = if d.targeted {
            let mut end = e * h;
            if !self.keeps_input(true) {
                end += e * f;
            }
            // PEFT's cast is dropped out, or under autocast cast again to
            // the 16 bits `lora_A` keeps: not what is saved. Under autocast
            // with dropout, the dropped-out copy is in that width too.
            if lora_dropout || self.runs_autocast() {
                end += cast * f;
            }
            if lora_dropout && self.runs_autocast() {
                end += cast * f;
            }
            // Past `lora_B` when something after it saves (dropout after the
            // MLP), or always outside a recompute.
            if self.plan.training.dropout || !recompute {
                end += 2.0 * le * h;
            }
            end
        } else {
            0.0
        };
        // The up (or fused gate_up) adapter's scaled output: its base output
        // (the size of the 16-bit sum the block saves after it), `lora_B`'s
        // output and the scaled one, with dropout PEFT's cast of the MLP's
        // input — less what the block saves only after that moment: a fused
        // projection's activation output and the down adapter's copies.
        let up = if u.targeted {
            let fused_act = if u.dout > m.ffn as f64 { e * f } else { 0.0 };
            // PEFT casts a narrower MLP input (the norm's output, in the
            // residual stream's dtype) when that cast is not what it keeps.
            let cast_in = if (lora_dropout || self.runs_autocast()) && rb < cast {
                cast * h
            } else {
                0.0
            };
            2.0 * le * u.dout / self.t + cast_in - fused_act - down_saved
        } else {
            0.0
        };
        // The gradients flowing into the block; at the top block's recompute
        // (the stage's first, with every checkpoint still held) also the
        // final norm's fp32 input gradient where that norm upcasts a 16-bit
        // residual (freed as the block's own backward starts).
        let mut per_token = if recompute {
            HIDDEN_GRADS_IN_MLP_BACKWARD * rb * h
                + if self.recompute_reuses_input() {
                    0.0
                } else {
                    FP32 * h
                }
        } else {
            0.0
        };
        if !self.keeps_input(u.targeted || g.targeted) {
            per_token += rb * h;
        }
        if !self.recompute_reuses_input() {
            per_token += rb * h;
        }
        per_token += end.max(up).max(0.0);
        per_token * self.b * self.s
    }

    /// The gradients a recomputed block's MLP backward makes beside the
    /// recomputed block (the working block, [`BACKWARD_WORKING_BLOCKS`]): the
    /// gradient of the down projection's input, then the product's backward
    /// makes the gradients of both its factors (SwiGLU's activation and up
    /// projection) while that one is alive — net two MLP-wide tensors once the
    /// product the down projection kept is released, one for a plain MLP
    /// (GELU's input gradient) — and the hidden-sized gradients flowing into
    /// the block and out of its MLP. Without recompute the block's own kept
    /// tensors are released as its backward runs and these gradients are the
    /// moment ([`Self::kept_block_backward`]); a recomputed block holds all of
    /// its activations when they start. Counted on the CPU allocator
    /// (`calibration/cpu_allocator.py working`, transformers' Llama and BERT,
    /// bf16, 8,192 → 16,384 tokens, bytes per token per hidden unit at the
    /// backward peak with full checkpointing): MLP 1408 / 1792 / 2816 wide
    /// 65.6 / 74.6 / 97.5 (the model without this term 51.1 / 56.5 / 69.5;
    /// with it 66.1 / 74.5 / 95.5), BERT MLP 2048 49.1 (35.9; 47.9). Measured
    /// on the H200: QLoRA Mistral-7B with checkpointing, 2 × 2048, −4.9 → +0.1 %
    /// allocated. Per-op selective checkpointing recomputes the block's MLP
    /// the same way; selective (attention core only) does not. An MoE block's
    /// routed tokens count once per expert they run through, as its kept
    /// activations do.
    pub(super) fn recomputed_mlp_grads(&self) -> f64 {
        if !matches!(
            self.plan.training.checkpointing,
            Checkpointing::Full | Checkpointing::OpSelective
        ) {
            return 0.0;
        }
        self.mlp_grads(HIDDEN_GRADS_IN_MLP_BACKWARD)
    }

    /// Whether the down projection saves nothing of its input: a frozen base
    /// matrix no adapter reads, multiplied by PyTorch's own linear or by a
    /// 4-bit matmul that keeps no input (not ZeRO-3's, nor bitsandbytes'
    /// before 0.43.2: [`Self::keeps_input`]) — PEFT's default targets (q and
    /// v), or attention-only adapters. Its input's gradient then meets the
    /// gradients of the product's factors with nothing of the block released
    /// before it. Replayed (`calibration/allocator_replay.py --classifiers`):
    /// Llama-3.2-1B as a classifier, LoRA on q and v, checkpointed, 8 × 2048:
    /// three MLP-wide gradients at the peak; and over a 4-bit base
    /// (`--trl-qlora`, TRL's fused head, where the logits no longer hide the
    /// block): Qwen2.5-1.5B on q and v, checkpointed, 4 × 2048, peaked with
    /// six MLP-wide tensors (the gate's and up projection's outputs, the
    /// activation's, and three gradients), −4.4 % allocated when the count
    /// left a 4-bit base's product as kept. An 8-bit base is left as it was
    /// (its dequantized weights' moment; no replay of it).
    pub(super) fn down_keeps_nothing(&self) -> bool {
        let targets = match self.plan.training.finetune {
            Finetune::Full => return false,
            Finetune::Lora { targets, .. } | Finetune::Adapter { targets, .. } => targets,
        };
        !self.block_matrices(targets)[6].targeted
            && !self.keeps_input(false)
            && self.base_bits() != Some(8)
    }

    /// The gradients a block's MLP backward holds at once — two MLP-wide
    /// ones for a gated MLP, one for a plain one ([`Self::recomputed_mlp_grads`])
    /// — and `hidden` hidden-sized ones, over the micro-batch. MLP-wide
    /// tensors are split over the tensor-parallel ranks, hidden-sized ones
    /// only under sequence parallelism.
    pub(super) fn mlp_grads(&self, hidden: f64) -> f64 {
        let m = self.m;
        let e = self.mlp_bytes();
        let factors = if m.mlp == Mlp::Gated {
            MLP_GRADS_GATED
        } else {
            MLP_GRADS_PLAIN
        };
        // Net of the product the down projection kept: a frozen,
        // unadapted down projection kept none, so its input's gradient
        // counts in full.
        let unkept = if self.down_keeps_nothing() { 1.0 } else { 0.0 };
        let mlp = e * (factors + unkept) * self.mlp_runs_per_token() * m.ffn as f64 / self.t;
        (mlp + self.hidden_grads_per_token(hidden)) * self.b * self.s
    }

    /// `n` hidden-sized gradients of one token, in the activations' dtype
    /// (replicated over TP ranks unless sequence parallelism splits them).
    pub(super) fn hidden_grads_per_token(&self, n: f64) -> f64 {
        self.e * n * self.m.hidden as f64 / self.rep
    }

    /// What a block that kept its activations (no recompute: no
    /// checkpointing, or selective checkpointing's attention core alone) adds
    /// over them at its backward's largest moment. Its own saved tensors are
    /// released node by node as its backward runs (`release_variables` in
    /// `torch/csrc/autograd/engine.cpp`), so the block's gradients never meet
    /// a second copy of its activations: the moment is the MLP's backward
    /// (the product's two factors' gradients beside the down projection's
    /// input gradient, the product itself released: [`Self::mlp_grads`]
    /// with [`HIDDEN_GRADS_IN_KEPT_MLP_BACKWARD`]) or, with materialised
    /// scores, the attention core's (the block's score-sized tensors and
    /// their gradients, [`Self::score_grads_in_backward`]; under selective
    /// checkpointing the scores are the recomputed ones), whichever is
    /// larger. Counted on the CPU allocator (`calibration/cpu_allocator.py
    /// working` and `timeline`, transformers' Llama, bf16, no checkpointing,
    /// the CPU's fp32 matmul scratch left out): the top block's MLP backward
    /// holds 2·MLP·2 bytes per token over the blocks' kept tensors (MLP 2816,
    /// hidden 512: 22 bytes per token per hidden unit over what the blocks
    /// keep), where the model had put a whole block's activations (65).
    /// Measured on the H200: the two Liger runs without checkpointing (fused
    /// loss and norms, so a block's backward is the peak) +2.4 / +3.7 %
    /// allocated with a whole block, +0.3 / +1.0 % with this.
    pub(super) fn kept_block_backward(&self, scores: f64) -> f64 {
        let attention = scores + self.score_grads_in_backward();
        self.mlp_grads(HIDDEN_GRADS_IN_KEPT_MLP_BACKWARD)
            .max(attention)
    }

    /// What a block's eager attention backward holds beyond the block's
    /// saved tensors ([`BACKWARD_WORKING_BLOCKS`]) when the block was
    /// recomputed: its score-sized gradients ([`Self::score_grads_in_backward`])
    /// and the hidden-sized gradients flowing through
    /// ([`HIDDEN_GRADS_IN_MLP_BACKWARD`]), less what the block's backward has
    /// released by then ([`Self::released_before_attention_backward`]). The
    /// MLP's backward runs first, releasing the MLP's saved tensors node by
    /// node (`release_variables`, `torch/csrc/autograd/engine.cpp`) and its
    /// gradients as they are consumed, so the MLP's gradients
    /// ([`Self::recomputed_mlp_grads`]) and the attention's are two moments,
    /// not one sum. Replayed through the caching allocator's rules
    /// (`calibration/allocator_replay.py`; torch 2.15, transformers 5.25,
    /// peft 0.21.2; sequence classifiers, full checkpointing): Llama-3.2-1B
    /// and Qwen2.5-1.5B in fp32 (SDPA's math kernel) at 4 × 2048 peaked at
    /// the softmax's backward with the probabilities, `dP` and `dS` beside
    /// the block's attention-side tensors alone (the model summing both:
    /// +12 … +16 % allocated); eager Gemma-2B and Gemma-2-2B in bf16 at
    /// 8 × 2048 peaked at the MLP's backward with no score gradient alive
    /// (+8 … +14 %).
    pub(super) fn recomputed_attention_moment(&self, recomputed: bool) -> f64 {
        let score_grads = self.score_grads_in_backward();
        if score_grads <= 0.0 {
            return 0.0;
        }
        let released = if recomputed {
            self.released_before_attention_backward()
        } else {
            0.0
        };
        let hidden = self.hidden_grads_per_token(HIDDEN_GRADS_IN_MLP_BACKWARD) * self.b * self.s;
        let math = if self.sdpa_math_kernel() {
            SDPA_MATH_BACKWARD_EXTRA_SCORES * self.softmax_bytes() * self.score_elements()
        } else {
            0.0
        };
        score_grads + math + hidden - released
    }

    /// Whether the scores come from SDPA's math kernel: SDPA asked for, and
    /// the scores materialised ([`Self::attention`]: fp32 activations with
    /// grouped k/v, which neither the flash nor the memory-efficient kernel
    /// takes).
    pub(super) fn sdpa_math_kernel(&self) -> bool {
        self.plan.training.attention == Attention::Flash && self.attention() == Attention::Eager
    }

    /// What a recomputed block's backward has released when its attention
    /// core's backward starts: the tensors its MLP side saved (the MLP, its
    /// adapters, the sandwich norms after the attention), all made after
    /// the attention in the forward and so consumed before it in the
    /// backward — the block less its attention side
    /// ([`Self::block_activations`]). Nothing for an MoE model, whose routed
    /// share of the block is not one block's, nor for an encoder–decoder,
    /// whose largest block and whose scores may be different stacks' (as the
    /// target grows to the source's length they become one stack's: the
    /// estimate would fall there; the property test
    /// `an_encoder_decoder_grows_with_its_source_and_its_target` found it),
    /// where what is left stays an upper bound that grows with either length.
    pub(super) fn released_before_attention_backward(&self) -> f64 {
        if self.m.is_moe() || self.m.arch == Arch::EncoderDecoder {
            return 0.0;
        }
        let (attention, total) = self.block_activations();
        (total - attention).max(0.0)
    }

    /// Score-sized tensors a block with materialised attention scores (eager,
    /// or SDPA's math kernel, [`Self::attention`]) meets in its attention
    /// backward beyond the block's own score-sized tensors
    /// ([`Self::score_bytes`] per score: the recomputed block's,
    /// [`BACKWARD_WORKING_BLOCKS`], or the kept ones
    /// [`Self::kept_block_backward`] starts from). At the softmax's backward
    /// three score-sized tensors are alive in
    /// softmax's dtype ([`Self::upcast_bytes`]): the probabilities `P`, their
    /// gradient `dP` and the softmax input's gradient `dS`
    /// (`softmax_backward_data` writes `dS` while `dP` is alive). A 16-bit cast
    /// of fp32 probabilities is gone by then: the value matmul's backward
    /// node, its only holder, releases it once it has made `dP`
    /// (`torch/csrc/autograd/engine.cpp`: `release_variables` after a node
    /// runs without `retain_graph`).
    ///
    /// - A recomputed block (any checkpointing: selective recomputes the
    ///   attention core by definition, Korthikanti et al. 2022 §5; the per-op
    ///   policy, torchtitan's `_save_list`, saves none of the math path's
    ///   `bmm`/`_softmax`): the working block is the recomputed one, so
    ///   `3·up − score_bytes` more, that is `2·up − cast`
    ///   ([`SCORE_GRADS_IN_BACKWARD`]).
    /// - A block that kept its probabilities (no checkpointing): they are
    ///   counted twice already, kept and in the block's score-sized tensors
    ///   [`Self::kept_block_backward`] starts from, so
    ///   `3·up − 2·score_bytes = up − 2·cast` more — nothing for 16-bit
    ///   runs whose softmax is fp32, one tensor for fp32 or 16-bit softmax.
    ///
    /// Measured on the H200 (calibration/h200-2026-11-30, set 5): QLoRA
    /// Mistral-7B in pure bf16 after `prepare_model_for_kbit_training` (fp32,
    /// SDPA's math kernel), batch 2 × 2048 with full checkpointing peaked
    /// 11.37 GiB; without the two 1 GiB gradients the model said 9.46.
    /// Counted on the CPU allocator (calibration/cpu_allocator.py scores, transformers'
    /// eager Llama, 4 blocks; bytes per score element at the backward peak
    /// over what backward starts with): fp32 none 26.0 peak against 18.4 kept
    /// (model 22.4 before this term, 26.4 with it), full 12.1, selective 11.6;
    /// bf16 none 31.1 against 25.4 (model 31.4), full 12.1, selective 11.8 —
    /// the fully checkpointed and selective blocks both at three tensors of
    /// softmax's 4 bytes. Attention dropout is left as it was (its mask and
    /// dropped-out copy are freed on the way; the CPU's dropout keeps a
    /// different mask than CUDA's, so it was not counted here).
    pub(super) fn score_grads_in_backward(&self) -> f64 {
        if self.attention() != Attention::Eager {
            return 0.0;
        }
        let up = self.softmax_bytes();
        let cast = self.softmax_cast_bytes();
        let per_score = match self.plan.training.checkpointing {
            Checkpointing::None if self.plan.training.dropout => 0.0,
            Checkpointing::None => (up - 2.0 * cast).max(0.0),
            _ => SCORE_GRADS_IN_BACKWARD * up - cast,
        };
        per_score * self.score_elements()
    }

    /// Attention scores one block materialises per rank: each local query
    /// against the whole sequence, per head on this TP rank.
    pub(super) fn score_elements(&self) -> f64 {
        self.b * self.m.heads as f64 * self.s * (self.s * self.plan.parallel.cp as f64) / self.t
    }

    /// Bytes of a tensor that softmax / cross-entropy compute in: fp32 when the
    /// framework upcasts or autocast does (softmax and log_softmax are on
    /// autocast's fp32 list), else the activation dtype.
    pub(super) fn upcast_bytes(&self) -> f64 {
        let prec = self.prec;
        if self.plan.training.fp32_upcasts || prec.fp32_weights() {
            FP32
        } else {
            self.e
        }
    }

    /// Bytes per logit the standard loss computes in ([`Self::upcast_bytes`]),
    /// except that the masked-LM heads of encoders and the LM heads of
    /// encoder–decoders hand `CrossEntropyLoss` their 16-bit scores as they
    /// are — transformers `BertForMaskedLM`, `RobertaForMaskedLM`,
    /// `T5ForConditionalGeneration`, `BartForConditionalGeneration` call
    /// `loss_fct(scores.view(-1, vocab), labels.view(-1))` with no `.float()`,
    /// where its causal LMs' `ForCausalLMLoss` upcasts — so in pure 16-bit the
    /// log-softmax and its gradients stay 16-bit (under autocast log_softmax is
    /// on the fp32 list). Replayed (`calibration/allocator_replay.py
    /// --families`): RoBERTa-large bf16 MLM at 32 × 512 with checkpointing,
    /// 9.11 GiB allocated against 13.60 counted with fp32 loss tensors.
    pub(super) fn loss_bytes(&self) -> f64 {
        if self.loss_reads_head_scores() && !self.prec.fp32_weights() {
            self.e
        } else {
            self.upcast_bytes()
        }
    }

    /// Bytes kept per attention score by eager attention: the softmax output
    /// (in the upcast dtype) and, when that is fp32 over 16-bit activations, its
    /// 16-bit cast for the value matmul (transformers `eager_attention_forward`).
    /// Korthikanti et al.'s 2 bytes for a 16-bit softmax; dropout adds its own.
    /// Soft-capping (`tanh(scores / cap)`, Gemma-2) keeps the tanh output too.
    pub(super) fn score_bytes(&self) -> f64 {
        let softcap = if self.m.softcap { self.e } else { 0.0 };
        self.softmax_bytes() + self.softmax_cast_bytes() + softcap
    }

    /// Bytes per score the eager softmax computes in: [`Self::upcast_bytes`],
    /// except over attention sinks ([`ModelSpec::attention_sinks`], gpt-oss),
    /// whose softmax stays in the scores' dtype.
    pub(super) fn softmax_bytes(&self) -> f64 {
        if self.m.attention_sinks {
            self.e
        } else {
            self.upcast_bytes()
        }
    }

    /// Bytes per score of the 16-bit cast an fp32 softmax over 16-bit
    /// activations is handed to the value matmul in; none when the softmax
    /// runs in the activations' dtype.
    pub(super) fn softmax_cast_bytes(&self) -> f64 {
        if self.softmax_bytes() > self.e {
            self.e
        } else {
            0.0
        }
    }

    /// Divisor of the hidden-sized input the column-parallel projections
    /// (q/k/v, gate/up) keep: split by sequence parallelism only where the
    /// framework saves the local shard ([`Framework::tp_keeps_gathered_inputs`]).
    pub(super) fn colwise_input_split(&self) -> f64 {
        if self.plan.framework.tp_keeps_gathered_inputs() {
            1.0
        } else {
            self.rep
        }
    }

    /// What a checkpointed block keeps: its input (residual stream dtype).
    pub(super) fn layer_input_bytes(&self) -> f64 {
        self.residual_bytes() * self.s * self.b * self.m.hidden as f64 / self.rep
    }

    /// Bytes of the residual stream between blocks: fp32 when the blocks
    /// compute over fp32 weights (plain fp32, or autocast over fp32 weights:
    /// the residual adds promote to fp32); 16-bit under FSDP/DeepSpeed mixed
    /// precision (parameters cast to 16-bit for compute) and over a frozen
    /// 16-bit or quantised base (DESIGN.md §3b).
    pub(super) fn residual_bytes(&self) -> f64 {
        let prec = self.prec;
        let fp32_compute = match prec {
            Precision::Fp32 => true,
            _ if self.kbit_fp32_norm_outputs() || self.quantized_outputs_in_fp32() => true,
            Precision::AmpFp16 | Precision::AmpBf16 => {
                !self.shards_params()
                    && !self.master_in_optimizer()
                    && self.base_bits().is_none_or(|b| b >= 32)
            }
            _ => false,
        };
        if fp32_compute {
            FP32
        } else {
            self.e
        }
    }

    /// Per-op selective checkpointing as torchtitan applies it: the block's
    /// input, the attention output (SDPA is on the save list) and every
    /// *other* matmul output, the rest recomputed ("Save all compute/comm ops,
    /// except every second mm/linear": torchtitan 0.3.0
    /// `distributed/activation_checkpoint.py` `SelectiveAC`, 0.1.0
    /// `parallelize.py` `_save_list` with `mm_count % 2 == 0` recomputed; the
    /// count restarts in every block). In forward order a Llama block's mms are
    /// wq, wk, wv, wo, w1, w3, w2: q, v, w1's and w2's outputs are kept. In an
    /// MoE block the router's gate and the shared experts' matmuls follow the
    /// attention's in the count; the routed experts' grouped matmuls
    /// (`torch._grouped_mm`) are not on the save list (torch 2.15's
    /// partitioner lists `mm`, `bmm`, `addmm`, `_scaled_mm`, the SDPA kernels
    /// and `convolution` as compute-intensive, not `_grouped_mm`), so the
    /// routed experts are recomputed, and `aten.topk` is saved to keep the
    /// routing stable ([`TOPK_BYTES_PER_ROUTED_TOKEN`]). Counted with
    /// `calibration/saved_tensors.py --moe` (torchtitan 0.3.0's MoE layers,
    /// hidden 256): 2.97·hidden bytes per token for Qwen3's (64 experts, top
    /// 8, no shared expert: the input, the gate's output, the top-k) and 6.33
    /// for DeepSeek-V3's (two shared experts of 256: their up projection's
    /// output more); 243.39 and 130.88 without checkpointing. Latent attention
    /// runs wq_a and wq_b (or one wq), wkv_a, wkv_b and wo through the count,
    /// and its output is its value heads' width (`--mla`: torchtitan's
    /// DeepSeek-V3 blocks keep 44.56·hidden bytes a token more without a q
    /// latent than with one of 384, where wq and wkv_b are kept and the router
    /// is the fifth matmul).
    pub(super) fn op_selective_layer(&self) -> f64 {
        let m = self.m;
        let sb = self.s * self.b;
        let (e, t) = (self.e, self.t);
        let h = m.hidden as f64;
        let hq = m.q_width() as f64;
        let hkv = m.kv_width() as f64;
        let f = m.ffn as f64;
        let gated = m.mlp == Mlp::Gated;
        // The block's matmul outputs in forward order (widths per token, and
        // whether the matrix is row-parallel under TP): q/k/v (one fused
        // qkv), o, then gate/up (one fused gate_up) and down — in an MoE
        // block the router's gate (its fp32 scores, whole on every rank) and
        // the shared experts' (all of them as one MLP) instead.
        let qkv = hq + 2.0 * hkv;
        let latent;
        let attn: &[(f64, bool)] = match m.mla {
            // Latent attention (torchtitan's DeepSeek-V3 `Attention`): wq_a
            // and wq_b (one wq without a q latent), wkv_a, wkv_b, wo; the
            // latent down projections are replicated under TP (`NoParallel`
            // in its plan), so their outputs stay whole.
            Some(a) => {
                let heads = m.heads as f64;
                let nope = (m.head_dim as f64 - a.rope_dim as f64).max(0.0);
                latent = [
                    (a.q_rank as f64, true),
                    (hq, false),
                    (a.kv_rank as f64 + a.rope_dim as f64, true),
                    (heads * (nope + a.v_dim as f64), false),
                    (h, true),
                ];
                if a.q_rank > 0 {
                    &latent[..]
                } else {
                    &latent[1..]
                }
            }
            // One fused qkv: the model's own (Phi-3), or one split into
            // copies (torchtitan 0.3's, `FrameworkDefaults::qkv_split_copies`:
            // its output kept only when counted here).
            None if m.fused_projections || self.defaults().qkv_split_copies => {
                &[(qkv, false), (h, true)]
            }
            None => &[(hq, false), (hkv, false), (hkv, false), (h, true)],
        };
        let (ffn, router) = if m.is_moe() {
            let scores = FP32 / e * m.experts as f64;
            (m.shared_experts as f64 * f, Some((scores, true)))
        } else {
            (f, None)
        };
        let dense: &[(f64, bool)] = match (ffn > 0.0, gated, m.gate_up_fused()) {
            (false, _, _) => &[],
            (true, true, true) => &[(2.0 * ffn, false), (h, true)],
            (true, true, false) => &[(ffn, false), (ffn, false), (h, true)],
            (true, false, _) => &[(ffn, false), (h, true)],
        };
        let topk = if m.is_moe() {
            TOPK_BYTES_PER_ROUTED_TOKEN * m.experts_per_token as f64
        } else {
            0.0
        };
        // Under TP a row-parallel matmul's output is its rank's partial sum,
        // whole until reduced: kept whole when the count keeps it. Under
        // sequence parallelism the reduce-scatter after o and after down is
        // on the save list too (`reduce_scatter_tensor`), its output the
        // rank's shard. Counted with `calibration/saved_tensors.py --tp`
        // (torchtitan 0.3.0's policy over its TP plan, TP 4): 6.54·hidden
        // bytes per token per block without sequence parallelism, 6.04 with,
        // where splitting every kept output gives 5.04 and 3.54 (the CPU's
        // SDPA is not on the save list: CUDA's flash kernel's output is).
        let kept_mms: f64 = attn
            .iter()
            .chain(router.iter())
            .chain(dense)
            .step_by(2)
            .map(|&(width, row_parallel)| if row_parallel { width } else { width / t })
            .sum();
        let reduce_scattered = if self.rep > 1.0 {
            ROW_PARALLEL_OUTPUTS_PER_BLOCK * h / t
        } else {
            0.0
        };
        let attn_out = m.attn_out_width() as f64;
        self.layer_input_bytes() + e * sb * (kept_mms + attn_out / t + reduce_scattered) + sb * topk
    }

    /// Micro-batches a pipeline runs per step: the stated count, else the
    /// gradient accumulation steps (at least one).
    pub(super) fn pipeline_microbatches(&self) -> u32 {
        let p = &self.plan.parallel;
        if p.pp_microbatches > 0 {
            p.pp_microbatches
        } else {
            self.plan.training.grad_accum.max(1)
        }
    }

    /// Micro-batches whose activations stage `s` holds at once: p − s under
    /// 1F1B (Narayanan et al. 2021), capped by the micro-batch count; the
    /// interleaved schedule multiplies stage-1 activations by 1 + (p−1)/(p·v)
    /// (Korthikanti et al. 2022 §4.2.3).
    pub(super) fn in_flight(&self, s: u32) -> f64 {
        let p = &self.plan.parallel;
        if p.pp <= 1 {
            return 1.0;
        }
        let n = ((p.pp - s) as f64).min(self.pipeline_microbatches() as f64);
        match p.pp_schedule {
            PipelineSchedule::OneFOneB => n,
            PipelineSchedule::Interleaved => {
                let v = p.virtual_stages.max(1) as f64;
                n * (1.0 + (p.pp as f64 - 1.0) / (p.pp as f64 * v))
            }
        }
    }

    /// Activations stage `s` holds at the end of forward, the transient
    /// working set of one block during backward (recompute included), and
    /// what the largest recomputed block makes again (zero when no block is
    /// recomputed on the GPU), the size of the segments its forward leaves
    /// ([`Self::idle_block_transients`]).
    pub(super) fn activations(&self, s: u32) -> (f64, f64, f64) {
        let layers = self.stage_layers(s) - self.untrained_prefix_layers(s);
        let flight = self.in_flight(s);
        let scores = self.per_block(|c| c.self_attention_scores());
        // Backward working set over what is kept. A recomputed block holds
        // its activations again (BACKWARD_WORKING_BLOCKS: the largest block's,
        // where an encoder–decoder's blocks differ, less the kept input it
        // reuses) and, on top, its MLP's and eager attention's gradients; so
        // does a block whose activations come back from the CPU (all of
        // them). A block that kept its activations holds only its gradients
        // (Ctx::kept_block_backward).
        let policy = self.plan.training.checkpointing;
        let k = self.plan.training.checkpoint_every.max(1) as f64;
        let checkpointed = (layers / k).floor();
        let recomputed = matches!(policy, Checkpointing::Full | Checkpointing::OpSelective)
            && checkpointed >= 1.0;
        let offload = self.plan.training.activation_offload;
        let (full, largest) = self.layer_activations_once(recomputed && !offload);
        let working = if recomputed || offload {
            // The recompute's last moment holds no gradient of the block's
            // own and no dequantized base weight (freed after its matmul;
            // the phase adds one for the backward, `dequantized_weights`).
            let end = if recomputed && !offload {
                self.mlp_adapter_transients(true) - self.dequantized_weights(s).0
            } else {
                0.0
            };
            BACKWARD_WORKING_BLOCKS * largest
                + self
                    .recomputed_mlp_grads()
                    .max(self.recomputed_attention_moment(recomputed && !offload))
                    .max(end)
        } else {
            self.kept_block_backward(scores)
        };
        let per_checkpointed = match policy {
            Checkpointing::None => full,
            Checkpointing::Selective => (full - scores).max(0.0),
            Checkpointing::OpSelective => self.per_block(|c| c.op_selective_layer()).min(full),
            Checkpointing::Full => self.per_block(|c| c.layer_input_bytes()).min(full),
        };
        // Every k-th block follows the policy; the others keep everything.
        let kept = checkpointed * per_checkpointed + (layers - checkpointed) * full;
        let kept = if offload {
            // Offloading keeps only the block in flight (and the one prefetched).
            ACTIVATION_OFFLOAD_BLOCKS_ON_GPU * self.layer_input_bytes().min(kept)
        } else {
            kept
        };
        let recomputed_block = if recomputed && !offload { largest } else { 0.0 };
        (
            (kept + self.stack_ends(s)) * flight,
            working,
            recomputed_block,
        )
    }

    /// Whether a recomputed block makes again all it keeps but its input: its
    /// first op saves the block's input itself, the tensor checkpointing
    /// kept — a LayerNorm's input (GPT-2, OPT, BLOOM, Falcon, Phi; a post-LN
    /// block's q/k/v linears, BERT, BART, where the norm's input is the
    /// residual sum), T5's RMSNorm multiplying its input, an RMSNorm over an
    /// fp32 residual, whose `.to(float32)` copies nothing. Over a 16-bit
    /// residual a tensor-op RMSNorm saves an fp32 copy instead, a new tensor
    /// (Llama). Counted on the CPU allocator (`calibration/cpu_allocator.py
    /// working`, BERT 4 × 512 with MLP 2048, bf16, checkpointed): the backward
    /// peak grows 49.09 bytes per token per hidden unit; the kept inputs (8),
    /// the embedding LayerNorm's input (2) and a recomputed block with its
    /// own copy of its input counted 2 more than that.
    pub(super) fn recompute_reuses_input(&self) -> bool {
        self.norm_saved_bytes() == self.residual_bytes() || self.t5_norm_input_bytes() > 0.0
    }

    /// Eager self-attention scores one block keeps (nothing with flash
    /// attention): what selective checkpointing recomputes.
    pub(super) fn self_attention_scores(&self) -> f64 {
        if self.attention() == Attention::Eager {
            self.eager_score_bytes() * self.b * self.m.heads as f64 * self.s * self.s / self.t
        } else {
            0.0
        }
    }

    /// A per-block quantity, averaged over an encoder–decoder's two stacks
    /// when they run different lengths ([`Self::decoder_s`]), or over an MoE
    /// model's expert and dense blocks ([`Self::mixed`]).
    pub(super) fn per_block(&self, f: impl Fn(&Ctx<'_>) -> f64) -> f64 {
        let sd = self.decoder_s();
        if sd == self.s {
            return self.mixed(f);
        }
        let (enc, dec) = (self.m.encoder_layers as f64, self.m.layers as f64);
        (enc * f(self) + dec * f(&self.at_length(sd))) / (enc + dec).max(1.0)
    }
}
