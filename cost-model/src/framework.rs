//! Training frameworks as first-class inputs: each profile's documented
//! defaults fill the settings users rarely state (DESIGN.md §3b). Every default
//! is shown in the UI and can be overridden in the plan.

use crate::plan::{Checkpointing, LoraTargets, Loss, OptimizerImpl, Precision, Sharding};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Framework {
    HfTrainer,
    HfAccelerate,
    Peft,
    Trl,
    Torchtune,
    Torchtitan,
    Litgpt,
    Deepspeed,
    Megatron,
    FsdpQlora,
    PlainPytorch,
    /// Tools that train through transformers' `Trainer` with defaults of their
    /// own ([`Framework::trains_through_trainer`]).
    LlamaFactory,
    MsSwift,
    Axolotl,
    Unsloth,
}

/// DeepSpeed's `reduce_bucket_size` / `allgather_bucket_size` default: 5e8
/// elements each (deepspeed/runtime/zero/config.py).
pub const DEEPSPEED_DEFAULT_BUCKET_ELEMENTS: f64 = 5e8;

/// The parallel layouts and offloads a framework runs, a switch away
/// ([`Framework::layouts`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayoutSupport {
    /// Shardings over more than one data-parallel rank (none: one GPU only).
    pub shardings: &'static [Sharding],
    /// Tensor parallelism within a node.
    pub tensor_parallel: bool,
    /// Its TP also splits the sequence between the blocks (Megatron-LM's
    /// `--sequence-parallel`, torchtitan's `SequenceParallel` norms).
    pub sequence_parallel: bool,
    /// Its TP runs with adapters too, not only in full fine-tuning.
    pub tensor_parallel_adapters: bool,
    pub pipeline_parallel: bool,
    /// Context parallelism: the sequence split over ranks, attention run as
    /// a ring over them.
    pub context_parallel: bool,
    /// Korthikanti et al.'s selective recomputation ([`Checkpointing::Selective`]).
    pub selective_recompute: bool,
    /// Full recomputation of some blocks only (`TrainingSpec::checkpoint_every`):
    /// torchtitan's `activation_checkpoint.selective_ac_option = "k"` (every
    /// k-th block wrapped whole), Megatron-LM's `--recompute-method block
    /// --recompute-num-layers N` (N blocks of each stage).
    pub checkpoint_every: bool,
    /// The optimizer states alone on the host.
    pub offload_optimizer: bool,
    /// The parameters on the host, with the optimizer states.
    pub offload_params: bool,
    /// The checkpointed activations on the host: torchtune's
    /// `enable_activation_offloading`, Unsloth's
    /// `use_gradient_checkpointing="unsloth"`, axolotl's
    /// `gradient_checkpointing: offload`, DeepSpeed's activation-checkpointing
    /// `cpu_checkpointing`, Megatron-LM's `--cpu-offloading`, and a loop of
    /// one's own under `torch.autograd.graph.save_on_cpu`.
    pub offload_activations: bool,
}

impl LayoutSupport {
    /// Whether tensor parallelism is a setting away for `plan`: the
    /// framework has it, in `plan`'s kind of fine-tuning and release
    /// (torchtune's 0.1–0.2 recipes had none: FSDP1 only, 0.2.1
    /// `recipes/full_finetune_distributed.py`).
    pub fn tensor_parallel_for(&self, plan: &crate::plan::Plan) -> bool {
        self.tensor_parallel
            && !plan.old_torchtune()
            && (self.tensor_parallel_adapters
                || matches!(plan.training.finetune, crate::plan::Finetune::Full))
    }
}

