//! The plan: everything a user states about a training run, split by concern.
//! Serialised as the plan JSON (`docs/plan-format.md`) with a `version` field.

use crate::framework::Framework;
use crate::gpu::GpuSpec;
use crate::model::ModelSpec;
use crate::presets;
use serde::{Deserialize, Serialize};

/// Version of the plan schema written by this build.
pub const PLAN_VERSION: u32 = 2;

/// A complete description of one training run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Schema version ([`PLAN_VERSION`]).
    pub version: u32,
    pub model: ModelSpec,
    pub gpu: GpuSpec,
    /// The training framework whose documented defaults filled the rest.
    pub framework: Framework,
    pub training: TrainingSpec,
    pub parallel: Parallelism,
    #[serde(default)]
    pub runtime: RuntimeSpec,
}

/// Numeric precision policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    /// Everything fp32.
    Fp32,
    /// fp32 weights, autocast to fp16 (`torch.autocast`, loss scaling).
    AmpFp16,
    /// fp32 weights, autocast to bf16.
    AmpBf16,
    /// Pure bf16 weights and gradients ("bf16-true").
    Bf16,
    /// Pure fp16 weights and gradients.
    Fp16,
    /// float8 matmuls; weights, gradients and optimizer states are stored as
    /// the framework's 16-bit policy stores them
    /// ([`crate::framework::Framework::fp8_storage`]).
    Fp8,
}

impl Precision {
    /// Bytes of one activation element as stored for backward.
    pub fn activation_bytes(self) -> f64 {
        match self {
            Precision::Fp32 => 4.0,
            _ => 2.0,
        }
    }

    /// Whether weights live in fp32 (plain fp32 and autocast).
    pub fn fp32_weights(self) -> bool {
        matches!(
            self,
            Precision::Fp32 | Precision::AmpFp16 | Precision::AmpBf16
        )
    }

    pub fn is_autocast(self) -> bool {
        matches!(self, Precision::AmpFp16 | Precision::AmpBf16)
    }
}

/// Optimizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Optimizer {
    Adamw,
    /// bitsandbytes 8-bit AdamW.
    Adamw8bit,
    /// 4-bit AdamW (Li et al. 2023, "Memory Efficient Optimizers with 4-bit
    /// States"; torchao's `AdamW4bit`, transformers `optim="adamw_torch_4bit"`):
    /// both moments in 4-bit codes with a scale per block of 128.
    Adamw4bit,
    /// bitsandbytes paged AdamW (32-bit states in CUDA managed memory).
    PagedAdamw,
    /// bitsandbytes paged 8-bit AdamW.
    PagedAdamw8bit,
    Adafactor,
    Sgd,
    SgdMomentum,
    Lion,
    /// bitsandbytes' 8-bit Lion (`Lion8bit`, transformers `optim="lion_8bit"`):
    /// its one state in 8 bits, block-wise.
    Lion8bit,
    /// Muon (Jordan et al. 2024; `torch.optim.Muon`, PyTorch ≥ 2.9): one
    /// momentum buffer per 2-D hidden matrix, with AdamW for the embeddings,
    /// the head and the 1-D parameters, as Muon's authors prescribe.
    Muon,
    /// Adan (Xie et al. 2022; timm's `Adan`): three moments and the previous
    /// gradient per parameter.
    Adan,
    /// GaLore AdamW (Zhao et al. 2024, "GaLore: Memory-Efficient LLM Training
    /// by Gradient Low-Rank Projection"; galore-torch 1.0 `GaLoreAdamW`,
    /// transformers `optim="galore_adamw"`): Adam's moments on each block
    /// matrix's gradient projected to `galore_rank`, AdamW on the rest.
    Galore,
    /// GaLore with bitsandbytes' 8-bit Adam states (`GaLoreAdamW8bit`,
    /// `optim="galore_adamw_8bit"`).
    Galore8bit,
    /// APOLLO (Zhu et al. 2024, "APOLLO: SGD-like Memory, AdamW-level
    /// Performance"; apollo-torch 1.0.3 `APOLLOAdamW`, transformers
    /// `optim="apollo_adamw"`): GaLore's projected moments with a seeded
    /// random projection instead of an SVD; `galore_rank` 1 is APOLLO-Mini.
    Apollo,
    /// AdEMAMix (Pagliardini et al. 2024, "The AdEMAMix Optimizer: Better,
    /// Faster, Older"; bitsandbytes' `AdEMAMix`, transformers
    /// `optim="ademamix"`): a fast and a slow EMA of the gradient and a
    /// second moment, three 32-bit states.
    Ademamix,
    /// bitsandbytes' `AdEMAMix8bit` (`optim="ademamix_8bit"`): the same three
    /// states in 8 bits, block-wise.
    Ademamix8bit,
}

impl Optimizer {
    /// Stepped by bitsandbytes' own CUDA kernels
    /// (`F.optimizer_update_32bit`, `F.optimizer_update_8bit_blockwise`,
    /// bitsandbytes 0.45.0 `optim/optimizer.py` `Optimizer2State.update_step`),
    /// which update the parameter and the states in place whatever a
    /// `foreach` or `fused` setting says, and whose 32-bit states are fp32
    /// whatever the parameter's dtype (`init_state`: `dtype = torch.float32`
    /// for `optim_bits == 32`).
    pub fn is_bitsandbytes(self) -> bool {
        matches!(
            self,
            Optimizer::Adamw8bit
                | Optimizer::PagedAdamw
                | Optimizer::PagedAdamw8bit
                | Optimizer::Galore8bit
                | Optimizer::Lion8bit
                | Optimizer::Ademamix
                | Optimizer::Ademamix8bit
        )
    }

    /// GaLore or APOLLO: the block matrices' gradients are projected.
    pub fn projects_gradients(self) -> bool {
        matches!(
            self,
            Optimizer::Galore | Optimizer::Galore8bit | Optimizer::Apollo
        )
    }
}

/// How the optimizer step is implemented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OptimizerImpl {
    /// `foreach=True`: PyTorch's default on CUDA since 2.0; multi-tensor
    /// kernels that make roughly one state-sized temporary.
    Foreach,
    /// `fused=True` (or DeepSpeed's FusedAdam / Apex): no full-size temporaries.
    Fused,
    /// The per-parameter loop (`foreach=False`): temporaries of one tensor.
    ForLoop,
}

/// PyTorch releases whose autograd keeps different tensors for backward, read
/// in the generated `torch/include/torch/csrc/autograd/generated/Functions.h`
/// of each release's wheel on PyPI (the saved variables of every backward
/// node, diffed between 1.10.2, 1.11.0, 1.12.1, 1.13.1, 2.0.1, 2.1.2 and 2.2.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PytorchRelease {
    /// 2.2 or later: softmax keeps its output, `mean` over a dimension the
    /// element count only.
    #[default]
    #[serde(rename = "current")]
    Current,
    /// 1.13 to 2.1: `mean` over a dimension keeps its input (`MeanBackward1`
    /// holds `self_` in 1.13.1, 2.0.1 and 2.1.2; `self_sym_numel` from
    /// 2.2.2), so an RMSNorm written as tensor ops (`x.pow(2).mean(-1)`:
    /// transformers' Llama family and T5, LitGPT, torchtune) keeps the fp32
    /// square of its input beside the input. Run on torch 2.1.2 with saved-
    /// tensor hooks: transformers' `LlamaRMSNorm` over a bf16 input keeps 8
    /// bytes an element, on torch 2.15 4.
    #[serde(rename = "1.13-2.1")]
    V1_13To2_1,
    /// 1.11 and 1.12: neither difference.
    #[serde(rename = "1.11-1.12")]
    V1_11To1_12,
    /// 1.10 or earlier: softmax and log-softmax keep their input beside their
    /// output (`SoftmaxBackward0`, `LogSoftmaxBackward0` hold `self_` in
    /// 1.10.2; 1.11.0 the input's scalar type only), so eager attention keeps
    /// one more score-sized tensor per block and the standard loss its upcast
    /// logits into backward.
    #[serde(rename = "1.10-older")]
    V1_10OrOlder,
}

impl PytorchRelease {
    pub fn is_current(&self) -> bool {
        *self == PytorchRelease::Current
    }

    /// The release a stated `major.minor` falls in.
    pub fn of(major: u32, minor: u32) -> PytorchRelease {
        match (major, minor) {
            (0, _) | (1, 0..=10) => PytorchRelease::V1_10OrOlder,
            (1, 11 | 12) => PytorchRelease::V1_11To1_12,
            (1, _) | (2, 0 | 1) => PytorchRelease::V1_13To2_1,
            _ => PytorchRelease::Current,
        }
    }

    /// Softmax and log-softmax keep their input for backward.
    pub fn softmax_saves_input(self) -> bool {
        self == PytorchRelease::V1_10OrOlder
    }

    /// `mean` over a dimension keeps its input for backward.
    pub fn mean_saves_input(self) -> bool {
        self == PytorchRelease::V1_13To2_1
    }
}

/// DeepSpeed releases whose ZeRO-1/2 optimizer leaves different segments
/// cached on the GPU as it is built (`runtime/zero/stage_1_and_2.py`, read in
/// each release's sdist on PyPI: 0.14.4, 0.16.9, 0.17.5, 0.18.0–0.18.5,
/// 0.18.8, 0.19.0, 0.19.4, 0.19.8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeepspeedRelease {
    /// 0.19 or later: the trainable parameters are flattened on the GPU when
    /// the free memory holds the flat buffer (`flatten_on_accelerator`), so
    /// their own tensors' segments stay cached; the partition's 16-bit clone
    /// for the fp32 master is made on the GPU.
    #[default]
    #[serde(rename = "current")]
    Current,
    /// 0.18.3 to 0.18.9: the parameters go to the host and the cache is
    /// emptied before flattening; the partition's clone is still made on the
    /// GPU (`.detach().clone().to(device=self.device, ...)`).
    #[serde(rename = "0.18.3-0.18")]
    V0_18_3To0_18,
    /// 0.18.2 or earlier: as 0.18.3, but the partition is moved to the
    /// master's device before it is cloned (`.to(self.device).clone()`), so
    /// with the optimizer on the host no clone is made on the GPU.
    #[serde(rename = "0.18.2-older")]
    V0_18_2OrOlder,
}

