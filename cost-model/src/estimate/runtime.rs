//! Communication buffers, gathered units, the runtime's own memory and the allocator's reserve fraction.

use super::*;

impl<'a> Ctx<'a> {
    /// Buffers of the data-parallel runtime on stage `s` in forward and backward.
    pub(super) fn comm_buffers(&self, s: u32) -> (f64, f64) {
        let p = &self.plan.parallel;
        let dp = p.dp();
        let trainable = self.stage_trainable(s);
        match p.sharding {
            // Megatron reduces in buckets that are views of its `main_grad`
            // buffers ([`Self::megatron_grad_buffer`]), counted as gradients.
            Sharding::Ddp | Sharding::Zero1 | Sharding::Zero2 if self.megatron_grad_buffer() => {
                (0.0, 0.0)
            }
            Sharding::Ddp if !p.gradient_as_bucket_view => {
                // DDP's flat buckets hold a second copy of every gradient unless
                // gradient_as_bucket_view=True (PyTorch #41954). The reducer
                // allocates them when the model is wrapped, whatever the world
                // size (`Reducer::initialize_buckets`, `at::empty` per bucket):
                // measured on the H200 on one rank (calibration/h200-2026-11-30,
                // set 4), Llama-3.2-1B amp-bf16 peaked 4.60 GiB = its 1.24 B fp32
                // gradients above the same loop without DDP.
                let g = trainable * self.grad_bytes();
                (g, g)
            }
            Sharding::Zero1 | Sharding::Zero2 if dp > 1 => {
                let bucket = self.deepspeed_bucket_elements();
                let b = bucket.min(trainable) * HALF;
                (b, ZERO_BUCKETS_IN_BACKWARD * b)
            }
            Sharding::FsdpFull | Sharding::FsdpGradOp | Sharding::Hsdp
                if p.pp > 1 && self.shard > 1.0 && self.plan.framework.pipelines_fsdp2_stages() =>
            {
                // PyTorch's pipeline schedules run every micro-batch's backward
                // of an FSDP2 stage with `set_requires_gradient_sync(False)` and
                // `set_reshard_after_backward(False)`, and reduce-scatter once
                // after the last (torch 2.11 `pipelining/stage.py`
                // `backward_maybe_with_nosync`, `perform_reduce_grad`); torchtitan
                // also keeps parameters gathered after forward under PP
                // (`fsdp_reshard_after_forward = "default"` → `not pp_enabled`,
                // torchtitan 0.3.0 `distributed/fsdp.py`). So the stage's
                // parameters stay gathered in the compute dtype through the
                // step's forwards and backwards, and each block's unsharded
                // gradient is kept, upcast to the reduce dtype, and accumulated
                // (`_fsdp_param.py` `to_accumulated_grad_if_needed`:
                // `unsharded_grad.to(self.reduce_dtype)`, fp32 under
                // torchtitan's `mixed_precision_reduce`). Those accumulators exist
                // at the end of a forward once a backward has run, i.e. when
                // the rank runs more forwards than it warms up with: 1F1B
                // `min(m, pp − s)` (`Schedule1F1B`), interleaved
                // `(v − 1)·pp + 2·(pp − 1 − s)` of its `v·m` (`_get_warmup_ops`).
                let gathered = self.gathered_stage_bytes(s);
                let accumulated = self.stage_trainable(s) * self.grad_bytes();
                let microbatches = self.pipeline_microbatches();
                let (forwards, warmup) = match p.pp_schedule {
                    PipelineSchedule::OneFOneB => (microbatches, p.pp.saturating_sub(s)),
                    PipelineSchedule::Interleaved => {
                        let v = p.virtual_stages.max(1);
                        (
                            microbatches.saturating_mul(v),
                            (v - 1)
                                .saturating_mul(p.pp)
                                .saturating_add(2 * p.pp.saturating_sub(1 + s)),
                        )
                    }
                };
                let forward = if forwards > warmup { accumulated } else { 0.0 };
                (gathered + forward, gathered + accumulated)
            }
            Sharding::Zero3 | Sharding::FsdpFull | Sharding::Hsdp if self.gathers_units() => {
                // Unsharded parameters of the current and prefetched unit
                // (one transformer block per unit), and in backward their gradients.
                // In bytes as gathered ([`Self::gathered_block_bytes`]); the
                // parameter counts DeepSpeed caps are elements of that dtype.
                let unit = self.block_params();
                let eb = self.gathered_param_bytes();
                let unit_bytes = self.gathered_block_bytes();
                let resident = if p.sharding == Sharding::Zero3 {
                    // DeepSpeed does not release a parameter reused within
                    // `stage3_max_reuse_distance` parameters and keeps at most
                    // `stage3_max_live_parameters` gathered (both 1e9 by default
                    // and in transformers' "auto" config). At the turn from
                    // forward to backward, block L−j is reused after about 2·j
                    // blocks, so the last block and those within half the reuse
                    // distance are still gathered; a single parameter larger
                    // than the cap (an embedding) is gathered whole.
                    let largest = if self.is_first(s) || self.is_last(s) {
                        self.m.embedding_params() as f64 / self.te
                    } else {
                        0.0
                    };
                    (unit_bytes + DEEPSPEED_MAX_REUSE_DISTANCE / 2.0 * eb)
                        .min(DEEPSPEED_MAX_LIVE_PARAMETERS * eb)
                        .min(self.gathered_stage_bytes(s))
                        .max(FSDP_UNITS_IN_FLIGHT * unit_bytes)
                        .max(largest * eb)
                } else {
                    FSDP_UNITS_IN_FLIGHT * unit_bytes
                };
                // Beyond the blocks: FSDP1's root unit (embeddings, final norm,
                // head) stays gathered from forward through backward, its
                // gradient whole until its reduce-scatter, the last
                // (`_post_forward_reshard`: "Do not free the root's parameters
                // in the post-forward for `FULL_SHARD`"). A framework that
                // keeps a loaded full copy ([`Self::load_kept`], LitGPT's
                // measured term) already counts those weights. The head's own
                // FSDP2 unit ([`Plan::fsdp_head_is_own_unit`]) is in flight
                // beside one block at the loss, with its gradient.
                let trains = if self.full_finetune() { 1.0 } else { 0.0 };
                let (edges, edge_grads) = if p.sharding == Sharding::Zero3 {
                    (0.0, 0.0)
                } else if self.plan.fsdp_head_is_own_unit() {
                    let head = self.lm_head_params(s); // zero before the last stage
                    (
                        (unit_bytes + head * eb - resident).max(0.0),
                        trains * (head - unit).max(0.0),
                    )
                } else if self.load_kept(s) == 0.0 {
                    let e = self.edge_params(s);
                    (e * eb, trains * e)
                } else {
                    (0.0, 0.0)
                };
                let gathered = resident + edges;
                let (grads, edge_grads) = if self.gathers_on_one_rank() {
                    (0.0, 0.0)
                } else if self.base_bits().is_some() {
                    (0.0, edge_grads)
                } else {
                    (unit * self.grad_bytes(), edge_grads)
                };
                (gathered, gathered + grads + edge_grads * self.grad_bytes())
            }
            Sharding::FsdpGradOp if self.gathers_units() => {
                // SHARD_GRAD_OP keeps every unit gathered from its forward to
                // its backward ([`Self::shards_params`]): at the end of forward
                // the whole stage is unsharded, in the compute dtype, in
                // buffers of its own beside the shard (FSDP1 all-gathers into
                // `_full_param_padded`, FSDP2 into `all_gather_output`). In
                // backward a unit's unsharded gradient waits for its
                // reduce-scatter, and the root unit's (embeddings, final norm,
                // head) from the head's backward until the last, as under
                // FULL_SHARD.
                let gathered = self.gathered_stage_bytes(s);
                let grads = if self.base_bits().is_some() || self.gathers_on_one_rank() {
                    0.0
                } else {
                    (self.block_params() + self.edge_params(s)) * self.grad_bytes()
                };
                (gathered, gathered + grads)
            }
            _ => (0.0, 0.0),
        }
    }

