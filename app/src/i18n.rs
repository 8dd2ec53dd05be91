//! English and Simplified Chinese. Every user-facing string is written in
//! English in the code and looked up here; a test checks that each has a
//! Chinese translation. Chinese uses the established terms of the seed
//! articles (显存, 梯度检查点, 混合精度, 梯度累积, 张量并行, 流水线并行, …).

use leptos::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    En,
    Zh,
}

impl Lang {
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    /// The `lang` attribute of the document.
    pub fn html(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh-CN",
        }
    }

    pub fn parse(s: &str) -> Option<Lang> {
        let s = s.trim().to_ascii_lowercase();
        if s.starts_with("zh") {
            Some(Lang::Zh)
        } else if s.starts_with("en") {
            Some(Lang::En)
        } else {
            None
        }
    }

    /// The `lang=` URL parameter, if any.
    pub fn from_query(search: &str) -> Option<Lang> {
        cost_model::query::pairs(search)
            .into_iter()
            .rev()
            .find(|(k, _)| k == "lang")
            .and_then(|(_, v)| Lang::parse(&v))
    }

    /// The first supported language of an `Accept-Language` header (by q-value).
    pub fn from_accept_language(header: &str) -> Lang {
        let mut best: Option<(f32, Lang)> = None;
        for part in header.split(',') {
            let mut it = part.split(';');
            let tag = it.next().unwrap_or("");
            let q = it
                .find_map(|p| {
                    p.trim()
                        .strip_prefix("q=")
                        .and_then(|v| v.parse::<f32>().ok())
                })
                .unwrap_or(1.0);
            if let Some(l) = Lang::parse(tag) {
                if best.is_none_or(|(bq, _)| q > bq) {
                    best = Some((q, l));
                }
            }
        }
        best.map(|b| b.1).unwrap_or(Lang::En)
    }

    /// Translates an English UI string (falls back to English).
    pub fn t(self, en: &str) -> &str {
        match self {
            Lang::En => en,
            Lang::Zh => ZH
                .iter()
                .find(|(e, _)| *e == en)
                .map(|(_, z)| *z)
                .unwrap_or(en),
        }
    }
}

/// The page's language, provided as context by the app.
pub fn use_lang() -> RwSignal<Lang> {
    use_context::<RwSignal<Lang>>().unwrap_or_else(|| RwSignal::new(Lang::En))
}