impl DeepspeedRelease {
    pub fn is_current(&self) -> bool {
        *self == DeepspeedRelease::Current
    }

    /// The release a stated `major.minor[.patch]` falls in (0.18 without a
    /// patch: the later releases of 0.18).
    pub fn of(major: u32, minor: u32, patch: Option<u32>) -> DeepspeedRelease {
        match (major, minor, patch) {
            (0, 0..=17, _) | (0, 18, Some(0..=2)) => DeepspeedRelease::V0_18_2OrOlder,
            (0, 18, _) => DeepspeedRelease::V0_18_3To0_18,
            _ => DeepspeedRelease::Current,
        }
    }

    /// ZeRO-1/2 flattens the parameters on the GPU when they fit twice.
    pub fn flattens_on_gpu(self) -> bool {
        self == DeepspeedRelease::Current
    }

    /// ZeRO-1/2 clones the 16-bit partition on the GPU even when the
    /// master goes to the host.
    pub fn clones_partition_on_gpu(self) -> bool {
        self != DeepspeedRelease::V0_18_2OrOlder
    }
}

/// transformers releases whose causal-LM loss holds different tensors at
/// its forward (`loss/loss_utils.py` `ForCausalLMLoss`, read in the wheels
/// of 4.45.2, 4.46.3, 4.48.3 and 4.49.0 on PyPI).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TransformersRelease {
    /// 4.49 or later, or 4.45 or earlier: from 4.49 the loss pads the labels
    /// instead of shifting the logits (`nn.functional.pad(labels, (0, 1))`),
    /// so it copies nothing beside its upcast; up to 4.45 each model's own
    /// `forward` upcast its logits and dropped the 16-bit ones before the
    /// shifted copy (the same count of fp32 tensors).
    #[default]
    #[serde(rename = "current")]
    Current,
    /// 4.46 to 4.48: `ForCausalLMLoss` upcasts the 16-bit logits
    /// (`logits = logits.float()`) and then copies the shifted ones
    /// (`shift_logits = logits[..., :-1, :].contiguous()`), so inside the
    /// loss's forward the model's 16-bit output, the upcast, the shifted
    /// copy and the log-softmax's output are alive at once.
    #[serde(rename = "4.46-4.48")]
    V4_46To4_48,
}

impl TransformersRelease {
    pub fn is_current(&self) -> bool {
        *self == TransformersRelease::Current
    }

    /// The release a stated `major.minor` falls in.
    pub fn of(major: u32, minor: u32) -> TransformersRelease {
        match (major, minor) {
            (4, 46..=48) => TransformersRelease::V4_46To4_48,
            _ => TransformersRelease::Current,
        }
    }

    /// The causal-LM loss copies its shifted fp32 logits beside the upcast.
    pub fn loss_copies_shifted_logits(self) -> bool {
        self == TransformersRelease::V4_46To4_48
    }
}

/// torchtune releases, where they differ in what a step holds. Only a
/// torchtune plan reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TorchtuneRelease {
    /// 0.3 or later: the recipes shard with FSDP2 (`training.shard_model`,
    /// `fully_shard`), shift the labels instead of the logits (an ignore
    /// index appended, `logits.reshape(-1, vocab)`) and `del logits` before
    /// backward (`_loss_step`, torchtune 0.3.1 to 0.6.1).
    #[default]
    #[serde(rename = "current")]
    Current,
    /// 0.2: the recipes wrap the model in FSDP1
    /// (`FullyShardedDataParallel`, `FULL_SHARD`, `mixed_precision=None`,
    /// one unit per decoder layer and the root holding the embedding, the
    /// final norm and the head), copy the shifted fp32 logits
    /// (`logits[..., :-1, :].contiguous()`) and hand cross-entropy their
    /// transpose (`logits.transpose(1, 2)`, whose log-softmax makes a
    /// contiguous copy first); the single-device recipes and the full
    /// distributed one keep that copy through backward, the LoRA distributed
    /// recipe `del`s it (torchtune 0.2.0 and 0.2.1, `recipes/*_finetune_*.py`).
    #[serde(rename = "0.2")]
    V0_2,
    /// 0.1: as 0.2, and the LoRA distributed recipe keeps the copy too
    /// (torchtune 0.1.1 `recipes/lora_finetune_distributed.py`).
    #[serde(rename = "0.1")]
    V0_1,
}

impl TorchtuneRelease {
    pub fn is_current(&self) -> bool {
        *self == TorchtuneRelease::Current
    }

    /// The release a stated `major.minor` falls in.
    pub fn of(major: u32, minor: u32) -> TorchtuneRelease {
        match (major, minor) {
            (0, 0..=1) => TorchtuneRelease::V0_1,
            (0, 2) => TorchtuneRelease::V0_2,
            _ => TorchtuneRelease::Current,
        }
    }

    /// The recipes wrap with FSDP1 and copy the shifted, transposed logits
    /// (0.1 and 0.2).
    pub fn before_0_3(self) -> bool {
        !self.is_current()
    }

    /// The recipe keeps its shifted fp32 logits through backward and the
    /// optimizer's step (`logits` is rebound by the next iteration): every
    /// recipe of 0.1, and of 0.2 all but the LoRA distributed one.
    pub fn loop_keeps_shifted_logits(self, lora_distributed: bool) -> bool {
        match self {
            TorchtuneRelease::Current => false,
            TorchtuneRelease::V0_2 => !lora_distributed,
            TorchtuneRelease::V0_1 => true,
        }
    }
}

/// torchtitan releases, where their model code keeps different tensors
/// (read in each release's sdist on PyPI: 0.1.0, 0.2.0, 0.2.1, 0.2.2, 0.3.0). Only a
/// torchtitan plan reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TorchtitanRelease {
    /// 0.3 or later: grouped k and v go to SDPA at their own heads
    /// (`enable_gqa`), q, k and v come out of one fused projection
    /// (`FusedQKVLinear`, `fuse_qkv=True` in the Llama 3 and Qwen3 builders,
    /// 0.3.0 `models/common/attention.py`), and an MoE router's gate runs
    /// under fp32 autocast (`TokenChoiceTopKRouter.forward`), keeping an
    /// fp32 copy of its input.
    #[default]
    #[serde(rename = "current")]
    Current,
    /// 0.2.2: `enable_gqa`, separate `wq`/`wk`/`wv`, the gate on the 16-bit
    /// input (0.2.2 `models/llama3/model/model.py`, `models/moe/moe.py`).
    #[serde(rename = "0.2.2")]
    V0_2_2,
    /// 0.2.1 and earlier: grouped k and v repeated to every head before SDPA
    /// (`repeat_kv`, 0.1.0, 0.2.0 and 0.2.1 `models/llama3/model/model.py`),
    /// so the kernel keeps them at every head; separate projections.
    #[serde(rename = "0.2.1-older")]
    V0_2_1OrOlder,
}

impl TorchtitanRelease {
    pub fn is_current(&self) -> bool {
        *self == TorchtitanRelease::Current
    }

    /// The release a stated `major.minor[.patch]` falls in (0.2 without a
    /// patch: its last, 0.2.2).
    pub fn of(major: u32, minor: u32, patch: Option<u32>) -> TorchtitanRelease {
        match (major, minor, patch) {
            (0, 0 | 1, _) | (0, 2, Some(0 | 1)) => TorchtitanRelease::V0_2_1OrOlder,
            (0, 2, _) => TorchtitanRelease::V0_2_2,
            _ => TorchtitanRelease::Current,
        }
    }

    /// SDPA gets grouped k and v repeated to every query head.
    pub fn repeats_kv(self) -> bool {
        self == TorchtitanRelease::V0_2_1OrOlder
    }

    /// q, k and v are one matmul's output; the router's gate keeps an fp32
    /// copy of its input.
    pub fn fuses_qkv(self) -> bool {
        self.is_current()
    }
}

/// TRL releases, where its DPO trainer keeps different logits-sized tensors
/// (read in the wheels on PyPI: 0.5.0, 0.6.0, six from 0.7.0 to 0.7.11, 0.8.6,
/// 0.9.6, 0.10.1, 0.11.4, 0.12.0 to 0.24.0, 0.28.0, 0.29.0, 1.13.0). Only
/// DPO through the model's logits under TRL reads it; its fused LM head
/// (1.15 on) is the loss ([`Loss::TiledLogprob`]) and 1.14's
/// log-probability kernel [`TrainingSpec::logprob_kernel`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TrlRelease {
    /// 0.29 or later: `DPOTrainer._compute_loss` keeps the policy's and the
    /// reference's outputs until it returns and logs the entropy of the
    /// policy's logits over a flattened copy (trl 0.29.0 and 1.13.0
    /// `trainer/dpo_trainer.py`).
    #[default]
    #[serde(rename = "current")]
    Current,
    /// 0.19 to 0.28: `concatenated_forward` takes the per-token
    /// log-probabilities with `selective_log_softmax` and the mean chosen and
    /// rejected logits (boolean-mask copies), and returns neither the logits
    /// nor the outputs; the reference's pass runs the same under `no_grad`,
    /// its hidden states asked for (`output_hidden_states=True`); no entropy
    /// (trl 0.19.0–0.24.0 and 0.28.0 `trainer/dpo_trainer.py`).
    #[serde(rename = "0.19-0.28")]
    V0_19To0_28,
    /// 0.15 to 0.18: as 0.19–0.28, without asking the model for its hidden
    /// states (trl 0.15.0–0.18.0); 0.15.0–0.17.0 pass no `use_cache=False`,
    /// so a reference pass without checkpointing returns its keys and
    /// values as a cache.
    #[serde(rename = "0.15-0.18")]
    V0_15To0_18,
    /// 0.12 to 0.14: as 0.15–0.17, but the per-token log-probabilities are
    /// gathered from a whole `log_softmax` of the logits, whose output is
    /// saved for backward (trl 0.12.0–0.14.0 `concatenated_forward`).
    #[serde(rename = "0.12-0.14")]
    V0_12To0_14,
    /// 0.9 to 0.11: `concatenated_forward` returns the policy's logits (as
    /// its chosen and rejected halves, held until the loss's metrics are
    /// logged) beside a whole `log_softmax` of them, and takes the chosen
    /// half's NLL whatever `rpo_alpha` (a contiguous copy of its shifted
    /// logits into `nn.CrossEntropyLoss`; trl 0.9.6, 0.10.1, 0.11.4).
    #[serde(rename = "0.9-0.11")]
    V0_9To0_11,
    /// 0.5 to 0.8: as 0.9–0.11 without the NLL (trl 0.5.0, 0.6.0, 0.7.11,
    /// 0.8.6; `DPOTrainer` first shipped in 0.5.0).
    #[serde(rename = "0.5-0.8")]
    V0_5To0_8,
}

