//! Model states: gradients, optimizer states, how sharding splits them and the pools their runtimes keep; autocast's weight copies and the load phase.

use super::*;

impl<'a> Ctx<'a> {
    /// Gradient bytes per trainable parameter: the parameter's dtype, or fp32
    /// `main_grad` buffers (Megatron `accumulate_allreduce_grads_in_fp32`).
    ///
    /// Megatron accumulates in fp32 for bf16 only: fp16 runs keep fp16
    /// buffers (megatron-core 0.16.1 `DistributedDataParallelConfig.
    /// grad_reduce_in_fp32 = False`; megatron-bridge 0.3.1
    /// `training/mixed_precision.py`: `bf16_mixed` sets it, `fp16_mixed`
    /// does not), and the optimizer steps on fp32 copies made at the step
    /// (`_copy_model_grads_to_main_grads`: `main_param.grad =
    /// model_param.main_grad.float()`; the distributed optimizer's
    /// `shard_main_param.grad = shard_model_grad.float()`), which
    /// [`Self::optimizer_temporaries`] counts. Megatron-LM's distributed
    /// optimizer guide tabulates the result: 20 bytes per parameter for
    /// fp16 (4 + 16/d distributed), 18 for bf16 (6 + 12/d).
    pub(super) fn grad_bytes(&self) -> f64 {
        let fp16 = matches!(self.prec, Precision::AmpFp16 | Precision::Fp16);
        if self.defaults().fp32_grad_buffers && !fp16 {
            FP32
        } else {
            self.trainable_weight_bytes()
        }
    }

    /// Optimizer state bytes per trainable parameter of stage `s`, master
    /// copy included.
    pub(super) fn optimizer_bytes_per_param(&self, s: u32) -> f64 {
        let master = self.master_in_optimizer() && self.trainable_weight_bytes() < FP32;
        let master_bytes = if master { FP32 } else { 0.0 };
        self.optimizer_state_bytes_per_param(s) + master_bytes
    }

    /// The optimizer's own states per trainable parameter of stage `s`
    /// (moments, factored or projected statistics), without a master copy.
    pub(super) fn optimizer_state_bytes_per_param(&self, s: u32) -> f64 {
        // States in fp32 unless the weights are pure 16-bit without a master copy
        // (pure bf16 keeps states in the parameter dtype, DESIGN.md §3).
        let state = self.state_bytes();
        match self.plan.training.optimizer {
            Optimizer::Adamw | Optimizer::PagedAdamw => ADAM_STATES * state,
            Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit => ADAM_8BIT_BYTES,
            Optimizer::Adamw4bit => ADAM_4BIT_BYTES,
            // Adafactor (Shazeer & Stern 2018) keeps factored second moments: one
            // row and one column vector per matrix, ≈ 2/hidden of the parameters.
            Optimizer::Adafactor => state * 2.0 / self.m.hidden as f64,
            Optimizer::Sgd => 0.0,
            Optimizer::SgdMomentum | Optimizer::Lion => state,
            Optimizer::Lion8bit => LION_8BIT_BYTES,
            // Momentum on the hidden matrices, AdamW on the rest (embeddings,
            // head, norms, biases): weighted by their share of what trains.
            Optimizer::Muon => {
                let matrices = self.muon_matrix_share(s);
                (matrices * MUON_STATES + (1.0 - matrices) * ADAM_STATES) * state
            }
            Optimizer::Adan => ADAN_STATES * state,
            Optimizer::Ademamix => ADEMAMIX_STATES * state,
            Optimizer::Ademamix8bit => ADEMAMIX_8BIT_BYTES,
            // GaLore: moments of the projected gradients on the blocks'
            // matrices, Adam's on the rest (the embeddings, the head, norms:
            // transformers puts only `optim_target_modules`' linear layers in
            // GaLore's group). Adapters are not projected.
            Optimizer::Galore | Optimizer::Galore8bit | Optimizer::Apollo => {
                let eight_bit = self.plan.training.optimizer == Optimizer::Galore8bit;
                let rest = if eight_bit {
                    ADAM_8BIT_BYTES
                } else {
                    ADAM_STATES * state
                };
                if self.full_finetune() {
                    let matrices = self.muon_matrix_share(s);
                    matrices * self.projected_bytes_per_matrix_param(eight_bit)
                        + (1.0 - matrices) * rest
                } else {
                    rest
                }
            }
        }
    }

