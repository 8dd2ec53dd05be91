//! One pipeline stage's phases (load, init, forward, backward, step) assembled from the components.

use super::*;

impl<'a> Ctx<'a> {
    pub(super) fn stage(&self, s: u32) -> StageEstimate {
        let w = self.weights(s) + self.load_kept(s);
        let g = self.gradients(s);
        let o = self.optimizer(s);
        let (acts, working, recomputed_block) = self.activations(s);
        let lg = self.logits(s);
        // The segments the checkpointed forward's blocks left, idle beside
        // the loss's tensors.
        let idle = self.idle_block_transients(s, recomputed_block);
        // A full fine-tune that makes nothing logits-sized (a classifier,
        // a chunked or fused loss): those segments idle past its forward.
        let idle_later = self.idle_block_segments_without_logits(recomputed_block);
        // And, once the loss's backward starts, the logits' own segment when
        // the loop has dropped them.
        let idle_loss_backward = idle
            + self.dropped_logits_segment(s)
            + self.trl_metrics_copy_segment(s)
            + self.orpo_idle_segments(s);
        let ipg = self.zero3_ipg_bucket(s);
        let (gathered, comm_b) = self.comm_buffers(s);
        let (comm_f, comm_b) = (gathered + ipg, comm_b + ipg);
        // Gradients exist through forward and backward while they accumulate,
        // in every step when `zero_grad` zeroes instead of freeing them, and
        // always in ZeRO-3's gradient partition buffer and Megatron's `main_grad`.
        let t = &self.plan.training;
        let persistent = self.grads_persistent();
        let kept = t.grad_accum > 1 || !t.zero_grad_set_to_none || persistent;
        let g_fwd = if kept && !t.optimizer_in_backward {
            g
        } else {
            0.0
        };
        // Under `no_sync` the unsharded gradients take the shards' place until
        // the last micro-batch's backward has reduced them all; a unit's
        // gradient then accumulates into them in place, so backward holds no
        // separate unsharded gradient waiting for its reduce-scatter.
        let unsharded = self.unsharded_accumulated_grads(s);
        let (g_fwd, g_bwd_end) = (g_fwd.max(unsharded), g.max(unsharded));
        let comm_b = if unsharded > 0.0 { comm_f } else { comm_b };
        let runtime = Bytes::from_f64(self.runtime() + self.paged_optimizer_resident(s));
        let frac = self.reserve_fraction();
        let side_pool = self.side_stream_grad_pool(s);
        // The head's partition copied in as ZeRO-3 fetches it from the CPU
        // ([`Self::offloaded_fetch_copy`]), and the fetch stream's pool.
        let fetch = self.offloaded_fetch_copy(s);
        let fetch_pool = self.zero3_fetch_stream_pool(gathered + fetch);
        let (wrap_cache, wrap_segment) = self.fsdp1_wrap_cache(s);
        let copy_pool = self.fsdp1_offload_copy_pool(wrap_segment);
        // The segments start-up left cached on the default stream: FSDP1's
        // wrap's ([`Self::fsdp1_wrap_cache`]) or ZeRO-1/2's flattening's
        // ([`Self::zero12_flatten_cache`]) — one runtime or the other.
        let fsdp1_wrap = wrap_cache > 0.0;
        let (start_up, start_up_segment) = if fsdp1_wrap {
            (wrap_cache, wrap_segment)
        } else {
            self.zero12_flatten_cache(s, w)
        };
        // Whether the loss's fp32 logits-sized tensors outgrow the largest
        // (worked out only where there are such segments); under ZeRO-1/2 a
        // dropped output's segment then stays idle beside them through the
        // loss's backward.
        let logits_outgrow =
            start_up > 0.0 && self.is_last(s) && self.loss_logits_tensor() > start_up_segment;
        let dropped_big = if logits_outgrow && !fsdp1_wrap {
            self.dropped_output(s)
        } else {
            0.0
        };
        let norm_pool = self.zero2_offload_norm_pool(s) + self.zero3_offload_reduce_pool(s);
        // That floor is free segments the allocator hands back when an
        // allocation finds no room (`release_cached_blocks` before it
        // retries `cudaMalloc`, c10/cuda/CUDACachingAllocator.cpp): it
        // raises the reserve up to what the GPU has, never past it.
        let room = if start_up > 0.0 { self.gpu_room() } else { 0.0 };
        let casts = self.autocast_copies(s);
        // The 16-bit copy of a quantized weight in flight: the LM head's as
        // backward starts, a block matrix's inside a block's backward.
        let (dq_block, dq_head) = self.dequantized_weights(s);

        struct Parts {
            w: f64,
            g: f64,
            o: f64,
            act: f64,
            lg: f64,
            comm: f64,
            tmp: f64,
            /// Logits-sized segments cached idle in the phase: the 16-bit
            /// output a loop dropped, where it outgrew ZeRO-1/2's start-up
            /// segments ([`Self::zero12_flatten_cache`]).
            lg_idle: f64,
            /// Segments cached idle beside the phase's tensors, on top of the
            /// allocator's share: autocast's dropped weight copies at a loss
            /// taken after the forward ([`Self::loss_after_autocast`]).
            cached: f64,
        }
        // From the first forward on: loading and set-up run no matmul.
        let workspaces = self.workspaces;
        // `idle`: cached bytes no tensor of the phase can use, the floor of
        // its allocator reserve ([`Self::idle_block_transients`]).
        let mk = |phase, p: Parts, idle: f64| {
            let ws = match phase {
                Phase::Load | Phase::Init => 0.0,
                _ => workspaces,
            };
            let mut bd = Breakdown {
                weights: Bytes::from_f64(p.w),
                gradients: Bytes::from_f64(p.g),
                optimizer: Bytes::from_f64(p.o),
                activations: Bytes::from_f64(p.act),
                logits: Bytes::from_f64(p.lg),
                comm_buffers: Bytes::from_f64(p.comm),
                temporaries: Bytes::from_f64(p.tmp + ws),
                allocator_reserve: Bytes::ZERO,
                runtime,
            };
            // The side streams' blocks not holding gradients or fetched
            // parameters in this phase, from the first forward on (loading
            // and set-up come before it). ZeRO-3 holds fetched the forward's
            // gathered units (with, as it fetches the head from the CPU, the
            // partition's copy: all the forward's `comm` but the bucket) and
            // the backward's gathered units.
            let fetched = match phase {
                Phase::Forward => p.comm - ipg,
                Phase::Backward => gathered,
                _ => 0.0,
            };
            let side_cached = match phase {
                Phase::Load | Phase::Init => 0.0,
                _ => {
                    (side_pool - p.g).max(0.0)
                        + (fetch_pool - fetched).max(0.0)
                        + copy_pool
                        + norm_pool
                }
            };
            // `bd.allocated()` once: the three counters are its running sums
            // (`Breakdown::reserved`, `Breakdown::device_used`).
            let allocated = bd.allocated();
            let share = allocated.scale(frac);
            let share = if idle > 0.0 {
                share.max(Bytes::from_f64(idle))
            } else {
                share
            };
            bd.allocator_reserve = share + Bytes::from_f64(side_cached + p.cached);
            // The start-up segments take what fits in them on the default
            // stream; what has segments of its own stays beside them — the
            // units FSDP1 gathers on its streams, or ZeRO-1/2's flat weights,
            // master and optimizer states — as do the loss's tensors that
            // outgrow them (and a dropped output's beside those).
            if start_up > 0.0 && !matches!(phase, Phase::Load | Phase::Init) {
                let apart = if fsdp1_wrap { p.comm } else { p.w + p.o };
                let big = if logits_outgrow {
                    p.lg + p.lg_idle
                } else {
                    0.0
                };
                let held = allocated.as_f64();
                let rest = (held - apart - big).max(0.0);
                let reserved = apart + big + start_up.max(rest * (1.0 + frac)) + side_cached;
                let floor = reserved.min(room) - held;
                if floor > bd.allocator_reserve.as_f64() {
                    bd.allocator_reserve = Bytes::from_f64(floor);
                }
            }
            let reserved = allocated + bd.allocator_reserve;
            PhaseEstimate {
                phase,
                counters: Counters {
                    allocated,
                    reserved,
                    device_used: reserved + runtime,
                },
                breakdown: bd,
            }
        };
        let z = 0.0;
        let load = mk(
            Phase::Load,
            Parts {
                w,
                g: z,
                o: z,
                act: z,
                lg: z,
                comm: z,
                tmp: self.load_materialised(s) - self.load_kept(s),
                lg_idle: z,
                cached: z,
            },
            z,
        );
        let init = mk(
            Phase::Init,
            Parts {
                w,
                g: if persistent { g } else { z },
                o,
                act: z,
                lg: z,
                comm: ipg,
                tmp: z,
                lg_idle: z,
                cached: z,
            },
            z,
        );
        // The head's weight gradient: made inside a fused loss's forward, else
        // at the head's backward; kept until the step either way.
        let head_g = self.head_grad_in_backward(s, g_fwd > 0.0);
        let head_g_fwd = if self.plan.training.loss == Loss::Fused {
            head_g
        } else {
            0.0
        };
        // A preference loss taken after autocast has exited holds only the
        // copies autograd saved ([`Self::loss_after_autocast`]); the forward's
        // own end, with all of them, is `block_end` below.
        let loss_casts = if self.loss_after_autocast() {
            casts.after_forward
        } else {
            casts.forward
        };
        let forward_parts = Parts {
            w,
            g: g_fwd + head_g_fwd,
            o,
            act: acts,
            lg: lg.forward,
            comm: comm_f,
            tmp: loss_casts,
            lg_idle: z,
            cached: z,
        };
        // The end of forward as ZeRO-3 fetches the head from the CPU, before
        // the logits exist ([`Self::offloaded_fetch_copy`]).
        let head_fetch = (fetch > 0.0).then(|| {
            mk(
                Phase::Forward,
                Parts {
                    lg: z,
                    comm: comm_f + fetch,
                    ..forward_parts
                },
                z,
            )
        });
        // The last block's adapted MLP, before the head runs
        // ([`Self::mlp_adapter_transients`]).
        let block_end = mk(
            Phase::Forward,
            Parts {
                lg: z,
                tmp: casts.forward + self.mlp_adapter_transients(false),
                ..forward_parts
            },
            z,
        );
        // The copies autocast's cache dropped as the forward exited keep
        // their segments, each a weight's size, which nothing logits-sized
        // can take.
        let dropped_casts = casts.forward - loss_casts;
        let forward = mk(
            Phase::Forward,
            Parts {
                cached: dropped_casts,
                ..forward_parts
            },
            idle + self.dpo_reference_dropped_output(s),
        );
        let forward = phase_peak(forward, head_fetch.into_iter().chain([block_end]));
        // Backward: its start (all activations, the loss backward, the 16-bit
        // weight copies autograd saved), the LM head's backward (the loss's
        // tensors freed, the logits' gradient and the head's weight gradient
        // made), the last block's backward (one block's working set instead)
        // or its end (all gradients, the last block's working set, and under
        // `nn.DataParallel` GPU 0's reduced copy of them,
        // [`Self::data_parallel_reduced_grads`]). Measured on
        // the H200: the peak of step one sat exactly at the loss backward's two
        // fp32 gradients, with no block's working set on top.
        let (head_g_opt_bwd, head_g_blocks) = self.optim_in_bwd_head_grads(s);
        let bwd_start = mk(
            Phase::Backward,
            Parts {
                w,
                g: g_fwd + head_g_fwd,
                o,
                act: acts,
                lg: lg.loss_backward,
                comm: comm_b,
                tmp: casts.after_forward + dq_head,
                lg_idle: dropped_big,
                cached: z,
            },
            idle_loss_backward,
        );
        let bwd_head = mk(
            Phase::Backward,
            Parts {
                w,
                g: g_fwd + head_g + head_g_opt_bwd,
                o,
                act: acts,
                lg: lg.head_backward,
                comm: comm_b,
                tmp: casts.after_forward + dq_head,
                lg_idle: z,
                cached: z,
            },
            idle,
        );
        let block_parts = Parts {
            w,
            g: g_fwd + head_g + head_g_blocks,
            o,
            act: acts,
            lg: lg.blocks,
            comm: comm_b,
            tmp: working + casts.block_backward + dq_block,
            lg_idle: z,
            cached: z,
        };
        // The final norm's backward, after the head's and before any block's.
        let bwd_norm = mk(
            Phase::Backward,
            Parts {
                lg: lg.norm_backward,
                tmp: casts.block_backward,
                ..block_parts
            },
            z,
        );
        let bwd_block = mk(Phase::Backward, block_parts, idle_later);
        let bwd_end = mk(
            Phase::Backward,
            Parts {
                w,
                g: g_bwd_end + head_g_blocks,
                o,
                act: self.layer_input_bytes(),
                lg: lg.blocks,
                comm: comm_b + self.data_parallel_reduced_grads(g, kept),
                tmp: working + dq_block,
                lg_idle: z,
                cached: z,
            },
            idle_later,
        );
        let mut backward = phase_peak(bwd_start, [bwd_head, bwd_norm, bwd_block, bwd_end]);
        let step = mk(
            Phase::Step,
            Parts {
                w,
                g,
                o,
                act: z,
                lg: lg.step,
                comm: ipg,
                tmp: self.optimizer_temporaries(s),
                lg_idle: z,
                cached: z,
            },
            idle_later,
        );
        self.reserve_stranded_loss_segments(s, &mut backward, &forward, &step, o, recomputed_block);
        let phases = vec![load, init, forward, backward, step];
        let peak = phases
            .iter()
            .copied()
            .max_by_key(|p| p.counters.device_used)
            .unwrap_or(init);
        // Each counter's own maximum over the phases, as PyTorch's
        // `max_memory_allocated` / `max_memory_reserved` and a sampled
        // nvidia-smi report them: the phase with the most device memory need
        // not hold the most allocated bytes (a forward beside FSDP's cached
        // side-stream pool can outweigh the backward that allocates more).
        let most = |f: fn(&Counters) -> Bytes| {
            phases
                .iter()
                .map(|p| f(&p.counters))
                .max()
                .unwrap_or(Bytes::ZERO)
        };
        StageEstimate {
            stage: s,
            params: self.stage_params(s) as u64,
            peak_phase: peak.phase,
            peak: Counters {
                allocated: most(|c| c.allocated),
                reserved: most(|c| c.reserved),
                device_used: peak.counters.device_used,
            },
            peak_breakdown: peak.breakdown,
            phases,
        }
    }
}