/// The defaults a framework applies when the user does not say otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameworkDefaults {
    pub loss: Loss,
    pub checkpointing: Checkpointing,
    pub optimizer_impl: OptimizerImpl,
    /// 16-bit weights with an fp32 master copy kept by the optimizer (DeepSpeed,
    /// Megatron mixed precision) instead of fp32 weights under autocast.
    pub fp32_master_in_optimizer: bool,
    /// Gradients of 16-bit bf16 weights accumulated/reduced in fp32 buffers
    /// (Megatron `main_grad`); fp16 runs keep fp16 buffers (the estimate's
    /// `grad_bytes`).
    pub fp32_grad_buffers: bool,
    /// Loading materialises the full (unsharded) checkpoint on every rank's GPU
    /// before sharding (LitGPT: `fabric.load_raw` into the FSDP-wrapped model).
    pub loads_full_checkpoint_per_rank: bool,
    /// That full copy stays allocated through training when fine-tuning a
    /// frozen base. Measured, not traced to a line: LitGPT's resource tables
    /// (lit-gpt 2023-10, FSDP full-shard LoRA, 10 rows over Phi-1.5, StableLM-3B,
    /// Llama-2-7B/13B on 2 and 4 GPUs) peak at full 16-bit weights + shard +
    /// activations in every batch size, the slope in the batch being the
    /// activations'. Fabric loads with `FSDP.state_dict_type(FULL_STATE_DICT)`,
    /// whose load hooks gather the full parameters.
    pub keeps_loaded_checkpoint: bool,
    /// Grouped-query k/v are expanded to every query head before attention
    /// (LitGPT `CausalSelfAttention`: `k.expand(...)` when `n_query_groups != n_head`).
    pub expands_gqa_kv: bool,
    /// Softmax and cross-entropy run in fp32 even over 16-bit tensors:
    /// transformers' eager attention (`softmax(..., dtype=torch.float32)`) and
    /// causal-LM loss (`logits.float()`), torchtitan's `cross_entropy_loss`
    /// (`pred.float()`), Megatron's `vocab_parallel_cross_entropy`. Plain
    /// PyTorch and LitGPT compute them in the tensors' dtype.
    pub fp32_upcasts: bool,
    /// The framework's own model code computes q, k and v with one fused
    /// linear (LitGPT `CausalSelfAttention.qkv`, whatever the checkpoint's
    /// layout); with multi-head attention v stays a view of that output, so the
    /// whole qkv tensor is kept for the attention backward. Measured by counting
    /// saved tensors of litgpt 0.5.13 blocks under torch 2.15 (and lit-gpt as of
    /// 0.2.0 under torch 2.1): Llama-2-7B kept 4·hidden bytes per token more
    /// than separate projections would.
    pub fused_qkv: bool,
    /// q, k and v come out of one fused matmul split into contiguous copies
    /// (torchtitan 0.3's `FusedQKVLinear`: `torch.split` then `.contiguous()`,
    /// 0.3.0 `models/common/attention.py`): one matmul in per-op
    /// checkpointing's count, its output not kept past the split — unlike
    /// [`Self::fused_qkv`]'s view. Set by the plan's torchtitan release
    /// (`Ctx::defaults_of`).
    pub qkv_split_copies: bool,
    /// An MoE router's gate runs under fp32 autocast, so its linear keeps
    /// autocast's fp32 cast of its input instead of the 16-bit input
    /// (torchtitan 0.3's `TokenChoiceTopKRouter.forward`: `torch.autocast(...,
    /// dtype=torch.float32)`). Set by the plan's torchtitan release.
    pub router_fp32_autocast: bool,
    /// LoRA on q/k/v is one adapter over the fused qkv input (LitGPT
    /// `LoRAQKVLinear`): one dropout copy for the group, and `zero_pad`'s
    /// `index_copy_` keeps the adapter's output for backward when not all of q,
    /// k and v are adapted (the same saved-tensor count).
    pub lora_qkv_grouped: bool,
    /// The RMSNorm multiplies the fp32 normalised tensor by its weight
    /// (LitGPT `RMSNorm.forward`: `* self.weight.float()`; torchtune
    /// `RMSNorm.forward`: `F.rms_norm(x.float(), weight=self.scale)`, whose
    /// composite `result.mul(weight)` promotes to fp32), so a trained weight
    /// keeps that fp32 tensor for its gradient (transformers keeps a 16-bit
    /// cast instead).
    pub rmsnorm_affine_fp32: bool,
    /// LoRA adapters apply dropout to their input (so each keeps a dropped-out
    /// copy): LitGPT's finetune scripts (`lora_dropout` 0.05) and the
    /// Trainer/TRL/Accelerate examples and recipes (0.05–0.1). A plain PyTorch
    /// loop gets PEFT's `LoraConfig` default, `lora_dropout=0.0`
    /// (`peft/tuners/lora/config.py`), and torchtune's LoRA configs set
    /// `lora_dropout: 0.0`.
    pub lora_dropout: bool,
    /// A quantized base goes through PEFT's `prepare_model_for_kbit_training`
    /// ([`crate::plan::TrainingSpec::kbit_fp32_prep`]): PEFT's quantization
    /// guide and its int8/QLoRA examples call it before `get_peft_model`.
    pub kbit_fp32_prep: bool,
    /// Tensor parallelism comes with sequence parallelism: torchtitan's TP
    /// plan shards the norms and the activations between blocks along the
    /// sequence (`SequenceParallel()` on the norms, `Shard(1)` around
    /// attention and FFN; 0.1.0 unconditionally, 0.3.0 under
    /// `enable_sequence_parallel`, default `True`). Megatron-Core's
    /// `ModelParallelConfig.sequence_parallel` defaults to `False`
    /// (megatron-core 0.19.2), as does Megatron-LM's `--sequence-parallel`.
    pub sequence_parallel: bool,
    /// The unchunked cross-entropy works in place on one fp32 copy of the
    /// logits and saves only that (Megatron-Core's `_VocabParallelCrossEntropy`:
    /// `.float()`, then `-= logits_max`, `torch.exp(..., out=)`, `div_`, and
    /// `save_for_backward(exp_logits, ...)`; backward turns the saved softmax
    /// into the gradient in place: megatron-core 0.19.2
    /// `tensor_parallel/cross_entropy.py`), where transformers and torchtitan
    /// keep the upcast logits, the log-softmax and its gradient.
    pub inplace_cross_entropy: bool,
    /// A gated MLP's activation is one fused autograd function that saves only
    /// its input (the gate and up projections) and recomputes the SiLU in
    /// backward: Megatron-LM's `--swiglu` with `bias_swiglu_fusion` (on unless
    /// `--no-bias-swiglu-fusion`) becomes `bias_activation_fusion`, whose
    /// `BiasSwiGLUFunction` / `SwiGLUFunction` call
    /// `ctx.save_for_backward(input_for_backward)` (megatron-core 0.19.2
    /// `training/arguments.py`, `training/argument_utils.py`,
    /// `fusions/fused_bias_swiglu.py`).
    pub fused_swiglu: bool,
    /// Checkpointed block inputs go to host memory and come back for the
    /// recomputation (Unsloth's `use_gradient_checkpointing="unsloth"`).
    pub activation_offload: bool,
    /// Fused Triton kernels for the norms, RoPE and SwiGLU (Unsloth's patched
    /// forward; Liger Kernel is the same switch where a plan turns it on).
    pub fused_kernels: bool,
    /// TRL's Triton kernel for per-token log-probabilities
    /// ([`crate::plan::TrainingSpec::logprob_kernel`]): its current release's.
    pub logprob_kernel: bool,
    /// A bitsandbytes 4-bit base double-quantized
    /// (`bnb_4bit_use_double_quant = True`), as the tools built on the Trainer
    /// configure it: Unsloth's loader (unsloth 2024.12.1 and 2026.10.9
    /// `models/llama.py`), LLaMA-Factory (`double_quantization` default
    /// `True`, llamafactory 0.9.5 `hparams/model_args.py`), ms-swift
    /// (`bnb_4bit_use_double_quant: bool = True`, 4.6.0
    /// `arguments/base_args/quant_args.py`) and axolotl's QLoRA (0.19.0
    /// `loaders/model.py`); transformers' `BitsAndBytesConfig` defaults to off.
    pub nf4_double_quant: bool,
    /// Where an MoE layer applies its routing scores, which sets what it keeps
    /// for the scores' gradient ([`MoeScoring`]).
    pub moe_scoring: MoeScoring,
}

/// Where an MoE layer multiplies its routed tokens by their routing scores,
/// and so what it keeps for the scores' gradient beyond the experts' own
/// tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoeScoring {
    /// On each expert's 16-bit output, with the routing weights cast to its
    /// dtype, keeping that output (transformers' Mixtral, Qwen-MoE, DeepSeek:
    /// `expert_layer(current_state) * routing_weights[top_x, idx, None]`;
    /// replayed, `calibration/replay-families-*.csv`).
    ExpertOutput,
    /// In fp32 on the routed token, keeping that fp32 copy: torchtitan's
    /// `routed_output.to(torch.float32) * top_scores_experts_sorted` (0.2.0
    /// `models/moe/moe.py` with `score_before_experts=False`, as its
    /// DeepSeek-V3 and Qwen3 set it; 0.3.0 `LocalTokenDispatcher.combine`), or
    /// on the routed input before the experts the same way (0.1.0
    /// `experiments/llama4/model/moe.py`, `score_before_experts`). Counted
    /// with `calibration/saved_tensors.py --moe` (torchtitan 0.3.0's layers on
    /// the CPU): each routed token kept 30.11·hidden bytes in Qwen3's layer
    /// (FFN 3·hidden) and 14.10 in DeepSeek-V3's (FFN hidden): 8·FFN for the
    /// experts, 2 for the routed input, 4 for this copy, and two int64
    /// indices. The shared experts' output is added unscaled.
    Fp32Copy,
    /// Inside the experts' activation, before their down projection, whose
    /// input (kept anyway) is the weighted activation: Megatron-Core's experts
    /// pass the probabilities as `per_token_scale` to `MLP.forward`
    /// (`SequentialMLP`) or to `weighted_bias_swiglu_impl` (`TEGroupedMLP`,
    /// `GroupedMLP`'s `activation_func_with_probs`), and the token
    /// dispatcher's `unpermute` gets no probabilities (megatron-core 0.16.1
    /// `transformer/moe/experts.py`, `transformer/mlp.py`,
    /// `transformer/moe/token_dispatcher.py`): nothing per routed token beyond
    /// the experts' own tensors.
    InActivation,
}