impl TrlRelease {
    pub fn is_current(&self) -> bool {
        *self == TrlRelease::Current
    }

    /// The release a stated `major.minor` falls in (before 0.5, which had no
    /// `DPOTrainer`, the current one).
    pub fn of(major: u32, minor: u32) -> TrlRelease {
        match (major, minor) {
            (0, 5..=8) => TrlRelease::V0_5To0_8,
            (0, 9..=11) => TrlRelease::V0_9To0_11,
            (0, 12..=14) => TrlRelease::V0_12To0_14,
            (0, 15..=18) => TrlRelease::V0_15To0_18,
            (0, 19..=28) => TrlRelease::V0_19To0_28,
            _ => TrlRelease::Current,
        }
    }

    /// DPO's `concatenated_forward` returns neither the logits nor the
    /// model's outputs (0.12 to 0.28).
    pub fn dpo_returns_no_logits(self) -> bool {
        matches!(
            self,
            TrlRelease::V0_12To0_14 | TrlRelease::V0_15To0_18 | TrlRelease::V0_19To0_28
        )
    }

    /// DPO gathers its per-token log-probabilities from a whole
    /// `log_softmax` of the logits, saved for backward (0.5 to 0.14).
    pub fn dpo_whole_log_softmax(self) -> bool {
        matches!(
            self,
            TrlRelease::V0_5To0_8 | TrlRelease::V0_9To0_11 | TrlRelease::V0_12To0_14
        )
    }

    /// DPO takes the chosen half's NLL in every step (0.9 to 0.11).
    pub fn dpo_chosen_nll(self) -> bool {
        self == TrlRelease::V0_9To0_11
    }

    /// DPO's reference pass asks for the model's hidden states (0.19 to
    /// 0.28).
    pub fn dpo_reference_hidden_states(self) -> bool {
        self == TrlRelease::V0_19To0_28
    }

    /// DPO's reference pass may build a cache of its keys and values: no
    /// `use_cache=False` from 0.5.0 to 0.7.10 and from 0.12.0 to 0.17.0
    /// (counted for the whole 0.5–0.8 and 0.15–0.18 ranges: over for 0.7.11
    /// to 0.8 and for 0.18). 0.12 on hold the model's outputs until
    /// `concatenated_forward` returns, so the cache stays beside the
    /// log-softmax; up to 0.7.10 `.logits` is taken off them at once, so it
    /// goes before the log-softmax is made.
    pub fn dpo_reference_may_cache(self) -> bool {
        matches!(
            self,
            TrlRelease::V0_5To0_8 | TrlRelease::V0_12To0_14 | TrlRelease::V0_15To0_18
        )
    }
}

/// Activation checkpointing policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Checkpointing {
    None,
    /// Korthikanti et al.'s selective recomputation: drop the attention core only.
    Selective,
    /// Per-op selective (torchtitan "selective op"): keep matmul outputs,
    /// recompute element-wise ops.
    OpSelective,
    /// Recompute every block from its input.
    Full,
}

/// Attention kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Attention {
    /// FlashAttention / SDPA flash or memory-efficient kernel: no s² tensors kept.
    Flash,
    /// Materialised attention scores (`attn_implementation="eager"`).
    Eager,
}

/// What the step optimises: next-token cross-entropy, or a preference
/// objective over chosen/rejected pairs (TRL's trainers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Supervised fine-tuning or pre-training: one forward per sequence.
    #[default]
    Sft,
    /// DPO (Rafailov et al. 2023; TRL 1.16 `DPOTrainer`): each micro-batch
    /// runs its chosen and rejected completions as one batch of twice its
    /// size (`torch.cat((chosen_ids, rejected_ids))`), and a full fine-tune
    /// keeps a frozen reference model in the policy's dtype
    /// (`create_model_from_path(..., dtype=self.model.dtype)`, prepared like
    /// the policy: sharded under ZeRO-3/FSDP). A PEFT policy has no reference
    /// copy: its adapters are disabled for the reference pass.
    Dpo,
    /// Paired preference objectives without a reference model (ORPO, SimPO,
    /// CPO): twice the sequences, no second model.
    Orpo,
    /// KTO (Ethayarajh et al. 2024; TRL 1.16 `KTOTrainer`): unpaired
    /// examples, so one sequence each, with DPO's frozen reference model; its
    /// KL term's mismatched completions run under `torch.no_grad()`.
    Kto,
}

impl Objective {
    /// Sequences a micro-batch runs through the model per example.
    pub fn sequences_per_example(self) -> u32 {
        match self {
            Objective::Sft | Objective::Kto => 1,
            Objective::Dpo | Objective::Orpo => 2,
        }
    }
}

/// How logits and the cross-entropy loss are computed (DESIGN.md §3b).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Loss {
    /// Full logits upcast to fp32, then cross-entropy (Hugging Face models, torchtitan).
    Standard,
    /// Chunked LM head + chunked cross-entropy keeping every chunk (LitGPT).
    ChunkedKeep,
    /// Chunked cross-entropy that upcasts and frees per chunk (torchtune).
    ChunkedFree,
    /// Fused linear + cross-entropy that never materialises the logits (Liger,
    /// Unsloth, Apple's Cut Cross-Entropy as axolotl's `CutCrossEntropyPlugin`
    /// runs it).
    Fused,
    /// TRL's fused LM head (trl 1.15.0 on, `add_fused_lm_head` and
    /// `kernels/chunked_logprob.py` `ChunkedLogProbFunction`, used by its SFT,
    /// DPO, KTO, GRPO and RLOO trainers): the head projects 4,096 positions ×
    /// 32,768 vocabulary entries at a time into one reused tile and folds it
    /// into per-token log-sum-exp statistics, keeping the compacted final
    /// hidden states; backward recomputes each tile and accumulates the
    /// input's (and a trained head's) gradient in fp32.
    TiledLogprob,
    /// TRL's chunked negative log-likelihood (`SFTTrainer`'s
    /// `loss_type="chunked_nll"`, its default from 1.7.0 to 1.14.x unless
    /// Liger is on: trl 1.7.0–1.14.2 `trainer/sft_trainer.py`
    /// `_chunked_cross_entropy_loss`): the backbone's final hidden states,
    /// shifted, flattened and packed valid-first (a copy kept for backward),
    /// go through the head 256 positions at a time, each chunk under
    /// non-reentrant checkpointing (its fp32 logits, log-softmax and entropy
    /// recomputed in backward); the logits never exist whole.
    ChunkedNll,
}

/// Which matrices LoRA adapts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LoraTargets {
    pub q: bool,
    pub k: bool,
    pub v: bool,
    pub o: bool,
    pub gate: bool,
    pub up: bool,
    pub down: bool,
    /// The LM head too.
    #[serde(default)]
    pub lm_head: bool,
}

impl LoraTargets {
    pub const QV: LoraTargets = LoraTargets {
        q: true,
        k: false,
        v: true,
        o: false,
        gate: false,
        up: false,
        down: false,
        lm_head: false,
    };
    pub const ALL_LINEAR: LoraTargets = LoraTargets {
        q: true,
        k: true,
        v: true,
        o: true,
        gate: true,
        up: true,
        down: true,
        lm_head: false,
    };

    pub fn any_attention(&self) -> bool {
        self.q || self.k || self.v || self.o
    }
}

/// Full training or parameter-efficient fine-tuning.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Finetune {
    /// Every parameter trains.
    Full,
    /// LoRA adapters over a frozen base (QLoRA when `base_bits` is 4).
    Lora {
        rank: u32,
        targets: LoraTargets,
        /// Bits of the frozen base weights: 16 (or 32), 8, or 4 (NF4).
        base_bits: u32,
        /// `lora_dropout > 0`: the adapter keeps its own dropped-out copy of its input.
        dropout: bool,
        /// Plain LoRA, DoRA or LoRA-FA.
        #[serde(default)]
        variant: LoraVariant,
    },
    /// Another parameter-efficient method (LLaMA-Adapter, IA³, prompt tuning,
    /// norm tuning, …): a frozen base plus this many trainable parameters that
    /// do not make the frozen matrices keep their inputs.
    Adapter {
        trainable_params: u64,
        base_bits: u32,
        /// What the method keeps for backward beyond a frozen base's count.
        #[serde(default)]
        method: AdapterMethod,
        /// Tokens the method prepends to every sequence (prompt tuning,
        /// P-tuning: PEFT `PeftModelForCausalLM.forward` concatenates the
        /// virtual-token embeddings before the inputs), so every block and the
        /// LM head see `seq_len + virtual_tokens` positions.
        #[serde(default)]
        virtual_tokens: u32,
        /// The matrices a per-matrix method (`cast-inputs`, `delta-weight`,
        /// `osf`, `osf-reconstruct`) adapts; PEFT's default for Llama-family
        /// models is q and v.
        #[serde(default = "qv")]
        targets: LoraTargets,
    },
}

fn qv() -> LoraTargets {
    LoraTargets::QV
}

/// How a LoRA adapter is applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoraVariant {
    /// `base(x) + B(A(dropout(x)))·scaling` (Hu et al. 2021; PEFT `lora.Linear`).
    #[default]
    Lora,
    /// DoRA (Liu et al. 2024, "DoRA: Weight-Decomposed Low-Rank Adaptation";
    /// PEFT `use_dora=True`, `lora/dora.py` `DoraLinearLayer.forward`): a
    /// trained magnitude vector per output rescales `base(x)` and the LoRA
    /// output, so both are kept for its gradient; with dropout the base output
    /// is recomputed from the dropped-out input against a copy of the weight in
    /// the adapter's dtype, which is kept too.
    Dora,
    /// LoRA-FA (Zhang et al. 2023, "LoRA-FA: Memory-efficient Low-rank
    /// Adaptation"; PEFT `optimizers.create_lorafa_optimizer`): A is frozen and
    /// only B trains, so the adapters keep no copy of their input and only B has
    /// gradients and optimizer states.
    LoraFa,
}

