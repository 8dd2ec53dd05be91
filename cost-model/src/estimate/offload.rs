//! Host RAM and NVMe space for offloaded states.

use super::*;

impl<'a> Ctx<'a> {
    /// Host RAM and NVMe space one rank's offloaded states need: the most
    /// any of its pipeline stages needs ([`Self::offloaded_stage`]).
    pub(super) fn offload_targets(&self) -> (Bytes, Bytes) {
        if !self.offload.any() {
            return (Bytes::ZERO, Bytes::ZERO);
        }
        let (host, nvme) = (0..self.plan.parallel.pp.max(1))
            .map(|s| self.offloaded_stage(s))
            .fold((0.0f64, 0.0f64), |(h, n), (hs, ns)| (h.max(hs), n.max(ns)));
        (Bytes::from_f64(host), Bytes::from_f64(nvme))
    }

    /// Host and NVMe bytes of stage `s`'s offloaded states on one rank, each
    /// in the dtype the runtime keeps it in:
    /// - the parameters as the sharding holds them ([`Self::weight_parts`]:
    ///   the shard in the stored dtype — fp32 for fp32 training, the packed
    ///   codes of a 4-bit base — not a fixed 16 bits); the quantized
    ///   matrices' scales stay on the GPU;
    /// - under FSDP, the gradients the runtime copies there and the torch
    ///   optimizer's states over the CPU shard (no master copy: the shard is
    ///   the master). FSDP1 pre-allocates a pinned gradient the size of
    ///   every flat parameter's shard, frozen or not (torch 2.11
    ///   `distributed/fsdp/_flat_param.py`: `flat_param._cpu_grad =
    ///   torch.zeros_like(flat_param._local_shard, device=cpu_device)`);
    ///   FSDP2 copies only the trainable parameters' sharded gradients
    ///   (`CPUOffloadPolicy`: "Sharded gradients are copied device-to-host
    ///   in backward");
    /// - under DeepSpeed's optimizer offload, an fp32 master partition (a
    ///   copy even of fp32 weights), the moments, and the gradient
    ///   partition: ZeRO-1/2 keep it fp32 beside a 16-bit staging copy of the
    ///   partition (deepspeed 0.19.8 `runtime/zero/stage_1_and_2.py`:
    ///   `weights_partition = ….clone().to(dtype=master_weights_and_grads_dtype)`,
    ///   `param_buffer_of_bit16_for_cpu_offload_groups`,
    ///   `single_partition_of_fp32_groups[i].grad`), ZeRO-3 in the
    ///   gradient-accumulation dtype, the model's by default
    ///   (`stage3.py` `grad_partitions_flat_buffer`, `converted.clone()`;
    ///   `engine.py` `get_data_types`);
    /// - elsewhere (Megatron's hybrid CPU optimizer, a single-GPU offloading
    ///   optimizer) an fp32 master, the moments and fp32 gradients.
    ///
    /// Checked against peft_docs_fsdp_70b-149 (FSDP1, CPU offload, NF4
    /// Llama-2-70B, two ranks on one host): "~107 GB CPU RAM" in all, where
    /// the two ranks' shards and gradients come to 72 GB (a 16-bit count of
    /// the shard alone gave 139 GB, more than the host used).
    pub(super) fn offloaded_stage(&self, s: u32) -> (f64, f64) {
        let off = self.offload;
        let (mut host, mut nvme) = (0.0, 0.0);
        let mut put = |dev: OffloadDevice, bytes: f64, nvme_buffers: f64| match dev {
            OffloadDevice::None => {}
            OffloadDevice::Cpu => host += bytes,
            OffloadDevice::Nvme => {
                nvme += bytes;
                host += nvme_buffers.min(bytes);
            }
        };
        let sharding = self.plan.parallel.sharding;
        let w = self.trainable_weight_bytes();
        let at_rest = self.weight_parts(s).0;
        let trainable = self.stage_trainable(s)
            / if self.shards_optimizer() {
                self.shard
            } else {
                1.0
            };
        // The host's gradients: beside the optimizer's states (FSDP2,
        // DeepSpeed, the rest), or one per parameter shard (FSDP1).
        let (optimizer, fsdp1_grads) = if sharding.is_fsdp() {
            let states = trainable * self.optimizer_bytes_per_param(s);
            if self.plan.uses_fsdp2() {
                (states + trainable * w, 0.0)
            } else {
                (states, at_rest)
            }
        } else {
            let grads = match sharding {
                Sharding::Zero1 | Sharding::Zero2 if !self.megatron_grad_buffer() => FP32 + w,
                Sharding::Zero3 => w,
                _ => FP32,
            };
            let states = self.optimizer_state_bytes_per_param(s);
            (trainable * (states + FP32 + grads), 0.0)
        };
        let sub_group = trainable.min(NVME_SUB_GROUP_ELEMENTS);
        put(
            off.optimizer,
            optimizer,
            NVME_OPTIMIZER_BUFFER_COUNT * sub_group * FP32,
        );
        // ZeRO++'s secondary shard lives where the parameters do.
        put(
            off.params,
            at_rest + self.hpz_secondary(at_rest) + fsdp1_grads,
            NVME_PARAM_BUFFER_COUNT * NVME_PARAM_BUFFER_ELEMENTS * HALF,
        );
        (host, nvme)
    }

    // ----- phases ---------------------------------------------------------------
}