    /// The blocks' matrices as one rank holds them, `(inputs, outputs, copies)`:
    /// q, k, v, gate and up split their outputs over TP, o and down their
    /// inputs (Megatron's column- and row-parallel layers); an MoE block holds
    /// a copy per expert.
    ///
    /// With dense blocks among the expert ones ([`ModelSpec::dense_layers`])
    /// the average block's: each kind's matrices, their copies scaled by the
    /// kind's share of the blocks.
    pub(super) fn local_block_matrices(&self) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
        self.block_kinds().flat_map(move |(m, share)| {
            block_matrices_of(m, LoraTargets::ALL_LINEAR, Fused::of(m))
                .into_iter()
                .enumerate()
                .filter(|(_, mat)| mat.targeted)
                .map(move |(i, mat)| {
                    let row_parallel = matches!(i, 3 | 6); // o, down
                    let (din, dout) = if row_parallel {
                        (mat.din / self.t, mat.dout)
                    } else {
                        (mat.din, mat.dout / self.t)
                    };
                    (din, dout, share * mlp_copies_of(m, &mat))
                })
        })
    }

    /// Bytes GaLore keeps per block-matrix parameter (galore-torch 1.0
    /// `GaLoreAdamW.step`, `GaLoreProjector`, `proj_type="std"`): an m × n
    /// gradient is projected to r × max(m, n) (`r = min(rank, m, n)`), on which
    /// Adam keeps `exp_avg` and `exp_avg_sq` (`torch.zeros_like(grad)`: the
    /// gradient's dtype; one byte each in 8-bit), and the projector keeps its
    /// orthogonal matrix. For 16-bit weights that is a fresh r × min(m, n)
    /// copy in their dtype (`B.to(original_device).type(original_type)`); for
    /// fp32 weights `get_orthogonal_matrix` returns the slice `Vh[:rank, :]`
    /// (or `U[:, :rank]`) of `torch.linalg.svd(..., full_matrices=False)`,
    /// which keeps the whole min(m, n)² factor alive. APOLLO's random
    /// projector (apollo-torch 1.0.3 `GradientProjector`: `stable_randn((m,
    /// rank))` or `(rank, n)` in the gradient's dtype) is r × min(m, n) for
    /// any weights.
    pub(super) fn projected_bytes_per_matrix_param(&self, eight_bit: bool) -> f64 {
        let w = self.trainable_weight_bytes();
        let svd = self.plan.training.optimizer != Optimizer::Apollo;
        let rank = self
            .plan
            .training
            .galore_rank
            .unwrap_or(GALORE_DEFAULT_RANK) as f64;
        let (mut kept, mut params) = (0.0, 0.0);
        for (din, dout, copies) in self.local_block_matrices() {
            let (lo, hi) = (din.min(dout), din.max(dout));
            let r = rank.min(lo);
            let moments = 2.0 * r * hi * if eight_bit { 1.0 } else { w };
            let projector = if svd && w >= FP32 {
                lo * lo * FP32
            } else {
                r * lo * w
            };
            kept += copies * (moments + projector);
            params += copies * din * dout;
        }
        if params > 0.0 {
            kept / params
        } else {
            0.0
        }
    }

    /// GaLore's largest transient at the step, one matrix at a time: when the
    /// projector is refreshed (the first step, then every `update_proj_gap`),
    /// the fp32 copy of a 16-bit gradient and the SVD's factors
    /// (`torch.linalg.svd(matrix.float(), full_matrices=False)`: U, S, Vh,
    /// lo × (lo + hi) floats); at every step `project_back`'s full-size update
    /// and its scaled copy (`full_rank_grad * self.scale`).
    ///
    /// APOLLO draws its projection instead (no SVD) and steps with the
    /// full-size scaled gradient (`scaled_grad = p.grad * grad_scaling_factor`).
    pub(super) fn projected_step_temporaries(&self) -> f64 {
        let w = self.trainable_weight_bytes();
        let float_copy = if w < FP32 { FP32 } else { 0.0 };
        let apollo = self.plan.training.optimizer == Optimizer::Apollo;
        self.local_block_matrices()
            .map(|(din, dout, _)| {
                let (lo, hi) = (din.min(dout), din.max(dout));
                let svd = if apollo {
                    0.0
                } else {
                    lo * hi * float_copy + lo * (lo + hi) * FP32
                };
                let back = 2.0 * lo * hi * w;
                svd.max(back)
            })
            .fold(0.0, f64::max)
    }

    /// The share of stage `s`'s trainable parameters Muon steps: the blocks'
    /// 2-D matrices under full fine-tuning (not the embeddings or the head,
    /// which Muon's authors leave to AdamW, nor norms and biases); every
    /// adapter matrix (LoRA's A and B) otherwise.
    pub(super) fn muon_matrix_share(&self, s: u32) -> f64 {
        if !self.full_finetune() {
            return 1.0;
        }
        let trainable = self.stage_trainable(s);
        if trainable <= 0.0 {
            return 0.0;
        }
        ((self.stage_layers(s) - self.frozen_blocks(s)) * self.layer_matrix_params() / trainable)
            .clamp(0.0, 1.0)
    }

    /// The share of stage `s`'s trainable parameters whose states a paged
    /// optimizer still keeps in ordinary device memory: bitsandbytes pages
    /// only tensors of at least [`PAGED_MIN_ELEMENTS`]
    /// (`Optimizer8bit.get_state_buffer`: `if not self.is_paged or p.numel() <
    /// 1e5: return torch.zeros_like(p, …)`). LoRA's A (r × in) and B (out × r)
    /// are often under it (r 8 on a 4096-wide matrix: 32,768), as are DoRA's
    /// magnitudes, IA³'s and LN tuning's vectors and LLaMA-Adapter's 10-token
    /// prompts below 10,000 wide; a full fine-tune's norms and biases (about
    /// 10⁻⁴ of its parameters) and the methods whose tensors are not known are
    /// left paged.
    pub(super) fn unpaged_share(&self, s: u32) -> f64 {
        let split = |small: f64, all: f64| if all > 0.0 { small / all } else { 0.0 };
        match self.plan.training.finetune {
            Finetune::Lora { rank, targets, .. } => {
                let r = rank as f64;
                let variant = self.lora_variant();
                let (mut small, mut all) = (0.0, 0.0);
                for mat in self.block_matrices(targets).iter().filter(|x| x.targeted) {
                    let n = self.mlp_copies(mat);
                    let a = if variant == LoraVariant::LoraFa {
                        0.0
                    } else {
                        r * mat.din
                    };
                    let mag = if variant == LoraVariant::Dora {
                        mat.dout
                    } else {
                        0.0
                    };
                    for numel in [a, r * mat.dout, mag] {
                        all += n * numel;
                        if numel < PAGED_MIN_ELEMENTS {
                            small += n * numel;
                        }
                    }
                }
                split(small, all)
            }
            Finetune::Adapter {
                method: AdapterMethod::Ia3 | AdapterMethod::LnTuning,
                ..
            } => 1.0,
            Finetune::Adapter {
                method: method @ (AdapterMethod::LlamaAdapter | AdapterMethod::LlamaAdapterV2),
                ..
            } => {
                // Each block's prompt, and v2's LM head bias and scale (one
                // value per vocabulary entry each), are paged when large.
                let prompt =
                    AdapterMethod::LLAMA_ADAPTER_PROMPT_LENGTH as f64 * self.m.hidden as f64;
                let vocab = self.m.vocab as f64;
                let mut paged = 0.0;
                if prompt >= PAGED_MIN_ELEMENTS {
                    paged += self.stage_layers(s) * self.adapter_prefix_share() * prompt;
                }
                if method == AdapterMethod::LlamaAdapterV2
                    && self.is_last(s)
                    && vocab >= PAGED_MIN_ELEMENTS
                {
                    paged += 2.0 * vocab;
                }
                let trainable = self.stage_trainable(s);
                1.0 - split(paged.min(trainable), trainable)
            }
            _ => 0.0,
        }
    }

    pub(super) fn paged_optimizer(&self) -> bool {
        matches!(
            self.plan.training.optimizer,
            Optimizer::PagedAdamw | Optimizer::PagedAdamw8bit
        )
    }

    pub(super) fn shards_optimizer(&self) -> bool {
        !self.plan.parallel.sharding.is_replicated()
    }
    pub(super) fn shards_grads(&self) -> bool {
        matches!(
            self.plan.parallel.sharding,
            Sharding::Zero2
                | Sharding::Zero3
                | Sharding::FsdpFull
                | Sharding::FsdpGradOp
                | Sharding::Hsdp
        )
    }
    /// The parameters are sharded at rest (between steps). FSDP's
    /// SHARD_GRAD_OP is: it gathers a unit in forward and reshards it after
    /// its backward whenever gradients are synchronised (FSDP1
    /// `_runtime_utils.py` `_should_free_in_backward`: `state._sync_gradients
    /// or` a strategy that reshards after forward; FSDP2
    /// `reshard_after_forward=False` likewise reshards after backward), so at
    /// the step each rank holds its shard alone; what it keeps gathered from
    /// forward to backward is in [`Self::comm_buffers`].
    pub(super) fn shards_params(&self) -> bool {
        self.plan.parallel.sharding.shards_params()
    }

    // ----- model states -------------------------------------------------------

    /// Weights on one rank of stage `s`.
    pub(super) fn weights(&self, s: u32) -> f64 {
        let (at_rest, quant_state, cached_fp8) = self.weight_parts(s);
        if self.offload.params_offloaded() {
            quant_state
        } else {
            at_rest + self.hpz_secondary(at_rest) + cached_fp8 + quant_state
        }
    }

    /// ZeRO++'s secondary shard of the parameters (hpZ,
    /// [`crate::plan::Parallelism::hpz_partition_size`]): each rank keeps
    /// the parameters split over its hpZ group beside its primary shard —
    /// `torch.empty(tensor_size // num_ranks_in_param_group,
    /// dtype=param.dtype, device=self.remote_device)`, made as each parameter
    /// is first partitioned and kept from then on (deepspeed 0.16.9
    /// `runtime/zero/partition_parameters.py` `_partition_param_sec`). Its
    /// device is the parameters' own, the host under parameter offload.
    /// `at_rest` is the primary shard.
    pub(super) fn hpz_secondary(&self, at_rest: f64) -> f64 {
        self.plan
            .parallel
            .hpz_group()
            .map_or(0.0, |hpz| at_rest * self.shard / hpz as f64)
    }

    /// One rank's weights of stage `s` in three parts: the parameters as the
    /// sharding holds them between uses (the shard under parameter sharding),
    /// which is what a parameter offload moves to the host; the quantized
    /// matrices' scales beside them on every rank
    /// ([`Self::replicated_quant_state_bytes`]), which stay on the GPU (they
    /// are attributes of bitsandbytes' `Params4bit`, not parameters FSDP or
    /// ZeRO-3 shard or offload); and the cached fp8 weight copies.
    pub(super) fn weight_parts(&self, s: u32) -> (f64, f64, f64) {
        // What the sharding holds, and the quantized matrices' scales beside
        // it on every rank ([`Self::replicated_quant_state_bytes`]).
        let (bytes, quant_state) = match self.base_bits() {
            None => (
                self.stage_params(s) * self.trainable_weight_bytes() * self.model_copies(),
                0.0,
            ),
            Some(base_bits) => {
                let matrices = self.stage_layers(s) * self.layer_matrix_params()
                    + self.quantized_head_params(s);
                let rest = self.stage_params(s) - matrices;
                let rest_bytes = if base_bits >= 32 || self.kbit_fp32() {
                    FP32
                } else {
                    HALF
                };
                let sharded = matrices * self.sharded_matrix_bytes(base_bits) + rest * rest_bytes
                    - self.kbit_recast_edge_params(s) * (FP32 - HALF)
                    + (self.stage_trainable(s)
                        + self.stage_layers(s) * self.frozen_adapter_layer_params())
                        * self.trainable_weight_bytes()
                    + self.stage_layers(s) * self.osf_buffer_layer_params() * rest_bytes;
                (
                    sharded,
                    matrices * self.replicated_quant_state_bytes(base_bits),
                )
            }
        };
        let cached_fp8 = if self.fp8_weight_copies_cached() {
            self.stage_layers(s) * self.fp8_weight_copies_per_layer()
        } else {
            0.0
        };
        let at_rest = if self.shards_params() {
            bytes / self.shard
        } else {
            bytes
        };
        (at_rest, quant_state, cached_fp8)
    }

    /// Copies of the weights a full fine-tune keeps: DPO's and KTO's frozen
    /// reference model beside the policy ([`Objective::Dpo`]); adapters have
    /// none, nor a run whose reference log-probabilities were computed before
    /// training, unless FSDP wraps the reference anyway
    /// ([`crate::plan::TrainingSpec::precompute_ref`]).
    pub(super) fn model_copies(&self) -> f64 {
        let reference = matches!(
            self.plan.training.objective,
            Objective::Dpo | Objective::Kto
        );
        let precomputed = self.plan.training.precompute_ref
            && !matches!(
                self.plan.parallel.sharding,
                Sharding::FsdpFull | Sharding::FsdpGradOp | Sharding::Hsdp
            );
        if reference && self.full_finetune() && !precomputed {
            2.0
        } else {
            1.0
        }
    }

    /// Gradients of one rank (full size; ZeRO-2+/FSDP keep only a shard).
    pub(super) fn gradients(&self, s: u32) -> f64 {
        if self.grads_offloaded() {
            // Only the reduce buckets / the unit in flight stay ([`Self::comm_buffers`]).
            return 0.0;
        }
        let g = self.stage_trainable(s) * self.grad_bytes();
        if self.plan.training.optimizer_in_backward {
            // Gradients are freed as each parameter steps: one layer's worth lives.
            return g / self.stage_layers(s).max(1.0);
        }
        if self.shards_grads() {
            g / self.shard
        } else {
            g
        }
    }

    /// The gradient shard lives in host memory ([`Self::offload_targets`]
    /// counts it there): ZeRO-2/3 with `offload_optimizer` copy each reduced
    /// bucket into the pinned fp32 gradient partition and free the GPU
    /// gradient (deepspeed/runtime/zero/stage_1_and_2.py
    /// `async_inplace_copy_grad_to_fp32_buffer_from_gpu`; stage3.py
    /// `partition_grads` into `fp32_partitioned_groups_flat[i].grad`), and
    /// FSDP's parameter offload moves the sharded gradients with them
    /// (FSDP1 `CPUOffload(offload_params=True)`: "gradients are offloaded to
    /// CPU as well"; FSDP2 `CPUOffloadPolicy`: sharded parameters and
    /// gradients on the CPU, the optimizer steps there). ZeRO-1 reduces only
    /// after backward, from full gradients on the GPU. Megatron's gradients
    /// never leave the GPU: its `main_grad` buffer is allocated there for the
    /// run ([`Self::megatron_grad_buffer`]), and its CPU-offloaded optimizer
    /// copies each gradient into a pinned host tensor before the step
    /// (megatron-core 0.16.1 `optimizer/cpu_offloading/hybrid_optimizer.py`:
    /// `self.cpu_copy_map_grad[param].data.copy_(grad, non_blocking=True)`;
    /// `distributed/param_and_grad_buffer.py`: `self.grad_data = torch.zeros(…,
    /// device=torch.cuda.current_device())`).
    pub(super) fn grads_offloaded(&self) -> bool {
        if self.megatron_grad_buffer() {
            return false;
        }
        let off = self.offload;
        match self.plan.parallel.sharding {
            Sharding::Zero2 | Sharding::Zero3 => off.optimizer_offloaded(),
            Sharding::FsdpFull | Sharding::FsdpGradOp | Sharding::Hsdp => off.params_offloaded(),
            _ => false,
        }
    }

    /// Bytes the caching allocator holds on FSDP's reduce-scatter stream: the
    /// sharded gradients, when they are freed between steps. The allocator
    /// keeps every segment for the stream it was allocated on and serves a
    /// request only from blocks of the requesting stream (PyTorch
    /// `c10/cuda/CUDACachingAllocator.cpp`, `get_free_block`; segments are
    /// reported per stream, `StreamSegmentSize` in `CUDACachingAllocator.h`).
    /// FSDP allocates each sharded gradient there: FSDP2's `foreach_reduce`
    /// allocates `reduce_output` "in the RS stream and used in the default
    /// stream (for optimizer)" and the sharded `.grad` views it (torch 2.11
    /// `distributed/fsdp/_fully_shard/_fsdp_collectives.py`); FSDP1's
    /// `_reduce_grad` runs under `_post_backward_stream` and allocates
    /// `new_sharded_grad = torch.empty_like(chunks[0])` there
    /// (`distributed/fsdp/_runtime_utils.py`). Once `zero_grad(set_to_none=True)`
    /// frees them, those blocks stay reserved but cannot serve the next
    /// forward's activations on the default stream, so the forward peak
    /// reserves them on top of its own allocations. Measured on the H200 on
    /// one rank (calibration/h200-2026-11-30, set 4): FSDP2 Llama-3.2-1B
    /// reserved 7.73 GiB over its allocated peak where the same loop without
    /// FSDP reserved 2.59 GiB — the difference is its 4.60 GiB of fp32
    /// gradients; Llama-3.2-3B with checkpointing 12.49 GiB over, for 11.97
    /// GiB of gradients. Gradients kept from step to step (accumulation,
    /// `set_to_none=False`, persistent buffers) are counted as allocated in
    /// every phase, and offloaded ones are on the host: nothing is left
    /// cached then.
    pub(super) fn side_stream_grad_pool(&self, s: u32) -> f64 {
        if !self.plan.parallel.sharding.is_fsdp()
            || self.grads_persistent()
            || self.plan.training.optimizer_in_backward
        {
            return 0.0;
        }
        self.gradients(s)
    }

    /// Bytes the caching allocator holds on ZeRO-3's fetch stream: the most
    /// parameters it has fetched at once (`fetched`: the gathered ones and,
    /// with parameters on the CPU, the head's partition copied in beside its
    /// gather). DeepSpeed fetches on a stream of its own
    /// (`PartitionedParameterCoordinator`: `all_gather_coalesced` under
    /// `get_accelerator().stream(self.__allgather_stream)`, deepspeed 0.19.8
    /// `runtime/zero/partitioned_param_coordinator.py`), and the allocator
    /// serves a stream only from its own blocks
    /// ([`Self::side_stream_grad_pool`]): what the forward's fetches reserved
    /// stays reserved beside the backward's logits and gradients on the
    /// default stream. Measured on the H200 (calibration/h200-2026-12-04-deepspeed,
    /// `peak-*.txt`): BLOOMZ-7B1's run (fp32 LoRA, ZeRO-3 with its parameters on
    /// the CPU) held 8,354 MiB of segments on the fetch stream and 7,864 on
    /// the default stream at its reserved peak, 15.86 GiB reserved over 12.89
    /// allocated.
    pub(super) fn zero3_fetch_stream_pool(&self, fetched: f64) -> f64 {
        if self.plan.parallel.sharding == Sharding::Zero3 && self.gathers_units() {
            fetched
        } else {
            0.0
        }
    }

    /// Bytes a parameter has as the model was loaded, before any sharding:
    /// the trainable weights' dtype ([`Self::trainable_weight_bytes`]), or for
    /// a quantized base the dtype of what is not quantized (norms, embeddings).
    pub(super) fn loaded_param_bytes(&self) -> f64 {
        match self.base_bits() {
            None => self.trainable_weight_bytes(),
            Some(bits) if bits >= 32 || self.kbit_fp32() => FP32,
            Some(_) => HALF,
        }
    }

    /// One block with its unquantized parameters `bytes` each: its matrices
    /// (packed codes for a quantized base, [`Self::sharded_matrix_bytes`])
    /// and norms.
    pub(super) fn block_bytes_in(&self, bytes: f64) -> f64 {
        let matrix = match self.base_bits() {
            Some(bits) if bits <= 8 => self.sharded_matrix_bytes(bits),
            _ => bytes,
        };
        self.layer_matrix_params() * matrix + self.layer_norm_params() * bytes
    }

    /// The pool of FSDP1's pre-unshard stream under parameter offload: before
    /// each all-gather FSDP1 copies the unit's shard from the host to the GPU
    /// on a stream of its own (`pre_unshard` → `flat_param_to(device)` under
    /// `_pre_unshard_stream`, torch 2.11 `fsdp/_runtime_utils.py` `_unshard`,
    /// `_flat_param.py`), and the allocator serves that stream only from its
    /// own blocks ([`Self::side_stream_grad_pool`]): the largest unit's shard,
    /// the root's (embeddings, final norm, head), stays reserved there.
    /// Measured on the H200 (calibration/h200-2026-12-04-fsdp1): 1,006 MiB of
    /// segments on that stream for Llama-3.1-8B's root shard (1,002 MiB over
    /// two ranks), 504 MiB for Llama-2-70B's (500 MiB). `largest_unit` is the
    /// largest unit as loaded ([`Self::fsdp1_wrap_cache`]'s largest segment,
    /// zero without FSDP1's offload).
    pub(super) fn fsdp1_offload_copy_pool(&self, largest_unit: f64) -> f64 {
        largest_unit / self.shard
    }

    /// What FSDP1 leaves cached on the default stream as it wraps a model
    /// loaded on the host, when every unit then goes back to the host
    /// (`CPUOffload(offload_params=True)` under a framework that wraps with
    /// FSDP1, [`Plan::uses_fsdp2`]; without offload the shards stay in
    /// those segments): `(bytes, largest segment)`, the largest segment being
    /// the largest unit as loaded, the root (embeddings, final norm, head) or
    /// a block. Each block leaves
    /// [`FSDP1_WRAP_BLOCK_COPIES`] copies of itself (the later blocks reuse
    /// the first one's segments); the root unit, wrapped last and larger,
    /// segments of its own: each tensor moved to the GPU, the largest once
    /// more as `sync_module_states` broadcasts it, and its flat parameter.
    /// Accelerate's `accelerate config` answers yes to CPU-RAM-efficient
    /// loading and so to `sync_module_states` by default (accelerate 1.16
    /// `commands/config/cluster.py`; peft's FSDP configs set both), and
    /// neither the Trainer nor Accelerate empties the cache after wrapping.
    /// (Lightning's `FSDPStrategy` materializes meta-device units in place and
    /// broadcasts nothing: one copy fewer there, counted alike.)
    /// Tensors larger than the largest segment (the loss's fp32 logits) get
    /// segments of their own beside the cache ([`Self::stage`]). Measured on
    /// the H200 (calibration/h200-2026-12-04-fsdp1, whole allocator history):
    /// Llama-3.1-8B with LoRA under FSDP1 offload over two ranks kept 6,270
    /// MiB of wrap segments (two 1,002 MiB tensors, a 1,004 MiB broadcast
    /// buffer, the 2,006 MiB flat root, 1,256 MiB of block segments) and then
    /// mapped three 4,008 MiB segments for its loss: 18,302 MiB on the default
    /// stream, 4,037 over what it held at its peak.
    pub(super) fn fsdp1_wrap_cache(&self, s: u32) -> (f64, f64) {
        if !self.plan.parallel.sharding.is_fsdp()
            || self.plan.uses_fsdp2()
            || !self.offload.params_offloaded()
        {
            return (0.0, 0.0);
        }
        let bytes = self.loaded_param_bytes();
        let block = if self.stage_layers(s) > 0.0 {
            self.block_bytes_in(bytes)
        } else {
            0.0
        };
        let root = self.edge_params(s) * bytes;
        let embedding = if self.is_first(s) {
            self.m.embedding_params() as f64 / self.te
        } else {
            0.0
        };
        let largest_tensor = embedding.max(self.lm_head_params(s)) * bytes;
        (
            FSDP1_WRAP_BLOCK_COPIES * block + 2.0 * root + largest_tensor,
            root.max(block),
        )
    }

    /// What DeepSpeed's ZeRO-1/2 optimizer leaves cached on the default
    /// stream as it is built: `(bytes, largest segment)`. Building it
    /// (deepspeed 0.19.8 `runtime/zero/stage_1_and_2.py`, `__init__`) empties
    /// the cache, then flattens the trainable parameters of the model the
    /// engine has moved to the GPU into one new buffer on the GPU when the
    /// free memory holds it (`flatten_on_accelerator`), and points each
    /// parameter at its slice (`_update_model_bit16_weights`): the
    /// parameters' own tensors are freed, their segments kept. It then
    /// clones this rank's partition of the flat buffer and converts the clone
    /// to the fp32 master (`.detach().clone().to(device=self.device,
    /// dtype=...)`, on the host under optimizer offload), freeing the 16-bit
    /// clone; and, with the optimizer on the GPU, makes an fp32 zero gradient
    /// for the partition and drops it (`initialize_optimizer_states`:
    /// `single_grad_partition = torch.zeros(...)`, then `group.grad = None`).
    /// Nothing empties the cache after that. The flat buffer, the master and
    /// the optimizer's states stay allocated in segments of their own.
    /// Measured on the H200 (calibration/h200-2026-12-04-deepspeed,
    /// `peak-ds2*.txt`, segments made before the first step): Llama-3.2-1B
    /// full ZeRO-2 on one rank 16,508 MiB with 7,072 allocated (the flat
    /// bf16 buffer 2,357 and the master 4,714; freed: the parameters'
    /// 2,357, the clone's 2,357, the zero gradient's 4,714 — 9,428, 9,436
    /// measured); Llama-3.2-3B with the optimizer on the CPU 18,430 with
    /// 6,880 allocated (the parameters' 6,128 and the clone's 6,128 freed).
    /// Those segments take what fits in them ([`Self::stage`]); the
    /// checkpointed 3B run's fp32 logits-sized tensors (8,016 MiB each) did
    /// not, and mapped segments of their own beside them. Releases before
    /// 0.19 empty the cache of the parameters' own tensors, and before
    /// 0.18.3 clone a host master's partition on the host
    /// ([`crate::plan::DeepspeedRelease`]).
    /// (`weights`: what the stage's weights hold on the GPU as loaded.)
    pub(super) fn zero12_flatten_cache(&self, s: u32, weights: f64) -> (f64, f64) {
        if !self.zero12() {
            return (0.0, 0.0);
        }
        let trainable = self.stage_trainable(s);
        if trainable <= 0.0 {
            return (0.0, 0.0);
        }
        let release = self.plan.parallel.deepspeed;
        let w = self.trainable_weight_bytes();
        let partition = trainable / self.shard;
        let offloaded = self.offload.optimizer_offloaded();
        // The clone is the master itself when the weights are fp32 and the
        // master stays on the GPU (`.to()` to its own dtype and device);
        // before 0.18.3 a master for the host is cloned there.
        let clone =
            if (w >= FP32 && !offloaded) || (offloaded && !release.clones_partition_on_gpu()) {
                0.0
            } else {
                partition * w
            };
        let zero_grad = if offloaded { 0.0 } else { partition * FP32 };
        let loaded = trainable * w;
        let free = self.gpu_room() - weights;
        // Flattened through the host otherwise (and before 0.19 always): the
        // parameters go there and the cache is emptied before the flat
        // buffer comes back.
        let (per_param, largest_param) = if release.flattens_on_gpu() && free >= loaded {
            (loaded, self.largest_trainable_tensor(s) * w)
        } else {
            (0.0, 0.0)
        };
        (
            per_param + clone + zero_grad,
            largest_param.max(clone).max(zero_grad),
        )
    }

    /// The GPU's memory less what the runtime holds outside the allocator
    /// (context, NCCL, other processes): what the allocator can reserve.
    pub(super) fn gpu_room(&self) -> f64 {
        self.plan.gpu.capacity().as_f64() - self.runtime()
    }

    /// DeepSpeed's ZeRO-1/2 optimizer (`stage_1_and_2.py`), not Megatron's
    /// distributed optimizer, which the same stages also name.
    pub(super) fn zero12(&self) -> bool {
        matches!(
            self.plan.parallel.sharding,
            Sharding::Zero1 | Sharding::Zero2
        ) && !self.megatron_grad_buffer()
    }

    /// Elements of the largest trainable tensor on stage `s` under a full
    /// fine-tune (the embedding, an untied head or a block's MLP matrix,
    /// per TP rank); zero for adapters, whose tensors are small.
    pub(super) fn largest_trainable_tensor(&self, s: u32) -> f64 {
        if !self.full_finetune() {
            return 0.0;
        }
        let embedding = if self.is_first(s) {
            self.m.embedding_params() as f64 / self.te
        } else {
            0.0
        };
        let matrix = if self.stage_layers(s) > 0.0 {
            self.m.hidden as f64 * self.m.ffn as f64 / self.t
        } else {
            0.0
        };
        embedding.max(self.lm_head_params(s)).max(matrix)
    }

    /// The reduction stream's pool of ZeRO-2 with its optimizer on the
    /// host: at the end of backward each gradient's slice in this rank's
    /// partition is copied to fp64 on the GPU for its norm
    /// (`set_norm_for_param_grad_in_gpu`, [`NORM_COPY_BYTES`]), then to fp32
    /// for the copy to the host's gradient
    /// (`async_inplace_copy_grad_to_fp32_buffer_from_gpu`), which fits where
    /// the fp64 copy was (deepspeed 0.19.8 `runtime/zero/stage_1_and_2.py`) —
    /// under `overlap_comm` on the reduction stream, whose blocks the
    /// default stream cannot use ([`Self::side_stream_grad_pool`]). The
    /// largest gradient sizes it: the H200's Llama-3.2-3B run
    /// (calibration/h200-2026-12-04-deepspeed, `peak-ds2off-*.txt`) held
    /// 3,200 MiB of segments on that stream, 3,006 allocated at its reserved
    /// peak — the fp64 copy of its 394 M-element embedding gradient. Without
    /// `overlap_comm` (DeepSpeed's default below stage 3,
    /// [`Framework::deepspeed_overlap_comm`]) the copies are made on the
    /// default stream, in blocks the backward has freed.
    pub(super) fn zero2_offload_norm_pool(&self, s: u32) -> f64 {
        if self.plan.parallel.sharding != Sharding::Zero2
            || !self.offload.optimizer_offloaded()
            || !self.zero12()
            || !self.plan.framework.deepspeed_overlap_comm(false)
        {
            return 0.0;
        }
        let partition = self.stage_trainable(s) / self.shard;
        self.largest_trainable_tensor(s).min(partition) * NORM_COPY_BYTES
    }

    /// The reduce stream's pool of ZeRO-3 with its optimizer on the host:
    /// for each gradient partition `partition_grads` copies the host buffer
    /// it reduced into back to the GPU (`grad_buffer.to(grad_partition.device)`,
    /// kept for the bucket), and `_offload_grad_partition_at_boundary` takes
    /// its norm in fp64 chunks of [`ZERO3_NORM_CHUNK_ELEMENTS`] and copies it
    /// to the host in fp32, which fits where a chunk was (deepspeed 0.14.4 to
    /// 0.19.8 `runtime/zero/stage3.py`), all under `reduce_and_partition_stream`,
    /// a stream of its own with `overlap_comm` (on by default at stage 3).
    /// Its segments grow with the gradients in backward order: a block's
    /// largest matrix first, then — where a tied embedding's gradient is the
    /// last to finish and outgrows them — the embedding's. Measured on the
    /// H200 (calibration/h200-2026-12-04-deepspeed, `peak-ds3off-*.txt`):
    /// Llama-3.2-3B full fine-tune held 2,902 MiB there, 2,100 in the norm's
    /// two segments (192 MiB for a 25 M-element MLP matrix, 1,907 for the
    /// embedding's first 250 M elements) and 802 in the copies' (48 + 752 + 2)
    /// — 2,899 MiB by this count.
    pub(super) fn zero3_offload_reduce_pool(&self, s: u32) -> f64 {
        if self.plan.parallel.sharding != Sharding::Zero3
            || !self.offload.optimizer_offloaded()
            || !self.plan.framework.deepspeed_overlap_comm(true)
            || !self.full_finetune()
        {
            return 0.0;
        }
        let shard = |elements: f64| elements / self.shard;
        let pair =
            |p: f64| NORM_COPY_BYTES * p.min(ZERO3_NORM_CHUNK_ELEMENTS) + self.grad_bytes() * p;
        let matrix = if self.stage_layers(s) > 0.0 {
            shard(self.m.hidden as f64 * self.m.ffn as f64 / self.t)
        } else {
            0.0
        };
        let largest = shard(self.largest_trainable_tensor(s));
        // An embedding tied to the head finishes its gradient last, after the
        // blocks' segments were made; an untied head's comes first and makes
        // the largest at once.
        let tied_last = self.is_first(s) && self.m.tied_embeddings && largest > matrix;
        if tied_last {
            pair(matrix) + pair(largest)
        } else {
            pair(largest)
        }
    }

    /// ZeRO-3 allocates the gradient partitions of every trainable parameter
    /// as one flat buffer when its optimizer is built and keeps it for the
    /// run, on the GPU unless the optimizer is offloaded
    /// (deepspeed/runtime/zero/stage3.py `grad_partitions_flat_buffer`, on
    /// `self.device`, the CPU under `offload_optimizer`; 0.14.4 and 0.17.5).
    /// ZeRO-2 frees its partition after each step (`averaged_gradients[i] = None`).
    pub(super) fn zero3_grad_buffer_on_gpu(&self) -> bool {
        self.plan.parallel.sharding == Sharding::Zero3
            && !self.offload.optimizer_offloaded()
            && !self.plan.training.optimizer_in_backward
    }

    /// Megatron's data-parallel wrapper allocates every trainable parameter's
    /// fp32 `main_grad` in contiguous buffers when the model is wrapped, zeroes
    /// them at the start of each iteration and never frees them; its reduce
    /// buckets are views into them (megatron-core 0.19.2
    /// `distributed/param_and_grad_buffer.py`: `self.grad_data = torch.zeros(
    /// self.numel, dtype=self.grad_dtype, ...)`, `reset()` → `grad_data.zero_()`;
    /// `training/arguments.py` turns on `accumulate_allreduce_grads_in_fp32`
    /// for bf16). Seen in ../shared/fixtures/traces/megatron_mem_01.txt
    /// (GPT-2 345M, TP 2 × DP 2, distributed optimizer): 2040 MiB allocated
    /// between iterations = 178 M parameters per rank × (2 + 4 + 12/2) bytes,
    /// the fp32 gradient buffer included.
    pub(super) fn megatron_grad_buffer(&self) -> bool {
        self.defaults().fp32_grad_buffers && !self.plan.training.optimizer_in_backward
    }

    /// The full unsharded gradients an FSDP rank accumulates through the
    /// micro-batches its framework runs under `no_sync`
    /// ([`Framework::fsdp_no_sync_accumulation`]; none with
    /// [`crate::plan::TrainingSpec::sync_each_batch`] or without
    /// accumulation), in the compute dtype: Accelerate's FSDP mixed precision
    /// reduces in the parameters' compute dtype (`reduce_dtype = param_dtype`,
    /// accelerate 1.16 `FullyShardedDataParallelPlugin.set_mixed_precision`),
    /// so the gradient autograd makes is kept as it is. They live from the
    /// second micro-batch's forward until the last one's backward reduces
    /// them unit by unit into the shards.
    pub(super) fn unsharded_accumulated_grads(&self, s: u32) -> f64 {
        if !self.plan.accumulates_unsharded_grads() {
            return 0.0;
        }
        self.stage_trainable(s) * self.e
    }

    /// The gradients live from one step to the next in a buffer allocated
    /// once (ZeRO-3's partitions, Megatron's `main_grad`).
    pub(super) fn grads_persistent(&self) -> bool {
        self.zero3_grad_buffer_on_gpu() || self.megatron_grad_buffer() || self.ddp_bucket_view()
    }

    /// DDP with `gradient_as_bucket_view=True`: the gradients are views of the
    /// reducer's flat buckets, allocated when the model is wrapped and kept
    /// for the run (PyTorch `torch/nn/parallel/distributed.py`: "gradients
    /// will be views pointing to different offsets of allreduce communication
    /// buckets"), so the gradient memory is there from the first forward.
    /// Measured on the H200 on one rank (set 5): Llama-3.2-1B amp-bf16 peaked
    /// at the same byte with and without the view — both hold one
    /// gradient-sized buffer more than the loop without DDP.
    pub(super) fn ddp_bucket_view(&self) -> bool {
        let p = &self.plan.parallel;
        p.sharding == Sharding::Ddp && p.gradient_as_bucket_view && !self.megatron_grad_buffer()
    }

    /// Optimizer states (and master copy) one rank holds on the GPU, wherever
    /// they are allocated; zero when offloaded to the CPU.
    pub(super) fn optimizer_on_gpu(&self, s: u32) -> f64 {
        if self.offload.optimizer_offloaded() {
            return 0.0;
        }
        let o = self.stage_trainable(s) * self.optimizer_bytes_per_param(s);
        if self.shards_optimizer() {
            o / self.shard
        } else {
            o
        }
    }

    /// Optimizer states in PyTorch's allocator: a paged optimizer's small
    /// tensors' ([`Self::unpaged_share`]).
    pub(super) fn optimizer(&self, s: u32) -> f64 {
        if self.paged_optimizer() {
            self.optimizer_on_gpu(s) * self.unpaged_share(s)
        } else {
            self.optimizer_on_gpu(s)
        }
    }

    /// Paged optimizer state lives in CUDA managed memory: nvidia-smi sees the
    /// resident pages, PyTorch's counters do not (DESIGN.md §3b).
    pub(super) fn paged_optimizer_resident(&self, s: u32) -> f64 {
        if self.paged_optimizer() {
            self.optimizer_on_gpu(s) * (1.0 - self.unpaged_share(s))
        } else {
            0.0
        }
    }

    /// Whether bitsandbytes steps the optimizer ([`Optimizer::is_bitsandbytes`]).
    /// transformers' `Trainer` takes every Lion from it too (`optim="lion_32bit"`,
    /// `"lion_8bit"`, `"paged_lion_32bit"`: `from bitsandbytes.optim import
    /// Lion`, transformers 4.40 `Trainer.get_optimizer_cls_and_kwargs`), so a
    /// Lion under the Trainer and the tools built on it keeps an fp32 state
    /// and steps in place; elsewhere Lion is a PyTorch implementation
    /// (lion-pytorch: `torch.zeros_like(p)`, one tensor at a time).
    pub(super) fn bitsandbytes_optimizer(&self) -> bool {
        let o = self.plan.training.optimizer;
        o.is_bitsandbytes()
            || (o == Optimizer::Lion && self.plan.framework.trains_through_trainer())
    }

    /// Bytes of one optimizer-state element: fp32 beside fp32 weights or a
    /// master copy, else the parameter's 16-bit dtype (`torch.zeros_like(p)` in
    /// torch/optim/adamw.py `_init_group`) — or 16-bit where the plan asks
    /// for it ([`crate::plan::TrainingSpec::optimizer_states_16bit`]).
    /// bitsandbytes' 32-bit optimizers keep fp32 states beside 16-bit
    /// parameters too ([`Self::bitsandbytes_optimizer`]).
    pub(super) fn state_bytes(&self) -> f64 {
        if self.bitsandbytes_optimizer() {
            return FP32;
        }
        let fp32 = self.trainable_weight_bytes() >= FP32 || self.master_in_optimizer();
        if fp32 && !self.plan.training.optimizer_states_16bit {
            FP32
        } else {
            HALF
        }
    }

    /// Optimizer-step temporaries. Foreach Adam/AdamW makes one state-sized
    /// temporary in the states' dtype (`exp_avg_sq_sqrt = torch._foreach_sqrt(...)`
    /// in torch/optim/adam.py `_multi_tensor_adam`; measured on the H200:
    /// Llama-3.1-8B pure bf16 stepped at weights + grads + states + 2 bytes/param,
    /// and the amp run went out of memory inside that very `_foreach_sqrt`).
    /// Foreach SGD with momentum updates in place (`_multi_tensor_sgd`); fused
    /// kernels make none; per-tensor optimizers (the for-loop path, HF's
    /// Adafactor, Lion) one tensor at a time.
    pub(super) fn optimizer_temporaries(&self, s: u32) -> f64 {
        if self.offload.optimizer_offloaded() || self.plan.training.optimizer_in_backward {
            return 0.0;
        }
        let has_state = !matches!(self.plan.training.optimizer, Optimizer::Sgd);
        if !has_state {
            return 0.0;
        }
        let n = self.stage_trainable(s)
            / if self.shards_optimizer() {
                self.shard
            } else {
                1.0
            };
        // The embedding or the head, whichever TP splits less.
        let largest = (self.m.vocab as f64 * self.m.hidden as f64 / self.te).min(n);
        // Muon orthogonalises one matrix at a time (`_single_tensor_muon`'s
        // Newton–Schulz iterations).
        let per_tensor = matches!(
            self.plan.training.optimizer,
            Optimizer::Adafactor | Optimizer::Lion | Optimizer::Muon
        );
        let kernel = match self.plan.training.optimizer_impl {
            // GaLore's optimizers are their own per-tensor loops, whatever
            // the kernel setting.
            _ if self.plan.training.optimizer.projects_gradients() => {
                let galore = if self.full_finetune() {
                    self.projected_step_temporaries()
                } else {
                    0.0
                };
                (largest * FP32).max(galore)
            }
            // torchao's 4-bit AdamW steps each parameter through its own
            // compiled kernel (`single_param_adam`, which dequantizes the
            // moments to fp32), whatever the setting.
            _ if self.plan.training.optimizer == Optimizer::Adamw4bit => largest * FP32,
            // bitsandbytes steps in place in its own kernels, whatever the
            // setting ([`Self::bitsandbytes_optimizer`]).
            _ if self.bitsandbytes_optimizer() => 0.0,
            OptimizerImpl::Fused => 0.0,
            _ if self.plan.training.optimizer == Optimizer::SgdMomentum => 0.0,
            OptimizerImpl::ForLoop => largest * FP32,
            _ if per_tensor => largest * FP32,
            OptimizerImpl::Foreach => n * self.state_bytes(),
        };
        // DeepSpeed's ZeRO optimizers step on an fp32 copy of the 16-bit
        // gradient partition (stage_1_and_2.py `single_partition_of_fp32_groups[i].grad`;
        // its estimator counts 2Ψ + 18Ψ/N for ZeRO-2, DESIGN.md §3), and
        // Megatron's fp16 optimizers on fp32 copies of their fp16 `main_grad`
        // ([`Self::grad_bytes`]).
        let fp32_grad_partition = if self.master_in_optimizer() && self.grad_bytes() < FP32 {
            n * FP32
        } else {
            0.0
        };
        kernel + fp32_grad_partition
    }

    /// Under autocast over fp32 weights, every matmul runs on a 16-bit cast of
    /// its weight, and autograd saves that cast for the input gradient: the
    /// casts of trainable weights sit in autocast's cache (`cache_enabled=True`)
    /// until the outermost autocast context exits, those of frozen fp32
    /// weights in the matmuls' saved tensors only (torch/csrc/autograd: `mm`
    /// saves `mat2`; autocast_mode.cpp `cached_cast` caches a cast only when
    /// `arg.requires_grad() && arg.is_leaf()`). Without checkpointing a 16-bit
    /// copy of every fp32 matrix lives from forward into backward. A block
    /// under full checkpointing saves nothing of its forward (reentrant:
    /// `no_grad`; non-reentrant: its saved tensors dropped), so its casts of
    /// frozen weights are freed matmul by matmul, and those of trainable
    /// weights when the cache is cleared as the forward's autocast exits;
    /// its recompute in backward casts its matrices again, saved until its
    /// backward is done (torch.utils.checkpoint re-enters autocast with the
    /// forward's state). Returns the casts alive at the end of forward, after
    /// it (the start of backward) and during a block's backward.
    pub(super) fn autocast_copies(&self, s: u32) -> CastCopies {
        if !self.runs_autocast() || self.shards_params() {
            return CastCopies::default();
        }
        // The LM head's matmul casts its weight whether or not it is tied to
        // the embedding (measured: +501 MiB for Llama-3.2-1B's tied head, H200).
        let experts = if self.experts_in_fp32() {
            // Grouped experts use their fp32 weights as they are (in the
            // blocks that have experts).
            self.m.experts as f64 * self.m.one_mlp_params() as f64
                / self.plan.parallel.ep as f64
                / self.t
                * self.expert_block_share()
        } else {
            0.0
        };
        let block = (self.layer_matrix_params() - experts) * HALF;
        let layers = self.stage_layers(s);
        // TRL's fused LM head casts the head's rows tile by tile outside
        // autocast (`weight[start:end].to(compute_dtype)`, counted with its
        // tile: [`Self::tiled_logprob_moments`]): no whole cast of it. Its
        // chunked NLL casts the whole head for each checkpointed chunk, one
        // at a time (counted with the chunk: [`Self::chunked_nll_moments`]).
        let head_is_a_matmul = !matches!(
            self.plan.training.loss,
            Loss::TiledLogprob | Loss::ChunkedNll
        );
        let head = if head_is_a_matmul {
            self.lm_head_params(s) * HALF
        } else {
            0.0
        };
        // Blocks whose forward keeps nothing, one of them recomputed at a time.
        let checkpointed = if self.plan.training.checkpointing == Checkpointing::Full {
            (layers / self.plan.training.checkpoint_every.max(1) as f64).floor()
        } else {
            0.0
        };
        let saved_blocks = (layers - checkpointed) * block;
        let recomputed = checkpointed.min(1.0) * block;
        match self.base_bits() {
            // Frozen 16-bit (or quantised) base: only the fp32 adapters are cast,
            // and an LM head that `prepare_model_for_kbit_training` made fp32
            // (its 16-bit cast saved by the head's matmul for the input gradient).
            Some(bits) if bits < 32 => {
                let adapters = if self.trainable_weight_bytes() >= FP32 {
                    self.stage_trainable(s) * HALF
                } else {
                    0.0
                };
                let head = if head_is_a_matmul && self.kbit_fp32() && !self.kbit_embeddings_16bit()
                {
                    (self.lm_head_params(s) - self.quantized_head_params(s))
                        * HALF
                        * self.lm_head_calls()
                } else {
                    0.0
                };
                CastCopies::flat(adapters + head)
            }
            // A frozen fp32 base: each call of its head casts it anew (a
            // chunked head once per chunk, [`Self::lm_head_calls`]; LitGPT's
            // LoRA on StableLM-3B at 1034 tokens: 9 copies of its 0.39 GiB
            // head); the fp32 adapters' casts are cached.
            Some(_) => {
                let kept =
                    saved_blocks + head * self.lm_head_calls() + self.stage_trainable(s) * HALF;
                CastCopies {
                    forward: kept,
                    after_forward: kept,
                    block_backward: kept + recomputed,
                }
            }
            None if self.trainable_weight_bytes() >= FP32 => {
                let saved = saved_blocks + head;
                CastCopies {
                    forward: layers * block + head,
                    after_forward: saved,
                    block_backward: saved + recomputed,
                }
            }
            None => CastCopies::default(),
        }
    }

    /// Extra bytes while loading: frameworks that load the whole checkpoint on
    /// every rank before sharding hold it in full beside their shard.
    pub(super) fn load_materialised(&self, s: u32) -> f64 {
        if !self.defaults().loads_full_checkpoint_per_rank || !self.shards_params() {
            return 0.0;
        }
        let bytes = match self.base_bits() {
            Some(bits) if bits < 16 => HALF, // 16-bit weights before quantising
            Some(32) => FP32,
            Some(_) => HALF,
            None => self.trainable_weight_bytes(),
        };
        self.stage_params(s) * bytes
    }

    /// The loaded full copy still held while training a frozen base
    /// ([`crate::framework::FrameworkDefaults::keeps_loaded_checkpoint`]).
    pub(super) fn load_kept(&self, s: u32) -> f64 {
        if self.defaults().keeps_loaded_checkpoint && self.base_bits().is_some() {
            self.load_materialised(s)
        } else {
            0.0
        }
    }

    // ----- activations --------------------------------------------------------
}