/// Parameter-efficient methods whose saved tensors differ from a frozen base's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdapterMethod {
    /// Trainable parameters that make no frozen matrix keep anything
    /// (LLaMA-Adapter's gated prefix, prompt tuning, …).
    #[default]
    Generic,
    /// LLaMA-Adapter (Zhang et al. 2023; LitGPT `adapter.py`): a gated
    /// attention over learned prefix tokens in every block from
    /// `adapter_start_layer` (LitGPT's default, 2) on. The gate keeps the
    /// prefix attention's output; the blocks below keep nothing, since nothing
    /// beneath them trains.
    LlamaAdapter,
    /// LLaMA-Adapter v2 (Gao et al. 2023; LitGPT `adapter_v2.py`): every
    /// linear becomes `adapter_scale * (linear(x) + adapter_bias)`, so each keeps
    /// its output for the trained scale's gradient, and the norms train.
    LlamaAdapterV2,
    /// IA³ (Liu et al. 2022; PEFT `tuners/ia3/layer.py`) on PEFT's default
    /// targets for decoders — k, v and the MLP's down projection: k and v keep
    /// their unscaled outputs for the trained vectors' gradients, and the down
    /// projection's input is cast to the vectors' dtype and kept.
    Ia3,
    /// LN tuning (Zhao et al. 2023; PEFT `LNTuningConfig`): only the norms'
    /// weights train, so each norm keeps its normalised tensor for the
    /// weight's gradient (counted with calibration/saved_tensors.py --peft:
    /// +4·hidden bytes per token per block over a frozen bf16 Llama).
    LnTuning,
    /// BOFT (Liu et al. 2024, "Parameter-Efficient Orthogonal Finetuning via
    /// Butterfly Factorization"; PEFT `tuners/boft/layer.py`) on PEFT's default
    /// targets for decoders, q and v: each rotates its input by an orthogonal
    /// `in × in` matrix built from butterfly blocks every forward
    /// (`x @ boft_rotation`) and scales its output by a trained vector, so it
    /// keeps its input, its output, and the `in × in` products of the rotation
    /// chain (token-independent).
    Boft,
    /// PEFT methods that run each adapted matrix's input through their own
    /// weights in the adapter dtype (fp32 over a 16-bit base), keeping that
    /// cast for their gradient, and keep nothing weight-sized: VeRA, C3A,
    /// DeLoRA, GraLoRA, RoAd, AdaLoRA, OFT (counted with
    /// calibration/saved_tensors.py --methods: +4 bytes per input element and
    /// adapted matrix over a frozen bf16 Llama, like LoRA without dropout).
    CastInputs,
    /// PEFT methods that build a weight-sized update every forward (LoHa's
    /// Hadamard product, LoKr's Kronecker product, FourierFT's inverse FFT,
    /// WaveFT, RandLoRA) and keep it for the input's gradient: the input casts
    /// of `cast-inputs` plus one `in × out` tensor in the adapter dtype per
    /// adapted matrix (counted: 5.24 MB per block for q and v of a
    /// 1024-wide Llama, (1024² + 1024·256) · 4 bytes).
    DeltaWeight,
    /// OSF (Orthogonal Subspace Fine-tuning; PEFT `tuners/osf`, ≥ 0.21): each
    /// adapted `W = U Σ Vᵀ` (SVD at load) trains the bottom-r singular triplets
    /// `U_low, S_low, V_low`; the forward adds the factored rank-2r difference
    /// `[U_low·S_low, −U_low₀·S_low₀] · [V_low; V_low₀] · x` to the frozen base
    /// output, so, like LoRA of rank 2r, it keeps a cast of its input and the
    /// 2r-wide intermediate. It stores the initial triplets (the trained ones'
    /// size) and, for a non-square matrix, the frozen high-rank factor the
    /// initial ones cannot recover (`U_high` when out > in, `V_high` when
    /// in > out) for its gradient projection.
    Osf,
    /// OSF as PEFT 0.18–0.20 ran it (`OSFLayer._reconstruct_weight`): the
    /// whole weight is rebuilt every forward as `U_high·S_high·V_highᵀ +
    /// U_low·S_low·V_lowᵀ` and applied with `F.linear`, so each adapted matrix
    /// keeps its rebuilt `out × in` weight and its 16-bit input for backward,
    /// and the frozen high-rank factors (`(out + in)·(min(out, in) − r)`
    /// values) are stored beside the base weight. Its adapters must share the
    /// base's dtype (the rebuilt weight meets the 16-bit input in `F.linear`;
    /// PEFT's MetaMathQA run sets `autocast_adapter_dtype=False`).
    OsfReconstruct,
    /// HRA (Yuan et al. 2024, "Bridging the Gap between Low-rank and
    /// Orthogonal Adaptation via Householder Reflection Adaptation"; PEFT
    /// `tuners/hra/layer.py`): each adapted weight is multiplied every forward
    /// by a chain of r Householder reflections `(I − 2·u·uᵀ)` built as
    /// `in × in` matrices, each step's input kept for backward; then the fp32
    /// copy of the base weight and the rotated weight are kept too. Counted
    /// with calibration/saved_tensors.py (r = 8 on a 1024-wide q): r + 1
    /// `in × in` and two `out × in` tensors in the adapter dtype per adapted
    /// matrix, plus the input cast. r is read off `trainable_params` (one
    /// `in`-long vector per reflection).
    Hra,
    /// SHiRA (Bhardwaj et al. 2024, "Sparse High Rank Adapters"; PEFT
    /// `tuners/shira/layer.py`) on PEFT's default targets for decoders, q and
    /// v: each adapted matrix rebuilds its weight every forward
    /// (`get_base_weight().clone()` plus the sparse update,
    /// `torch.sparse_coo_tensor(indices, shira_weight * scaling)`) and
    /// applies it with `F.linear`, which keeps the rebuilt weight (the base's
    /// 16-bit dtype) and the 16-bit input (once where q, k and v share it);
    /// the sparse update keeps its int64 indices and scaled fp32 values, 20
    /// bytes a trained value. Counted with calibration/saved_tensors.py
    /// --methods (r 32 on q and v of a 1024-wide Llama): 31.57·hidden per
    /// token per block against 29.59 frozen, and 4.75 MB per block (2.62 MB
    /// of rebuilt weights, 2.13 MB for 106,496 trained values).
    Shira,
    /// Prefix tuning (Li & Liang 2021; PEFT `PrefixTuningConfig`): learned
    /// keys and values for `virtual_tokens` positions in every layer, passed
    /// as a past key/value cache, so the hidden sequence does not grow; the
    /// attention mask that comes with them makes transformers hand SDPA an
    /// explicit mask, which then gets grouped k/v repeated to every head
    /// (counted: +3·hidden bytes per token per block for 16 heads over 4 kv
    /// heads of 64, bf16).
    PrefixTuning,
}

impl AdapterMethod {
    /// Blocks from which the LLaMA-Adapter prefix attention runs (LitGPT
    /// `adapter.Config.adapter_start_layer` default).
    pub const LLAMA_ADAPTER_START_LAYER: u32 = 2;

    /// Learned prefix tokens per LLaMA-Adapter block (LitGPT
    /// `adapter.Config.adapter_prompt_length` default).
    pub const LLAMA_ADAPTER_PROMPT_LENGTH: u64 = 10;

    /// The parameters the method trains on `m` in its default configuration,
    /// where they follow from the model's shape alone; `None` where they
    /// depend on settings a plan does not carry (a rank, a block size, the
    /// adapted layers of PEFT's `AdaptionPrompt`) — then the count must be
    /// stated.
    ///
    /// - LLaMA-Adapter (LitGPT `adapter.py`, `CausalSelfAttention`): from
    ///   block `adapter_start_layer` (2) on, an `adapter_wte` embedding of
    ///   `adapter_prompt_length` (10) × hidden and a `gating_factor` of one
    ///   value per head: Llama-2-7B 30 · (10 · 4096 + 32) = 1,229,760.
    /// - LLaMA-Adapter v2 (LitGPT `adapter_v2.py`): v1's, plus every
    ///   `AdapterV2Linear` (the blocks' q/k/v, output, MLP and MoE-router
    ///   linears, and the LM head) trains an `adapter_bias` and an
    ///   `adapter_scale` of its output width, and `adapter_filter` trains
    ///   `norm_1`, `norm_2` and `ln_f`: Llama-2-7B 4,279,744.
    /// - IA³ (PEFT `tuners/ia3/layer.py` on PEFT's default targets
    ///   `k_proj`, `v_proj`, `down_proj`; GPT-2's fused `c_attn` scales q too):
    ///   one vector per output of k and v (per input of the feed-forward
    ///   `down_proj`): Llama-2-7B 32 · (2 · 4096 + 11008) = 614,400.
    /// - LN tuning (PEFT `LNTuningConfig`): every norm's weight (and bias).
    /// - Prefix tuning (PEFT `PrefixEncoder` without projection): an
    ///   `Embedding(num_virtual_tokens, num_layers · 2 · token_dim)` with
    ///   `token_dim` the key/value width (PEFT scales it to the kv heads).
    ///
    /// Encoder–decoders and the other methods return `None`.
    pub fn default_trainable_params(self, m: &ModelSpec, virtual_tokens: u32) -> Option<u64> {
        use crate::model::{Arch, Mlp};
        if m.arch == Arch::EncoderDecoder {
            return None;
        }
        let l = m.layers as u64;
        let h = m.hidden as u64;
        let (q, kv) = (m.q_width(), m.kv_width());
        let f = m.ffn as u64;
        let prefix_blocks = l.saturating_sub(Self::LLAMA_ADAPTER_START_LAYER as u64);
        let v1 = prefix_blocks * (Self::LLAMA_ADAPTER_PROMPT_LENGTH * h + m.heads as u64);
        let norms = (l * m.norms_per_layer as u64 + 1) * m.norm_params();
        Some(match self {
            Self::LlamaAdapter => v1,
            Self::LlamaAdapterV2 => {
                let mlp_out = match m.mlp {
                    Mlp::Gated => 2 * f + h,
                    Mlp::Plain => f + h,
                };
                let (experts, router) = if m.experts > 0 {
                    (m.experts as u64, m.experts as u64)
                } else {
                    (1, 0)
                };
                let linear_outs =
                    l * (q + 2 * kv + h + experts * mlp_out + router) + m.vocab as u64;
                v1 + 2 * linear_outs + norms
            }
            Self::Ia3 => {
                let scaled = if m.fused_projections {
                    q + 2 * kv
                } else {
                    2 * kv
                };
                l * (scaled + f * m.experts.max(1) as u64)
            }
            Self::LnTuning => norms,
            Self::PrefixTuning if virtual_tokens > 0 => virtual_tokens as u64 * l * 2 * kv,
            _ => return None,
        })
    }
}