impl Framework {
    pub const ALL: [Framework; 15] = [
        Framework::HfTrainer,
        Framework::HfAccelerate,
        Framework::Peft,
        Framework::Trl,
        Framework::LlamaFactory,
        Framework::MsSwift,
        Framework::Axolotl,
        Framework::Unsloth,
        Framework::Torchtune,
        Framework::Torchtitan,
        Framework::Litgpt,
        Framework::Deepspeed,
        Framework::Megatron,
        Framework::FsdpQlora,
        Framework::PlainPytorch,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Framework::HfTrainer => "hf-trainer",
            Framework::HfAccelerate => "hf-accelerate",
            Framework::Peft => "peft",
            Framework::Trl => "trl",
            Framework::Torchtune => "torchtune",
            Framework::Torchtitan => "torchtitan",
            Framework::Litgpt => "litgpt",
            Framework::Deepspeed => "deepspeed",
            Framework::Megatron => "megatron",
            Framework::FsdpQlora => "fsdp-qlora",
            Framework::PlainPytorch => "plain-pytorch",
            Framework::LlamaFactory => "llama-factory",
            Framework::MsSwift => "ms-swift",
            Framework::Axolotl => "axolotl",
            Framework::Unsloth => "unsloth",
        }
    }

    pub fn from_id(s: &str) -> Option<Framework> {
        Framework::ALL.into_iter().find(|f| f.id() == s)
    }

    pub fn label(self) -> &'static str {
        match self {
            Framework::HfTrainer => "Hugging Face Trainer",
            Framework::HfAccelerate => "Hugging Face Accelerate",
            Framework::Peft => "Hugging Face PEFT",
            Framework::Trl => "Hugging Face TRL",
            Framework::Torchtune => "torchtune",
            Framework::Torchtitan => "torchtitan",
            Framework::Litgpt => "LitGPT",
            Framework::Deepspeed => "DeepSpeed",
            Framework::Megatron => "Megatron-LM",
            Framework::FsdpQlora => "Answer.AI fsdp_qlora",
            Framework::PlainPytorch => "plain PyTorch",
            Framework::LlamaFactory => "LLaMA-Factory",
            Framework::MsSwift => "ms-swift (ModelScope SWIFT)",
            Framework::Axolotl => "axolotl",
            Framework::Unsloth => "Unsloth",
        }
    }

    /// Tools whose training loop is transformers' `Trainer` (TRL's trainers
    /// subclass it; LLaMA-Factory's `CustomSeq2SeqTrainer`, ms-swift's
    /// `Seq2SeqTrainer`, axolotl's `AxolotlTrainer` and Unsloth's
    /// `UnslothTrainer`/TRL `SFTTrainer` do too: llamafactory 0.9.5, ms-swift
    /// 4.6.0, axolotl 0.19.0, unsloth 2026.10.9), so the Trainer's mechanisms —
    /// its default AdamW kernel, Accelerate's `no_sync` under FSDP, the
    /// DeepSpeed `auto` buckets, PEFT's fp32 adapters — are theirs as well.
    pub fn trains_through_trainer(self) -> bool {
        matches!(
            self,
            Framework::HfTrainer
                | Framework::Trl
                | Framework::LlamaFactory
                | Framework::MsSwift
                | Framework::Axolotl
                | Framework::Unsloth
        )
    }

    /// The parallel layouts the framework runs, a setting away: the layout
    /// search's space ([`crate::layouts`]). Sources, by framework:
    /// - the Trainer and the tools on it (Accelerate, PEFT, TRL, LLaMA-Factory,
    ///   ms-swift, axolotl): DDP, DeepSpeed ZeRO-1/2/3 through `--deepspeed`
    ///   (`offload_optimizer`, and `offload_param` at stage 3) and FSDP
    ///   `full_shard` / `shard_grad_op` with `offload` (transformers
    ///   `TrainingArguments.fsdp`, "DeepSpeed" and "FSDP" guides); no tensor
    ///   or pipeline parallelism of their own (Accelerate 1.10's ND-parallel
    ///   `ParallelismConfig(tp_size=…, cp_size=…)` over FSDP2, for models
    ///   with a transformers `tp_plan`, is estimated when a plan states it —
    ///   the blocks split as Megatron-LM's without sequence parallelism, the
    ///   embedding whole and the logits gathered on every TP rank
    ///   ([`Framework::tp_shards_embedding`],
    ///   [`Framework::tp_vocab_parallel_loss`]) — but not searched: it needs
    ///   FSDP2, and these profiles' FSDP is FSDP1, [`Framework::uses_fsdp2`]);
    /// - Unsloth: one GPU (its open-source trainer; `device_map` per process);
    /// - torchtune: FSDP2 `fully_shard` in its distributed recipes, with
    ///   `fsdp_cpu_offload` (parameters, gradients and optimizer together);
    ///   tensor parallelism in its full fine-tune (`tensor_parallel_dim`
    ///   with the model's `tensor_parallel_plan`, torchtune 0.6.1
    ///   `recipes/full_finetune_distributed.py`; not in its LoRA recipes),
    ///   without sequence parallelism (its Llama plan names the projections,
    ///   the embedding and the output only, `models/llama3/_parallelism.py`);
    /// - torchtitan: FSDP2 (`data_parallel_shard_degree`) or replicas
    ///   (`data_parallel_replicate_degree`), tensor parallelism with sequence
    ///   parallelism, pipeline parallelism, context parallelism
    ///   (`parallelism.context_parallel_degree`, PyTorch's experimental
    ///   `context_parallel` ring over SDPA), `training.enable_cpu_offload`;
    ///   its `selective` checkpointing is per-op or of every k-th block, not
    ///   Korthikanti's;
    /// - LitGPT: Fabric's DDP or `FSDPStrategy` (`FULL_SHARD`,
    ///   `SHARD_GRAD_OP`), no offload switch in its scripts;
    /// - DeepSpeed: ZeRO stages 0–3, ZeRO-Offload of the optimizer (stages
    ///   1–3) and ZeRO-Infinity's parameter offload (stage 3);
    /// - Megatron-LM: DDP or the distributed optimizer
    ///   (`--use-distributed-optimizer`, read as ZeRO-1), `--tensor-model-
    ///   parallel-size` with `--sequence-parallel`,
    ///   `--pipeline-model-parallel-size`, `--context-parallel-size`
    ///   (Megatron-Core's ring attention through Transformer Engine),
    ///   `--recompute-granularity
    ///   selective|full` (full on some blocks only: `--recompute-method
    ///   block --recompute-num-layers N`), `--optimizer-cpu-offload`; no
    ///   parameter offload;
    /// - Answer.AI's fsdp_qlora: `--sharding_strategy` full_shard,
    ///   shard_grad_op or ddp, `--use_cpu_offload`;
    /// - a loop of one's own: DDP or FSDP (`FULL_SHARD`, `SHARD_GRAD_OP`)
    ///   with `CPUOffload(offload_params=True)`.
    pub fn layouts(self) -> LayoutSupport {
        const TRAINER: &[Sharding] = &[
            Sharding::Ddp,
            Sharding::Zero1,
            Sharding::Zero2,
            Sharding::FsdpGradOp,
            Sharding::Zero3,
            Sharding::FsdpFull,
        ];
        const FSDP: &[Sharding] = &[Sharding::Ddp, Sharding::FsdpGradOp, Sharding::FsdpFull];
        let data_parallel = LayoutSupport {
            shardings: TRAINER,
            tensor_parallel: false,
            sequence_parallel: false,
            tensor_parallel_adapters: false,
            pipeline_parallel: false,
            context_parallel: false,
            selective_recompute: false,
            checkpoint_every: false,
            offload_optimizer: true,
            offload_params: true,
            offload_activations: false,
        };
        match self {
            Framework::HfTrainer
            | Framework::HfAccelerate
            | Framework::Peft
            | Framework::Trl
            | Framework::LlamaFactory
            | Framework::MsSwift => data_parallel,
            Framework::Axolotl => LayoutSupport {
                offload_activations: true,
                ..data_parallel
            },
            Framework::Unsloth => LayoutSupport {
                shardings: &[],
                offload_optimizer: false,
                offload_params: false,
                offload_activations: true,
                ..data_parallel
            },
            Framework::Torchtune => LayoutSupport {
                shardings: &[Sharding::FsdpFull],
                tensor_parallel: true,
                offload_optimizer: false,
                offload_activations: true,
                ..data_parallel
            },
            Framework::Torchtitan => LayoutSupport {
                shardings: &[Sharding::Ddp, Sharding::FsdpFull],
                tensor_parallel: true,
                sequence_parallel: true,
                tensor_parallel_adapters: true,
                pipeline_parallel: true,
                context_parallel: true,
                checkpoint_every: true,
                offload_optimizer: false,
                ..data_parallel
            },
            Framework::Litgpt => LayoutSupport {
                shardings: FSDP,
                offload_optimizer: false,
                offload_params: false,
                ..data_parallel
            },
            Framework::Deepspeed => LayoutSupport {
                shardings: &[
                    Sharding::Ddp,
                    Sharding::Zero1,
                    Sharding::Zero2,
                    Sharding::Zero3,
                ],
                offload_activations: true,
                ..data_parallel
            },
            Framework::Megatron => LayoutSupport {
                shardings: &[Sharding::Ddp, Sharding::Zero1],
                tensor_parallel: true,
                sequence_parallel: true,
                tensor_parallel_adapters: true,
                pipeline_parallel: true,
                context_parallel: true,
                selective_recompute: true,
                checkpoint_every: true,
                offload_optimizer: true,
                offload_params: false,
                offload_activations: true,
            },
            Framework::FsdpQlora => LayoutSupport {
                shardings: FSDP,
                offload_optimizer: false,
                ..data_parallel
            },
            Framework::PlainPytorch => LayoutSupport {
                shardings: FSDP,
                offload_optimizer: false,
                offload_activations: true,
                ..data_parallel
            },
        }
    }

    /// The framework runs the model's own implementation (transformers', or a
    /// hand-written model's), not one of its own (LitGPT, Megatron-LM,
    /// torchtitan and torchtune bring their model code).
    pub fn runs_the_models_own_code(self) -> bool {
        !matches!(
            self,
            Framework::Litgpt | Framework::Megatron | Framework::Torchtitan | Framework::Torchtune
        )
    }

    /// Whether a quantized (QLoRA) base has its LM head quantized too. LitGPT
    /// quantizes through Fabric's `BitsandbytesPrecision`, which converts every
    /// `nn.Linear` (`_convert_layers`, no modules ignored by LitGPT's scripts);
    /// transformers keeps the output embedding in 16 bits
    /// (`get_keys_to_not_convert`), and torchtune's NF4 covers the blocks'
    /// linears.
    pub fn quantizes_lm_head(self) -> bool {
        self == Framework::Litgpt
    }

    /// Whether a 4-bit base is quantized from an fp16 copy of its weights
    /// whatever the run's dtype, so bitsandbytes dequantizes it to fp16.
    /// Fabric's `BitsandbytesPrecision`, through which LitGPT quantizes, does
    /// (`_Linear4bit.quantize`: `weight.contiguous().to(device=device,
    /// dtype=torch.half)`, Lightning 2.1.0, 2.2.0 and 2.5.0 alike); the
    /// bitsandbytes releases before 0.43.0 did too (`Params4bit.cuda`:
    /// `self.data.contiguous().half()`, 0.41.1 to 0.42.0) — not modelled, as
    /// no plan field names a release that old.
    pub fn quantizes_4bit_from_fp16(self) -> bool {
        self == Framework::Litgpt
    }

    /// Whether the framework's own model code has dropout layers at all.
    /// LitGPT's blocks have none (its `Config` has no dropout; attention calls
    /// SDPA with `dropout_p=0.0`, lit-gpt 2023-10 to litgpt 0.5), nor do
    /// torchtitan's and torchtune's Llama-family builders (`attn_dropout=0.0`);
    /// Megatron-LM's default `--hidden-dropout`/`--attention-dropout` is 0.1, and
    /// transformers models follow their config.
    pub fn model_code_has_dropout(self) -> bool {
        !matches!(
            self,
            Framework::Litgpt | Framework::Torchtitan | Framework::Torchtune
        )
    }

    /// Whether `torch.compile`, as the framework applies it, covers the fp32
    /// upcast and cross-entropy of an unchunked loss. transformers computes
    /// `logits.float()` and the loss inside the model's `forward`, so compiling
    /// the model compiles both; torchtitan compiles its loss function, which
    /// upcasts inside (`cross_entropy_loss`: `pred.flatten(0, 1).float()`,
    /// `BaseLoss._maybe_compile`, torchtitan 0.3.0). torchtune compiles block
    /// by block (`training.compile_model`), upcasts in the decoder's eager
    /// `forward` (`self.output(h).float()`), and its recipes drop what
    /// `training.compile_loss` returns for any loss but the chunked one, which
    /// it patches in place (`full_finetune_single_device.py`,
    /// `lora_finetune_single_device.py`, torchtune 0.6.1): the standard loss
    /// runs eagerly.
    pub fn compile_covers_unchunked_loss(self) -> bool {
        self != Framework::Torchtune
    }

    /// Whether the framework's 4-bit base is double-quantized NF4 whatever the
    /// run says: torchtune's QLoRA builders quantize with torchao's `to_nf4`
    /// (torchtune/modules/low_precision, `FrozenNF4Linear`), whose scales are
    /// themselves quantized. bitsandbytes leaves it to the run
    /// (`bnb_4bit_use_double_quant`, default off), which a plan states in
    /// `training.nf4_double_quant` (the tools built on the Trainer seed it on:
    /// [`FrameworkDefaults::nf4_double_quant`]).
    pub fn nf4_double_quantized(self) -> bool {
        self.quantizes_with_torchao()
    }

    /// Whether the framework's 4-bit base is torchao's NF4 rather than
    /// bitsandbytes': torchtune's QLoRA builders (`FrozenNF4Linear`, `to_nf4`).
    pub fn quantizes_with_torchao(self) -> bool {
        self == Framework::Torchtune
    }

    /// Whether the framework's FSDP2 wrapping makes the output projection a
    /// unit of its own: torchtune (`custom_sharded_layers: ['tok_embeddings',
    /// 'output']` in its large-model configs, `training.shard_model`) and
    /// torchtitan (`apply_fsdp` shards `[norm, lm_head]` as one unit, kept
    /// gathered after forward by default; torchtitan 0.3.0). At the loss
    /// that unit is gathered beside the last block's, and in backward its
    /// unsharded gradient exists until its reduce-scatter. Everyone else wraps
    /// with FSDP1, whose root unit (embeddings, final norm, head) stays
    /// gathered from forward through backward (`Ctx::comm_buffers`).
    pub fn fsdp_head_is_own_unit(self) -> bool {
        matches!(self, Framework::Torchtune | Framework::Torchtitan)
    }

    /// Whether the framework's pipeline split counts the embedding and the
    /// output head as one block each, so the first and the last stage get a
    /// block fewer: torchtitan (`_generate_llm_fqn_per_model_part` over
    /// `num_layers + input_weight + output_weight` with
    /// `pipeline_parallel_first_stage_less_layers` = `…_last_stage_less_layers`
    /// = 1 by default; torchtitan 0.3.0 `distributed/pipeline_parallel.py`).
    /// Megatron splits the blocks evenly unless told to account for the
    /// embedding (`account_for_embedding_in_pipeline_split`, off by default).
    pub fn pp_split_counts_edges_as_blocks(self) -> bool {
        self == Framework::Torchtitan
    }

    /// Whether the framework's FSDP is FSDP2 (`fully_shard`), which shards
    /// and gathers on a single rank too: torchtune and torchtitan, and a
    /// plain PyTorch loop (`torch.distributed.fsdp.fully_shard`, the API
    /// PyTorch's FSDP documentation points to since 2.6). The Trainer,
    /// Accelerate (`fsdp_version` 1 by default) and Lightning's
    /// `FSDPStrategy` wrap with FSDP1, which runs `NO_SHARD` on one rank.
    pub fn uses_fsdp2(self) -> bool {
        matches!(
            self,
            Framework::PlainPytorch | Framework::Torchtune | Framework::Torchtitan
        )
    }

    /// Whether tensor parallelism splits the input embedding over the TP
    /// ranks. Megatron-LM's `VocabParallelEmbedding` (megatron-core 0.19.2
    /// `tensor_parallel/layers.py`), torchtitan's vocab-parallel `Embedding`
    /// under a TP group (torchtitan 0.3.0 `models/common/embedding.py`),
    /// torchtune's TP plan (`RowwiseParallel` on `tok_embeddings`, torchtune
    /// 0.6.1 `models/llama3/_parallelism.py`) and DeepSpeed's AutoTP
    /// (`nn.Embedding: _slice_embedding`, which splits the hidden dimension,
    /// deepspeed 0.19.8 `module_inject/auto_tp.py`) do. transformers'
    /// `tp_plan`, which Accelerate's `ParallelismConfig(tp_size=…)`, the
    /// Trainer and `from_pretrained(tp_plan="auto")` apply, names the blocks'
    /// projections only for most models (Llama's `base_model_tp_plan`,
    /// transformers 5.25 `models/llama/configuration_llama.py`): every TP rank
    /// keeps the whole embedding.
    pub fn tp_shards_embedding(self) -> bool {
        matches!(
            self,
            Framework::Megatron
                | Framework::Torchtitan
                | Framework::Torchtune
                | Framework::Deepspeed
        )
    }

    /// Whether a column-parallel projection under sequence parallelism keeps
    /// its input gathered whole for its weight gradient. PyTorch's DTensor
    /// tensor parallelism — torchtitan's plan and any loop built on
    /// `torch.distributed.tensor.parallel` — gathers the sequence-sharded norm
    /// output before attention and the MLP (`PrepareModuleInput(Shard(1) →
    /// Replicate())` ahead of `ColwiseParallel`; torchtitan 0.3.0
    /// `models/common/decoder_sharding.py`: `x_BLD` and `x` to `Replicate`),
    /// and the matmuls save that gathered tensor. Counted with
    /// `calibration/saved_tensors.py --tp` (torch 2.15, a fake process
    /// group): a Llama block keeps 56.07·hidden bytes per token unsplit and
    /// 30.04, 17.02, 10.51 under TP 2, 4, 8 with sequence parallelism — the
    /// two gathered 16-bit inputs, 4·hidden, whole. Megatron-LM saves the
    /// local shard and gathers it again in backward
    /// (`LinearWithGradAccumulationAndAsyncCommunication`:
    /// `ctx.save_for_backward(input, weight)` before the all-gather;
    /// megatron-core 0.16.1 `tensor_parallel/layers.py`), Korthikanti et
    /// al.'s count; so do Transformer Engine's layers, Megatron-LM's default
    /// (`LayerNormLinear` frees the gathered `ln_out_total` after the GEMM
    /// and saves `ln_out`, gathering it again in backward when
    /// `ctx.ln_out_needs_gather`; transformer_engine 2.20.2
    /// `pytorch/module/layernorm_linear.py`), and Megatron-DeepSpeed, which a
    /// DeepSpeed plan with TP is read as.
    pub fn tp_keeps_gathered_inputs(self) -> bool {
        !matches!(self, Framework::Megatron | Framework::Deepspeed)
    }

    /// Whether tensor parallelism keeps the logits split over the vocabulary
    /// through the loss (a vocab-parallel cross-entropy): Megatron-LM's
    /// `vocab_parallel_cross_entropy`, torchtitan's `_LossParallelCrossEntropy`
    /// on the head's `Shard(-1)` output (torchtitan 0.3.0
    /// `components/loss.py`). The others shard the head's weight by the
    /// vocabulary but gather its output, so every TP rank holds the whole
    /// logits and computes the loss on them: transformers' `lm_head:
    /// "colwise_gather_output"` (`ColwiseParallel(output_layouts=Replicate())`,
    /// transformers 5.25 `distributed/tensor_parallel.py`), torchtune's
    /// `"output": ColwiseParallel(output_layouts=Replicate())`, DeepSpeed
    /// AutoTP's training head (`LinearLayer(..., gather_output=True)`).
    pub fn tp_vocab_parallel_loss(self) -> bool {
        matches!(self, Framework::Megatron | Framework::Torchtitan)
    }

    /// Whether the framework pipelines FSDP2-sharded stages through
    /// `torch.distributed.pipelining`'s schedules (torchtitan), which keep a
    /// stage's parameters gathered and its gradients unsharded until every
    /// micro-batch has run backward (`Ctx::comm_buffers`).
    pub fn pipelines_fsdp2_stages(self) -> bool {
        self == Framework::Torchtitan
    }

    /// The precision a float8 run stores its weights, gradients and optimizer
    /// states in. float8 training changes the matmuls' inputs (cast per
    /// matmul), not what a framework keeps, so a `Fp8` plan is counted as the
    /// framework's 16-bit policy:
    /// - torchtitan keeps fp32 parameters (`training.dtype = "float32"`) and
    ///   computes in bf16 through FSDP2's `MixedPrecisionPolicy` or autocast
    ///   (`mixed_precision_param`; torchtitan 0.3.0 `config/configs.py`);
    ///   its `Float8LinearConverter` swaps in torchao's `Float8Linear`, whose
    ///   autograd function saves the high-precision input and weight
    ///   (torchao 0.18.0 `float8/float8_linear.py`:
    ///   `ctx.save_for_backward(input_hp, weight_hp_t)`). Accelerate's
    ///   `mixed_precision="fp8"` converts the model as loaded (fp32 by default
    ///   in its and the Trainer's examples) and autocasts the rest to bf16
    ///   ("We always enable `native_amp` for FP8", accelerate 1.15.0
    ///   `accelerator.py`): both are `amp-bf16` with float8 matmuls.
    /// - LitGPT's `--precision transformer-engine` converts the weights to bf16
    ///   (Lightning 2.6.6 `fabric/connector.py`:
    ///   `TransformerEnginePrecision(weights_dtype=torch.bfloat16)`); torchtune
    ///   trains float8 over its `dtype: bf16` model; torchao's own examples
    ///   convert a bf16 model: pure `bf16`.
    /// - DeepSpeed and Megatron keep 16-bit weights with fp32 master weights in
    ///   the optimizer whatever the matmuls: their `bf16`.
    pub fn fp8_storage(self) -> Precision {
        match self {
            Framework::HfTrainer
            | Framework::HfAccelerate
            | Framework::Peft
            | Framework::Trl
            | Framework::Torchtitan
            | Framework::FsdpQlora
            | Framework::LlamaFactory
            | Framework::MsSwift
            | Framework::Axolotl
            | Framework::Unsloth => Precision::AmpBf16,
            Framework::Torchtune
            | Framework::Litgpt
            | Framework::Deepspeed
            | Framework::Megatron
            | Framework::PlainPytorch => Precision::Bf16,
        }
    }

    /// A float8 run keeps the inputs of its linears in float8 for the weight
    /// gradient: Transformer Engine quantizes a linear's input (or a fused
    /// norm+linear's normalised output) and saves that quantized tensor,
    /// one byte per element, dropping its row-wise half when only the
    /// column-wise data is needed (transformer_engine 2.20.2
    /// `pytorch/module/linear.py`: `inputmat.update_usage(rowwise_usage=False,
    /// columnwise_usage=True)`; `layernorm_linear.py`: `ln_out_to_save`).
    /// Megatron-Core's default layer spec is built from TE modules
    /// (`transformer_impl = "transformer_engine"`) and LitGPT's
    /// `transformer-engine` precision swaps in TE linears; torchao's
    /// `Float8Linear` (torchtitan, torchtune, Accelerate's first choice —
    /// accelerate 1.15.0 tries torchao, then TE, then MS-AMP) saves the
    /// 16-bit tensors.
    pub fn fp8_saves_fp8_inputs(self) -> bool {
        matches!(self, Framework::Megatron | Framework::Litgpt)
    }

    /// Whether Transformer Engine keeps its float8 weight copies for the run:
    /// Megatron passes TE `is_first_microbatch`, so every TE linear caches its
    /// float8 weight in `_fp8_workspaces["weight"]` (transformer_engine 2.20.2
    /// `linear.py`: `cache_name = None if is_first_microbatch is None ... else
    /// "weight"`; megatron-core 0.19.2 `extensions/transformer_engine.py`
    /// unless `disable_parameter_transpose_cache`). LitGPT's TE linears get
    /// no `is_first_microbatch`, so each forward makes them afresh and saves
    /// them for the layer's backward.
    pub fn te_caches_fp8_weights(self) -> bool {
        self == Framework::Megatron
    }

    /// LoRA rank and targets when a run does not state them: PEFT's
    /// `LoraConfig.r` = 8 on the query and value projections (the Llama entry
    /// of TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING), as LitGPT's
    /// `lora_r` with `lora_query`/`lora_value`; Megatron-Bridge's `LoRA` (the
    /// LoRA Megatron-LM runs through NeMo / Megatron-Bridge) `dim` = 32 over
    /// every linear of a block (`linear_qkv`, `linear_proj`, `linear_fc1`,
    /// `linear_fc2`; megatron-bridge 0.6.2 `peft/lora.py`). The tools built on
    /// the Trainer adapt every linear: LLaMA-Factory `lora_rank` 8 with
    /// `lora_target="all"` (llamafactory 0.9.5 `hparams/finetuning_args.py`),
    /// ms-swift `lora_rank` 8 with `target_modules=['all-linear']` (4.6.0
    /// `arguments/tuner_args.py`), Unsloth `r = 16` over q, k, v, o, gate, up
    /// and down (`get_peft_model`, 2026.10.9 `models/llama.py`); axolotl's
    /// schema sets neither, its example configs `lora_r: 32` (120 of the 196
    /// that give one) with `lora_target_linear: true` (92 of 93; axolotl 0.19.0).
    pub fn lora_defaults(self) -> (u32, LoraTargets) {
        match self {
            Framework::Megatron | Framework::Axolotl => (32, LoraTargets::ALL_LINEAR),
            Framework::LlamaFactory | Framework::MsSwift => (8, LoraTargets::ALL_LINEAR),
            Framework::Unsloth => (16, LoraTargets::ALL_LINEAR),
            _ => (8, LoraTargets::QV),
        }
    }

    /// The checkpointing policy the framework applies on `num_gpus` devices
    /// when the user does not choose one: [`FrameworkDefaults::checkpointing`],
    /// except where a framework decides it by the device count. LitGPT's
    /// finetune scripts wrap every `Block` in activation checkpointing when
    /// run on more than one device and not on one (litgpt 0.5.13
    /// `finetune/full.py`, `adapter.py`, `adapter_v2.py`, `lora_legacy.py`:
    /// `FSDPStrategy(..., activation_checkpointing_policy={Block})` under
    /// `if devices * num_nodes > 1`, else `strategy = "auto"`; `lora.py`: its
    /// `parallelize_fn(..., activation_checkpointing=True)` puts every block
    /// in a `checkpoint_wrapper` before `fully_shard`). Its `pretrain.py`
    /// does not checkpoint; the profile is the finetune scripts' (as its
    /// chunked loss is).
    pub fn default_checkpointing(self, num_gpus: u32) -> Checkpointing {
        match self {
            Framework::Litgpt if num_gpus > 1 => Checkpointing::Full,
            _ => self.defaults().checkpointing,
        }
    }

    /// Gradient accumulation under FSDP runs the micro-batches before the last
    /// without reducing their gradients, so each rank accumulates the full
    /// unsharded gradients of every unit until the last micro-batch reduces
    /// them: FSDP1's `no_sync` ("This likely results in higher memory usage
    /// because FSDP will accumulate the full model gradients (instead of
    /// gradient shards)"; `_post_backward_hook` returns before the
    /// reduce-scatter when `not state._sync_gradients`) and FSDP2's
    /// `set_requires_gradient_sync(False)` (the unsharded `.grad` stays,
    /// `FSDPParam.to_accumulated_grad_if_needed`), torch 2.11. The Trainer
    /// enters Accelerate's `no_sync` for every micro-batch but the last unless
    /// `sync_each_batch` is set or DeepSpeed runs (transformers 4.47–5.25
    /// `trainer.py`; 4.36–4.46 through `accelerator.accumulate`), and
    /// Accelerate's `accumulate` does the same (accelerate 1.16
    /// `Accelerator.no_sync`: FSDP2 `set_requires_gradient_sync(False)` — from
    /// 1.11.0; before, an FSDP2 module, having no `no_sync`, reduced every
    /// micro-batch, which a plan states with `sync_each_batch` —
    /// FSDP1 `model.no_sync`; its `GradientAccumulationPlugin.sync_each_batch`:
    /// "Setting to `True` may reduce memory requirements when using gradient
    /// accumulation with distributed training, at expense of speed"); TRL and
    /// PEFT's examples train through them.
    /// LitGPT's finetune and pretrain scripts wrap the accumulating
    /// micro-batches in `fabric.no_backward_sync` (litgpt 0.5.13), which
    /// Lightning Fabric maps to `no_sync` / `set_requires_gradient_sync`
    /// (lightning 2.5.0 `fabric/strategies/fsdp.py`, `model_parallel.py`).
    /// torchtune and torchtitan reduce every micro-batch, Megatron accumulates
    /// into its own buffers and DeepSpeed partitions as it goes.
    pub fn fsdp_no_sync_accumulation(self) -> bool {
        self.trains_through_trainer()
            || matches!(
                self,
                Framework::HfAccelerate | Framework::Peft | Framework::Litgpt
            )
    }

    /// The AdamW kernel transformers' `Trainer` (and TRL's trainers built on
    /// it) uses when `optim` is not set, from the releases a run states: its
    /// `default_optim` was `adamw_hf` (transformers' own AdamW, a loop over
    /// the parameters) through 4.31, `adamw_torch` (`torch.optim.AdamW`: the
    /// foreach kernel from PyTorch 2.0, a loop before) from 4.32, and
    /// `adamw_torch_fused` from 4.51 when PyTorch is 2.8 or later
    /// (`training_args.py`, read in transformers 4.31.0, 4.32.0, 4.50.0,
    /// 4.51.0, 4.57.0 and 5.25.0). `None` when neither release is stated:
    /// the profile's default (the current releases') stands.
    pub fn trainer_default_optimizer_impl(
        transformers: Option<(u32, u32)>,
        torch: Option<(u32, u32)>,
    ) -> Option<OptimizerImpl> {
        if transformers.is_none() && torch.is_none() {
            return None;
        }
        if transformers.is_some_and(|v| v < (4, 32)) || torch.is_some_and(|v| v < (2, 0)) {
            return Some(OptimizerImpl::ForLoop);
        }
        let fused_default = transformers.is_none_or(|v| v >= (4, 51));
        let fused_available = torch.is_none_or(|v| v >= (2, 8));
        Some(if fused_default && fused_available {
            OptimizerImpl::Fused
        } else {
            OptimizerImpl::Foreach
        })
    }

    /// DeepSpeed's `reduce_bucket_size` (elements) when the run does not set it.
    /// The Trainer fills its "auto" with hidden² (transformers
    /// `integrations/deepspeed.py` `trainer_config_process`), and the tools
    /// built on it ship ZeRO-3 configs that say "auto" (ms-swift 4.6.0
    /// `config/zero3.json`, axolotl 0.19.0 `deepspeed_configs/zero3.json`;
    /// the bucket matters to ZeRO-3 only, [`crate::estimate()`]); Accelerate's
    /// DeepSpeed plugin writes no `reduce_bucket_size` into the config it builds
    /// (`DeepSpeedPlugin.__post_init__`, accelerate 0.17–1.15), so its
    /// `deepspeed_config_process` has no "auto" to fill and DeepSpeed's own
    /// default, 5e8 (`runtime/zero/config.py`), applies, as for DeepSpeed itself.
    pub fn deepspeed_reduce_bucket_elements(self, hidden: u32) -> f64 {
        if self == Framework::Peft || self.trains_through_trainer() {
            (hidden as f64).powi(2)
        } else {
            DEEPSPEED_DEFAULT_BUCKET_ELEMENTS
        }
    }

    /// Whether DeepSpeed reduces on a stream of its own (`overlap_comm`) in
    /// the configs the framework ships or documents, at stage 3 or below.
    /// DeepSpeed turns it on by default for stage 3 only
    /// (`runtime/zero/config.py`, `overlap_comm_valid`), and Accelerate's
    /// DeepSpeed plugin writes no such key. transformers' DeepSpeed guide's
    /// ZeRO-2 and ZeRO-3 configs, which the Trainer's users copy, set it, as
    /// Axolotl's do (axolotl 0.19.0 `deepspeed_configs/zero1.json`,
    /// `zero2.json`, `zero3*.json`); LLaMA-Factory's and ms-swift's turn it
    /// off at every stage (llamafactory 0.9.5 `webui/common.py`, ms-swift
    /// 4.6.0 `config/zero*.json`).
    pub fn deepspeed_overlap_comm(self, stage3: bool) -> bool {
        match self {
            Framework::LlamaFactory | Framework::MsSwift => false,
            Framework::HfTrainer | Framework::Trl | Framework::Axolotl | Framework::Unsloth => true,
            _ => stage3,
        }
    }

    /// Documented defaults.
    ///
    /// - Hugging Face models compute `logits.float()` and full cross-entropy
    ///   (transformers `LlamaForCausalLM.forward`, `loss_utils.ForCausalLMLoss`).
    ///   The Trainer's (and TRL's) `optim` defaults to `adamw_torch_fused` with
    ///   torch ≥ 2.8 (transformers `training_args.py`; the H200 Trainer runs
    ///   reported `ADAMW_TORCH_FUSED`); Accelerate and plain loops build
    ///   `torch.optim.AdamW`, whose default is the foreach implementation.
    /// - torchtune: `CEWithChunkedOutputLoss` (8 chunks, upcast per chunk),
    ///   `enable_activation_checkpointing: True` and `torch.optim.AdamW` with
    ///   `fused: True` in its recipes' configs (118 of the 123 configs that name
    ///   `torch.optim.AdamW` in torchtune 0.6.1 set it).
    /// - torchtitan: full logits + `cross_entropy` on fp32 (`train.py`),
    ///   `activation_checkpoint.mode = "selective"` with `selective_ac_option = "op"`.
    /// - LitGPT: `chunked_cross_entropy` with `lm_head_chunk_size=128` in finetune scripts.
    /// - DeepSpeed: fp16/bf16 weights with fp32 master weights in the optimizer,
    ///   FusedAdam (ZeRO paper's 16Ψ accounting).
    /// - Megatron-LM: no recomputation unless asked, the in-place vocab-parallel
    ///   cross-entropy, 16-bit weights, fp32 `main_grad` buffers, fp32 master in the
    ///   optimizer (`theoretical_memory_usage.py`: 18 bytes/param without the
    ///   distributed optimizer), fused Adam from Apex/TransformerEngine.
    pub fn defaults(self) -> FrameworkDefaults {
        let hf = FrameworkDefaults {
            loss: Loss::Standard,
            checkpointing: Checkpointing::None,
            optimizer_impl: OptimizerImpl::Foreach,
            fp32_master_in_optimizer: false,
            fp32_grad_buffers: false,
            loads_full_checkpoint_per_rank: false,
            keeps_loaded_checkpoint: false,
            expands_gqa_kv: false,
            fp32_upcasts: true,
            fused_qkv: false,
            qkv_split_copies: false,
            router_fp32_autocast: false,
            lora_qkv_grouped: false,
            rmsnorm_affine_fp32: false,
            lora_dropout: true,
            kbit_fp32_prep: false,
            sequence_parallel: false,
            inplace_cross_entropy: false,
            fused_swiglu: false,
            activation_offload: false,
            fused_kernels: false,
            logprob_kernel: false,
            nf4_double_quant: false,
            moe_scoring: MoeScoring::ExpertOutput,
        };
        // The Trainer's own: its `adamw_torch_fused` default.
        let trainer = FrameworkDefaults {
            optimizer_impl: OptimizerImpl::Fused,
            ..hf
        };
        // What the four tools built on it share: every layer checkpointed and
        // a 4-bit base double-quantized (sources at each tool below and at
        // `FrameworkDefaults::nf4_double_quant`).
        let trainer_tool = FrameworkDefaults {
            checkpointing: Checkpointing::Full,
            nf4_double_quant: true,
            ..trainer
        };
        match self {
            Framework::HfTrainer => trainer,
            // TRL's trainer configs (SFT, DPO, GRPO, KTO, reward) default
            // `gradient_checkpointing=True` from TRL 0.22.0 ("Defaults to
            // `True` instead of `False`", trl 1.16.0 `sft_config.py`; 0.21.0's
            // `SFTConfig` keeps the Trainer's `False`).
            // Its trainers compute the loss through their own fused LM head
            // from 1.15.0 (`add_fused_lm_head`, `fused_lm_head=True` in
            // `SFTTrainer.compute_loss` and `DPOTrainer._compute_loss`; 1.14.2
            // took the model's logits): [`Loss::TiledLogprob`].
            Framework::Trl => FrameworkDefaults {
                checkpointing: Checkpointing::Full,
                loss: Loss::TiledLogprob,
                // trl 1.14.0 on (`selective_log_softmax` on CUDA).
                logprob_kernel: true,
                ..trainer
            },
            Framework::Peft => FrameworkDefaults {
                kbit_fp32_prep: true,
                ..hf
            },
            // LLaMA-Factory checkpoints unless `disable_gradient_checkpointing`
            // (default `False`, then `gradient_checkpointing_enable` in
            // `model/model_utils/checkpointing.py`; the same in 0.9.1 and
            // 0.9.3), its `lora_dropout` defaults to 0.0, and it prepares a
            // quantized base its own way (no `prepare_model_for_kbit_training`;
            // norms upcast only under `upcast_layernorm`, default `False`):
            // llamafactory 0.9.5 `hparams/model_args.py`,
            // `hparams/finetuning_args.py`. The optimizer is the Trainer's.
            Framework::LlamaFactory => FrameworkDefaults {
                lora_dropout: false,
                ..trainer_tool
            },
            // ms-swift: `gradient_checkpointing: bool = True`
            // (`trainers/arguments.py` in 3.5.0 and 4.6.0, `llm/argument/
            // train_args.py` in 3.0.0; 2.6.1 turned it on wherever the model
            // supports it), `lora_dropout: float = 0.05`
            // (`arguments/tuner_args.py`), no `prepare_model_for_kbit_training`
            // (ms-swift 4.6.0).
            Framework::MsSwift => trainer_tool,
            // axolotl's schema leaves `gradient_checkpointing` off and
            // `lora_dropout` at 0.0, but its example configs — what runs
            // start from — set `gradient_checkpointing: true` in 218 of the
            // 231 that give a value (4 more offload it) and `lora_dropout: 0.05`
            // in 128 of 183 (axolotl 0.19.0 `examples/`). Its k-bit preparation upcasts the norms and
            // embeddings and then casts them back to the training dtype for an
            // adapter (`_configure_embedding_dtypes`, `should_convert`), so
            // nothing stays in fp32.
            Framework::Axolotl => trainer_tool,
            // Unsloth: `use_gradient_checkpointing = "unsloth"` (checkpointing
            // with the block inputs offloaded to the host) and
            // `lora_dropout = 0.0` in `FastLanguageModel.from_pretrained` and
            // `get_peft_model`; its patched forward runs Triton norm, RoPE and
            // SwiGLU kernels and a fused linear cross-entropy that never
            // materialises the logits (`unsloth_fused_ce_loss` from 2025.9,
            // Cut Cross-Entropy's `fused_linear_cross_entropy` from 2024.12
            // when installed): unsloth 2024.12.1, 2025.9.1, 2026.10.9
            // `models/llama.py`.
            Framework::Unsloth => FrameworkDefaults {
                loss: Loss::Fused,
                lora_dropout: false,
                activation_offload: true,
                fused_kernels: true,
                ..trainer_tool
            },
            Framework::HfAccelerate | Framework::FsdpQlora => hf,
            Framework::PlainPytorch => FrameworkDefaults {
                fp32_upcasts: false,
                lora_dropout: false,
                ..hf
            },
            Framework::Torchtune => FrameworkDefaults {
                loss: Loss::ChunkedFree,
                checkpointing: Checkpointing::Full,
                optimizer_impl: OptimizerImpl::Fused,
                rmsnorm_affine_fp32: true,
                lora_dropout: false,
                ..hf
            },
            // torchtitan's optimizer `implementation` defaults to "fused"
            // (0.1.0 `config_manager.py`, 0.3.0 `components/optimizer/optimizer.py`).
            Framework::Torchtitan => FrameworkDefaults {
                checkpointing: Checkpointing::OpSelective,
                optimizer_impl: OptimizerImpl::Fused,
                sequence_parallel: true,
                moe_scoring: MoeScoring::Fp32Copy,
                // The current release's (`Ctx::defaults_of` clears them for
                // older ones).
                qkv_split_copies: true,
                router_fp32_autocast: true,
                ..hf
            },
            Framework::Litgpt => FrameworkDefaults {
                loss: Loss::ChunkedKeep,
                loads_full_checkpoint_per_rank: true,
                keeps_loaded_checkpoint: true,
                expands_gqa_kv: true,
                fp32_upcasts: false,
                fused_qkv: true,
                lora_qkv_grouped: true,
                rmsnorm_affine_fp32: true,
                ..hf
            },
            Framework::Deepspeed => FrameworkDefaults {
                optimizer_impl: OptimizerImpl::Fused,
                fp32_master_in_optimizer: true,
                ..hf
            },
            Framework::Megatron => FrameworkDefaults {
                optimizer_impl: OptimizerImpl::Fused,
                fp32_master_in_optimizer: true,
                fp32_grad_buffers: true,
                inplace_cross_entropy: true,
                fused_swiglu: true,
                moe_scoring: MoeScoring::InActivation,
                // Megatron-Bridge's (and NeMo's) `LoRA.dropout` defaults to 0.0
                // (megatron-bridge 0.6.2 `peft/lora.py`).
                lora_dropout: false,
                // The fused softmax kernels compute in fp32 but return and
                // save 16-bit probabilities (`ScaledUpperTriangMaskedSoftmax`;
                // `attention_softmax_in_fp32` upcasts only the unfused path,
                // megatron-core 0.19.2 `fusions/fused_softmax.py`): Korthikanti
                // et al.'s 2 bytes per score. The loss's fp32 copy is
                // `inplace_cross_entropy`'s.
                fp32_upcasts: false,
                // `TransformerConfig.recompute_granularity` defaults to `None`
                // (megatron-core 0.19.2); `--recompute-activations` asks for
                // the selective (core attention) policy.
                checkpointing: Checkpointing::None,
                ..hf
            },
        }
    }
}