    /// `nn.DataParallel`'s gradient reduction onto GPU 0, at the end of
    /// backward. Each forward replicates the module with `Broadcast`, whose
    /// outputs on GPU 0 are aliases of the parameters (torch 2.5
    /// `nn/parallel/replicate.py`, `_functions.py`), so every replica's
    /// gradients — GPU 0's own too — wait in autograd's buffer for
    /// `Broadcast.backward`, which runs once all replicas are done and calls
    /// `ReduceAddCoalesced`: `comm.reduce_add_coalesced` sums each 10 MB chunk
    /// into a new tensor on GPU 0 (`flat_result = reduce_add(…)`,
    /// `nn/parallel/comm.py`) while GPU 0's own gradients are still held, and
    /// only then do those results reach `.grad`. So GPU 0 holds its gradients
    /// twice at that point, and three times when `.grad` already holds the
    /// earlier micro-batches' (`kept`: accumulation, or `zero_grad` zeroing
    /// instead of freeing), the new sum added into it afterwards. `g` is the
    /// stage's gradients ([`Self::gradients`]).
    pub(super) fn data_parallel_reduced_grads(&self, g: f64, kept: bool) -> f64 {
        if !self.plan.parallel.has_data_parallel_replicas() {
            return 0.0;
        }
        if kept {
            2.0 * g
        } else {
            g
        }
    }