impl Finetune {
    /// Virtual tokens of a prompt-learning method (prompt, prefix or P-tuning).
    pub fn virtual_tokens(&self) -> u32 {
        match *self {
            Finetune::Adapter { virtual_tokens, .. } => virtual_tokens,
            _ => 0,
        }
    }

    /// Positions the blocks run beyond the training sequence: prompt tuning's
    /// and P-tuning's prepended virtual tokens (prefix tuning's are keys and
    /// values only).
    pub fn prepended_tokens(&self) -> u32 {
        match *self {
            Finetune::Adapter {
                method: AdapterMethod::PrefixTuning,
                ..
            } => 0,
            _ => self.virtual_tokens(),
        }
    }

    /// Bits of the frozen base weights, or `None` when every weight trains.
    pub fn base_bits(&self) -> Option<u32> {
        match *self {
            Finetune::Full => None,
            Finetune::Lora { base_bits, .. } | Finetune::Adapter { base_bits, .. } => {
                Some(base_bits)
            }
        }
    }

    /// Sets the frozen base's bits; a full fine-tune has no frozen base.
    pub fn set_base_bits(&mut self, bits: u32) {
        if let Finetune::Lora { base_bits, .. } | Finetune::Adapter { base_bits, .. } = self {
            *base_bits = bits;
        }
    }
}

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_sft(o: &Objective) -> bool {
    *o == Objective::Sft
}

/// GaLore's projection rank when none is given: transformers' Trainer
/// (`_get_optimizer_cls_and_kwargs`: `optim_args.pop("rank", 128)`).
pub const GALORE_DEFAULT_RANK: u32 = 128;

/// The training step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingSpec {
    /// Sequences per GPU per forward pass.
    pub micro_batch: u32,
    /// Tokens per sequence as run (padded length); for an encoder–decoder
    /// model, the encoder's (source) length.
    pub seq_len: u32,
    /// The decoder's (target) length of an encoder–decoder model, when it
    /// differs from `seq_len`: a T5 or BART fine-tune feeds the encoder its
    /// source (512 tokens of an article) and the decoder the padded labels
    /// (a 128-token summary, a 3-token class name). `None` runs the decoder
    /// at `seq_len`. Only an encoder–decoder model has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_len: Option<u32>,
    /// Under full fine-tuning, the bottom blocks left frozen
    /// (`requires_grad_(False)` on the first N blocks and, untied, the
    /// embedding): they keep no gradient, no optimizer state and — nothing
    /// beneath them training — no activations. 0 trains every block.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub frozen_layers: u32,
    /// Micro-batches accumulated per optimizer step.
    pub grad_accum: u32,
    pub precision: Precision,
    pub optimizer: Optimizer,
    pub optimizer_impl: OptimizerImpl,
    /// GaLore's or APOLLO's projection rank (`optim_args="rank=…"`); `None`
    /// is transformers' default, [`GALORE_DEFAULT_RANK`]. Read with those only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub galore_rank: Option<u32>,
    /// Optimizer step fused into backward (torchtune): gradients never all exist at once.
    #[serde(default)]
    pub optimizer_in_backward: bool,
    /// The optimizer's full-precision states kept in bf16 beside fp32
    /// weights or an fp32 master: torchtitan's `implementation =
    /// "fused_opt_states_bf16"` (0.3.0 `components/optimizer/optimizer.py`:
    /// Adam's `exp_avg` and `exp_avg_sq` made `torch.bfloat16` by a step
    /// pre-hook, stepped by the fused kernel's mixed-precision path),
    /// Megatron-Core's precision-aware optimizer (`--exp-avg-dtype bf16
    /// --exp-avg-sq-dtype bf16`). Quantized states (8-, 4-bit) are as they
    /// are. Default `false` (left out).
    #[serde(default, skip_serializing_if = "is_false")]
    pub optimizer_states_16bit: bool,
    pub checkpointing: Checkpointing,
    /// Apply the checkpointing policy to every k-th block only (torchtitan
    /// `selective_ac_option = "k"`, Megatron `--recompute-num-layers`); 1 = every block.
    #[serde(default = "one")]
    pub checkpoint_every: u32,
    pub attention: Attention,
    pub loss: Loss,
    /// The objective: SFT, or DPO / ORPO over chosen–rejected pairs.
    #[serde(default, skip_serializing_if = "is_sft")]
    pub objective: Objective,
    /// Softmax and cross-entropy computed in fp32 over 16-bit tensors (the
    /// model implementation decides: transformers models do, see
    /// `FrameworkDefaults::fp32_upcasts`).
    #[serde(default = "yes")]
    pub fp32_upcasts: bool,
    /// Dropout in the blocks (keeps a 1-byte mask per dropped tensor).
    #[serde(default)]
    pub dropout: bool,
    /// The batches carry padding: rows of different lengths padded to the
    /// longest (or a fixed length) with an `attention_mask` of zeros, as
    /// transformers' collators do without packing. transformers then hands
    /// SDPA an explicit mask, which SDPA's memory-efficient kernel keeps per
    /// block and for which grouped k/v are expanded to every head
    /// (`Ctx::sdpa_mask_bytes`); a T5 keeps its position bias per batch row.
    /// Packed batches, flash-attn's varlen path and uniform lengths pass no
    /// mask, nor do frameworks with attention of their own (torchtune pads
    /// and masks only the labels). Off by default.
    #[serde(default, skip_serializing_if = "is_false")]
    pub padded: bool,
    /// Activations offloaded to CPU memory.
    #[serde(default)]
    pub activation_offload: bool,
    /// `torch.compile` on the model: Inductor fuses element-wise chains and
    /// its partitioner recomputes them in backward instead of saving them.
    #[serde(default)]
    pub compile: bool,
    /// `zero_grad(set_to_none=True)` frees the gradients after each step (the
    /// default of `optimizer.zero_grad` and `Module.zero_grad` since PyTorch
    /// 2.0). `false`: they are zeroed in place and stay allocated through the
    /// next forward and backward (PyTorch < 2.0's default, which the
    /// Trainer's `model.zero_grad()` then used).
    #[serde(default = "yes")]
    pub zero_grad_set_to_none: bool,
    /// Triton kernels for the norm and the gated MLP (Liger Kernel's
    /// `LigerRMSNorm`/`LigerSiLUMulFunction`, as `use_liger_kernel=True` patches
    /// them in; Unsloth's likewise): the RMSNorm keeps its input in its own
    /// dtype and an fp32 rstd per row (`rms_norm.py`: `save_for_backward(X, W,
    /// RSTD)`), the SwiGLU/GeGLU keeps gate and up and recomputes the
    /// activation in backward (`swiglu.py`: `save_for_backward(a, b)`).
    #[serde(default)]
    pub fused_kernels: bool,
    /// PEFT's `prepare_model_for_kbit_training` ran on the 4/8-bit base: it
    /// casts every parameter that is neither quantized nor already fp32 —
    /// embeddings, an unquantized LM head, norms, biases — to fp32
    /// (peft 0.21.2 `utils/other.py`: "cast all non INT8 parameters to fp32").
    /// The fp32 norm weights then promote the norm outputs
    /// (`self.weight * hidden_states.to(input_dtype)`), bitsandbytes' 4-bit
    /// linear returns its input's dtype (`Linear4bit.forward`:
    /// `.to(inp_dtype)`), and the residual stream runs in fp32 — the case
    /// transformers' flash-attention path warns of ("The input hidden states
    /// seems to be silently casted in float32 … upcasted embedding or layer
    /// norm layers in float32"). PEFT's own QLoRA recipes call it; the
    /// Trainer does not, TRL 1.x no longer does, and axolotl patches it to
    /// leave the embeddings alone. Only with a quantized base.
    #[serde(default)]
    pub kbit_fp32_prep: bool,
    /// After [`Self::kbit_fp32_prep`], the embeddings and an unquantized LM
    /// head went back to 16 bits while the norms stayed fp32: TRL's
    /// `SFTTrainer` up to 0.21.0 ran `peft_module_casting_to_bf16` on an
    /// unsharded 4-bit model under `bf16=True` (trl 0.21.0
    /// `trainer/sft_trainer.py` `_prepare_peft_model`, `trainer/utils.py`:
    /// norms to fp32, a module named `lm_head`, `embed_tokens`, `wte` or `wpe`
    /// whose weight is fp32 back to bf16 — by name, so GPT-NeoX's `embed_in`
    /// and `embed_out` stay fp32 there). The fp32 norms still promote the
    /// residual stream; the embeddings and head weigh half, and the head's
    /// matmul needs no 16-bit cast. Only with the preparation, under
    /// autocast (TRL casts under `bf16=True`; without autocast a 16-bit head
    /// could not take the fp32 norm's output).
    #[serde(default, skip_serializing_if = "is_false")]
    pub kbit_embeddings_16bit: bool,
    /// The adapters' weights (and so their gradients and optimizer states)
    /// are kept in the run's 16-bit dtype, not in the fp32 PEFT gives them by
    /// default (`autocast_adapter_dtype=True`, PEFT ≥ 0.12): PEFT's
    /// `get_peft_model(..., autocast_adapter_dtype=False)`, as TRL's
    /// `SFTTrainer` calls it for a sharded 4-bit model (0.9.2 on) and for
    /// ZeRO-3 over a 16-bit one (1.13 on); TRL from 0.26 casting a quantized
    /// model's trainable parameters to bf16 (`param.data.to(torch.bfloat16)`),
    /// and 0.7.5–0.8.6 every `BaseTunerLayer` under `bf16=True`. The adapters
    /// then keep no fp32 cast of their input. Only with adapters, in a 16-bit
    /// or mixed precision; off by default (fp32 keeps more) but under TRL over
    /// a quantized base ([`Plan::default_adapters_16bit`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub adapters_16bit: bool,
    /// A 4-bit NF4 base with its block scales quantized too (QLoRA's "double
    /// quantization"; bitsandbytes `bnb_4bit_use_double_quant=True`, LitGPT's
    /// `bnb.nf4-dq`): 0.127 instead of 0.5 bits of scales per weight.
    /// torchtune's NF4 is always double-quantized. Only with a 4-bit base.
    #[serde(default, skip_serializing_if = "is_false")]
    pub nf4_double_quant: bool,
    /// bitsandbytes 0.43.2 or later runs the 4-bit base: its `MatMul4Bit` no
    /// longer saves the layer input for backward (`ctx.tensors = (None, B)`
    /// from 0.43.2 on; `(A, B)` up to 0.43.1, read in 0.41.3, 0.42.0, 0.43.0
    /// and 0.43.1), so without autocast a frozen 4-bit matrix keeps nothing of
    /// its input ([`Plan::four_bit_matmul_keeps_input`]). With an 8-bit base
    /// it is read as a release that keeps no int8 copy of a frozen matrix's
    /// input (0.45.0 on; before, `MatMul8bitLt` kept one, the estimate's
    /// `int8_input_copies`).
    ///
    /// The planner starts with it on ([`Plan::default`]): every framework's
    /// current release runs a newer bitsandbytes — transformers 5 refuses one
    /// older than 0.46.1 (`BITSANDBYTES_MIN_VERSION`, 5.0.0
    /// `utils/import_utils.py`), LitGPT pins ≥ 0.44.0 on Linux from 0.5.5
    /// (0.42.0 up to 0.5.4; read in the litgpt wheels' metadata), axolotl
    /// 0.5.0 pins 0.44.1, Unsloth asks ≥ 0.43.3 (2024.11) — as it starts from
    /// the current transformers and PyTorch. A plan file that leaves it out
    /// reads it off (the field is omitted when off, so a saved plan keeps its
    /// meaning), as does a calibration row that names no release
    /// (`calibrate`: the 2023 LitGPT QLoRA tables ran 0.41–0.42).
    #[serde(default, skip_serializing_if = "is_false")]
    pub bnb_0_43_2: bool,
    /// The PyTorch release that runs the step, where releases differ in what
    /// autograd keeps ([`PytorchRelease`]). Default: 2.2 or later.
    #[serde(default, skip_serializing_if = "PytorchRelease::is_current")]
    pub pytorch: PytorchRelease,
    /// The transformers release whose model code runs, where releases differ
    /// in what the causal-LM loss holds ([`TransformersRelease`]). Default:
    /// 4.49 or later (or 4.45 or earlier, which hold as much).
    #[serde(default, skip_serializing_if = "TransformersRelease::is_current")]
    pub transformers: TransformersRelease,
    /// The torchtune release whose recipes run, where releases differ in
    /// how they shard and what their loss holds ([`TorchtuneRelease`]); read
    /// only under torchtune. Default: 0.3 or later.
    #[serde(default, skip_serializing_if = "TorchtuneRelease::is_current")]
    pub torchtune: TorchtuneRelease,
    /// The torchtitan release whose model code runs, where releases differ
    /// in what attention and an MoE router keep ([`TorchtitanRelease`]);
    /// read only under torchtitan. Default: 0.3 or later.
    #[serde(default, skip_serializing_if = "TorchtitanRelease::is_current")]
    pub torchtitan: TorchtitanRelease,
    /// The TRL release whose trainers run, where releases differ in what
    /// DPO through the model's logits holds ([`TrlRelease`]); read only
    /// under TRL. Default: 0.29 or later.
    #[serde(default, skip_serializing_if = "TrlRelease::is_current")]
    pub trl: TrlRelease,
    /// Gradients are reduced after every micro-batch of an accumulation, not
    /// only the last: Accelerate's `GradientAccumulationPlugin(sync_each_batch=True)`,
    /// the Trainer's `accelerator_config={"gradient_accumulation_kwargs":
    /// {"sync_each_batch": True}}`. Off by default, as those frameworks run:
    /// under FSDP the micro-batches before the last then keep every rank's
    /// full unsharded gradients
    /// ([`crate::framework::Framework::fsdp_no_sync_accumulation`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub sync_each_batch: bool,
    /// DPO's and KTO's reference log-probabilities computed once before
    /// training (TRL's `precompute_ref_log_probs=True`, `DPOConfig` and
    /// `KTOConfig`): no reference pass in the steps, and a full fine-tune
    /// keeps no reference model — except under FSDP, where TRL still wraps
    /// one (trl 1.16.0 `DPOTrainer.__init__`: `self.ref_model = None` when
    /// `args.precompute_ref_log_probs and not self.is_fsdp_enabled`; 1.13.0
    /// drops it under FSDP too). Off by default, as TRL runs.
    #[serde(default, skip_serializing_if = "is_false")]
    pub precompute_ref: bool,
    /// TRL's per-token log-probabilities through its Triton kernel: from
    /// trl 1.14.0 `selective_log_softmax` runs `_LogProbEntropyFunction` on
    /// CUDA (`kernels/logprob_entropy.py`), which saves the logits and makes
    /// only their gradient, where trl ≤ 1.13 ran a log-softmax or a
    /// logsumexp row by row. Its ORPO and CPO trainers (which take the
    /// model's logits) keep three logits-sized tensors in backward with it,
    /// four and a half fp32 ones without it under the Trainer's AMP
    /// (replayed: `calibration/allocator_replay.py --trl-orpo-kernel`,
    /// `--trl-orpo`). On in TRL's profile (its current release); DPO through
    /// the logits is counted as trl ≤ 1.13 ran it either way (1.14's kernel
    /// path, one release before its fused head, keeps less).
    #[serde(default, skip_serializing_if = "is_false")]
    pub logprob_kernel: bool,
    pub finetune: Finetune,
}