/// English → 简体中文.
pub const ZH: &[(&str, &str)] = &[
    // Page
    (
        "What each GPU will hold while training — before you launch.",
        "训练时每张 GPU 要占多少显存——启动之前就知道。",
    ),
    ("Page not found", "页面不存在"),
    ("Back to the planner", "返回规划器"),
    ("Apply", "应用"),
    ("Global batch", "全局批大小"),
    ("sequences", "条序列"),
    ("tokens per optimizer step", "个 token / 每次优化器更新"),
    // Sections
    ("Model and hardware", "模型与硬件"),
    ("Batch", "批大小"),
    ("Precision and optimizer", "精度与优化器"),
    ("Parallelism", "并行策略"),
    ("Activations", "激活值"),
    ("Fine-tuning", "微调"),
    ("Model dimensions", "模型维度"),
    ("Custom dimensions", "自定义维度"),
    ("Layers", "层数"),
    ("Hidden size", "隐藏层维度"),
    ("Attention heads", "注意力头数"),
    ("KV heads", "KV 头数"),
    ("Head dim", "每头维度"),
    ("FFN width", "FFN 中间维度"),
    ("Vocabulary", "词表大小"),
    ("Experts", "专家数"),
    ("Experts per token", "每个 token 的专家数"),
    ("MLP", "MLP 结构"),
    (
        "Transformer blocks (decoder blocks for encoder–decoder models)",
        "Transformer 层数（编码器-解码器模型为解码器层数）",
    ),
    ("Model width h", "模型宽度 h"),
    ("Query heads a", "查询头数 a"),
    (
        "Key/value heads (fewer than heads = GQA/MQA)",
        "键/值头数（少于注意力头数即 GQA/MQA）",
    ),
    (
        "Width of one head (usually hidden / heads)",
        "单个头的宽度（通常为 hidden / heads）",
    ),
    (
        "MLP inner width (per expert for MoE)",
        "MLP 中间层宽度（MoE 为每个专家）",
    ),
    (
        "Rows of the embedding; the logits are batch × sequence × vocabulary",
        "嵌入表行数；logits 大小为 批大小 × 序列长度 × 词表",
    ),
    (
        "Routed experts per MoE layer (0 = dense)",
        "每个 MoE 层的路由专家数（0 表示稠密模型）",
    ),
    ("Top-k routing", "Top-k 路由"),
    ("Shared experts", "共享专家数"),
    (
        "Always-active experts beside the routed ones, counted in routed experts' widths (DeepSeek-MoE: 2; Qwen1.5-MoE's one 4× wide: 4)",
        "路由专家之外始终激活的专家，按路由专家宽度计数（DeepSeek-MoE：2；Qwen1.5-MoE 的一个 4 倍宽共享专家：4）",
    ),
    ("Dense blocks", "稠密层数"),
    (
        "MoE blocks replaced by one dense MLP (DeepSeek / GLM-4.5 first_k_dense_replace, Llama-4 Maverick every other block)",
        "用一个稠密 MLP 代替专家的层（DeepSeek / GLM-4.5 的 first_k_dense_replace，Llama-4 Maverick 每隔一层）",
    ),
    ("Dense FFN width", "稠密层 FFN 宽度"),
    ("The dense blocks' MLP inner width", "稠密层 MLP 的中间宽度"),
    ("KV latent rank", "KV 潜在维度"),
    (
        "Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): kv_lora_rank, the shared k/v latent; 0 = ordinary attention, head dim then q/k's width per head",
        "多头潜在注意力（DeepSeek-V2/V3、Kimi-K2）：kv_lora_rank，k/v 共享的潜在向量宽度；0 表示普通注意力，此时 head dim 为每个头的 q/k 宽度",
    ),
    ("Q latent rank", "Q 潜在维度"),
    ("Latent attention: q_lora_rank (0 = one q_proj)", "潜在注意力：q_lora_rank（0 表示单个 q_proj）"),
    ("Rotary head dim", "旋转位置编码头维度"),
    (
        "Latent attention: qk_rope_head_dim, the rotary part of each q/k head",
        "潜在注意力：qk_rope_head_dim，每个 q/k 头中旋转位置编码的部分",
    ),
    ("Value head dim", "Value 头维度"),
    ("Latent attention: v_head_dim", "潜在注意力：v_head_dim"),
    (
        "Gated (SwiGLU) MLPs keep three ffn-wide tensors per token",
        "门控 (SwiGLU) MLP 每个 token 保存三个 ffn 宽度的张量",
    ),
    ("gated (SwiGLU)", "门控 (SwiGLU)"),
    ("plain (GELU)", "普通 (GELU)"),
    ("Paste config.json", "粘贴 config.json"),
    (
        "Use a Hugging Face config.json",
        "使用 Hugging Face 的 config.json",
    ),
    ("Copy link", "复制链接"),
    ("Mixed precision", "混合精度"),
    ("FSDP full shard", "FSDP 完全分片"),
    (
        "ZeRO-1 / Megatron distributed optimizer",
        "ZeRO-1 / Megatron 分布式优化器",
    ),
    (
        "Distributed optimizer (shard master weights and Adam states)",
        "分布式优化器（切分主权重与 Adam 状态）",
    ),
    ("FSDP shard grad op", "FSDP 分片梯度与优化器状态"),
    (
        "Smaller micro-batch + gradient accumulation",
        "减小微批次 + 梯度累积",
    ),
    ("Offload the checkpointed activations to CPU", "检查点激活卸载到 CPU"),
    ("Offload optimizer states to CPU", "优化器状态卸载到 CPU"),
    ("Offload parameters to CPU too", "参数也卸载到 CPU"),
    ("DDP: gradients as bucket views", "DDP：梯度作为通信桶的视图"),
    (
        "gradient_as_bucket_view=True: the gradients live in DDP's allreduce buckets instead of beside a copy of them",
        "gradient_as_bucket_view=True：梯度直接存放在 DDP 的 allreduce 通信桶中，不再另存一份副本",
    ),
    (
        "DDP gradient_as_bucket_view (no second gradient copy)",
        "DDP gradient_as_bucket_view（不再多存一份梯度）",
    ),
    ("Search models…", "搜索模型…"),
    ("Link copied", "链接已复制"),
    ("Counter", "统计口径"),
    ("Pipeline schedule", "流水线调度"),
    ("Pipeline micro-batches", "流水线微批次数"),
    ("Virtual stages", "虚拟阶段数"),
    ("LoRA targets", "LoRA 目标模块"),
    (
        "Interleaving cuts the bubble but keeps more micro-batches in flight on stage 1",
        "交错调度减少气泡，但第一阶段在途的微批次更多",
    ),
    (
        "Micro-batches per flush (0 = gradient accumulation steps)",
        "每次刷新的微批次数（0 表示等于梯度累积步数）",
    ),
    (
        "Model chunks per GPU for the interleaved schedule",
        "交错调度下每张卡上的模型块数",
    ),
    (
        "Each targeted matrix keeps its adapter's input for backward",
        "每个目标矩阵都会为反向保存其适配器的输入",
    ),
    ("interleaved 1F1B", "交错 1F1B"),
    ("all linear layers", "所有线性层"),
    ("q, v", "q、v"),
    ("q, k, v, o (attention)", "q、k、v、o（注意力）"),
    ("gate, up, down (MLP)", "gate、up、down（MLP）"),
    // Labels
    ("Model", "模型"),
    ("GPU", "GPU 型号"),
    ("GPUs", "GPU 数量"),
    ("GPU memory (MiB)", "GPU 显存 (MiB)"),
    (
        "memory.total as nvidia-smi prints it: change it for a MIG slice or a card not in the list",
        "nvidia-smi 显示的 memory.total：MIG 切片或列表里没有的卡可在此修改",
    ),
    ("Another GPU (enter its memory)", "其他 GPU（填写其显存）"),
    ("Framework", "训练框架"),
    ("Micro-batch", "微批次大小 (micro-batch)"),
    ("Sequence length", "序列长度"),
    ("Target length", "目标序列长度（解码器）"),
    ("Projection rank", "投影秩"),
    ("Frozen layers", "冻结层数"),
    ("Objective", "训练目标"),
    (
        "DPO and ORPO run chosen and rejected as one batch of twice the size; DPO's and KTO's full fine-tunes keep a frozen reference model. DPO over full logits (TRL up to 1.13) holds the policy's and the reference's logits and a copy for its metrics, fp32 under the Trainer's bf16; ORPO (TRL's trainer, LLaMA-Factory) always takes the full logits",
        "DPO 与 ORPO 把 chosen 和 rejected 拼成两倍大小的批次；DPO 与 KTO 的全参微调还要保留一份冻结的参考模型。完整 logits 下的 DPO（TRL 1.13 及以前）同时持有策略模型与参考模型的 logits，以及一份用于指标的拷贝；在 Trainer 的 bf16 下为 fp32；ORPO（TRL 的 trainer、LLaMA-Factory）总是使用完整 logits",
    ),
    ("SFT / pre-training", "SFT / 预训练"),
    ("Reference log-probs precomputed", "预先计算参考模型 log-probs"),
    (
        "TRL's precompute_ref_log_probs: DPO's and KTO's reference log-probabilities computed once before training. No reference pass in the steps, and a full fine-tune keeps no reference model (under FSDP TRL still wraps one)",
        "TRL 的 precompute_ref_log_probs：DPO 与 KTO 的参考 log-probabilities 在训练前一次算好。训练步中不再跑参考模型，全参微调也不必保留参考模型（FSDP 下 TRL 仍会包装一份）",
    ),
    ("TRL log-prob kernel (TRL ≥ 1.14)", "TRL log-prob 内核（TRL ≥ 1.14）"),
    (
        "TRL's Triton kernel for per-token log-probabilities (selective_log_softmax on CUDA from TRL 1.14): its ORPO keeps the logits and one gradient, where TRL up to 1.13 took them row by row and held more in fp32",
        "TRL 计算逐 token log-probabilities 的 Triton 内核（TRL 1.14 起 CUDA 上的 selective_log_softmax）：其 ORPO 只保留 logits 与一份梯度；TRL 1.13 及以前逐行计算，在 fp32 下占用更多",
    ),
    (
        "Precompute the reference log-probs (precompute_ref_log_probs)",
        "预先计算参考 log-probs (precompute_ref_log_probs)",
    ),
    ("DPO (reference model)", "DPO（含参考模型）"),
    ("ORPO / SimPO (no reference)", "ORPO / SimPO（无参考模型）"),
    ("KTO (reference model)", "KTO（含参考模型）"),
    (
        "Full fine-tuning only: the bottom blocks (and an untied embedding) left frozen keep no gradients, optimizer states or activations",
        "仅全参微调：冻结的底部层（及未绑定的嵌入层）不保留梯度、优化器状态和激活值",
    ),
    (
        "GaLore and APOLLO only: the rank the block matrices' gradients are projected to; empty = 128, transformers' default (APOLLO-Mini: 1)",
        "仅 GaLore 与 APOLLO：各层权重矩阵的梯度投影到的秩；留空 = 128（transformers 的默认值；APOLLO-Mini 为 1）",
    ),
    ("Gradient accumulation", "梯度累积步数"),
    ("Precision", "精度"),
    ("Optimizer", "优化器"),
    ("Optimizer kernel", "优化器实现"),
    ("Data parallel / sharding", "数据并行 / 分片 (ZeRO/FSDP)"),
    ("Tensor parallel", "张量并行 (TP)"),
    ("Sequence parallel", "序列并行 (SP)"),
    ("Pipeline parallel", "流水线并行 (PP)"),
    ("Context parallel", "上下文并行 (CP)"),
    ("Optimizer offload", "优化器状态卸载 (offload)"),
    ("Parameter offload", "参数卸载 (offload)"),
    ("Activation checkpointing", "梯度检查点 (激活重计算)"),
    ("Attention kernel", "注意力实现"),
    ("Loss", "损失计算"),
    ("Activation offload", "激活值卸载到 CPU"),
    ("Padded batches", "批次含填充 (padding)"),
    ("Dropout in blocks", "层内 dropout"),
    ("torch.compile", "torch.compile 编译"),
    ("Method", "方法"),
    ("LoRA rank", "LoRA 秩 (rank)"),
    ("Base weight bits", "基座权重位数"),
    ("LoRA variant", "LoRA 变体"),
    ("Free gradients after each step", "每步之后释放梯度"),
    ("PyTorch release", "PyTorch 版本"),
    ("2.2 or later", "2.2 及以后"),
    ("1.10 or older", "1.10 及以前"),
    ("1.13 – 2.1", "1.13 – 2.1"),
    ("1.11 – 1.12", "1.11 – 1.12"),
    ("transformers release", "transformers 版本"),
    ("4.49 or later (or 4.45 or older)", "4.49 及以后（或 4.45 及以前）"),
    ("4.46 – 4.48", "4.46 – 4.48"),
    (
        "Releases differ in what the causal-LM loss holds: 4.46–4.48 copy the shifted fp32 logits beside their upcast inside the loss, 4 bytes per logit more at the loss's forward (2 more allocated at the peak under the Trainer, which drops the logits before backward); other releases hold as much as 4.49 and later",
        "各版本的因果语言模型损失所持有的张量不同：4.46–4.48 在损失内部除了上转（upcast）的 fp32 logits 外还复制一份移位后的 fp32 logits，损失前向时每个 logit 多 4 字节（在 Trainer 下已分配（allocated）峰值多 2 字节，因为它在反向之前丢弃 logits）；其他版本与 4.49 及以后持有的一样多",
    ),
    ("DeepSpeed release", "DeepSpeed 版本"),
    ("0.19 or later", "0.19 及以后"),
    ("0.18.3 – 0.18.9", "0.18.3 – 0.18.9"),
    ("0.18.2 or older", "0.18.2 及以前"),
    (
        "ZeRO-1/2: from 0.19 DeepSpeed flattens the parameters on the GPU, and the segments of their own tensors stay reserved beside the flat copy; before, it flattens through the host. From 0.18.3 it also clones the 16-bit partition on the GPU for an offloaded master",
        "ZeRO-1/2：从 0.19 起 DeepSpeed 在 GPU 上展平参数，参数原张量所占的段在展平副本之外仍被保留（reserved）；此前经由主机内存展平。从 0.18.3 起，即使主权重卸载到 CPU，也会在 GPU 上克隆一份 16 位分区",
    ),
    (
        "Load the frozen base in 16-bit (torch_dtype=bfloat16)",
        "以 16 位加载冻结的基座（torch_dtype=bfloat16）",
    ),
    (
        "Keep the 4-bit base's embeddings and norms in 16-bit",
        "4 位基座的词嵌入和归一化层保持 16 位",
    ),
    ("Double-quantized NF4", "双重量化 NF4"),
    (
        "Double-quantize the 4-bit base (bnb_4bit_use_double_quant)",
        "对 4 位基座做双重量化（bnb_4bit_use_double_quant）",
    ),
    (
        "QLoRA's double quantization (bnb_4bit_use_double_quant): the 4-bit base's block scales are quantized too, 0.37 bits per weight less",
        "QLoRA 的双重量化（bnb_4bit_use_double_quant）：4 位基座的分块缩放因子也被量化，每个权重少 0.37 位",
    ),
    ("bitsandbytes ≥ 0.43.2", "bitsandbytes ≥ 0.43.2"),
    ("Reduce gradients every micro-batch", "每个微批次都规约梯度"),
    (
        "Accelerate's sync_each_batch: FSDP reduce-scatters after each micro-batch instead of accumulating unsharded gradients under no_sync; more communication, less memory. Accelerate before 1.11 (axolotl 0.12 and earlier) did this for FSDP2 anyway: its no_sync did not reach FSDP2 modules",
        "Accelerate 的 sync_each_batch：FSDP 在每个微批次后做 reduce-scatter，而不是在 no_sync 下累积未分片的梯度；通信更多，显存更少。Accelerate 1.11 之前（axolotl 0.12 及更早）对 FSDP2 本来就是这样：它的 no_sync 作用不到 FSDP2 模块",
    ),
    (
        "Reduce gradients every micro-batch (sync_each_batch)",
        "每个微批次都规约梯度 (sync_each_batch)",
    ),
    (
        "Pack the batches (or flash-attn varlen): no padding mask",
        "打包批次 (或 flash-attn 变长路径)：不再有填充掩码",
    ),
    (
        "From 0.43.2 bitsandbytes' 4-bit matmul no longer saves its input for backward: each frozen 4-bit matrix keeps nothing of it. With an 8-bit base, read as 0.45.0 or later: LLM.int8 then keeps no int8 copy of a frozen matrix's input. On by default: every framework's current release runs a newer one; untick it for an older pinned release (LitGPT up to 0.5.4 pinned 0.42.0)",
        "从 0.43.2 起，bitsandbytes 的 4 位矩阵乘不再为反向保存输入：冻结的 4 位矩阵不保留其输入。8 位底座则视为 0.45.0 及以后：LLM.int8 不再为冻结矩阵的输入保留 int8 副本。默认勾选：各框架的当前版本都使用更新的 bitsandbytes；若固定了旧版本请取消勾选 (LitGPT 0.5.4 及以前固定为 0.42.0)",
    ),
    ("prepare_model_for_kbit_training", "prepare_model_for_kbit_training"),
    (
        "PEFT casts the embeddings, norms and unquantized head of a 4/8-bit base to fp32, and the residual stream follows; it also turns checkpointing on unless told not to",
        "PEFT 把 4/8 位基座的词嵌入、归一化层和未量化的输出头转为 fp32，残差流随之变为 fp32；除非另行指定，它还会开启激活检查点",
    ),
    ("16-bit adapters", "16 位适配器"),
    (
        "Adapter weights, gradients and optimizer states in the run's 16-bit dtype instead of PEFT's fp32 (autocast_adapter_dtype=False; TRL's default for a quantized base from 0.26, and for sharded QLoRA): no fp32 copy of each adapter's input either",
        "适配器的权重、梯度和优化器状态使用训练的 16 位数据类型，而不是 PEFT 默认的 fp32（autocast_adapter_dtype=False；TRL 0.26 起对量化基座的默认做法，以及分片的 QLoRA）：也不再保留每个适配器输入的 fp32 副本",
    ),
    ("Embeddings back in bf16 (TRL ≤ 0.21)", "词嵌入转回 bf16（TRL ≤ 0.21）"),
    (
        "After the preparation, TRL's SFTTrainer up to 0.21 put a 4-bit model's embeddings and LM head back in bf16 under bf16=True, leaving the norms fp32: the embeddings weigh half and the head needs no 16-bit copy; the residual stream stays fp32",
        "预处理之后，TRL 0.21 及更早的 SFTTrainer 在 bf16=True 时把 4 位模型的词嵌入和输出头转回 bf16，归一化层仍为 fp32：词嵌入显存减半，输出头无需 16 位副本；残差流仍为 fp32",
    ),
    ("Fused kernels (Liger / Unsloth)", "融合算子（Liger / Unsloth）"),
    (
        "Fused kernels (Liger): RMSNorm, SwiGLU, linear + cross-entropy",
        "融合算子（Liger）：RMSNorm、SwiGLU、线性层 + 交叉熵",
    ),
    ("Output head", "输出头"),
    ("Sliding window", "滑动窗口"),
    ("language-model head (vocab logits)", "语言模型头（词表 logits）"),
    ("classification head", "分类头"),
    ("LoRA dropout", "LoRA dropout"),
    // Hints
    (
        "For other PEFT methods: what each keeps for backward beyond a frozen base",
        "用于其他 PEFT 方法：除冻结基座外，各方法为反向传播额外保存的内容",
    ),
    (
        "For other PEFT methods: the count PEFT's print_trainable_parameters() reports (filled in for LLaMA-Adapter, IA³, LN and prefix tuning)",
        "用于其他 PEFT 方法：PEFT 的 print_trainable_parameters() 报告的数量（LLaMA-Adapter、IA³、LN 调优和前缀调优会自动填入）",
    ),
    (
        "Prompt, prefix or P-tuning tokens per sequence",
        "每个序列的 prompt、prefix 或 P-tuning 虚拟 token 数",
    ),
    (
        "Preset dimensions from the model's config.json",
        "预设维度来自模型的 config.json",
    ),
    (
        "DoRA also keeps each adapted layer's base and LoRA outputs; LoRA-FA freezes A, so no adapter keeps its input",
        "DoRA 还会为每个适配层保存基座输出和 LoRA 输出；LoRA-FA 冻结 A，适配器不再保存其输入",
    ),
    (
        "zero_grad(set_to_none=True), the default since PyTorch 2.0; off, zeroed gradients stay allocated through the next step",
        "zero_grad(set_to_none=True)，PyTorch 2.0 起的默认行为；关闭时清零的梯度会一直占用显存到下一步",
    ),
    (
        "Releases differ in what autograd keeps: 1.13–2.1 keep mean's input, so an RMSNorm written as tensor ops keeps the fp32 square of its input too; up to 1.10 softmax and log-softmax keep their input, so eager attention keeps one more score-sized tensor per block and the loss its upcast logits. Before 2.0 zero_grad also kept the gradients and AdamW looped per parameter: set those two controls to match",
        "各版本的 autograd 为反向保留的张量不同：1.13–2.1 中 mean 保存其输入，以张量运算实现的 RMSNorm 因而还会保留输入的 fp32 平方；1.10 及以前 softmax 与 log-softmax 保存输入，eager 注意力每个块多保留一个注意力分数大小的张量，损失多保留其升精度后的 logits。2.0 之前 zero_grad 还会保留梯度、AdamW 逐参数循环：请同时相应设置这两项",
    ),
    (
        "RMSNorm keeps its 16-bit input, SwiGLU recomputes its activation in backward; pair with the fused loss",
        "RMSNorm 只保存 16 位输入，SwiGLU 在反向时重算激活；可与融合损失搭配使用",
    ),
    (
        "Attention window in tokens (0 = none); from there on transformers' SDPA path expands grouped k/v",
        "注意力窗口长度（token，0 表示无）；序列达到该长度时 transformers 的 SDPA 路径会把分组的 k/v 扩展到每个头",
    ),
    (
        "A classification head (reward model, BERT classifier) makes no vocab logits",
        "分类头（奖励模型、BERT 分类器）不产生词表大小的 logits",
    ),
    (
        "With dropout each adapter keeps a dropped-out copy of its input and a mask",
        "开启 dropout 时，每个适配器都保存一份 dropout 后的输入副本和掩码",
    ),
    (
        "Capacity as nvidia-smi reports it",
        "容量按 nvidia-smi 显示的数值",
    ),
    ("All GPUs in the run", "本次训练使用的全部 GPU"),
    (
        "Its documented defaults fill loss, checkpointing, activation offload, fused kernels, optimizer, upcast, k-bit preparation, NF4 double quantization and sequence-parallel settings",
        "按框架文档中的默认值设置损失、检查点、激活卸载、融合算子、优化器、fp32 上转、k-bit 预处理、NF4 双重量化和序列并行",
    ),
    (
        "Sequences per GPU per forward: activations grow linearly",
        "每张卡每次前向的样本数：激活值随之线性增长",
    ),
    (
        "Tokens per sequence as run (padded length, not the cap)",
        "实际运行的每条序列 token 数（填充后的长度，不是上限）",
    ),
    (
        "Encoder–decoder models (T5, BART) only: the decoder's tokens, the labels' padded length; empty = the sequence length",
        "仅编码器–解码器模型（T5、BART）：解码器的 token 数，即标签填充后的长度；留空 = 与序列长度相同",
    ),
    (
        "Same global batch with a smaller micro-batch; costs steps, not memory — except under FSDP with the Trainer, Accelerate or LitGPT, which keep the full unsharded gradients between micro-batches (see the next switch)",
        "用更小的微批次保持全局批大小：多花步数，不占显存——但在 FSDP 下使用 Trainer、Accelerate 或 LitGPT 时例外：它们在微批次之间保留完整的未分片梯度（见下一个开关）",
    ),
    (
        "AMP keeps fp32 weights; pure 16-bit halves weights and gradients. transformers 5 loads a checkpoint in its own dtype (bf16: pure here, even with --bf16), transformers 4 in fp32 (AMP); under FSDP, Accelerate upcasts trainable 16-bit weights to fp32 when --bf16/--fp16 is on (AMP); LLaMA-Factory upcasts trainable weights to fp32 unless pure_bf16 or ZeRO-3 (AMP), ms-swift trains in the checkpoint's dtype (pure)",
        "混合精度 (AMP) 保留 fp32 权重；纯 16 位让权重和梯度减半。transformers 5 默认按检查点自身的精度加载（bf16：此处即纯 bf16，即使开启 --bf16），transformers 4 默认 fp32（AMP）；在 FSDP 下开启 --bf16/--fp16 时，Accelerate 会把可训练的 16 位权重升为 fp32（AMP）；LLaMA-Factory 除非设置 pure_bf16 或使用 ZeRO-3，否则把可训练权重升为 fp32（AMP），ms-swift 按检查点自身的精度训练（纯 16 位）",
    ),
    (
        "Adam keeps two states per trainable parameter; 8-bit and SGD keep less",
        "Adam 为每个可训练参数保存两个状态；8-bit 与 SGD 更省",
    ),
    (
        "foreach makes a state-sized temporary at the step; fused does not. The Trainer's default: fused from transformers 4.51 with PyTorch ≥ 2.8, foreach before, a for-loop before transformers 4.32",
        "foreach 在更新时产生与状态同样大的临时张量；fused 不会。Trainer 的默认：transformers 4.51 起且 PyTorch ≥ 2.8 时为 fused，此前为 foreach，transformers 4.32 之前为逐参数循环",
    ),
    (
        "ZeRO/FSDP shard optimizer states, gradients, then weights across GPUs",
        "ZeRO/FSDP 依次把优化器状态、梯度、权重切分到各卡",
    ),
    (
        "Splits every matmul; heads must divide evenly",
        "切分每个矩阵乘；注意力头数必须能整除",
    ),
    (
        "With TP, also splits norms and dropout along the sequence",
        "配合张量并行，沿序列维切分 norm 和 dropout",
    ),
    (
        "Splits layers into stages; the first stage holds the most activations",
        "按层切分为多个阶段；第一阶段保存的激活值最多",
    ),
    ("Splits the sequence across GPUs", "把序列切分到多张卡"),
    ("Checkpoint every k-th block", "每隔 k 个块做检查点"),
    ("GPUs per node", "每节点 GPU 数"),
    ("Tensor parallelism stays within a node; HSDP shards within one", "张量并行限于节点内；HSDP 在节点内分片"),
    ("Architecture", "架构"),
    ("An encoder attends both ways and has no vocab logits unless pre-trained with a masked-LM head", "编码器双向注意力，除非带掩码语言模型头预训练，否则没有词表 logits"),
    ("decoder (causal LM)", "解码器（因果语言模型）"),
    ("encoder (BERT-like)", "编码器（类 BERT）"),
    ("encoder–decoder (T5-like)", "编码器–解码器（类 T5）"),
    ("Encoder layers", "编码器层数"),
    ("Encoder–decoder models: the encoder's blocks", "编码器–解码器模型：编码器的块数"),
    ("Norm", "归一化"),
    ("What each norm keeps for its backward", "每个归一化层为反向保存的内容"),
    ("Positions", "位置编码"),
    ("Learned positions are a table of weights; T5's relative bias and ALiBi add a bias per head to the scores", "可学习位置是一张权重表；T5 的相对偏置和 ALiBi 为每个头的注意力分数加偏置"),
    ("rotary (RoPE)", "旋转（RoPE）"),
    ("relative bias (T5)", "相对偏置（T5）"),
    ("Tied embeddings", "共享词嵌入"),
    ("The LM head shares the input embedding's weights", "语言模型头与输入嵌入共用权重"),
    ("Optimizer step in backward", "反向中执行优化器步"),
    ("Each parameter is updated and its gradient freed as soon as the gradient is ready (torchtune's optimizer_in_bwd): the gradients never all exist at once", "梯度一就绪就更新该参数并释放梯度（torchtune 的 optimizer_in_bwd）：梯度从不同时全部存在"),
    ("Expert parallel", "专家并行 (EP)"),
    ("MoE: splits the routed experts across GPUs", "MoE：把路由专家切分到多张卡"),
    ("fp32 upcasts (softmax, norms, loss)", "fp32 上转（softmax、归一化、损失）"),
    ("Softmax, norms and cross-entropy computed in fp32 over 16-bit tensors, as transformers' and Megatron-LM's models do; plain PyTorch and LitGPT compute them in the tensors' dtype", "在 16 位张量上以 fp32 计算 softmax、归一化和交叉熵（transformers 与 Megatron-LM 的模型如此）；纯 PyTorch 和 LitGPT 用张量自身的精度"),
    ("Runtime", "运行时"),
    ("CUDA context (MiB)", "CUDA 上下文 (MiB)"),
    ("What a process holds outside PyTorch's allocator: CUDA context, kernels, cuBLAS workspaces; grows with the CUDA release", "进程在 PyTorch 分配器之外占用的显存：CUDA 上下文、内核、cuBLAS 工作区；随 CUDA 版本增长"),
    ("Other processes (MiB)", "其他进程 (MiB)"),
    ("Memory other processes hold on the same GPU", "同一张卡上其他进程占用的显存"),
    ("Expandable segments", "可扩展段"),
    ("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the allocator grows segments in place, so little is reserved beyond what is allocated", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True：分配器原地扩展段，预留几乎不超过已分配"),
    (
        "The policy on every k-th block only, the others keep all their activations: torchtitan's selective_ac_option = \"k\", Megatron-LM's --recompute-method block (1 = every block)",
        "只对每第 k 个块应用该策略，其余块保留全部激活：torchtitan 的 selective_ac_option = \"k\"，Megatron-LM 的 --recompute-method block（1 = 每个块）",
    ),
    (
        "Moves optimizer states, master weights and fp32 gradients off the GPU; slows every step",
        "把优化器状态、主权重和 fp32 梯度移出显存；每步都会变慢",
    ),
    (
        "Moves the parameter shard off the GPU (ZeRO-3 or FSDP only); fetched layer by layer. Under FSDP the gradients and the optimizer step go to the CPU with it",
        "把参数分片移出显存（仅限 ZeRO-3 或 FSDP）；逐层取回。FSDP 下梯度和优化器更新也随之移到 CPU",
    ),
    (
        "Recompute instead of storing: full keeps only each block's input (+33 % compute)",
        "用重计算代替存储：full 只保留每层的输入（计算量 +33%）",
    ),
    (
        "Eager attention stores the s² score matrix; flash does not",
        "eager 注意力保存 s² 的分数矩阵；flash 不保存",
    ),
    (
        "Full fp32 logits are often the single largest tensor",
        "完整的 fp32 logits 往往是最大的单个张量",
    ),
    (
        "Fuses norms, activations and the loss: their fp32 intermediates are recomputed, not kept",
        "融合归一化、激活函数与损失：其 fp32 中间张量在反向时重算，不再保存",
    ),
    (
        "Rows padded to a common length with an attention mask: transformers then hands SDPA the mask, which every block keeps, and expands grouped k/v to every head. Packed batches and flash-attn's varlen path have no mask",
        "各行以 attention mask 填充到相同长度：transformers 随之把掩码交给 SDPA，每一层都保存它，并把分组的 k/v 扩展到每个头。打包 (packing) 的批次和 flash-attn 的变长路径没有掩码",
    ),
    (
        "Each dropout keeps a 1-byte mask per element, and eager attention's also its dropped-out scores. Set by the model's config.json (GPT-2, BERT, OPT, T5, BART train with 0.1; Llama-style models with none) and off under LitGPT's, torchtune's and torchtitan's own model code",
        "每个 dropout 为每个元素保存 1 字节的掩码，eager 注意力还保存 dropout 后的分数。由模型的 config.json 决定（GPT-2、BERT、OPT、T5、BART 训练时为 0.1；Llama 类模型为 0），在 LitGPT、torchtune、torchtitan 自带的模型代码下关闭",
    ),
    (
        "Keeps only the block in flight on the GPU",
        "GPU 上只保留正在计算的那一层",
    ),
    (
        "LoRA trains small adapters over a frozen base; QLoRA stores the base in 4 bits",
        "LoRA 在冻结的基座上训练小适配器；QLoRA 以 4 位存储基座",
    ),
    (
        "Adapter parameters: r·(d_in + d_out) per target",
        "适配器参数：每个目标矩阵 r·(d_in + d_out)",
    ),
    (
        "Frozen base: 16-bit, 8-bit or 4-bit NF4",
        "冻结基座：16 位、8 位或 4 位 NF4",
    ),
    // Option labels
    ("none (one GPU)", "无（单卡）"),
    ("none", "无"),
    ("full", "完全"),
    ("selective (attention core)", "选择性（注意力核心）"),
    ("per-op selective", "逐算子选择性"),
    ("flash / SDPA", "flash / SDPA"),
    ("eager", "eager（显式矩阵）"),
    ("full logits (fp32 upcast)", "完整 logits（升为 fp32）"),
    ("chunked, chunks kept (LitGPT)", "分块，保留各块 (LitGPT)"),
    (
        "chunked, freed per chunk (torchtune)",
        "分块，逐块释放 (torchtune)",
    ),
    ("fused linear + CE (Liger, CCE, Unsloth)", "融合 linear + CE (Liger, CCE, Unsloth)"),
    (
        "fused LM head, 4096 × 32768 tiles (TRL ≥ 1.15)",
        "融合 LM head，4096 × 32768 分块 (TRL ≥ 1.15)",
    ),
    (
        "chunked NLL, 256-token chunks (TRL 1.7–1.14 SFT)",
        "分块 NLL，每块 256 个 token (TRL 1.7–1.14 SFT)",
    ),
    ("full fine-tune / pretrain", "全参数微调 / 预训练"),
    ("LoRA", "LoRA"),
    ("QLoRA (4-bit base)", "QLoRA（4 位基座）"),
    ("DoRA", "DoRA"),
    ("LoRA-FA (A frozen)", "LoRA-FA（冻结 A）"),
    ("other PEFT method", "其他 PEFT 方法"),
    ("PEFT method", "PEFT 方法"),
    ("Trainable parameters", "可训练参数"),
    ("Virtual tokens", "虚拟 token"),
    (
        "frozen base only (prompt tuning, P-tuning, MiSS…)",
        "仅冻结基座（prompt tuning、P-tuning、MiSS…）",
    ),
    ("LLaMA-Adapter v2", "LLaMA-Adapter v2"),
    ("LN tuning", "LN tuning（仅训练归一化层）"),
    (
        "input casts (VeRA, C3A, OFT, AdaLoRA…)",
        "输入类型转换副本（VeRA、C3A、OFT、AdaLoRA…）",
    ),
    (
        "weight-sized update (LoHa, LoKr, FourierFT…)",
        "权重大小的增量（LoHa、LoKr、FourierFT…）",
    ),
    ("OSF (PEFT ≥ 0.21)", "OSF（PEFT ≥ 0.21）"),
    ("OSF (PEFT 0.18–0.20)", "OSF（PEFT 0.18–0.20）"),
    ("HRA (Householder reflections)", "HRA（Householder 反射）"),
    ("SHiRA (sparse high-rank)", "SHiRA（稀疏高秩）"),
    ("prefix tuning", "prefix tuning（前缀微调）"),
    ("none (on GPU)", "无（留在显存）"),
    ("CPU (host RAM)", "CPU（主机内存）"),
    ("NVMe", "NVMe"),
    (
        "Offload needs, per GPU: host RAM",
        "卸载所需（每卡）：主机内存",
    ),
    ("Save plan", "保存方案"),
    ("Title", "标题"),
    ("Notes (optional)", "备注（可选）"),
    ("Your name (optional)", "你的名字（可选）"),
    ("Saving…", "保存中…"),
    ("Save", "保存"),
    (
        "Saved plans are immutable and visible to everyone with the link or on the team page.",
        "保存后的方案不可修改，拿到链接或打开团队页面的人都能看到。",
    ),
    ("Planner", "规划器"),
    ("Saved plans", "已保存的方案"),
    ("Loading…", "加载中…"),
    (
        "No saved plan has this link",
        "没有与此链接对应的已保存方案",
    ),
    (
        "Check the link, or find the plan on the team page.",
        "请检查链接，或在团队页面中查找该方案。",
    ),
    ("saved", "保存于"),
    ("forked from", "派生自"),
    ("Forked from", "派生自"),
    (
        "Saved when the memory model was version",
        "保存时显存模型版本为",
    ),
    (
        "the figures below are from the current version",
        "下面的数字来自当前版本",
    ),
    (
        "Plan format migrated from version",
        "方案格式已从版本迁移：",
    ),
    ("Fork into the planner", "派生到规划器中修改"),
    ("Settings", "设置"),
    ("Title, model or GPU", "标题、模型或 GPU"),
    ("Search", "搜索"),
    (
        "No plans saved yet: save one from the planner.",
        "还没有保存的方案：请在规划器中保存一个。",
    ),
    (
        "No saved plan matches this search.",
        "没有符合搜索条件的方案。",
    ),
    ("Verdict", "结论"),
    ("Author", "作者"),
    ("Saved", "保存时间"),
    ("← Newer", "← 较新"),
    ("Older →", "较旧 →"),
    ("Page", "第"),
    ("plans", "个方案"),
    ("no longer estimates", "当前模型无法估算"),
    ("fits", "放得下"),
    ("free", "余量"),
    ("does not fit", "放不下"),
    ("Against the plan", "与方案对比"),
    ("Verify against the real run", "用真实运行结果核对"),
    ("Upload or paste what the run printed, plain or gzip-compressed: nvidia-smi (table, --query-gpu CSV, dmon, pmon, -q, -q -x), nvitop, gpustat, rocm-smi, amd-smi, Ascend npu-smi, DCGM (dcgm-exporter, dcgmi dmon); a PyTorch OOM message, memory_summary(), memory_stats() or list_gpu_processes(), your script's max_memory_allocated print or the Transformers docs' GPU memory occupied; the memory lines of DeepSpeed, Megatron, the Trainer, torchtitan, torchtune, axolotl, LLaMA-Factory, ms-swift, XTuner (mmengine), verl, Composer, Unsloth or LitGPT; a W&B run's system metrics or Lightning's DeviceStatsMonitor as CSV.", "上传或粘贴运行时打印的内容（纯文本或 gzip 压缩）：nvidia-smi（表格、--query-gpu CSV、dmon、pmon、-q、-q -x）、nvitop、gpustat、rocm-smi、amd-smi、昇腾 npu-smi、DCGM（dcgm-exporter、dcgmi dmon）；PyTorch OOM 报错、memory_summary()、memory_stats() 或 list_gpu_processes()、脚本自己打印的 max_memory_allocated 或 Transformers 文档的 GPU memory occupied；DeepSpeed、Megatron、Trainer、torchtitan、torchtune、axolotl、LLaMA-Factory、ms-swift、XTuner（mmengine）、verl、Composer、Unsloth 或 LitGPT 的显存日志；W&B 运行的系统指标或 Lightning DeviceStatsMonitor 的 CSV。"),
    ("Log file", "日志文件"),
    ("or paste it here (drop a file anywhere on this form)", "或粘贴到这里（也可以把文件拖到此表单上）"),
    ("Format", "格式"),
    ("detect", "自动识别"),
    ("CSV columns (headerless logs only)", "CSV 列名（仅用于没有表头的日志）"),
    ("Attach to this plan", "附加到此方案"),
    ("Preview (not saved yet)", "预览（尚未保存）"),
    ("Verifications", "核对记录"),
    ("No verification attached yet.", "还没有核对记录。"),
    ("The plan held", "方案成立"),
    ("Plan under-estimated", "方案低估了显存"),
    ("Plan over-estimated", "方案高估了显存"),
    ("time", "时间"),
    ("plan", "方案"),
    ("lines", "行"),
    ("Name", "名称"),
    ("Peak used", "峰值占用"),
    ("Total", "总量"),
    ("Samples", "采样数"),
    ("Open the plan that fits", "打开能放下的方案"),
    ("Open the plan on the log's GPU", "在日志中的 GPU 上打开此方案"),
    ("PyTorch allocator peak: allocated", "PyTorch 分配器峰值：已分配"),
    ("last reading: allocated", "最近一次读数：已分配"),
    ("Process", "进程"),
    ("Used", "已用"),
    ("more processes", "个进程未列出"),
    ("bf16 AMP (fp32 weights)", "bf16 混合精度（fp32 权重）"),
    ("fp16 AMP (fp32 weights)", "fp16 混合精度（fp32 权重）"),
    ("pure bf16", "纯 bf16"),
    ("pure fp16", "纯 fp16"),
    ("fp8 matmuls (stored as the framework's bf16)", "fp8 矩阵乘（存储同框架的 bf16 方案）"),
    ("foreach (PyTorch default)", "foreach（PyTorch 默认）"),
    // Verdict
    ("Fits", "放得下"),
    ("Does not fit", "放不下（显存不足）"),
    ("of", "/"),
    ("per GPU", "每卡"),
    ("every GPU", "所有 GPU 相同"),
    ("pipeline stage", "流水线阶段"),
    ("peak at", "峰值出现在"),
    ("Headroom", "余量"),
    ("Short by", "还差"),
    ("over", "超出"),
    ("Likely range", "可能范围"),
    ("(from the calibration residuals)", "（来自校准误差）"),
    ("PyTorch allocated", "PyTorch allocated"),
    ("reserved", "reserved"),
    ("Largest micro-batch that fits", "能放下的最大微批次"),
    ("longest sequence", "最长序列"),
    ("What to change", "如何调整"),
    // The layout search (/layouts)
    ("Fastest layouts that fit", "能放下的最快并行方案"),
    ("Parallel layouts that fit", "能放下的并行方案"),
    ("← Back to the plan", "← 返回方案"),
    ("global batch", "全局批次"),
    ("tokens", "个 token"),
    ("layouts considered", "种方案已考察"),
    ("fit", "种能放下"),
    ("estimates", "次估算"),
    ("Speed", "速度"),
    ("Layout", "并行方案"),
    ("Micro-batch × accumulation", "微批次 × 梯度累积"),
    ("Peak per GPU", "每卡峰值"),
    ("your plan", "当前方案"),
    (
        "None fits: no sharding, tensor or pipeline split, recomputation or offload this framework runs brings the peak under the card at this global batch and sequence. Try more GPUs, a larger card, LoRA or QLoRA, or a shorter sequence.",
        "没有能放下的方案：该框架支持的分片、张量/流水线切分、重计算和卸载都无法在此全局批次和序列长度下把峰值压到显存以内。可以尝试更多 GPU、更大显存的卡、LoRA 或 QLoRA，或更短的序列。",
    ),
    (
        "Fastest first; each layout below is slower than the ones above it and leaves more memory free. Speed is the change in step time against your plan, from the fix ladder's costs (recomputation, ZeRO-3, TP, offload) and the pipeline bubble; a layout fits when its peak fits at the high edge of the model's uncertainty band.",
        "最快的在前；越往下越慢，但留出的显存越多。速度是相对你的方案的单步耗时变化，取自调整阶梯的代价（重计算、ZeRO-3、TP、卸载）和流水线气泡；峰值在模型不确定区间的上沿仍能放下，才算放得下。",
    ),
    ("one GPU", "单卡"),
    ("Megatron distributed optimizer", "Megatron 分布式优化器"),
    ("HSDP (hybrid)", "HSDP（混合分片）"),
    ("interleaved, virtual stages", "交错调度，虚拟阶段"),
    ("full recomputation", "完全重计算"),
    ("selective recomputation", "选择性重计算"),
    ("per-op selective recomputation", "逐算子选择性重计算"),
    ("applied to one block in", "应用间隔（块）"),
    ("activations on CPU", "激活卸载到 CPU"),
    ("parameters and optimizer on CPU", "参数和优化器卸载到 CPU"),
    ("optimizer on CPU", "优化器卸载到 CPU"),
    ("gradients reduced every micro-batch", "每个微批次都归约梯度"),
    ("saves", "节省"),
    ("speed", "速度"),
    // Charts and table
    ("Memory per GPU", "每卡显存"),
    ("Versus micro-batch", "随微批次变化"),
    ("Versus sequence length", "随序列长度变化"),
    ("stage", "阶段"),
    ("capacity", "容量"),
    ("micro-batch", "微批次"),
    ("sequence length", "序列长度"),
    ("Per-GPU breakdown", "每卡显存构成"),
    ("Component", "组成部分"),
    // Components
    ("weights", "权重"),
    ("gradients", "梯度"),
    ("optimizer", "优化器状态"),
    ("activations", "激活值"),
    ("logits", "logits / 损失"),
    ("comm-buffers", "通信缓冲区"),
    ("temporaries", "临时张量"),
    ("allocator-reserve", "分配器预留"),
    ("runtime", "运行时（CUDA 上下文等）"),
    // Phases
    ("load", "加载"),
    ("init", "初始化后"),
    ("forward", "前向"),
    ("backward", "反向"),
    ("step", "优化器更新"),
    // Component explanations
    (
        "Parameters as stored on this GPU (sharded under ZeRO-3/FSDP, quantised under QLoRA)",
        "本卡上存储的参数（ZeRO-3/FSDP 下分片，QLoRA 下量化）",
    ),
    (
        "One gradient per trainable parameter (sharded under ZeRO-2+)",
        "每个可训练参数一个梯度（ZeRO-2 及以上分片）",
    ),
    (
        "Optimizer states and the fp32 master copy (Adam: two states per trainable parameter)",
        "优化器状态与 fp32 主权重（Adam：每个可训练参数两个状态）",
    ),
    (
        "Tensors saved in forward for backward, per block × layers × micro-batches in flight",
        "前向为反向保存的张量：每层 × 层数 × 在途微批次",
    ),
    (
        "LM-head output and the cross-entropy working set",
        "LM head 输出与交叉熵的工作集",
    ),
    (
        "DDP buckets, ZeRO buckets, FSDP gathered units",
        "DDP 桶、ZeRO 桶、FSDP 聚合的参数单元",
    ),
    (
        "Optimizer-step temporaries, autocast weight copies, the block in backward, cuBLAS workspaces",
        "优化器更新的临时张量、autocast 权重副本、反向中的当前层、cuBLAS 工作区",
    ),
    (
        "Cached free blocks and fragmentation in PyTorch's caching allocator",
        "PyTorch 缓存分配器中的空闲块与碎片",
    ),
    (
        "CUDA context, NCCL communicators and other processes, outside PyTorch",
        "PyTorch 之外的 CUDA 上下文、NCCL 通信器与其他进程",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_language_picks_the_best_supported() {
        assert_eq!(
            Lang::from_accept_language("zh-CN,zh;q=0.9,en;q=0.8"),
            Lang::Zh
        );
        assert_eq!(
            Lang::from_accept_language("en-US,en;q=0.9,zh;q=0.5"),
            Lang::En
        );
        assert_eq!(Lang::from_accept_language("fr-FR, zh-TW;q=0.7"), Lang::Zh);
        assert_eq!(Lang::from_accept_language(""), Lang::En);
        assert_eq!(Lang::from_query("mb=2&lang=zh"), Some(Lang::Zh));
    }

    #[test]
    fn every_control_string_has_a_chinese_translation() {
        use crate::components::options::{sections, Kind};
        let zh = |s: &str| ZH.iter().any(|(e, _)| *e == s);
        let mut missing = Vec::new();
        for (title, fields) in sections() {
            if !zh(title) {
                missing.push(title.to_string());
            }
            for (key, label, hint, kind) in fields {
                for s in [label, hint] {
                    if !zh(s) {
                        missing.push(s.to_string());
                    }
                }
                // Model and GPU names, framework names and plain ids stay as they are.
                if let Kind::Select(options) = kind {
                    if !matches!(key, "model" | "gpu" | "fw" | "opt" | "shard" | "bits") {
                        for (_, l) in options {
                            if !zh(&l) && l.chars().any(|c| c == ' ' || c == '(') {
                                missing.push(l);
                            }
                        }
                    }
                }
            }
        }
        // A layout's words (/layouts); bare ids (DDP, ZeRO-2, TP) stay.
        for l in cost_model::layouts::LAYOUT_LABELS {
            if !zh(l) && l.contains(' ') {
                missing.push(l.to_string());
            }
        }
        for c in cost_model::estimate::Component::ALL {
            if !zh(c.id()) {
                missing.push(c.id().to_string());
            }
        }
        for p in cost_model::estimate::Phase::ALL {
            if !zh(p.id()) {
                missing.push(p.id().to_string());
            }
        }
        assert!(missing.is_empty(), "untranslated: {missing:?}");
    }

    #[test]
    fn table_has_no_duplicates() {
        let mut keys: Vec<_> = ZH.iter().map(|(e, _)| *e).collect();
        keys.sort();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n);
    }
}

/// Whether the language was chosen explicitly (then it travels in the URL).
#[derive(Clone, Copy)]
pub struct LangInUrl(pub RwSignal<bool>);

/// `&lang=xx` when the language travels in the URL, else nothing.
pub fn lang_suffix() -> String {
    let lang = use_lang();
    let explicit = use_context::<LangInUrl>()
        .map(|l| l.0.get())
        .unwrap_or(false);
    if explicit {
        format!("lang={}", lang.get().code())
    } else {
        String::new()
    }
}

/// Joins a plan query and the language suffix into `/?…`.
pub fn href(query: &str, suffix: &str) -> String {
    page_href("/", query, suffix)
}

/// Joins a page, a plan query and the language suffix (`/layouts?…`).
pub fn page_href(path: &str, query: &str, suffix: &str) -> String {
    match (query.is_empty(), suffix.is_empty()) {
        (true, true) => path.to_string(),
        (false, true) => format!("{path}?{query}"),
        (true, false) => format!("{path}?{suffix}"),
        (false, false) => format!("{path}?{query}&{suffix}"),
    }
}