    /// Whether the parameter-sharding runtime gathers its units into buffers
    /// of their own: across ranks, from the CPU when parameters are
    /// offloaded, and on a single rank under FSDP2, which keeps sharding
    /// there (`fully_shard` copies each unit out of its all-gather into new
    /// unsharded parameters whatever the world size) where FSDP1 switches to
    /// `NO_SHARD` (torch `fsdp/_init_utils.py`: "FSDP is switching to use
    /// `NO_SHARD` … since the world size is 1"). Measured on the H200 on one
    /// rank (calibration/h200-2026-11-30 set 5, h200-2026-12-04 set 7):
    /// Llama-3.2-1B and -3B under FSDP2 peaked their embedding's bf16 copy
    /// (0.49 and 0.73 GiB) above the same model unsharded, Llama-3.1-8B
    /// with LoRA its embedding and head's (1.96 GiB), and without resharding
    /// after forward every block's bf16 copy (+1.81 GiB, 1.24 B parameters).
    pub(super) fn gathers_units(&self) -> bool {
        let p = &self.plan.parallel;
        self.shard > 1.0
            || self.offload.params_offloaded()
            || (matches!(
                p.sharding,
                Sharding::FsdpFull | Sharding::FsdpGradOp | Sharding::Hsdp
            ) && self.plan.uses_fsdp2())
    }

    /// FSDP2 gathering on a single rank with its parameters on the GPU
    /// ([`Self::gathers_units`]): the measured peaks there hold the gathered
    /// copies and no unit's unsharded gradient beside the (whole) sharded
    /// ones — with them counted as across ranks, the four one-rank FSDP2 runs
    /// on the H200 came out 2.6–3.5 % over their allocated peaks, without them
    /// −0.0 … +2.6 %.
    pub(super) fn gathers_on_one_rank(&self) -> bool {
        self.shard <= 1.0 && !self.offload.params_offloaded()
    }

    /// DeepSpeed ZeRO-3 gathers a parameter whose partition lives on the CPU
    /// (`offload_param`) through a GPU copy of that partition: `all_gather_coalesced`
    /// passes `param.ds_tensor.to(device)` to the all-gather beside the new
    /// full-size `param_buffer` (deepspeed 0.8.1 and 0.17.5
    /// `runtime/zero/partition_parameters.py`), and the copy lives until the
    /// gather completes. The largest such fetch under live activations is the
    /// LM head's at the end of forward (the embedding's, at the start, has
    /// none beside it): its partition, once more, on the last stage.
    pub(super) fn offloaded_fetch_copy(&self, s: u32) -> f64 {
        if self.plan.parallel.sharding != Sharding::Zero3 || !self.offload.params_offloaded() {
            return 0.0;
        }
        self.lm_head_params(s) * self.gathered_param_bytes() / self.shard
    }

    /// Bytes of one block (FSDP's unit) as FSDP or ZeRO-3 gathers it: its
    /// norms in the gathered dtype ([`Self::gathered_param_bytes`]) and its
    /// matrices likewise, or, for a quantized base, in the storage the
    /// sharding holds ([`Self::sharded_matrix_bytes`]: the packed codes, four
    /// times fewer bytes than 16-bit weights for NF4), which is what the
    /// all-gather moves and the unsharded buffer holds.
    pub(super) fn gathered_block_bytes(&self) -> f64 {
        self.block_bytes_in(self.gathered_param_bytes())
    }

    /// Bytes of stage `s` gathered whole ([`Self::gathered_block_bytes`] for
    /// its blocks, the embedding and head in the gathered dtype).
    pub(super) fn gathered_stage_bytes(&self, s: u32) -> f64 {
        self.stage_layers(s) * self.gathered_block_bytes()
            + self.edge_params(s) * self.gathered_param_bytes()
    }

    /// Bytes of a parameter gathered by FSDP or ZeRO-3, in the compute dtype:
    /// FSDP `MixedPrecision(param_dtype=bf16)` / FSDP2 `MixedPrecisionPolicy`
    /// and DeepSpeed gather 16-bit parameters; only plain fp32 training
    /// gathers fp32. DeepSpeed also communicates in that dtype, which its
    /// stage-3 IPG buckets hold ([`Self::zero3_ipg_bucket`]): fp16 or bf16 in
    /// those modes, else fp32 (deepspeed 0.19.8 `runtime/engine.py`
    /// `communication_data_type`; `runtime/zero/stage3.py` makes one
    /// `IPGBucketZ3` per communication dtype, its buffer
    /// `torch.empty(self.reduce_bucket_size, dtype=dtype)`). Measured on the
    /// H200 (calibration/h200-2026-12-04-deepspeed, Llama-2-70B blocks ×40, LoRA
    /// r8, `bf16`): 67,730 MiB allocated after `deepspeed.initialize` = the
    /// bf16 base and fp32 adapters (66,478) + 5e8 bf16 values (954) + the
    /// adapters' fp32 master (198) and bf16 gradient partition (99); BLOOMZ-7B1
    /// in fp32: 1,907 MiB, 5e8 fp32 values.
    pub(super) fn gathered_param_bytes(&self) -> f64 {
        if self.prec == Precision::Fp32 {
            FP32
        } else {
            HALF
        }
    }