/// How the work is spread over GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sharding {
    /// One GPU, or replicated without a data-parallel wrapper.
    None,
    /// Old `nn.DataParallel`: one process, outputs gathered on GPU 0.
    DataParallel,
    /// DistributedDataParallel.
    Ddp,
    Zero1,
    Zero2,
    Zero3,
    /// FSDP FULL_SHARD / FSDP2 `fully_shard`.
    FsdpFull,
    /// FSDP SHARD_GRAD_OP.
    FsdpGradOp,
    /// Hybrid sharding: full shard inside a node, replicate across nodes.
    Hsdp,
}

impl Sharding {
    /// PyTorch's FSDP (FSDP1 or FSDP2) in any of its strategies.
    pub fn is_fsdp(self) -> bool {
        matches!(
            self,
            Sharding::FsdpFull | Sharding::FsdpGradOp | Sharding::Hsdp
        )
    }

    /// A DeepSpeed ZeRO stage: its engine holds the module in 16 bits and
    /// the fp32 master in its optimizer (and does its own mixed precision).
    pub fn is_zero(self) -> bool {
        matches!(self, Sharding::Zero1 | Sharding::Zero2 | Sharding::Zero3)
    }

    /// One GPU, `nn.DataParallel` or DDP: every rank holds the whole model
    /// states, made per parameter on the training stream (ZeRO and FSDP
    /// shard them and make them from buffers of their own).
    pub fn is_replicated(self) -> bool {
        matches!(
            self,
            Sharding::None | Sharding::DataParallel | Sharding::Ddp
        )
    }

    /// ZeRO-3 and FSDP in any strategy: the runtimes that shard the
    /// parameters and fetch each unit's before use — and so the only ones
    /// that can keep them on the host (`crate::validate`).
    pub fn shards_params(self) -> bool {
        self == Sharding::Zero3 || self.is_fsdp()
    }
}

/// Pipeline schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PipelineSchedule {
    OneFOneB,
    /// Interleaved 1F1B with `virtual_stages` model chunks per GPU.
    Interleaved,
}

/// Where an offloaded model state lives (DeepSpeed `offload_optimizer.device`
/// / `offload_param.device`: `cpu` or `nvme`; FSDP `CPUOffload` is `cpu`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OffloadDevice {
    /// On the GPU (not offloaded).
    #[default]
    None,
    /// Host RAM (ZeRO-Offload, FSDP `CPUOffload`).
    Cpu,
    /// NVMe through host bounce buffers (ZeRO-Infinity).
    Nvme,
}

/// What is offloaded off the GPU, and where (schema version 2; version 1 had a
/// single `none` | `optimizer` | `params-optimizer` value, always to the CPU).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offload {
    /// Optimizer states, fp32 master weights and the fp32 gradient partition.
    #[serde(default)]
    pub optimizer: OffloadDevice,
    /// The (sharded) 16-bit parameters, fetched to the GPU layer by layer.
    #[serde(default)]
    pub params: OffloadDevice,
}

impl Offload {
    /// Nothing offloaded.
    pub const NONE: Offload = Offload {
        optimizer: OffloadDevice::None,
        params: OffloadDevice::None,
    };
    /// Optimizer states to host RAM (ZeRO-Offload).
    pub const OPTIMIZER_CPU: Offload = Offload {
        optimizer: OffloadDevice::Cpu,
        params: OffloadDevice::None,
    };
    /// Parameters and optimizer states to host RAM.
    pub const ALL_CPU: Offload = Offload {
        optimizer: OffloadDevice::Cpu,
        params: OffloadDevice::Cpu,
    };

    pub fn optimizer_offloaded(&self) -> bool {
        self.optimizer != OffloadDevice::None
    }

    pub fn params_offloaded(&self) -> bool {
        self.params != OffloadDevice::None
    }

    pub fn any(&self) -> bool {
        self.optimizer_offloaded() || self.params_offloaded()
    }
}

