//! Labels and choices for each plan setting (presentation only; the values are
//! cost-model's URL ids).

use cost_model::framework::Framework;
use cost_model::{gpu, presets};

/// How a setting is edited.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Select(Vec<(String, String)>),
    Number {
        min: u32,
        max: u32,
    },
    Range {
        min: u32,
        max: u32,
    },
    /// A number box plus a slider over powers of two (2^min_exp … 2^max_exp).
    LogRange {
        min_exp: u32,
        max_exp: u32,
    },
    Check,
}

fn opts(list: &[(&str, &str)]) -> Kind {
    Kind::Select(
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
    )
}

/// (URL key, label, hint, kind) for every control, grouped by section.
/// One control: (URL key, label, hint, kind).
pub type FieldSpec = (&'static str, &'static str, &'static str, Kind);

pub fn sections() -> Vec<(&'static str, Vec<FieldSpec>)> {
    let mut model_list: Vec<(String, String)> = presets::presets()
        .iter()
        .map(|p| (p.id.to_string(), p.name.to_string()))
        .collect();
    model_list.push(("custom".into(), "Custom dimensions".into()));
    let gpus = Kind::Select(
        gpu::ids()
            .map(|(id, name)| (id.to_string(), name.to_string()))
            .chain([(
                "custom".to_string(),
                "Another GPU (enter its memory)".to_string(),
            )])
            .collect(),
    );
    let fws = Kind::Select(
        Framework::ALL
            .iter()
            .map(|f| (f.id().to_string(), f.label().to_string()))
            .collect(),
    );
    vec![
        (
            "Model and hardware",
            vec![
                ("model", "Model", "Preset dimensions from the model's config.json", Kind::Select(model_list)),
                (
                    "head",
                    "Output head",
                    "A classification head (reward model, BERT classifier) makes no vocab logits",
                    opts(&[("lm", "language-model head (vocab logits)"), ("classifier", "classification head")]),
                ),
                ("gpu", "GPU", "Capacity as nvidia-smi reports it", gpus),
                ("gpu_mib", "GPU memory (MiB)", "memory.total as nvidia-smi prints it: change it for a MIG slice or a card not in the list", Kind::Number { min: 1, max: 100_000_000 }),
                ("gpus", "GPUs", "All GPUs in the run", Kind::Number { min: 1, max: 100_000 }),
                ("per_node", "GPUs per node", "Tensor parallelism stays within a node; HSDP shards within one", Kind::Number { min: 1, max: 100_000 }),
                ("fw", "Framework", "Its documented defaults fill loss, checkpointing, activation offload, fused kernels, optimizer, upcast, k-bit preparation, NF4 double quantization and sequence-parallel settings", fws),
            ],
        ),
        (
            "Model dimensions",
            vec![
                (
                    "arch",
                    "Architecture",
                    "An encoder attends both ways and has no vocab logits unless pre-trained with a masked-LM head",
                    opts(&[("decoder", "decoder (causal LM)"), ("encoder", "encoder (BERT-like)"), ("encoder-decoder", "encoder–decoder (T5-like)")]),
                ),
                ("enc_layers", "Encoder layers", "Encoder–decoder models: the encoder's blocks", Kind::Number { min: 0, max: 10_000 }),
                ("layers", "Layers", "Transformer blocks (decoder blocks for encoder–decoder models)", Kind::Number { min: 1, max: 10_000 }),
                ("hidden", "Hidden size", "Model width h", Kind::Number { min: 1, max: 1 << 20 }),
                ("heads", "Attention heads", "Query heads a", Kind::Number { min: 1, max: 1 << 20 }),
                ("kv_heads", "KV heads", "Key/value heads (fewer than heads = GQA/MQA)", Kind::Number { min: 1, max: 1 << 20 }),
                ("head_dim", "Head dim", "Width of one head (usually hidden / heads)", Kind::Number { min: 1, max: 1 << 20 }),
                ("ffn", "FFN width", "MLP inner width (per expert for MoE)", Kind::Number { min: 1, max: 1 << 20 }),
                ("vocab", "Vocabulary", "Rows of the embedding; the logits are batch × sequence × vocabulary", Kind::Number { min: 1, max: 1 << 26 }),
                ("window", "Sliding window", "Attention window in tokens (0 = none); from there on transformers' SDPA path expands grouped k/v", Kind::Number { min: 0, max: 1 << 24 }),
                ("experts", "Experts", "Routed experts per MoE layer (0 = dense)", Kind::Number { min: 0, max: 1 << 14 }),
                ("top_k", "Experts per token", "Top-k routing", Kind::Number { min: 0, max: 1 << 14 }),
                ("shared", "Shared experts", "Always-active experts beside the routed ones, counted in routed experts' widths (DeepSeek-MoE: 2; Qwen1.5-MoE's one 4× wide: 4)", Kind::Number { min: 0, max: 1 << 14 }),
                ("dense", "Dense blocks", "MoE blocks replaced by one dense MLP (DeepSeek / GLM-4.5 first_k_dense_replace, Llama-4 Maverick every other block)", Kind::Number { min: 0, max: 10_000 }),
                ("dense_ffn", "Dense FFN width", "The dense blocks' MLP inner width", Kind::Number { min: 0, max: 1 << 20 }),
                ("kv_rank", "KV latent rank", "Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): kv_lora_rank, the shared k/v latent; 0 = ordinary attention, head dim then q/k's width per head", Kind::Number { min: 0, max: 1 << 20 }),
                ("q_rank", "Q latent rank", "Latent attention: q_lora_rank (0 = one q_proj)", Kind::Number { min: 0, max: 1 << 20 }),
                ("rope_dim", "Rotary head dim", "Latent attention: qk_rope_head_dim, the rotary part of each q/k head", Kind::Number { min: 0, max: 1 << 20 }),
                ("v_dim", "Value head dim", "Latent attention: v_head_dim", Kind::Number { min: 0, max: 1 << 20 }),
                ("mlp", "MLP", "Gated (SwiGLU) MLPs keep three ffn-wide tensors per token", opts(&[("gated", "gated (SwiGLU)"), ("plain", "plain (GELU)")])),
                ("norm", "Norm", "What each norm keeps for its backward", opts(&[("rms-norm", "RMSNorm"), ("layer-norm", "LayerNorm")])),
                (
                    "pos",
                    "Positions",
                    "Learned positions are a table of weights; T5's relative bias and ALiBi add a bias per head to the scores",
                    opts(&[("rotary", "rotary (RoPE)"), ("learned", "learned"), ("relative", "relative bias (T5)"), ("alibi", "ALiBi")]),
                ),
                ("tied", "Tied embeddings", "The LM head shares the input embedding's weights", Kind::Check),
                ("vision", "Vision encoder (parameters)", "A multimodal model's vision encoder and projector, in parameters (Qwen2.5-VL-7B: 676550144; filled in from a pasted config.json): frozen weights, no activations kept. Count the image tokens in the sequence length: Qwen2-VL/2.5-VL one per 28 × 28 pixels (at most max_pixels / 784), Qwen3-VL one per 32 × 32, Gemma 3 256 an image, LLaVA-1.5 576", Kind::Number { min: 0, max: u32::MAX }),
            ],
        ),
        (
            "Batch",
            vec![
                ("mb", "Micro-batch", "Sequences per GPU per forward: activations grow linearly", Kind::Range { min: 1, max: 64 }),
                ("seq", "Sequence length", "Tokens per sequence as run (padded length, not the cap)", Kind::LogRange { min_exp: 7, max_exp: 20 }),
                ("frozen", "Frozen layers", "Full fine-tuning only: the bottom blocks (and an untied embedding) left frozen keep no gradients, optimizer states or activations", Kind::Number { min: 0, max: 10_000 }),
                ("tgt", "Target length", "Encoder–decoder models (T5, BART) only: the decoder's tokens, the labels' padded length; empty = the sequence length", Kind::Number { min: 1, max: 1 << 24 }),
                ("ga", "Gradient accumulation", "Same global batch with a smaller micro-batch; costs steps, not memory — except under FSDP with the Trainer, Accelerate or LitGPT, which keep the full unsharded gradients between micro-batches (see the next switch)", Kind::Number { min: 1, max: 1 << 20 }),
                ("sync_each", "Reduce gradients every micro-batch", "Accelerate's sync_each_batch: FSDP reduce-scatters after each micro-batch instead of accumulating unsharded gradients under no_sync; more communication, less memory. Accelerate before 1.11 (axolotl 0.12 and earlier) did this for FSDP2 anyway: its no_sync did not reach FSDP2 modules", Kind::Check),
            ],
        ),
        (
            "Precision and optimizer",
            vec![
                (
                    "prec",
                    "Precision",
                    // `from_pretrained` defaults to `dtype="auto"` (the
                    // checkpoint's) from transformers 5.0 and to fp32 before
                    // (`modeling_utils.py`, 5.0.0 and 4.57.0); Accelerate's
                    // FSDP preparation upcasts trainable 16-bit parameters to
                    // fp32 when mixed precision is on (accelerate 1.16
                    // `utils/fsdp_utils.py` `fsdp2_prepare_model`; FSDP1 in
                    // `Accelerator.prepare_model`).
                    "AMP keeps fp32 weights; pure 16-bit halves weights and gradients. transformers 5 loads a checkpoint in its own dtype (bf16: pure here, even with --bf16), transformers 4 in fp32 (AMP); under FSDP, Accelerate upcasts trainable 16-bit weights to fp32 when --bf16/--fp16 is on (AMP); LLaMA-Factory upcasts trainable weights to fp32 unless pure_bf16 or ZeRO-3 (AMP), ms-swift trains in the checkpoint's dtype (pure)",
                    opts(&[
                        ("fp32", "fp32"),
                        ("amp-bf16", "bf16 AMP (fp32 weights)"),
                        ("amp-fp16", "fp16 AMP (fp32 weights)"),
                        ("bf16", "pure bf16"),
                        ("fp16", "pure fp16"),
                        ("fp8", "fp8 matmuls (stored as the framework's bf16)"),
                    ]),
                ),
                (
                    "opt",
                    "Optimizer",
                    "Adam keeps two states per trainable parameter; 8-bit and SGD keep less",
                    opts(&[
                        ("adamw", "AdamW"),
                        ("adamw8bit", "AdamW 8-bit (bitsandbytes)"),
                        ("adamw4bit", "AdamW 4-bit (torchao)"),
                        ("paged-adamw", "Paged AdamW"),
                        ("paged-adamw8bit", "Paged AdamW 8-bit"),
                        ("adafactor", "Adafactor"),
                        ("sgd", "SGD"),
                        ("sgd-momentum", "SGD + momentum"),
                        ("lion", "Lion"),
                        ("lion8bit", "Lion 8-bit (bitsandbytes)"),
                        ("muon", "Muon (AdamW for embeddings, head, norms)"),
                        ("adan", "Adan"),
                        ("galore", "GaLore AdamW (projected states)"),
                        ("galore8bit", "GaLore AdamW 8-bit"),
                        ("apollo", "APOLLO AdamW (random projection)"),
                        ("ademamix", "AdEMAMix (bitsandbytes, three states)"),
                        ("ademamix8bit", "AdEMAMix 8-bit (bitsandbytes)"),
                    ]),
                ),
                (
                    "galore_rank",
                    "Projection rank",
                    "GaLore and APOLLO only: the rank the block matrices' gradients are projected to; empty = 128, transformers' default (APOLLO-Mini: 1)",
                    Kind::Number { min: 1, max: 1 << 20 },
                ),
                (
                    "opt_impl",
                    "Optimizer kernel",
                    "foreach makes a state-sized temporary at the step; fused does not. The Trainer's default: fused from transformers 4.51 with PyTorch ≥ 2.8, foreach before, a for-loop before transformers 4.32",
                    opts(&[("foreach", "foreach (PyTorch default)"), ("fused", "fused"), ("for-loop", "for-loop")]),
                ),
                (
                    "opt16",
                    "Optimizer states in bf16",
                    "Adam's moments in bf16 beside fp32 weights: 2 bytes a state instead of 4 (torchtitan's fused_opt_states_bf16, Megatron-LM's --exp-avg-dtype bf16)",
                    Kind::Check,
                ),
                (
                    "opt_bwd",
                    "Optimizer step in backward",
                    "Each parameter is updated and its gradient freed as soon as the gradient is ready (torchtune's optimizer_in_bwd): the gradients never all exist at once",
                    Kind::Check,
                ),
                (
                    "grad_none",
                    "Free gradients after each step",
                    "zero_grad(set_to_none=True), the default since PyTorch 2.0; off, zeroed gradients stay allocated through the next step",
                    Kind::Check,
                ),
                (
                    "torch",
                    "PyTorch release",
                    "Releases differ in what autograd keeps: 1.13–2.1 keep mean's input, so an RMSNorm written as tensor ops keeps the fp32 square of its input too; up to 1.10 softmax and log-softmax keep their input, so eager attention keeps one more score-sized tensor per block and the loss its upcast logits. Before 2.0 zero_grad also kept the gradients and AdamW looped per parameter: set those two controls to match",
                    opts(&[
                        ("current", "2.2 or later"),
                        ("1.13-2.1", "1.13 – 2.1"),
                        ("1.11-1.12", "1.11 – 1.12"),
                        ("1.10-older", "1.10 or older"),
                    ]),
                ),
                (
                    "tf",
                    "transformers release",
                    "Releases differ in what the causal-LM loss holds: 4.46–4.48 copy the shifted fp32 logits beside their upcast inside the loss, 4 bytes per logit more at the loss's forward (2 more allocated at the peak under the Trainer, which drops the logits before backward); other releases hold as much as 4.49 and later",
                    opts(&[("current", "4.49 or later (or 4.45 or older)"), ("4.46-4.48", "4.46 – 4.48")]),
                ),
                (
                    "ttr",
                    "torchtune release",
                    "0.1–0.2 recipes wrap with FSDP1 and copy the shifted fp32 logits",
                    opts(&[("current", "0.3+"), ("0.2", "0.2"), ("0.1", "0.1")]),
                ),
                (
                    "ttn",
                    "torchtitan release",
                    "Up to 0.2.1 grouped k and v are repeated to every head before attention, which keeps them so; 0.3 projects q, k and v with one matmul and runs an MoE router's gate in fp32",
                    opts(&[("current", "0.3+"), ("0.2.2", "0.2.2"), ("0.2.1-older", "0.2.1 or older")]),
                ),
                (
                    "trl",
                    "TRL release",
                    "DPO through the model's logits: 0.15–0.28 keep only the policy's log-probabilities (and its logits where they are fp32) once its forward returns, then hold the reference's logits (0.19–0.28 its hidden states too); 0.12–0.14 keep a whole log-softmax of the logits instead; up to 0.11 the policy's logits are held beside it through the reference's pass (0.9–0.11 with the chosen half's NLL); 0.29 and later keep both outputs until the loss is taken and log the entropy over a copy of the logits",
                    opts(&[
                        ("current", "0.29+"),
                        ("0.19-0.28", "0.19 – 0.28"),
                        ("0.15-0.18", "0.15 – 0.18"),
                        ("0.12-0.14", "0.12 – 0.14"),
                        ("0.9-0.11", "0.9 – 0.11"),
                        ("0.5-0.8", "0.5 – 0.8"),
                    ]),
                ),
            ],
        ),
        (
            "Parallelism",
            vec![
                (
                    "shard",
                    "Data parallel / sharding",
                    "ZeRO/FSDP shard optimizer states, gradients, then weights across GPUs",
                    opts(&[
                        ("none", "none (one GPU)"),
                        ("data-parallel", "nn.DataParallel"),
                        ("ddp", "DDP"),
                        ("zero1", "ZeRO-1 / Megatron distributed optimizer"),
                        ("zero2", "ZeRO-2"),
                        ("zero3", "ZeRO-3"),
                        ("fsdp-full", "FSDP full shard"),
                        ("fsdp-grad-op", "FSDP shard grad op"),
                        ("hsdp", "HSDP (hybrid)"),
                    ]),
                ),
                (
                    "bucket_view",
                    "DDP: gradients as bucket views",
                    "gradient_as_bucket_view=True: the gradients live in DDP's allreduce buckets instead of beside a copy of them",
                    Kind::Check,
                ),
                (
                    "ds",
                    "DeepSpeed release",
                    "ZeRO-1/2: from 0.19 DeepSpeed flattens the parameters on the GPU, and the segments of their own tensors stay reserved beside the flat copy; before, it flattens through the host. From 0.18.3 it also clones the 16-bit partition on the GPU for an offloaded master",
                    opts(&[
                        ("current", "0.19 or later"),
                        ("0.18.3-0.18", "0.18.3 – 0.18.9"),
                        ("0.18.2-older", "0.18.2 or older"),
                    ]),
                ),
                ("hpz", "ZeRO++ hpZ group", "ZeRO-3 only: each GPU also keeps a secondary shard of the weights over this many GPUs (zero_hpz_partition_size, usually a node's), so that backward gathers within the node; 1 = off", Kind::Number { min: 1, max: 100_000 }),
                ("tp", "Tensor parallel", "Splits every block's matmuls (heads must divide evenly); the embedding and the logits split too only under Megatron-LM and torchtitan — under the Trainer and Accelerate every rank holds them whole", Kind::Number { min: 1, max: 1024 }),
                ("sp", "Sequence parallel", "With TP, also splits norms and dropout along the sequence", Kind::Check),
                ("pp", "Pipeline parallel", "Splits layers into stages; the first stage holds the most activations", Kind::Number { min: 1, max: 1024 }),
                (
                    "pp_sched",
                    "Pipeline schedule",
                    "Interleaving cuts the bubble but keeps more micro-batches in flight on stage 1",
                    opts(&[("one-f-one-b", "1F1B"), ("interleaved", "interleaved 1F1B")]),
                ),
                ("pp_mb", "Pipeline micro-batches", "Micro-batches per flush (0 = gradient accumulation steps)", Kind::Number { min: 0, max: 1 << 20 }),
                ("vstages", "Virtual stages", "Model chunks per GPU for the interleaved schedule", Kind::Number { min: 1, max: 1024 }),
                ("cp", "Context parallel", "Splits the sequence across GPUs", Kind::Number { min: 1, max: 1024 }),
                ("ep", "Expert parallel", "MoE: splits the routed experts across GPUs", Kind::Number { min: 1, max: 1 << 14 }),
                (
                    "off_opt",
                    "Optimizer offload",
                    "Moves optimizer states, master weights and fp32 gradients off the GPU; slows every step",
                    opts(&[("none", "none (on GPU)"), ("cpu", "CPU (host RAM)"), ("nvme", "NVMe")]),
                ),
                (
                    "off_par",
                    "Parameter offload",
                    "Moves the parameter shard off the GPU (ZeRO-3 or FSDP only); fetched layer by layer. Under FSDP the gradients and the optimizer step go to the CPU with it",
                    opts(&[("none", "none (on GPU)"), ("cpu", "CPU (host RAM)"), ("nvme", "NVMe")]),
                ),
            ],
        ),
        (
            "Activations",
            vec![
                (
                    "ckpt",
                    "Activation checkpointing",
                    "Recompute instead of storing: full keeps only each block's input (+33 % compute)",
                    opts(&[
                        ("none", "none"),
                        ("selective", "selective (attention core)"),
                        ("op-selective", "per-op selective"),
                        ("full", "full"),
                    ]),
                ),
                (
                    "ckpt_every",
                    "Checkpoint every k-th block",
                    "The policy on every k-th block only, the others keep all their activations: torchtitan's selective_ac_option = \"k\", Megatron-LM's --recompute-method block (1 = every block)",
                    Kind::Number { min: 1, max: 10_000 },
                ),
                (
                    "attn",
                    "Attention kernel",
                    "Eager attention stores the s² score matrix; flash does not",
                    opts(&[("flash", "flash / SDPA"), ("eager", "eager")]),
                ),
                (
                    "pad",
                    "Padded batches",
                    "Rows padded to a common length with an attention mask: transformers then hands SDPA the mask, which every block keeps, and expands grouped k/v to every head. Packed batches and flash-attn's varlen path have no mask",
                    Kind::Check,
                ),
                (
                    "dropout",
                    "Dropout in blocks",
                    "Each dropout keeps a 1-byte mask per element, and eager attention's also its dropped-out scores. Set by the model's config.json (GPT-2, BERT, OPT, T5, BART train with 0.1; Llama-style models with none) and off under LitGPT's, torchtune's and torchtitan's own model code",
                    Kind::Check,
                ),
                (
                    "loss",
                    "Loss",
                    "Full fp32 logits are often the single largest tensor",
                    opts(&[
                        ("standard", "full logits (fp32 upcast)"),
                        ("chunked-keep", "chunked, chunks kept (LitGPT)"),
                        ("chunked-free", "chunked, freed per chunk (torchtune)"),
                        ("fused", "fused linear + CE (Liger, CCE, Unsloth)"),
                        ("tiled-logprob", "fused LM head, 4096 × 32768 tiles (TRL ≥ 1.15)"),
                        ("chunked-nll", "chunked NLL, 256-token chunks (TRL 1.7–1.14 SFT)"),
                    ]),
                ),
                (
                    "obj",
                    "Objective",
                    "DPO and ORPO run chosen and rejected as one batch of twice the size; DPO's and KTO's full fine-tunes keep a frozen reference model. DPO over full logits (TRL up to 1.13) holds the policy's and the reference's logits and a copy for its metrics, fp32 under the Trainer's bf16; ORPO (TRL's trainer, LLaMA-Factory) always takes the full logits",
                    opts(&[
                        ("sft", "SFT / pre-training"),
                        ("dpo", "DPO (reference model)"),
                        ("orpo", "ORPO / SimPO (no reference)"),
                        ("kto", "KTO (reference model)"),
                    ]),
                ),
                (
                    "pre_ref",
                    "Reference log-probs precomputed",
                    "TRL's precompute_ref_log_probs: DPO's and KTO's reference log-probabilities computed once before training. No reference pass in the steps, and a full fine-tune keeps no reference model (under FSDP TRL still wraps one)",
                    Kind::Check,
                ),
                (
                    "lpk",
                    "TRL log-prob kernel (TRL ≥ 1.14)",
                    "TRL's Triton kernel for per-token log-probabilities (selective_log_softmax on CUDA from TRL 1.14): its ORPO keeps the logits and one gradient, where TRL up to 1.13 took them row by row and held more in fp32",
                    Kind::Check,
                ),
                ("act_off", "Activation offload", "Keeps only the block in flight on the GPU", Kind::Check),
                (
                    "upcast",
                    "fp32 upcasts (softmax, norms, loss)",
                    "Softmax, norms and cross-entropy computed in fp32 over 16-bit tensors, as transformers' and Megatron-LM's models do; plain PyTorch and LitGPT compute them in the tensors' dtype",
                    Kind::Check,
                ),
                ("compile", "torch.compile", "Fuses norms, activations and the loss: their fp32 intermediates are recomputed, not kept", Kind::Check),
                (
                    "fkern",
                    "Fused kernels (Liger / Unsloth)",
                    "RMSNorm keeps its 16-bit input, SwiGLU recomputes its activation in backward; pair with the fused loss",
                    Kind::Check,
                ),
            ],
        ),
        (
            "Fine-tuning",
            vec![
                (
                    "ft",
                    "Method",
                    "LoRA trains small adapters over a frozen base; QLoRA stores the base in 4 bits",
                    opts(&[
                        ("full", "full fine-tune / pretrain"),
                        ("lora", "LoRA"),
                        ("qlora", "QLoRA (4-bit base)"),
                        ("adapter", "other PEFT method"),
                    ]),
                ),
                (
                    "adapter",
                    "PEFT method",
                    "For other PEFT methods: what each keeps for backward beyond a frozen base",
                    opts(&[
                        ("generic", "frozen base only (prompt tuning, P-tuning, MiSS…)"),
                        ("llama-adapter", "LLaMA-Adapter"),
                        ("llama-adapter-v2", "LLaMA-Adapter v2"),
                        ("ia3", "IA³"),
                        ("ln-tuning", "LN tuning"),
                        ("boft", "BOFT"),
                        ("cast-inputs", "input casts (VeRA, C3A, OFT, AdaLoRA…)"),
                        ("delta-weight", "weight-sized update (LoHa, LoKr, FourierFT…)"),
                        ("osf", "OSF (PEFT ≥ 0.21)"),
                        ("osf-reconstruct", "OSF (PEFT 0.18–0.20)"),
                        ("hra", "HRA (Householder reflections)"),
                        ("shira", "SHiRA (sparse high-rank)"),
                        ("prefix-tuning", "prefix tuning"),
                    ]),
                ),
                (
                    "trainable",
                    "Trainable parameters",
                    "For other PEFT methods: the count PEFT's print_trainable_parameters() reports (filled in for LLaMA-Adapter, IA³, LN and prefix tuning)",
                    Kind::Number { min: 0, max: u32::MAX },
                ),
                (
                    "vtokens",
                    "Virtual tokens",
                    "Prompt, prefix or P-tuning tokens per sequence",
                    Kind::Number { min: 0, max: 1 << 20 },
                ),
                (
                    "targets",
                    "LoRA targets",
                    "Each targeted matrix keeps its adapter's input for backward",
                    opts(&[
                        ("all-linear", "all linear layers"),
                        ("q+v", "q, v"),
                        ("q+k+v+o", "q, k, v, o (attention)"),
                        ("gate+up+down", "gate, up, down (MLP)"),
                    ]),
                ),
                ("rank", "LoRA rank", "Adapter parameters: r·(d_in + d_out) per target", Kind::Number { min: 1, max: 65536 }),
                (
                    "lora_var",
                    "LoRA variant",
                    "DoRA also keeps each adapted layer's base and LoRA outputs; LoRA-FA freezes A, so no adapter keeps its input",
                    opts(&[("lora", "LoRA"), ("dora", "DoRA"), ("lora-fa", "LoRA-FA (A frozen)")]),
                ),
                ("lora_dropout", "LoRA dropout", "With dropout each adapter keeps a dropped-out copy of its input and a mask", Kind::Check),
                (
                    "ad16",
                    "16-bit adapters",
                    "Adapter weights, gradients and optimizer states in the run's 16-bit dtype instead of PEFT's fp32 (autocast_adapter_dtype=False; TRL's default for a quantized base from 0.26, and for sharded QLoRA): no fp32 copy of each adapter's input either",
                    Kind::Check,
                ),
                (
                    "bits",
                    "Base weight bits",
                    "Frozen base: 16-bit, 8-bit or 4-bit NF4",
                    opts(&[("16", "16"), ("8", "8"), ("4", "4 (NF4)"), ("32", "32")]),
                ),
                (
                    "dq",
                    "Double-quantized NF4",
                    "QLoRA's double quantization (bnb_4bit_use_double_quant): the 4-bit base's block scales are quantized too, 0.37 bits per weight less",
                    Kind::Check,
                ),
                (
                    "bnb432",
                    "bitsandbytes ≥ 0.43.2",
                    "From 0.43.2 bitsandbytes' 4-bit matmul no longer saves its input for backward: each frozen 4-bit matrix keeps nothing of it. With an 8-bit base, read as 0.45.0 or later: LLM.int8 then keeps no int8 copy of a frozen matrix's input. On by default: every framework's current release runs a newer one; untick it for an older pinned release (LitGPT up to 0.5.4 pinned 0.42.0)",
                    Kind::Check,
                ),
                (
                    "kbit32",
                    "prepare_model_for_kbit_training",
                    "PEFT casts the embeddings, norms and unquantized head of a 4/8-bit base to fp32, and the residual stream follows; it also turns checkpointing on unless told not to",
                    Kind::Check,
                ),
                (
                    "emb16",
                    "Embeddings back in bf16 (TRL ≤ 0.21)",
                    "After the preparation, TRL's SFTTrainer up to 0.21 put a 4-bit model's embeddings and LM head back in bf16 under bf16=True, leaving the norms fp32: the embeddings weigh half and the head needs no 16-bit copy; the residual stream stays fp32",
                    Kind::Check,
                ),
            ],
        ),
        (
            "Runtime",
            vec![
                (
                    "ctx_mib",
                    "CUDA context (MiB)",
                    "What a process holds outside PyTorch's allocator: CUDA context, kernels, cuBLAS workspaces; grows with the CUDA release",
                    Kind::Number { min: 0, max: 1 << 20 },
                ),
                ("other_mib", "Other processes (MiB)", "Memory other processes hold on the same GPU", Kind::Number { min: 0, max: 100_000_000 }),
                (
                    "expandable",
                    "Expandable segments",
                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the allocator grows segments in place, so little is reserved beyond what is allocated",
                    Kind::Check,
                ),
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    /// Every choice a select offers is a value its URL key reads back as
    /// itself: a new enum value (an optimizer, a release) cannot be offered
    /// under an id the plan does not know, nor one read as another.
    #[test]
    fn every_choice_reads_back_through_the_url() {
        use cost_model::query::apply;
        let default = cost_model::Plan::default();
        // The adapter's controls act under the method they belong to.
        let lora = apply(&default, "ft", "lora").unwrap();
        let adapter = apply(&default, "ft", "adapter").unwrap();
        let mut wrong = Vec::new();
        for (_, fields) in super::sections() {
            for (key, _, _, kind) in fields {
                let super::Kind::Select(options) = kind else {
                    continue;
                };
                for (value, _) in options {
                    // "custom" opens a model's or a GPU's own fields.
                    if value == "custom" {
                        continue;
                    }
                    let base = match key {
                        "targets" | "lora_var" | "bits" => &lora,
                        "adapter" => &adapter,
                        _ => &default,
                    };
                    // QLoRA is LoRA over a 4-bit base, and reads back so.
                    let (want_key, want) = match (key, value.as_str()) {
                        ("ft", "qlora") => ("bits", "4"),
                        _ => (key, value.as_str()),
                    };
                    match apply(base, key, &value) {
                        Ok(p) => {
                            let back = cost_model::query::value_of(&p, want_key);
                            if back.as_deref() != Some(want) {
                                wrong.push(format!("{key}={value} reads back as {back:?}"));
                            }
                        }
                        Err(e) => wrong.push(format!("{key}={value}: {e}")),
                    }
                }
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    /// Without JavaScript a changed control submits the whole form — every
    /// control's value and the hidden fields naming what the page showed
    /// (`plan_form.rs`) — and the server must read the same plan the hydrated
    /// page computes with `apply`: for every choice of every select, every
    /// checkbox flipped and every number doubled and halved.
    #[test]
    fn every_choice_submitted_without_javascript_reads_as_applied() {
        use cost_model::query::{all_pairs, apply, auto_trainable, decode, encode, value_of};
        let default = cost_model::Plan::default();
        let bases = [
            default.clone(),
            apply(&default, "ft", "lora").unwrap(),
            apply(&default, "ft", "adapter").unwrap(),
            apply(&apply(&default, "fw", "trl").unwrap(), "ft", "qlora").unwrap(),
        ];
        let mut wrong = Vec::new();
        for base in &bases {
            let mut form: Vec<(String, String)> = all_pairs(base)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            for (k, v) in [
                ("model_prev", value_of(base, "model").unwrap_or_default()),
                ("fw_prev", base.framework.id().to_string()),
                ("obj_prev", value_of(base, "obj").unwrap_or_default()),
                ("ttr_prev", value_of(base, "ttr").unwrap_or_default()),
                ("ft_prev", value_of(base, "ft").unwrap_or_default()),
                (
                    "trainable_auto",
                    auto_trainable(base)
                        .map(|n| n.to_string())
                        .unwrap_or_default(),
                ),
                ("gpu_prev", base.gpu.id.clone()),
            ] {
                form.push((k.to_string(), v));
            }
            for (_, fields) in super::sections() {
                for (key, _, _, kind) in fields {
                    let shown = value_of(base, key).unwrap_or_default();
                    // Each choice of a select; a checkbox flipped; a number
                    // doubled and halved.
                    let choices: Vec<String> = match kind {
                        super::Kind::Select(options) => {
                            options.into_iter().map(|(v, _)| v).collect()
                        }
                        super::Kind::Check => {
                            vec![if shown == "1" { "0" } else { "1" }.to_string()]
                        }
                        _ => match shown.parse::<u64>() {
                            Ok(n) => vec![(n * 2).max(1).to_string(), (n / 2).max(1).to_string()],
                            Err(_) => vec![],
                        },
                    };
                    for value in choices {
                        // A control left at its value fires no change.
                        if value == "custom" || shown == value {
                            continue;
                        }
                        let Ok(hydrated) = apply(base, key, &value) else {
                            continue;
                        };
                        let submitted: Vec<(String, String)> = form
                            .iter()
                            .map(|(k, v)| {
                                let v = if k == key { value.clone() } else { v.clone() };
                                (k.clone(), v)
                            })
                            .collect();
                        match decode(&submitted) {
                            Ok(p) if p == hydrated => {}
                            Ok(p) => wrong.push(format!(
                                "{key}={value} from {}: form {} vs applied {}",
                                encode(base),
                                encode(&p),
                                encode(&hydrated)
                            )),
                            Err(e) => {
                                wrong.push(format!("{key}={value} from {}: {e}", encode(base)))
                            }
                        }
                    }
                }
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }
}