    /// `reduce_bucket_size` of a DeepSpeed run: the framework's fill-in.
    pub(super) fn deepspeed_bucket_elements(&self) -> f64 {
        self.plan
            .framework
            .deepspeed_reduce_bucket_elements(self.m.hidden)
    }

    /// ZeRO-3's contiguous gradient (IPG) bucket: with `contiguous_gradients`
    /// (on by default) the stage-3 optimizer allocates `reduce_bucket_size`
    /// elements of the trainable parameters' dtype on the GPU when it is built,
    /// whatever the world size, the offload or the number of trainable
    /// parameters, and keeps it for the whole run (`__ipg_bucket_flat_buffer`
    /// in deepspeed/runtime/zero/stage3.py 0.8.3 and 0.14.4, `IPGBucket.buffer`
    /// in 0.17.5). Stage 1/2 allocate theirs per backward (`comm_buffers`).
    /// Seen in ../shared/fixtures/traces/ds_see_memory_02.txt (DeepSpeed 0.10,
    /// Accelerate's ZeRO-3 CPU-offload config, fp32 LoRA on bloomz-560m):
    /// "Reduce bucket size 500,000,000", then allocated memory grows from
    /// 3.04 to 4.92 GiB while the optimizer is built — 5e8 fp32 values are
    /// 1.86 GiB. Its elements are of the engine's communication dtype, the one
    /// it gathers in ([`Self::gathered_param_bytes`]), not the trainable
    /// parameters': fp32 adapters under `bf16` reduce through a bf16 bucket.
    pub(super) fn zero3_ipg_bucket(&self, s: u32) -> f64 {
        if self.plan.parallel.sharding != Sharding::Zero3 || self.stage_trainable(s) <= 0.0 {
            return 0.0;
        }
        self.deepspeed_bucket_elements() * self.gathered_param_bytes()
    }

    /// NCCL communicators a rank joins (one per parallel dimension in use).
    pub(super) fn communicators(&self) -> u64 {
        let p = &self.plan.parallel;
        let mut n = 0;
        if p.dp() > 1 && p.sharding != Sharding::DataParallel {
            n += 1;
        }
        for d in [p.tp, p.pp, p.cp, p.ep] {
            if d > 1 {
                n += 1;
            }
        }
        n
    }

    /// Outside the allocator: CUDA context, NCCL, other processes.
    pub(super) fn runtime(&self) -> f64 {
        let r = &self.plan.runtime;
        ((r.cuda_context_mib
            + r.other_processes_mib
            + self.communicators() * NCCL_PER_COMMUNICATOR_MIB)
            * MIB) as f64
    }

    /// The cuBLAS workspaces in the allocator once the first matmuls ran
    /// ([`CUBLAS_HANDLES`] × [`CUBLAS_WORKSPACE_HOPPER_MIB`] or
    /// [`CUBLAS_WORKSPACE_MIB`]).
    pub(super) fn cublas_workspaces(plan: &Plan) -> f64 {
        let per = if plan.gpu.is_hopper() {
            CUBLAS_WORKSPACE_HOPPER_MIB
        } else {
            CUBLAS_WORKSPACE_MIB
        };
        CUBLAS_HANDLES * per * MIB as f64
    }

    pub(super) fn reserve_fraction(&self) -> f64 {
        if self.plan.runtime.expandable_segments {
            ALLOCATOR_RESERVE_FRACTION_EXPANDABLE
        } else if self.frees_in_reverse() {
            ALLOCATOR_RESERVE_FRACTION_FROZEN_NO_RECOMPUTE
        } else {
            ALLOCATOR_RESERVE_FRACTION
        }
    }

    /// Whether the step's large blocks are freed in the reverse of the order
    /// they were made ([`ALLOCATOR_RESERVE_FRACTION_FROZEN_NO_RECOMPUTE`]): a
    /// frozen base (an adapter trains), no recomputation (checkpointing
    /// frees each block's transients as the forward goes and makes them again
    /// in the backward, beside tensors of other sizes), no activation offload,
    /// one pipeline stage (1F1B frees a micro-batch's activations while the
    /// next one's forward allocates) and no ZeRO or FSDP, whose gathered
    /// parameters come and go between the activations.
    pub(super) fn frees_in_reverse(&self) -> bool {
        let p = self.plan;
        !self.full_finetune()
            && p.training.checkpointing == Checkpointing::None
            && !p.training.activation_offload
            && p.parallel.pp == 1
            && p.parallel.sharding.is_replicated()
    }
}