/// Parallel layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parallelism {
    /// GPUs in the run (all nodes).
    pub num_gpus: u32,
    /// GPUs per node (hybrid sharding shards within a node).
    #[serde(default = "eight")]
    pub gpus_per_node: u32,
    pub sharding: Sharding,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Sequence parallelism alongside TP (Korthikanti et al.).
    #[serde(default)]
    pub sequence_parallel: bool,
    /// Pipeline-parallel degree.
    pub pp: u32,
    pub pp_schedule: PipelineSchedule,
    /// Micro-batches per pipeline flush (defaults to `grad_accum`).
    #[serde(default)]
    pub pp_microbatches: u32,
    /// Model chunks per GPU for the interleaved schedule.
    #[serde(default = "one")]
    pub virtual_stages: u32,
    /// Context-parallel degree (splits the sequence).
    pub cp: u32,
    /// Expert-parallel degree for MoE.
    #[serde(default = "one")]
    pub ep: u32,
    pub offload: Offload,
    /// DDP `gradient_as_bucket_view=True` (no second gradient copy in buckets).
    #[serde(default)]
    pub gradient_as_bucket_view: bool,
    /// The DeepSpeed release under ZeRO, where releases differ in what
    /// building the optimizer leaves cached ([`DeepspeedRelease`]).
    /// Default: 0.19 or later.
    #[serde(default, skip_serializing_if = "DeepspeedRelease::is_current")]
    pub deepspeed: DeepspeedRelease,
    /// DeepSpeed ZeRO++'s hierarchical partitioning (hpZ,
    /// `zero_hpz_partition_size`; Wang et al. 2023, "ZeRO++: Extremely
    /// Efficient Collective Communication for Giant Model Training", §3.2):
    /// under ZeRO-3 each rank keeps, beside its shard of the parameters, a
    /// secondary shard over this many GPUs (a node, as ZeRO++'s tutorial
    /// sets it), from which backward gathers within the node. 1, the
    /// default, is off.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub hpz_partition_size: u32,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn yes() -> bool {
    true
}
fn one() -> u32 {
    1
}
fn eight() -> u32 {
    8
}

/// What lives on the GPU outside PyTorch's caching allocator, and how the
/// allocator behaves. Defaults from DESIGN.md §3 (see `estimate` for sources).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeSpec {
    /// CUDA context + loaded kernels, MiB (outside the allocator).
    pub cuda_context_mib: u64,
    /// Memory other processes hold on the GPU, MiB.
    pub other_processes_mib: u64,
    /// `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`: less fragmentation.
    pub expandable_segments: bool,
}

impl Default for RuntimeSpec {
    fn default() -> Self {
        RuntimeSpec {
            cuda_context_mib: crate::estimate::CUDA_CONTEXT_MIB,
            other_processes_mib: 0,
            expandable_segments: false,
        }
    }
}

impl Parallelism {
    /// Data-parallel degree: GPUs over the model-parallel group size.
    /// ZeRO++'s hpZ group where it applies: under ZeRO-3, more than one GPU
    /// ([`Self::hpz_partition_size`]); `None` when off.
    pub fn hpz_group(&self) -> Option<u32> {
        (self.sharding == Sharding::Zero3 && self.hpz_partition_size > 1)
            .then_some(self.hpz_partition_size)
    }

    pub fn dp(&self) -> u32 {
        let mp = self
            .tp
            .max(1)
            .saturating_mul(self.pp.max(1))
            .saturating_mul(self.cp.max(1));
        (self.num_gpus / mp.max(1)).max(1)
    }

    /// `nn.DataParallel` over more than one GPU: GPU 0 and replicas beside
    /// it, each with a peak of its own.
    pub fn has_data_parallel_replicas(&self) -> bool {
        self.sharding == Sharding::DataParallel && self.num_gpus > 1
    }
}

/// What the planner and the CLI say where [`Plan::framework_upcasts_trainable`].
pub const UPCAST_CAVEAT: &str = "The Trainer's --fp16, its --bf16 under FSDP (Accelerate) and LLaMA-Factory without pure_bf16 keep a full fine-tune's trainable weights, gradients and optimizer states in fp32: if your run does, choose AMP";

impl Default for Plan {
    /// The example plan: Llama-3-8B on 8 × H100 80GB, bf16 AMP, ZeRO-2,
    /// Hugging Face Trainer defaults.
    fn default() -> Self {
        use crate::gpu;
        use crate::presets::{preset, DEFAULT_PRESET};
        let framework = Framework::HfTrainer;
        let d = framework.defaults();
        let model = preset(DEFAULT_PRESET).map(|p| p.spec()).unwrap_or_else(|| {
            // Unreachable: a unit test checks the default preset exists.
            crate::presets::presets()[0].spec()
        });
        Plan {
            version: PLAN_VERSION,
            model,
            gpu: gpu::gpu("h100-sxm-80gb").unwrap_or_else(|| gpu::catalogue()[0].clone()),
            framework,
            training: TrainingSpec {
                micro_batch: 1,
                seq_len: 4096,
                target_len: None,
                frozen_layers: 0,
                grad_accum: 1,
                precision: Precision::AmpBf16,
                optimizer: Optimizer::Adamw,
                optimizer_impl: d.optimizer_impl,
                galore_rank: None,
                optimizer_in_backward: false,
                optimizer_states_16bit: false,
                checkpointing: d.checkpointing,
                checkpoint_every: 1,
                attention: Attention::Flash,
                loss: d.loss,
                objective: Objective::Sft,
                fp32_upcasts: d.fp32_upcasts,
                dropout: false,
                padded: false,
                activation_offload: false,
                compile: false,
                zero_grad_set_to_none: true,
                fused_kernels: false,
                kbit_fp32_prep: d.kbit_fp32_prep,
                kbit_embeddings_16bit: false,
                adapters_16bit: false,
                nf4_double_quant: false,
                // Every framework's current release (see the field).
                bnb_0_43_2: true,
                pytorch: PytorchRelease::Current,
                transformers: TransformersRelease::Current,
                torchtune: TorchtuneRelease::Current,
                torchtitan: TorchtitanRelease::Current,
                trl: TrlRelease::Current,
                sync_each_batch: false,
                precompute_ref: false,
                logprob_kernel: d.logprob_kernel,
                finetune: Finetune::Full,
            },
            parallel: Parallelism {
                num_gpus: 8,
                gpus_per_node: 8,
                sharding: Sharding::Zero2,
                tp: 1,
                sequence_parallel: false,
                pp: 1,
                pp_schedule: PipelineSchedule::OneFOneB,
                pp_microbatches: 0,
                virtual_stages: 1,
                cp: 1,
                ep: 1,
                offload: Offload::NONE,
                gradient_as_bucket_view: false,
                deepspeed: DeepspeedRelease::Current,
                hpz_partition_size: 1,
            },
            runtime: RuntimeSpec::default(),
        }
    }
}

impl Plan {
    /// Sequences per optimizer step: micro-batch × accumulation steps ×
    /// data-parallel ranks.
    pub fn global_batch(&self) -> u64 {
        self.training.micro_batch as u64
            * self.training.grad_accum as u64
            * self.parallel.dp() as u64
    }

    /// Sets the accumulation that keeps `global` sequences a step at the
    /// plan's micro-batch and data-parallel ranks (rounded up, at least 1).
    pub fn accumulate_to(&mut self, global: u64) {
        let per_step = self.training.micro_batch.max(1) as u64 * self.parallel.dp() as u64;
        self.training.grad_accum = global.div_ceil(per_step).clamp(1, u32::MAX as u64) as u32;
    }

    /// Whether the plan's FSDP is FSDP2 (`fully_shard`): the framework's
    /// ([`Framework::uses_fsdp2`]), except torchtune before 0.3, whose
    /// recipes wrapped with FSDP1 ([`TorchtuneRelease::V0_2`]).
    pub fn uses_fsdp2(&self) -> bool {
        self.framework.uses_fsdp2() && !self.old_torchtune()
    }

    /// Whether the plan's FSDP makes the output projection a unit of its
    /// own ([`Framework::fsdp_head_is_own_unit`]); torchtune's FSDP1
    /// recipes before 0.3 left it in the root unit (`memory_efficient_fsdp_wrap`
    /// off in their configs).
    pub fn fsdp_head_is_own_unit(&self) -> bool {
        self.framework.fsdp_head_is_own_unit() && !self.old_torchtune()
    }

    /// A torchtune plan run by its 0.1 or 0.2 recipes
    /// ([`TorchtuneRelease::before_0_3`]).
    pub fn old_torchtune(&self) -> bool {
        self.framework == Framework::Torchtune && self.training.torchtune.before_0_3()
    }

    /// Whether a 4-bit base's block scales are quantized too: stated for
    /// bitsandbytes ([`TrainingSpec::nf4_double_quant`]), always under
    /// torchtune ([`Framework::nf4_double_quantized`]).
    pub fn nf4_double_quantized(&self) -> bool {
        self.training.nf4_double_quant || self.framework.nf4_double_quantized()
    }

    /// Whether a frozen 4-bit base matrix keeps its input for backward, as a
    /// trained one does. bitsandbytes before 0.43.2 saves it (`MatMul4Bit`:
    /// `ctx.tensors = (A, B)`, 0.41.3 to 0.43.1; the 2023 LitGPT QLoRA tables
    /// need it), 0.43.2 and later does not (`(None, B)`,
    /// [`TrainingSpec::bnb_0_43_2`]), under autocast too: what our H200 runs
    /// with 0.50.2 held there beyond the 16-bit count (calibration/
    /// h200-2026-11-30, set 5), which an input had stood in for, is the
    /// linears' fp32 outputs after `prepare_model_for_kbit_training`
    /// (replayed with bitsandbytes on the meta device, `allocator_replay.py
    /// --qlora`: every phase's reading to the MiB). torchao's NF4, which
    /// torchtune quantizes with, never saves it (`LinearNF4.forward`:
    /// `ctx.save_for_backward(weight)` only, torchao 0.10
    /// `dtypes/nf4tensor.py`).
    pub fn four_bit_matmul_keeps_input(&self) -> bool {
        let torchao = self.framework.quantizes_with_torchao();
        !(torchao || self.training.bnb_0_43_2)
    }

    /// The checkpointing policy the plan runs when the user chooses none: its
    /// framework's on its GPU count ([`Framework::default_checkpointing`]),
    /// and every layer when PEFT's `prepare_model_for_kbit_training` prepares
    /// a quantized base ([`TrainingSpec::kbit_fp32_prep`]): its
    /// `use_gradient_checkpointing=True` default calls
    /// `model.gradient_checkpointing_enable()` for a k-bit model (peft 0.21.2
    /// `utils/other.py`).
    pub fn default_checkpointing(&self) -> Checkpointing {
        if self.kbit_preparation_checkpoints() {
            Checkpointing::Full
        } else {
            self.framework.default_checkpointing(self.parallel.num_gpus)
        }
    }

    /// The loss variant the plan computes unless it says otherwise: the
    /// framework's ([`crate::framework::FrameworkDefaults::loss`]), but for
    /// the objectives whose trainers never took TRL's fused LM head: its
    /// `ORPOTrainer` and `CPOTrainer` (ORPO, SimPO, CPO; `trl/experimental/`
    /// in trl 1.16.0) compute the per-token log-probabilities from the
    /// model's logits (`concatenated_forward`), where its SFT, DPO and KTO
    /// trainers call `add_fused_lm_head`; and for torchtune's 0.1–0.2
    /// recipes, which had only `CrossEntropyLoss` (`CEWithChunkedOutputLoss`,
    /// the profile's, came with 0.3). Like the checkpointing policy it
    /// depends on more than the framework, so a planner URL re-seeds an
    /// absent `loss` once the plan is read.
    pub fn default_loss(&self) -> Loss {
        self.default_loss_for(self.training.objective, self.training.torchtune)
    }

    /// [`Plan::default_loss`] under another objective and torchtune release.
    pub fn default_loss_for(&self, objective: Objective, torchtune: TorchtuneRelease) -> Loss {
        let framework = self.framework.defaults().loss;
        let orpo_logits = framework == Loss::TiledLogprob && objective == Objective::Orpo;
        let old_torchtune = self.framework == Framework::Torchtune && torchtune.before_0_3();
        if orpo_logits || old_torchtune {
            Loss::Standard
        } else {
            framework
        }
    }

    /// PEFT's `prepare_model_for_kbit_training` prepares a 4- or 8-bit base,
    /// which with its defaults also turns checkpointing on
    /// ([`Plan::default_checkpointing`]).
    pub fn kbit_preparation_checkpoints(&self) -> bool {
        matches!(self.training.finetune.base_bits(), Some(4 | 8)) && self.training.kbit_fp32_prep
    }

    /// Whether the framework, as it runs by default, keeps the trainable
    /// weights of this pure 16-bit full fine-tune in fp32 all the same — so
    /// the run stores what the plan calls AMP:
    /// - the Trainer (and the tools on it) under FSDP: its `--bf16`/`--fp16`
    ///   turns Accelerate's mixed precision on, and Accelerate then casts each
    ///   trainable 16-bit parameter to fp32 as it prepares the model (FSDP1:
    ///   `param.data = param.data.to(torch.float32)` on each trainable
    ///   `FlatParameter` in `Accelerator.prepare_model`, accelerate 0.30.1 to
    ///   1.16.0; FSDP2: `fsdp2_prepare_model`, the whole model in 1.6.0–1.12.0,
    ///   the trainable parameters from 1.14.0 — 1.13.0's loop rebinds a local
    ///   and casts nothing);
    /// - the Trainer's `--fp16` in any layout but DeepSpeed's: Accelerate's
    ///   fp16 mixed precision steps through a `GradScaler`, whose `unscale_`
    ///   refuses fp16 gradients ("Attempting to unscale FP16 gradients.",
    ///   torch 2.15 `amp/grad_scaler.py` `_unscale_grads_` with `allow_fp16`
    ///   false; accelerate 1.16.0 `Accelerator.__init__` builds the scaler for
    ///   every distributed type but DeepSpeed and Megatron), so a full
    ///   fine-tune that ran under it had fp32 weights (transformers 4 loads
    ///   fp32 by default);
    /// - LLaMA-Factory in any layout but DeepSpeed's (whose engine holds the
    ///   module in 16 bits and its fp32 master in the optimizer):
    ///   `cast_trainable_params_to_fp32` unless `pure_bf16` (llamafactory
    ///   0.9.5 `model/adapter.py`).
    ///
    /// The plan's precision is what is stored, so this is a caveat the planner
    /// and the CLI show ([`crate::estimate::Estimate::framework_upcasts`]),
    /// and the case reader's default for a row that says `bf16` (`calibrate`);
    /// adapters are left alone (PEFT makes them fp32).
    pub fn framework_upcasts_trainable(&self) -> bool {
        if !self.pure_16bit_full_fine_tune() {
            return false;
        }
        let sharding = self.parallel.sharding;
        let trainer = self.framework.trains_through_trainer();
        (self.framework == Framework::LlamaFactory && !sharding.is_zero())
            || (trainer && sharding.is_fsdp())
            || (trainer && self.training.precision == Precision::Fp16 && !sharding.is_zero())
    }

    /// Every parameter trains, stored in pure bf16 or fp16: the plans whose
    /// framework may keep them in fp32 all the same
    /// ([`Plan::framework_upcasts_trainable`]).
    pub(crate) fn pure_16bit_full_fine_tune(&self) -> bool {
        matches!(self.training.finetune, Finetune::Full)
            && matches!(self.training.precision, Precision::Bf16 | Precision::Fp16)
    }

    /// Each FSDP rank accumulates the full unsharded gradients between
    /// optimizer steps: the framework runs the micro-batches before the last
    /// under `no_sync` ([`Framework::fsdp_no_sync_accumulation`]), the plan
    /// accumulates, and neither reduces every micro-batch
    /// ([`TrainingSpec::sync_each_batch`]) nor steps in backward.
    pub fn accumulates_unsharded_grads(&self) -> bool {
        let t = &self.training;
        self.parallel.sharding.is_fsdp()
            && t.grad_accum > 1
            && !t.sync_each_batch
            && !t.optimizer_in_backward
            && self.framework.fsdp_no_sync_accumulation()
    }

    /// Switches the framework and applies the settings it decides by default
    /// (loss variant, checkpointing policy, optimizer implementation, sequence
    /// parallelism with TP, activation offload and fused kernels, …). The checkpointing policy is the plan's default
    /// under the new framework ([`Plan::default_checkpointing`]).
    pub fn set_framework(&mut self, f: Framework) {
        let d = f.defaults();
        self.framework = f;
        self.training.loss = self.default_loss();
        self.training.optimizer_impl = d.optimizer_impl;
        self.training.fp32_upcasts = d.fp32_upcasts;
        self.training.kbit_fp32_prep = d.kbit_fp32_prep;
        self.training.activation_offload = d.activation_offload;
        self.training.fused_kernels = d.fused_kernels;
        self.training.logprob_kernel = d.logprob_kernel;
        self.training.nf4_double_quant = d.nf4_double_quant;
        self.training.checkpointing = self.default_checkpointing();
        self.parallel.sequence_parallel = d.sequence_parallel;
        if let Finetune::Lora { dropout, .. } = &mut self.training.finetune {
            *dropout = d.lora_dropout;
        }
        self.training.dropout = self.default_dropout();
        self.training.adapters_16bit = self.default_adapters_16bit();
    }

    /// Whether the plan's adapters are 16-bit unless it says otherwise
    /// ([`TrainingSpec::adapters_16bit`]): TRL's, over a quantized base — its
    /// `SFTTrainer` casts a 4/8-bit model's trainable parameters to bf16 from
    /// 0.26 (`param.data = param.data.to(torch.bfloat16)`, trl 0.26.0 to
    /// 1.16.0 `trainer/sft_trainer.py`; 0.22–0.25 kept PEFT's fp32). Like the
    /// checkpointing policy it depends on more than the framework, so a
    /// planner URL re-seeds an absent `ad16` once the plan is read.
    pub fn default_adapters_16bit(&self) -> bool {
        self.framework == Framework::Trl
            && self.training.finetune.base_bits().is_some_and(|b| b <= 8)
    }

    /// Whether the plan's blocks drop out unless it says otherwise: when the
    /// model's checkpoint trains with dropout ([`presets::trains_with_dropout`]:
    /// GPT-2, BERT, OPT, T5, BART) and the framework runs model code that has
    /// dropout layers ([`Framework::model_code_has_dropout`]: not LitGPT's,
    /// torchtune's or torchtitan's). The planner's switch starts here, as the
    /// calibration rows' reading does (`calibrate`).
    pub fn default_dropout(&self) -> bool {
        self.dropout_for(None)
    }

    /// Whether the plan's blocks drop out when the model's config states
    /// `config` (`None`: not stated, as [`Plan::default_dropout`]): only under
    /// model code with dropout layers.
    pub fn dropout_for(&self, config: Option<bool>) -> bool {
        self.framework.model_code_has_dropout()
            && config.unwrap_or_else(|| presets::trains_with_dropout(&self.model))
    }

    /// Replaces the model and re-seeds what it decides: block dropout, from
    /// `config_dropout` when the model came with a config that states it
    /// ([`crate::hf_config::config_dropout`]), else [`Plan::default_dropout`].
    pub fn set_model(&mut self, model: ModelSpec, config_dropout: Option<bool>) {
        self.model = model;
        self.training.dropout = self.dropout_for(config_dropout);
    }

    /// A pasted `config.json`'s model ([`Self::set_model`]); a family whose
    /// transformers code has no SDPA path (`hf_config::config_without_sdpa`)
    /// runs its attention eager under a framework that runs that code, as the
    /// calibration reader plans such rows. Returns whether it set that.
    pub fn set_imported_model(
        &mut self,
        model: ModelSpec,
        config_dropout: Option<bool>,
        without_sdpa: bool,
    ) -> bool {
        self.set_model(model, config_dropout);
        let eager = without_sdpa && self.framework.runs_the_models_own_code();
        if eager {
            self.training.attention = Attention::Eager;
        }
        eager
    }

    /// Parses a plan from JSON of any known schema version (older ones are
    /// migrated), naming the line, column and field at fault.
    pub fn from_json(s: &str) -> Result<Plan, crate::schema::PlanLoadError> {
        crate::schema::load_plan(s)
    }
}
