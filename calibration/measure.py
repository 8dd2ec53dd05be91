#!/usr/bin/env python3
"""Measure peak GPU memory of real training steps, for memplan's calibration data.

Run on a machine with one NVIDIA GPU, PyTorch, transformers and peft:

    OUT=/tmp/out python3 calibration/measure.py

Every case builds a Hugging Face model from its config (random weights, built
directly on the GPU), runs STEPS full training steps (forward with labels,
backward, optimizer step, zero_grad(set_to_none=True)) in a plain PyTorch loop
and records, for the whole case:

- `max_allocated`  torch.cuda.max_memory_allocated()
- `max_reserved`   torch.cuda.max_memory_reserved()
- `device_used`    the peak of NVML's used memory (what nvidia-smi prints),
                   sampled every ~2 ms from a thread
- phase readings   allocated after load, after the optimizer's creation, after
                   the first forward, after the first backward, after the first
                   step.

Cases with `ds` run DeepSpeed's loop instead (`deepspeed.initialize` on one
rank; the set-10 comment below says how each is configured); DeepSpeed is not
in the GPU machine's image: its wheel (built from the sdist with
DS_BUILD_OPS=0, no compiled ops) and hjson/pydantic travel with the call.

Cases run one after another in one process; between cases every tensor is
dropped, the caching allocator and cuBLAS workspaces are emptied and the peak
counters reset, so the CUDA context is shared (it is measured once, on its own).
Results go to $OUT/results.jsonl, one JSON object per case, written as each
case ends; `calibration/to_csv.py` turns them into rows of the calibration
schema.
"""

import bisect
import gc
import json
import os
import subprocess
import sys
import threading
import time
import traceback

START = time.time()
OUT = os.environ.get("OUT", "/tmp/out")
LIMIT_S = float(os.environ.get("LIMIT_S", "420"))
STEPS = int(os.environ.get("STEPS", "3"))
# No case starts after DEADLINE (epoch seconds; several processes share one).
DEADLINE = float(os.environ.get("DEADLINE", START + LIMIT_S))
os.makedirs(OUT, exist_ok=True)

import pynvml  # noqa: E402

if os.environ.get("DEVICE", "cuda") == "cuda":
    pynvml.nvmlInit()
    NV = pynvml.nvmlDeviceGetHandleByIndex(0)


def nvml_used():
    return pynvml.nvmlDeviceGetMemoryInfo(NV).used


NVML_BEFORE_CUDA = nvml_used() if os.environ.get("DEVICE", "cuda") == "cuda" else 0

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForCausalLM,
    BertConfig,
    BloomConfig,
    GPT2Config,
    Gemma2Config,
    LlamaConfig,
    MistralConfig,
    MixtralConfig,
    Phi3Config,
    Qwen2Config,
)

MIB = 1 << 20
DEVICE = os.environ.get("DEVICE", "cuda")


class Sampler(threading.Thread):
    """Polls NVML used memory; `peak` is the maximum since the last reset."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak = 0
        self.stop = False

    def reset(self):
        self.peak = nvml_used()

    def run(self):
        while not self.stop:
            u = nvml_used()
            if u > self.peak:
                self.peak = u
            time.sleep(0.002)


def causal(cls, layers, hidden, heads, kv, ffn, vocab, tied, rope_theta, max_positions, **extra):
    """A decoder config of class `cls` for training (no KV cache)."""
    return cls(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=ffn,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        tie_word_embeddings=tied,
        max_position_embeddings=max_positions,
        rope_theta=rope_theta,
        use_cache=False,
        **extra,
    )


def llama(layers, hidden, heads, kv, ffn, vocab, tied, head_dim=None):
    return causal(
        LlamaConfig, layers, hidden, heads, kv, ffn, vocab, tied, 500000.0, 131072, head_dim=head_dim or hidden // heads
    )


def qwen2(layers, hidden, heads, kv, ffn, vocab=152064, tied=False):
    return causal(Qwen2Config, layers, hidden, heads, kv, ffn, vocab, tied, 1000000.0, 32768)


MODELS = {
    # meta-llama/Llama-3.2-1B
    "llama-3.2-1b": lambda: llama(16, 2048, 32, 8, 8192, 128256, True, 64),
    # meta-llama/Llama-3.2-3B
    "llama-3.2-3b": lambda: llama(28, 3072, 24, 8, 8192, 128256, True, 128),
    # meta-llama/Meta-Llama-3.1-8B
    "llama-3.1-8b": lambda: llama(32, 4096, 32, 8, 14336, 128256, False, 128),
    # Qwen/Qwen2.5-0.5B
    "qwen2.5-0.5b": lambda: qwen2(24, 896, 14, 2, 4864, vocab=151936, tied=True),
    # openai-community/gpt2 (124M)
    "gpt2": lambda: GPT2Config(use_cache=False),
    # google-bert/bert-base-uncased
    "bert-base": lambda: BertConfig(),
    # openai-community/gpt2-xl (1.56B)
    "gpt2-xl": lambda: GPT2Config(n_embd=1600, n_layer=48, n_head=25, use_cache=False),
    # google-bert/bert-large-uncased
    "bert-large": lambda: BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    # google/gemma-2-2b
    "gemma-2-2b": lambda: Gemma2Config(
        vocab_size=256000,
        hidden_size=2304,
        intermediate_size=9216,
        num_hidden_layers=26,
        num_attention_heads=8,
        num_key_value_heads=4,
        head_dim=256,
        tie_word_embeddings=True,
        use_cache=False,
    ),
    # microsoft/Phi-3-mini-4k-instruct
    "phi-3-mini": lambda: Phi3Config(
        vocab_size=32064,
        hidden_size=3072,
        intermediate_size=8192,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        tie_word_embeddings=False,
        use_cache=False,
    ),
    # mistralai/Mistral-7B-v0.1
    "mistral-7b": lambda: MistralConfig(
        vocab_size=32000,
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        tie_word_embeddings=False,
        use_cache=False,
    ),
    # Qwen/Qwen2.5-7B
    "qwen2.5-7b": lambda: qwen2(28, 3584, 28, 4, 18944),
    # Qwen/Qwen2.5-14B
    "qwen2.5-14b": lambda: qwen2(48, 5120, 40, 8, 13824),
    # Qwen/Qwen2.5-32B
    "qwen2.5-32b": lambda: qwen2(64, 5120, 40, 8, 27648),
    # Llama-3.2-1B's shape with an untied LM head (not a published model)
    "llama-3.2-1b-untied": lambda: llama(16, 2048, 32, 8, 8192, 128256, False, 64),
    # bigscience/bloomz-7b1 (BLOOM-7B1: ALiBi, fused query_key_value, tied 250880-token head)
    "bloomz-7b1": lambda: BloomConfig(vocab_size=250880, hidden_size=4096, n_layer=30, n_head=32, use_cache=False),
    # meta-llama/Llama-2-70b-hf's blocks, 40 of its 80 (not a published model):
    # what one rank of a 70B LoRA run holds per block, on one card
    "llama-2-70b-40l": lambda: causal(LlamaConfig, 40, 8192, 64, 8, 28672, 32000, False, 10000.0, 4096),
    # tiny shapes for a dry run of the code paths on a machine without a GPU
    "llama-tiny": lambda: llama(2, 128, 4, 2, 256, 1000, False, 32),
    "bloom-tiny": lambda: BloomConfig(vocab_size=1000, hidden_size=128, n_layer=2, n_head=4, use_cache=False),
    # a small Mixtral-shaped MoE (8 experts, top-2)
    "mixtral-small": lambda: MixtralConfig(
        vocab_size=32000,
        hidden_size=1024,
        intermediate_size=3584,
        num_hidden_layers=8,
        num_attention_heads=16,
        num_key_value_heads=8,
        num_local_experts=8,
        num_experts_per_tok=2,
        tie_word_embeddings=False,
        use_cache=False,
    ),
}


def case(
    id,
    model,
    mb,
    seq,
    precision,
    optimizer="adamw",
    ckpt=False,
    attn="sdpa",
    lora=None,
    offload=False,
    compile=False,
    trainer=False,
    pad=0.0,
    quant=None,
    prep=False,
    liger=False,
    fp8=False,
    wrap=None,
    trainer_optim=None,
    ds=None,
    steps=None,
    head=None,
    lora_dropout=0.05,
):
    return dict(
        lora_dropout=lora_dropout,
        head=head,
        ds=ds,
        steps=steps,
        quant=quant,
        prep=prep,
        liger=liger,
        fp8=fp8,
        wrap=wrap,
        trainer_optim=trainer_optim,
        trainer=trainer,
        pad=pad,
        offload=offload,
        compile=compile,
        id=id,
        model=model,
        mb=mb,
        seq=seq,
        precision=precision,
        optimizer=optimizer,
        ckpt=ckpt,
        attn=attn,
        lora=lora,
    )


ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
CASES = [
    case("l1b-ampbf16-b4-s2048", "llama-3.2-1b", 4, 2048, "amp-bf16"),
    case("l1b-bf16-b4-s2048", "llama-3.2-1b", 4, 2048, "bf16"),
    case("l1b-ampbf16-b8-s2048", "llama-3.2-1b", 8, 2048, "amp-bf16"),
    case("l1b-ampbf16-ckpt-b8-s4096", "llama-3.2-1b", 8, 4096, "amp-bf16", ckpt=True),
    case("l3b-ampbf16-b2-s2048", "llama-3.2-3b", 2, 2048, "amp-bf16"),
    case("l3b-bf16-ckpt-b4-s4096", "llama-3.2-3b", 4, 4096, "bf16", ckpt=True),
    case("l8b-bf16-ckpt-b1-s2048", "llama-3.1-8b", 1, 2048, "bf16", ckpt=True),
    case("l8b-lora16all-b4-s2048", "llama-3.1-8b", 4, 2048, "bf16", lora=(16, ALL)),
    case(
        "l8b-lora16qv-ckpt-b8-s2048",
        "llama-3.1-8b",
        8,
        2048,
        "bf16",
        ckpt=True,
        lora=(16, ["q_proj", "v_proj"]),
    ),
    case("q05-fp32-b8-s1024", "qwen2.5-0.5b", 8, 1024, "fp32"),
    case("q05-fp32-eager-b8-s1024", "qwen2.5-0.5b", 8, 1024, "fp32", attn="eager"),
    case("gpt2-fp32-b16-s1024", "gpt2", 16, 1024, "fp32"),
    case("gpt2-ampfp16-b16-s1024", "gpt2", 16, 1024, "amp-fp16"),
    case("bert-fp32-b32-s512", "bert-base", 32, 512, "fp32"),
    case("l1b-bf16-sgdm-b4-s2048", "llama-3.2-1b", 4, 2048, "bf16", optimizer="sgd-momentum"),
    case("l1b-bf16-adafactor-b4-s2048", "llama-3.2-1b", 4, 2048, "bf16", optimizer="adafactor"),
    case("moe-ampbf16-b4-s2048", "mixtral-small", 4, 2048, "amp-bf16"),
    case("l8b-bf16-b2-s4096", "llama-3.1-8b", 2, 4096, "bf16"),
    case("l8b-ampbf16-b1-s2048", "llama-3.1-8b", 1, 2048, "amp-bf16"),
    case("q05-ampbf16-b16-s4096", "qwen2.5-0.5b", 16, 4096, "amp-bf16"),
    case("l3b-ampbf16-lora16all-b8-s2048", "llama-3.2-3b", 8, 2048, "amp-bf16", lora=(16, ALL)),
]

# The second set: slopes in batch and sequence, fused AdamW, eager attention at
# length, more model families, activation offload, torch.compile.
CASES2 = [
    case("l1b-bf16-b1-s512", "llama-3.2-1b", 1, 512, "bf16"),
    case("l1b-bf16-b2-s1024", "llama-3.2-1b", 2, 1024, "bf16"),
    case("l1b-bf16-b1-s4096", "llama-3.2-1b", 1, 4096, "bf16"),
    case("l1b-bf16-b2-s8192", "llama-3.2-1b", 2, 8192, "bf16"),
    case("l1b-fp32-b4-s2048", "llama-3.2-1b", 4, 2048, "fp32"),
    case("l1b-bf16-fusedadamw-b4-s2048", "llama-3.2-1b", 4, 2048, "bf16", optimizer="adamw-fused"),
    case("l1b-bf16-eager-b1-s4096", "llama-3.2-1b", 1, 4096, "bf16", attn="eager"),
    case("gpt2xl-fp32-b4-s1024", "gpt2-xl", 4, 1024, "fp32"),
    case("bertl-ampfp16-b32-s512", "bert-large", 32, 512, "amp-fp16"),
    case("gemma2-2b-bf16-eager-b2-s2048", "gemma-2-2b", 2, 2048, "bf16", attn="eager"),
    case("phi3-bf16-b4-s2048", "phi-3-mini", 4, 2048, "bf16"),
    case("mistral7b-lora8qv-b2-s4096", "mistral-7b", 2, 4096, "bf16", lora=(8, ["q_proj", "v_proj"])),
    case("moe-bf16-b8-s2048", "mixtral-small", 8, 2048, "bf16"),
    case("l3b-bf16-ckptoffload-b8-s4096", "llama-3.2-3b", 8, 4096, "bf16", ckpt=True, offload=True),
    case("l3b-ampbf16-ckpt-b8-s4096", "llama-3.2-3b", 8, 4096, "amp-bf16", ckpt=True),
    case("l8b-lora16all-ckpt-b8-s4096", "llama-3.1-8b", 8, 4096, "bf16", ckpt=True, lora=(16, ALL)),
    case("l1b-bf16-compile-b4-s2048", "llama-3.2-1b", 4, 2048, "bf16", compile=True),
]
# The third set: the Hugging Face Trainer as users run it (its default optimizer,
# `bf16=True` autocast, padded batches with an attention mask), and torch.compile.
CASES3 = [
    case("trainer-l1b-ampbf16-b4-s2048", "llama-3.2-1b", 4, 2048, "amp-bf16", trainer=True),
    case("trainer-l1b-ampbf16-ckpt-b8-s2048", "llama-3.2-1b", 8, 2048, "amp-bf16", ckpt=True, trainer=True),
    case("trainer-l3b-bf16-b4-s2048", "llama-3.2-3b", 4, 2048, "bf16", trainer=True),
    case("trainer-q05-ampbf16-pad-b8-s1024", "qwen2.5-0.5b", 8, 1024, "amp-bf16", trainer=True, pad=0.25),
    case(
        "trainer-l8b-lora16all-ckpt-b4-s2048",
        "llama-3.1-8b",
        4,
        2048,
        "bf16",
        ckpt=True,
        lora=(16, ALL),
        trainer=True,
    ),
    case("trainer-mistral7b-bf16-ckpt-b2-s4096", "mistral-7b", 2, 4096, "bf16", ckpt=True, trainer=True),
    case("trainer-gpt2-ampfp16-b16-s1024", "gpt2", 16, 1024, "amp-fp16", trainer=True),
    case("l1b-ampbf16-compile-b4-s2048", "llama-3.2-1b", 4, 2048, "amp-bf16", compile=True),
    case("gpt2-fp32-compile-b16-s1024", "gpt2", 16, 1024, "fp32", compile=True),
    case("l3b-bf16-compile-ckpt-b4-s4096", "llama-3.2-3b", 4, 4096, "bf16", ckpt=True, compile=True),
]
# The fourth set: what users run beside plain bf16 — QLoRA (bitsandbytes NF4 +
# PEFT's prepare_model_for_kbit_training), 8-bit and paged optimizers, Liger
# Kernel's fused linear cross-entropy, torchao float8, larger models, long
# sequences, one run past the card, Accelerate, and the process-group runtimes
# (DDP, FSDP2) on one rank, last because they initialise NCCL.
QV = ["q_proj", "v_proj"]
CASES4 = [
    case("l1b-bf16-fp8-b4-s2048", "llama-3.2-1b", 4, 2048, "bf16", fp8=True),
    case("l3b-bf16-fp8-ckpt-b4-s4096", "llama-3.2-3b", 4, 4096, "bf16", fp8=True, ckpt=True),
    case("l1b-bf16-adamw8bit-b4-s2048", "llama-3.2-1b", 4, 2048, "bf16", optimizer="adamw-8bit"),
    case("l3b-bf16-pagedadamw8bit-b4-s2048", "llama-3.2-3b", 4, 2048, "bf16", optimizer="paged-adamw-8bit"),
    case("l1b-ampbf16-pagedadamw-b4-s2048", "llama-3.2-1b", 4, 2048, "amp-bf16", optimizer="paged-adamw"),
    case("qlora-l8b-r16all-ckpt-b4-s2048", "llama-3.1-8b", 4, 2048, "amp-bf16", ckpt=True, lora=(16, ALL), quant=4, prep=True),
    case(
        "qlora-l8b-r64all-ckpt-pagedadamw-b1-s4096",
        "llama-3.1-8b",
        1,
        4096,
        "amp-bf16",
        optimizer="paged-adamw",
        ckpt=True,
        lora=(64, ALL),
        quant=4,
        prep=True,
    ),
    case("qlora-mistral7b-r16qv-b2-s2048", "mistral-7b", 2, 2048, "bf16", lora=(16, QV), quant=4, prep=True),
    case("qlora-q32b-r16all-ckpt-b1-s2048", "qwen2.5-32b", 1, 2048, "amp-bf16", ckpt=True, lora=(16, ALL), quant=4, prep=True),
    case(
        "trainer-qlora-l8b-r16all-ckpt-b4-s2048",
        "llama-3.1-8b",
        4,
        2048,
        "amp-bf16",
        ckpt=True,
        lora=(16, ALL),
        quant=4,
        prep=True,
        trainer=True,
        trainer_optim="paged_adamw_8bit",
    ),
    case("q7b-bf16-ckpt-b2-s4096", "qwen2.5-7b", 2, 4096, "bf16", ckpt=True),
    case("q14b-lora16all-ckpt-b4-s2048", "qwen2.5-14b", 4, 2048, "bf16", ckpt=True, lora=(16, ALL)),
    case("l1b-bf16-ckpt-b1-s32768", "llama-3.2-1b", 1, 32768, "bf16", ckpt=True),
    case("l8b-lora16all-ckpt-b1-s16384", "llama-3.1-8b", 1, 16384, "bf16", ckpt=True, lora=(16, ALL)),
    case("l8b-ampbf16-b4-s4096", "llama-3.1-8b", 4, 4096, "amp-bf16"),
    case("accel-l1b-ampbf16-b4-s2048", "llama-3.2-1b", 4, 2048, "amp-bf16", wrap="accelerate"),
]
# Liger patches transformers' modules for the whole process, and a process
# group keeps NCCL's buffers: each of these lists runs in a process of its own.
CASES4_LIGER = [
    case("q05-ampbf16-liger-b16-s4096", "qwen2.5-0.5b", 16, 4096, "amp-bf16", liger=True),
    case("l1b-bf16-liger-b8-s4096", "llama-3.2-1b", 8, 4096, "bf16", liger=True),
]
CASES4_DIST = [
    case("ddp-l1b-ampbf16-b4-s2048", "llama-3.2-1b", 4, 2048, "amp-bf16", wrap="ddp"),
    case("fsdp2-l1b-ampbf16-b4-s2048", "llama-3.2-1b", 4, 2048, "amp-bf16", wrap="fsdp2"),
    case("fsdp2-l3b-ampbf16-ckpt-b4-s4096", "llama-3.2-3b", 4, 4096, "amp-bf16", ckpt=True, wrap="fsdp2"),

]
# The fifth set, each case in a process of its own (ISOLATE=1): the set-4 cases
# that ran after another case had left memory behind in the same process
# (bitsandbytes' paged buffers are never freed, a Trainer run left 2 GiB
# allocated, DDP's reducer its buckets), and three more.
RERUN5 = [
    "l1b-ampbf16-pagedadamw-b4-s2048",
    "qlora-l8b-r16all-ckpt-b4-s2048",
    "qlora-l8b-r64all-ckpt-pagedadamw-b1-s4096",
    "qlora-mistral7b-r16qv-b2-s2048",
    "qlora-q32b-r16all-ckpt-b1-s2048",
    "trainer-qlora-l8b-r16all-ckpt-b4-s2048",
    "q7b-bf16-ckpt-b2-s4096",
    "q14b-lora16all-ckpt-b4-s2048",
    "l1b-bf16-ckpt-b1-s32768",
    "l8b-lora16all-ckpt-b1-s16384",
    "accel-l1b-ampbf16-b4-s2048",
    "fsdp2-l1b-ampbf16-b4-s2048",
    "fsdp2-l3b-ampbf16-ckpt-b4-s4096",
]
CASES5 = [c for c in CASES4 + CASES4_DIST if c["id"] in RERUN5] + [
    case("qlora-mistral7b-r16qv-ckpt-b2-s2048", "mistral-7b", 2, 2048, "bf16", ckpt=True, lora=(16, QV), quant=4, prep=True),
    case("qlora-mistral7b-ampbf16-r16qv-b2-s2048", "mistral-7b", 2, 2048, "amp-bf16", lora=(16, QV), quant=4, prep=True),
    case("ddpview-l1b-ampbf16-b4-s2048", "llama-3.2-1b", 4, 2048, "amp-bf16", wrap="ddp-view"),
]
# The seventh set (2026-12-04), each case in a process of its own (ISOLATE=1):
# FSDP2's CPU offload (sharded parameters, gradients and the optimizer step on
# the host) with full fine-tuning and with LoRA over a frozen base — the
# mechanism of the public FSDP-with-offload rows — FSDP2 without resharding
# after forward (SHARD_GRAD_OP), FSDP2 over a LoRA model, and the compiled,
# checkpointed run the model under-predicts most on this card, recorded with
# the caching allocator's history (SNAPSHOT) to list what is alive at its peak.
CASES7 = [
    case("fsdp2off-l1b-ampbf16-b4-s2048", "llama-3.2-1b", 4, 2048, "amp-bf16", wrap="fsdp2-offload"),
    case("fsdp2off-l3b-ampbf16-ckpt-b4-s4096", "llama-3.2-3b", 4, 4096, "amp-bf16", ckpt=True, wrap="fsdp2-offload"),
    case("fsdp2nors-l1b-ampbf16-b4-s2048", "llama-3.2-1b", 4, 2048, "amp-bf16", wrap="fsdp2-noreshard"),
    case("fsdp2-l8b-lora16all-ckpt-b4-s2048", "llama-3.1-8b", 4, 2048, "bf16", ckpt=True, lora=(16, ALL), wrap="fsdp2"),
    case(
        "fsdp2off-l8b-lora16all-ckpt-b4-s2048",
        "llama-3.1-8b",
        4,
        2048,
        "bf16",
        ckpt=True,
        lora=(16, ALL),
        wrap="fsdp2-offload",
    ),
    case("l3b-bf16-compile-ckpt-b4-s4096", "llama-3.2-3b", 4, 4096, "bf16", ckpt=True, compile=True),
]
# The eighth set (2026-12-04, a second call): the two full fine-tunes under
# FSDP2's CPU offload again, now without the pre-wrap parameter list that had
# kept the GPU copy of the model alive as the counters were reset (set 7's
# reserved and device figures for them are left out), and the compiled,
# checkpointed run at a second size, with a tied and an untied head.
CASES8 = [c for c in CASES7 if c["id"] in ("fsdp2off-l1b-ampbf16-b4-s2048", "fsdp2off-l3b-ampbf16-ckpt-b4-s4096")] + [
    case("l1b-bf16-compile-ckpt-b4-s4096", "llama-3.2-1b", 4, 4096, "bf16", ckpt=True, compile=True),
    case("l1bu-bf16-compile-ckpt-b4-s4096", "llama-3.2-1b-untied", 4, 4096, "bf16", ckpt=True, compile=True),
]
# The tenth set (2026-12-04, a later session), each case in a process of its
# own (ISOLATE=1): DeepSpeed's ZeRO on one rank, as the Trainer (its "auto"
# buckets) and Accelerate's DeepSpeed plugin (no bucket keys: DeepSpeed's own
# defaults) configure it, through `deepspeed.initialize` with a torch AdamW
# (`zero_force_ds_cpu_optimizer: false` where the optimizer is offloaded: the
# CPU optimizer's kind does not change what the GPU holds). ZeRO-3 models are
# built under `zero.Init` (the Trainer's and Accelerate's `zero3_init`):
# ZeRO-3 with LoRA and full fine-tuning, ZeRO-2, ZeRO-Offload (optimizer on the
# host) and ZeRO-Infinity's CPU offload of parameters; the public
# peft_readme_raft-145 configuration as stated (BLOOMZ-7B1 in fp32, LoRA on
# query_key_value, 8 × 64 tokens, ZeRO-3 with parameters and optimizer on the
# CPU, Accelerate), and peft_docs_deepspeed_70b-146's per-block shape (Llama-2-70B
# blocks, LoRA all-linear r8, 8 × 2048 tokens, full checkpointing) at 40 blocks.
TRAINER_DS = dict(style="trainer")
ACCEL_DS = dict(style="accelerate")
CASES10 = [
    case("ds3off-bloomz7b1-fp32-lora8qkv-b8-s64", "bloomz-7b1", 8, 64, "fp32", attn="eager",
         lora=(8, ["query_key_value"]), ds=dict(ACCEL_DS, stage=3, offload=True)),
    case("ds3-l70b40-lora8all-ckpt-b8-s2048", "llama-2-70b-40l", 8, 2048, "bf16", ckpt=True, lora=(8, ALL),
         ds=dict(ACCEL_DS, stage=3), steps=2),
    case("ds3-l8b-lora16all-ckpt-b4-s2048", "llama-3.1-8b", 4, 2048, "bf16", ckpt=True, lora=(16, ALL),
         ds=dict(TRAINER_DS, stage=3)),
    case("ds3-l1b-bf16-b4-s2048", "llama-3.2-1b", 4, 2048, "bf16", ds=dict(TRAINER_DS, stage=3)),
    case("ds2-l1b-bf16-b4-s2048", "llama-3.2-1b", 4, 2048, "bf16", ds=dict(TRAINER_DS, stage=2)),
    case("ds2off-l3b-bf16-ckpt-b4-s4096", "llama-3.2-3b", 4, 4096, "bf16", ckpt=True,
         ds=dict(TRAINER_DS, stage=2, offload=True)),
    case("ds3off-l3b-bf16-ckpt-b4-s4096", "llama-3.2-3b", 4, 4096, "bf16", ckpt=True,
         ds=dict(TRAINER_DS, stage=3, offload=True)),
]
# The eleventh set (2026-12-04, a later session), each case in a process of its
# own (ISOLATE=1): FSDP1 (`FullyShardedDataParallel`, the wrapper Accelerate's
# FSDP plugin builds) as peft's FSDP-QLoRA guide configures it — FULL_SHARD,
# BACKWARD_PRE prefetch, no forward prefetch, `use_orig_params=False`,
# `sync_module_states`, `limit_all_gathers` (Accelerate's default), no mixed
# precision (pure bf16), peft's `fsdp_auto_wrap_policy` (every decoder block and
# every trainable LoRA leaf its own unit), with and without
# `CPUOffload(offload_params=True)` — on one rank of a world of two: the other
# rank is a fake process group (`torch.testing`'s FakeStore, backend "fake"),
# so every collective returns at once without moving data, while FSDP makes
# every buffer a two-rank run makes. The quantized base keeps its NF4 codes in
# bf16 storage (`bnb_4bit_quant_storage=bfloat16`, what FSDP needs to flatten
# them with the bf16 norms and embeddings). The model is built on the GPU,
# quantized, then moved to the host, the counters reset, and wrapped with
# `device_id` (each unit moved to the GPU, flattened, sharded and, with
# offload, sent to pinned host memory), as Accelerate wraps a model loaded on
# the host. The public peft_docs_fsdp_70b-149/150 configuration (Llama-2-70B
# blocks, QLoRA r8 on every linear, 2 × 2048 tokens, full checkpointing) at 40
# blocks, and an 8B bf16 LoRA under FSDP1 offload (no quantization).
CASES11 = [
    case("fsdp1off-l70b40-qlora8all-ckpt-b2-s2048", "llama-2-70b-40l", 2, 2048, "bf16", ckpt=True, lora=(8, ALL),
         quant=4, wrap="fsdp1-offload", steps=2),
    case("fsdp1-l70b40-qlora8all-ckpt-b2-s2048", "llama-2-70b-40l", 2, 2048, "bf16", ckpt=True, lora=(8, ALL),
         quant=4, wrap="fsdp1", steps=2),
    case("fsdp1off-l8b-lora16all-ckpt-b4-s2048", "llama-3.1-8b", 4, 2048, "bf16", ckpt=True, lora=(16, ALL),
         wrap="fsdp1-offload"),
    case("fsdp1-l8b-lora16all-ckpt-b4-s2048", "llama-3.1-8b", 4, 2048, "bf16", ckpt=True, lora=(16, ALL),
         wrap="fsdp1"),
]
CASES11_TINY = [
    case("tiny-fsdp1off-llama-qlora-ckpt", "llama-tiny", 2, 16, "bf16", ckpt=True, lora=(4, ALL), quant=4,
         wrap="fsdp1-offload"),
    case("tiny-fsdp1-llama-lora-ckpt", "llama-tiny", 2, 16, "bf16", ckpt=True, lora=(4, ALL), wrap="fsdp1"),
    case("tiny-fsdp1-llama-qlora-ckpt", "llama-tiny", 2, 16, "bf16", ckpt=True, lora=(4, ALL), quant=4, wrap="fsdp1"),
]
# The same code paths on tiny shapes, for a dry run without a GPU (DEVICE=cpu).
CASES10_TINY = [
    case("tiny-ds3off-bloom-fp32-lora", "bloom-tiny", 2, 16, "fp32", attn="eager",
         lora=(8, ["query_key_value"]), ds=dict(ACCEL_DS, stage=3, offload=True)),
    case("tiny-ds3-llama-lora-ckpt", "llama-tiny", 2, 16, "bf16", ckpt=True, lora=(4, ALL), ds=dict(TRAINER_DS, stage=3)),
    case("tiny-ds3-llama", "llama-tiny", 2, 16, "bf16", ds=dict(TRAINER_DS, stage=3)),
    case("tiny-ds2off-llama-ckpt", "llama-tiny", 2, 16, "bf16", ckpt=True, ds=dict(TRAINER_DS, stage=2, offload=True)),
]
# SET picks the list; the first set is the default.
CASES = {"2": CASES2, "3": CASES3, "4": CASES4, "4l": CASES4_LIGER, "4d": CASES4_DIST, "5": CASES5, "7": CASES7, "8": CASES8, "10": CASES10, "10t": CASES10_TINY, "11": CASES11, "11t": CASES11_TINY}.get(
    os.environ.get("SET", "1"), CASES
)


# Encoders trained as masked LMs (their `labels` are the masked tokens' ids).
MASKED_LMS = ("bert", "roberta", "distilbert", "xlm-roberta", "modernbert", "electra")


def build(c, rec):
    cfg = MODELS[c["model"]]()
    # A quantized base is loaded in 16 bits (torch_dtype=torch.bfloat16, as the
    # QLoRA scripts do) before its linears are quantized.
    dtype = torch.bfloat16 if c["precision"] == "bf16" or c.get("quant") else torch.float32
    kw = dict(dtype=dtype, attn_implementation=c["attn"])
    if c.get("ds") and c["ds"]["stage"] == 3:
        # The Trainer's and Accelerate's `zero3_init`: with a ZeRO-3 config
        # registered (HfDeepSpeedConfig, kept alive), transformers builds the
        # model under `deepspeed.zero.Init`, each parameter partitioned (to the
        # host where `offload_param` says so) as it is made.
        from transformers.integrations import HfDeepSpeedConfig

        init_deepspeed()
        global DS_HF_CONFIG
        DS_HF_CONFIG = HfDeepSpeedConfig(ds_config(c, cfg))
        model = AutoModelForCausalLM.from_config(cfg, **kw)
        rec["params_total"] = sum(getattr(p, "ds_numel", p.numel()) for p in model.parameters())
        return cfg, finish_build(c, model)
    with torch.device(DEVICE):
        if c.get("head") == "cls":
            # A two-label sequence classifier (a reward model's shape): the
            # last non-padding token's hidden state (decoders) or the first
            # token's (encoders) through a `score`/`classifier` head.
            cfg.num_labels = 2
            if cfg.pad_token_id is None:
                cfg.pad_token_id = 0
            model = transformers.AutoModelForSequenceClassification.from_config(cfg, **kw)
        elif cfg.model_type in MASKED_LMS:
            model = transformers.AutoModelForMaskedLM.from_config(cfg, **kw)
        elif cfg.is_encoder_decoder:
            model = transformers.AutoModelForSeq2SeqLM.from_config(cfg, **kw)
        else:
            model = AutoModelForCausalLM.from_config(cfg, **kw)
    model = model.to(DEVICE)
    rec["params_total"] = sum(p.numel() for p in model.parameters())
    return cfg, finish_build(c, model)


def finish_build(c, model):
    """Quantization, k-bit preparation, kernels and checkpointing, as the case asks."""
    if c.get("quant"):
        # FSDP flattens the codes with the bf16 norms and embeddings:
        # bnb_4bit_quant_storage=bfloat16, as peft's FSDP-QLoRA guide sets
        quantize_4bit(model, torch.bfloat16 if is_fsdp1(c) else torch.uint8)
    if c.get("prep"):
        from peft import prepare_model_for_kbit_training

        # Checkpointing is switched on below, with use_reentrant=False.
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
        if c["prep"] == "trl":
            trl_casting_to_bf16(model)
    if c.get("liger"):
        from liger_kernel.transformers import _apply_liger_kernel_to_instance

        # The defaults `use_liger_kernel=True` gives: RoPE, RMSNorm, SwiGLU and
        # the fused linear cross-entropy.
        _apply_liger_kernel_to_instance(model=model)
    if c.get("fp8"):
        from torchao.float8 import convert_to_float8_training

        convert_to_float8_training(model, module_filter_fn=lambda mod, fqn: fqn != "lm_head")
    if c["ckpt"]:
        # Reentrant under DeepSpeed (transformers 4.x's default, which the
        # published DeepSpeed runs used): torch 2.11's non-reentrant
        # recomputation stops inside ZeRO-3's own linear autograd function
        # (`LinearFunctionForZeroStage3`) and fails ("returned NULL without
        # setting an exception").
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": bool(c.get("ds")) or is_fsdp1(c)}, offload=c.get("offload", False)
        )
    return model


def trl_casting_to_bf16(model):
    """TRL's `peft_module_casting_to_bf16` as its `SFTTrainer` ran it after the k-bit preparation of an unsharded
    4-bit model under `bf16=True`, up to 0.21.0 (`trainer/utils.py`, `sft_trainer.py` `_prepare_peft_model`): the
    norms stay fp32, and a module named like an embedding or LM head whose weight is fp32 goes back to bf16 (by name:
    `lm_head`, `embed_tokens`, `wte`, `wpe`). Copied from trl 0.21.0: the releases after it no longer have it."""
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.LayerNorm) or "norm" in name:
            module.to(torch.float32)
        elif any(x in name for x in ["lm_head", "embed_tokens", "wte", "wpe"]):
            if hasattr(module, "weight") and module.weight.dtype == torch.float32:
                module.to(torch.bfloat16)


DS_HF_CONFIG = None


def is_fsdp1(c):
    """A set-11 case: FSDP1 as peft's FSDP-QLoRA guide sets it up (its script
    also checkpoints reentrantly, `--use_reentrant True`)."""
    return c.get("wrap") in ("fsdp1", "fsdp1-offload")


def init_deepspeed():
    """One rank of a DeepSpeed job (the environment a launcher sets)."""
    import deepspeed
    import torch.distributed as dist

    if dist.is_initialized():
        return
    for k, v in dict(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29533").items():
        os.environ.setdefault(k, v)
    deepspeed.init_distributed(dist_backend="nccl" if DEVICE == "cuda" else "gloo")


def ds_config(c, cfg):
    """The DeepSpeed config of a case. `style` "trainer": the ZeRO-2/ZeRO-3
    configs of transformers' DeepSpeed guide with the Trainer's "auto" values
    filled in (`reduce_bucket_size` hidden², `stage3_prefetch_bucket_size`
    0.9·hidden², `stage3_param_persistence_threshold` 10·hidden:
    `integrations/deepspeed.py` `trainer_config_process`). `style` "accelerate":
    what Accelerate's DeepSpeedPlugin writes without a config file (the stage,
    the offload devices, the 16-bit save flag; `utils/dataclasses.py`), every
    bucket at DeepSpeed's own default."""
    d = c["ds"]
    stage, offload = d["stage"], d.get("offload", False)
    zo = {"stage": stage}
    if offload:
        zo["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        if stage == 3:
            zo["offload_param"] = {"device": "cpu", "pin_memory": True}
    h = cfg.hidden_size
    if d["style"] == "trainer" and stage == 3:
        zo.update(
            overlap_comm=True,
            contiguous_gradients=True,
            sub_group_size=int(1e9),
            reduce_bucket_size=h * h,
            stage3_prefetch_bucket_size=int(0.9 * h * h),
            stage3_param_persistence_threshold=10 * h,
            stage3_max_live_parameters=int(1e9),
            stage3_max_reuse_distance=int(1e9),
            stage3_gather_16bit_weights_on_model_save=True,
        )
    elif d["style"] == "trainer":
        zo.update(
            allgather_partitions=True,
            allgather_bucket_size=int(2e8),
            overlap_comm=True,
            reduce_scatter=True,
            reduce_bucket_size=h * h,
            contiguous_gradients=True,
        )
    elif stage == 3:
        zo["stage3_gather_16bit_weights_on_model_save"] = True
    conf = {
        "train_micro_batch_size_per_gpu": c["mb"],
        "gradient_accumulation_steps": 1,
        "gradient_clipping": 1.0,
        "zero_optimization": zo,
        "zero_allow_untested_optimizer": True,
        "zero_force_ds_cpu_optimizer": False,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }
    if c["precision"] in ("bf16", "amp-bf16"):
        conf["bf16"] = {"enabled": True}
    elif c["precision"] == "amp-fp16":
        conf["fp16"] = {"enabled": True}
    return conf


def run_deepspeed(c, model, cfg, sampler, rec):
    """DeepSpeed's training loop (`engine(...)`, `engine.backward(loss)`,
    `engine.step()`, which zeroes the gradients) around a torch AdamW: fused
    where it steps on the GPU (the Trainer's `adamw_torch_fused`), foreach on
    the host."""
    import deepspeed

    init_deepspeed()
    conf = ds_config(c, cfg)
    params = [p for p in model.parameters() if p.requires_grad]
    rec["trainable_params"] = sum(getattr(p, "ds_numel", p.numel()) for p in params)
    rec["ds_config"] = conf
    rec["deepspeed"] = deepspeed.__version__
    on_gpu = not c["ds"].get("offload") and DEVICE == "cuda"
    opt = torch.optim.AdamW(params, lr=1e-5, fused=on_gpu or None)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=opt, config=conf)
    sync()
    rec["alloc_after_load"] = memory_allocated()
    ids = torch.randint(0, cfg.vocab_size, (c["mb"], c["seq"]), device=DEVICE)
    run_steps(c, rec, lambda: engine(input_ids=ids, labels=ids).loss, engine.backward, engine.step)
    end_history(c, rec)
    finish(c, sampler, rec)


def run_fsdp1(c, model, cfg, sampler, rec):
    """FSDP1 as Accelerate's plugin builds it from peft's FSDP-QLoRA config
    (the set-11 comment says which), on rank 0 of a fake world of FAKE_WS
    ranks (2 by default), around the Trainer's default fused torch AdamW (on
    the host where the parameters are offloaded), in a plain loop."""
    import torch.distributed as dist
    from peft.utils.other import fsdp_auto_wrap_policy
    from torch.distributed.fsdp import BackwardPrefetch, CPUOffload, ShardingStrategy
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.testing._internal.distributed.fake_pg import FakeStore

    ws = int(os.environ.get("FAKE_WS", "2"))
    if not dist.is_initialized():
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=ws)
    rec["world_size"] = ws
    rec["fake_pg"] = True
    offload = c["wrap"] == "fsdp1-offload"
    # Accelerate wraps a model loaded on the host (rank 0 of a
    # cpu_ram_efficient_loading run): the model goes there first, and the
    # counters start again from an empty device.
    model.to("cpu")
    clean()
    if DEVICE == "cuda":
        rec["max_allocated_building"] = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        sampler.reset()
    rec["peaks_reset_on_host"] = True
    model = FSDP(
        model,
        auto_wrap_policy=fsdp_auto_wrap_policy(model),
        sharding_strategy=ShardingStrategy.FULL_SHARD,
        cpu_offload=CPUOffload(offload_params=offload),
        backward_prefetch=BackwardPrefetch.BACKWARD_PRE,
        forward_prefetch=False,
        limit_all_gathers=True,
        use_orig_params=False,
        sync_module_states=DEVICE == "cuda",  # the dry run on a machine without a GPU has no GPU to sync on
        device_id=torch.cuda.current_device() if DEVICE == "cuda" else torch.device("cpu"),
    )
    sync()
    rec["alloc_after_load"] = memory_allocated()
    rec["max_alloc_wrapping"] = max_memory_allocated()
    rec["fsdp_units"] = sum(1 for m in model.modules() if isinstance(m, FSDP))
    params = [p for p in model.parameters() if p.requires_grad]
    rec["trainable_params"] = sum(p.numel() for p in params) * ws
    try:
        opt = torch.optim.AdamW(params, lr=1e-5, fused=True)
        rec["optimizer_impl"] = "fused"
    except Exception as e:  # noqa: BLE001
        opt = torch.optim.AdamW(params, lr=1e-5)
        rec["optimizer_impl"] = f"foreach ({str(e)[:120]})"
    ids = torch.randint(0, cfg.vocab_size, (c["mb"], c["seq"]), device=DEVICE)

    def step():
        opt.step()
        opt.zero_grad(set_to_none=True)

    labels = case_labels(c, ids)
    run_steps(c, rec, lambda: model(input_ids=ids, labels=labels).loss, lambda loss: loss.backward(), step)
    if DEVICE != "cuda":
        return
    end_history(c, rec)
    finish(c, sampler, rec)


def run_steps(c, rec, loss_of, backward, step):
    """The case's training steps as a runtime's loop makes them (`loss_of()`,
    `backward(loss)`, `step()`, which zeroes the gradients), with the first
    step's readings, the history from the first step on (SNAPSHOT=1) and the
    steps' times; the loss is dropped before the step ends."""
    start_history()
    step_times = []
    for i in range(c.get("steps") or STEPS):
        t0 = time.time()
        loss = loss_of()
        first_step_reading(rec, i, "forward")
        backward(loss)
        first_step_reading(rec, i, "backward")
        step()
        rec["loss"] = float(loss.detach())
        del loss
        sync()
        step_times.append(time.time() - t0)
        first_step_reading(rec, i, "step", peak=False)
    rec["step_s"] = step_times


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def first_step_reading(rec, step, after, peak=True):
    """In the first step, the bytes allocated after `after` (forward,
    backward, step) and, with `peak`, the peak so far."""
    if step != 0:
        return
    sync()
    rec[f"alloc_after_{after}"] = memory_allocated()
    if peak:
        rec[f"peak_alloc_{after}"] = max_memory_allocated()


def memory_allocated():
    return torch.cuda.memory_allocated() if DEVICE == "cuda" else 0


def max_memory_allocated():
    return torch.cuda.max_memory_allocated() if DEVICE == "cuda" else 0


def start_history(at_build=False):
    """With SNAPSHOT=1, the allocator's history from the first training step
    (Python frames only: cheap enough to leave the run's allocations as they
    are), summarised at the peak by end_history(); with SNAPSHOT=2 from
    before the model is built (what loading leaves cached counts too), the
    whole history also written as `snap-<case>.pickle.gz` for a replay."""
    mode = os.environ.get("SNAPSHOT")
    if DEVICE == "cuda" and mode == ("2" if at_build else "1"):
        torch.cuda.memory._record_memory_history(max_entries=3_000_000, stacks="python")


def end_history(c, rec):
    mode = os.environ.get("SNAPSHOT")
    if mode in ("1", "2") and DEVICE == "cuda":
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        with open(os.path.join(OUT, f"peak-{c['id']}.txt"), "w") as f:
            f.write(snapshot_at_peak(snap, rec))
        if mode == "2":
            import gzip
            import pickle

            # the innermost frames only: the file stays small enough to bring back
            for trace in snap["device_traces"]:
                for e in trace:
                    e["frames"] = (e.get("frames") or [])[:8]
            for seg in snap["segments"]:
                seg.pop("frames", None)
                for blk in seg["blocks"]:
                    blk["frames"] = (blk.get("frames") or [])[:8]
            with gzip.open(os.path.join(OUT, f"snap-{c['id']}.pickle.gz"), "wb") as f:
                pickle.dump(snap, f)


def quantize_4bit(model, storage=torch.uint8):
    """Replace every block linear (not the LM head) by bitsandbytes' NF4
    Linear4bit with double quantization and bf16 compute — the modules
    `BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
    bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)`
    gives — quantizing each weight on the GPU and freeing its 16-bit copy."""
    import bitsandbytes as bnb

    for mod in list(model.modules()):
        for name, child in list(mod.named_children()):
            if type(child) is torch.nn.Linear and name != "lm_head":
                q = bnb.nn.Linear4bit(
                    child.in_features,
                    child.out_features,
                    bias=child.bias is not None,
                    compute_dtype=torch.bfloat16,
                    compress_statistics=True,
                    quant_type="nf4",
                    quant_storage=storage,
                    device="meta",
                )
                q.weight = bnb.nn.Params4bit(
                    child.weight.data,
                    requires_grad=False,
                    compress_statistics=True,
                    quant_type="nf4",
                    quant_storage=storage,
                    module=q,
                ).to(child.weight.device)
                if child.bias is not None:
                    q.bias = child.bias
                setattr(mod, name, q)
                del child
    # What PEFT reads to pick its bitsandbytes LoRA layer (not `is_quantized`:
    # the Trainer would then ask for an `hf_quantizer`).
    try:
        model.is_loaded_in_4bit = True
    except Exception:  # noqa: BLE001
        pass
    gc.collect()
    torch.cuda.empty_cache()


def make_opt(c, params):
    o = c["optimizer"]
    if o == "adamw":
        return torch.optim.AdamW(params, lr=1e-5)  # PyTorch default: foreach
    if o == "adamw-fused":
        return torch.optim.AdamW(params, lr=1e-5, fused=True)
    if o == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-5, momentum=0.9)
    if o in ("adamw-8bit", "paged-adamw-8bit", "paged-adamw"):
        import bitsandbytes as bnb

        cls = {"adamw-8bit": bnb.optim.AdamW8bit, "paged-adamw-8bit": bnb.optim.PagedAdamW8bit, "paged-adamw": bnb.optim.PagedAdamW}[o]
        return cls(params, lr=1e-5)
    if o == "adafactor":
        from transformers.optimization import Adafactor

        return Adafactor(params, lr=None, scale_parameter=True, relative_step=True, warmup_init=False)
    raise ValueError(o)


def clean():
    gc.collect()
    if DEVICE != "cuda":
        return
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear:
        clear()
    torch.cuda.empty_cache()


class RandomTokens(torch.utils.data.Dataset):
    """Random token ids; with `pad` > 0 the last fraction of each row is padding
    (attention_mask 0, labels -100), as a padding collator would leave it."""

    def __init__(self, n, seq, vocab, pad):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)
        self.mask = torch.ones(n, seq, dtype=torch.long)
        if pad > 0:
            self.mask[:, int(seq * (1 - pad)) :] = 0
        self.labels = self.ids.masked_fill(self.mask == 0, -100)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return dict(input_ids=self.ids[i], attention_mask=self.mask[i], labels=self.labels[i])


def run_trainer(c, model, cfg, rec):
    from transformers import Trainer, TrainingArguments

    args = TrainingArguments(
        output_dir="/tmp/trainer-out",
        per_device_train_batch_size=c["mb"],
        max_steps=STEPS,
        learning_rate=1e-5,
        bf16=c["precision"] in ("amp-bf16", "bf16"),
        fp16=c["precision"] == "amp-fp16",
        gradient_checkpointing=c["ckpt"],
        gradient_checkpointing_kwargs={"use_reentrant": False},
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        dataloader_num_workers=0,
        disable_tqdm=True,
        remove_unused_columns=False,
        **({"optim": c["trainer_optim"]} if c.get("trainer_optim") else {}),
        use_cpu=DEVICE == "cpu",  # the dry run on a machine without a GPU
    )
    rec["optim"] = str(args.optim)
    ds = RandomTokens(c["mb"] * STEPS, c["seq"], cfg.vocab_size, c["pad"])
    t0 = time.time()
    Trainer(model=model, args=args, train_dataset=ds).train()
    torch.cuda.synchronize()
    rec["step_s"] = [(time.time() - t0) / STEPS] * STEPS


def case_labels(c, ids):
    """The labels of a batch: the tokens themselves (language modelling), or one of two classes a sequence."""
    if c.get("head") == "cls":
        return torch.randint(0, 2, (c["mb"],), device=ids.device)
    return ids


def with_lora(c, model):
    """The case's LoRA adapters (PEFT; alpha 2r, dropout 0.05 unless the case says), if it has any."""
    if not c["lora"]:
        return model
    from peft import LoraConfig, get_peft_model

    r, targets = c["lora"]
    # An encoder–decoder's task is sequence-to-sequence; a masked LM has none of PEFT's (the plain PeftModel).
    task = "SEQ_2_SEQ_LM" if model.config.is_encoder_decoder else "CAUSAL_LM"
    if model.config.model_type in MASKED_LMS:
        task = None
    if c.get("head") == "cls":
        task = "SEQ_CLS"  # the head (`score`/`classifier`) trains beside the adapters (modules_to_save)
    model = get_peft_model(
        model,
        LoraConfig(r=r, lora_alpha=2 * r, lora_dropout=c.get("lora_dropout", 0.05), target_modules=targets,
                   task_type=task),
    )
    if c["ckpt"]:
        model.enable_input_require_grads()
    return model


def run_case(c, sampler, rec):
    start_history(at_build=True)
    cfg, model = build(c, rec)
    if c.get("quant"):
        # The 16-bit model built here before quantizing is not how a checkpoint
        # loads (from_pretrained quantizes tensor by tensor): the counters start
        # again from the quantized model.
        sync()
        rec["max_allocated_building_16bit"] = max_memory_allocated()
        if DEVICE == "cuda":
            torch.cuda.reset_peak_memory_stats()
            sampler.reset()
        rec["peaks_reset_after_quantizing"] = True
    model = with_lora(c, model)
    model.train()
    rec["attn_impl"] = getattr(model.config, "_attn_implementation", None)
    if c.get("ds"):
        return run_deepspeed(c, model, cfg, sampler, rec)
    if is_fsdp1(c):
        return run_fsdp1(c, model, cfg, sampler, rec)
    if c.get("trainer"):
        rec["alloc_after_load"] = torch.cuda.memory_allocated()
        rec["trainable_params"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
        run_trainer(c, model, cfg, rec)
        return finish(c, sampler, rec)
    params = [p for p in model.parameters() if p.requires_grad]
    rec["trainable_params"] = sum(p.numel() for p in params)
    torch.cuda.synchronize()
    rec["alloc_after_load"] = torch.cuda.memory_allocated()
    amp = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}.get(c["precision"])
    acc = None
    if c.get("wrap") in ("ddp", "ddp-view", "fsdp2", "fsdp2-offload", "fsdp2-noreshard"):
        import torch.distributed as dist

        # The list above would keep the parameters as they were before
        # wrapping (FSDP2 replaces them): it is rebuilt below.
        params = None

        if not dist.is_initialized():
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", "29533")
            dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
        if c["wrap"] in ("ddp", "ddp-view"):
            # DistributedDataParallel's defaults: bucket_cap_mb 25,
            # gradient_as_bucket_view False (True for ddp-view); autocast
            # around the forward.
            model = torch.nn.parallel.DistributedDataParallel(
                model, device_ids=[0], gradient_as_bucket_view=c["wrap"] == "ddp-view"
            )
        else:
            # torchtitan's FSDP2 wrapping: every block, then the root; fp32
            # sharded parameters gathered as bf16, gradients reduced in fp32;
            # no autocast (the policy casts).
            # fsdp2-offload adds CPUOffloadPolicy(pin_memory=True) (shards,
            # gradients and the optimizer step on the host); fsdp2-noreshard
            # keeps each block gathered from its forward to its backward
            # (reshard_after_forward=False, FSDP1's SHARD_GRAD_OP).
            from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

            mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
            kw = dict(mp_policy=mp, reshard_after_forward=c["wrap"] != "fsdp2-noreshard")
            if c["wrap"] == "fsdp2-offload":
                kw["offload_policy"] = CPUOffloadPolicy(pin_memory=True)
            # every decoder block (found by class, through a PEFT wrapper too), then the root
            for layer in [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]:
                fully_shard(layer, **kw)
            fully_shard(model, **kw)
            amp = None
            if c["wrap"] == "fsdp2-offload":
                # The model was built on the GPU and its shards then moved to
                # pinned host memory: the counters start again from there.
                clean()
                rec["max_allocated_before_offload"] = torch.cuda.max_memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                sampler.reset()
                rec["peaks_reset_after_offload"] = True
                rec["alloc_after_offload"] = torch.cuda.memory_allocated()
        params = [p for p in model.parameters() if p.requires_grad]
    opt = make_opt(c, params)
    if c.get("wrap") == "accelerate":
        from accelerate import Accelerator

        # Accelerate's single-GPU bf16: autocast around forward, outputs
        # converted to fp32 (convert_outputs_to_fp32).
        acc = Accelerator(mixed_precision="bf16")
        model, opt = acc.prepare(model, opt)
        amp = None
    scaler = torch.amp.GradScaler("cuda") if c["precision"] == "amp-fp16" else None
    vocab = cfg.vocab_size
    ids = torch.randint(0, vocab, (c["mb"], c["seq"]), device="cuda")
    if c["model"].startswith("bert"):
        labels = ids.masked_fill(torch.rand(ids.shape, device="cuda") > 0.15, -100)
    else:
        labels = ids
    fwd = torch.compile(model) if c.get("compile") else model
    start_history()
    step_times = []
    for step in range(STEPS):
        t0 = time.time()
        if amp is not None:
            with torch.autocast("cuda", dtype=amp):
                out = fwd(input_ids=ids, labels=labels)
        else:
            out = fwd(input_ids=ids, labels=labels)
        loss = out.loss
        first_step_reading(rec, step, "forward")
        if scaler is not None:
            scaler.scale(loss).backward()
        elif acc is not None:
            acc.backward(loss)
        else:
            loss.backward()
        first_step_reading(rec, step, "backward")
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
        rec["loss"] = float(loss.detach())
        del out, loss
        torch.cuda.synchronize()
        step_times.append(time.time() - t0)
        first_step_reading(rec, step, "step", peak=False)
    rec["step_s"] = step_times
    end_history(c, rec)
    finish(c, sampler, rec)


def frames_of(b, n=6):
    """A block's Python frames, innermost first, as file:line:function."""
    out = []
    for fr in b.get("frames") or []:
        fn = fr.get("filename", "")
        if "/torch/cuda/memory.py" in fn or "/torch/utils/_contextlib" in fn:
            continue
        out.append(f"{fn.split('site-packages/')[-1]}:{fr.get('line')}:{fr.get('name')}")
        if len(out) == n:
            break
    return out


def snapshot_at_peak(snap, rec):
    """What the caching allocator held at the highest allocated total of the
    recorded history: the total, the blocks alive then grouped by their
    innermost frames, and the largest blocks with their frames. Blocks
    allocated before the recording started (the model, the optimizer's
    states once built) are the snapshot's segments' blocks that no trace event
    allocated: counted as 'before recording'."""
    trace = snap["device_traces"][0]
    live, cur, peak, peak_i, traced = {}, 0, -1, -1, set()
    for i, e in enumerate(trace):
        a = e["action"]
        if a == "alloc":
            traced.add(e["addr"])
            live[e["addr"]] = e["size"]
            cur += e["size"]
            if cur > peak:
                peak, peak_i = cur, i
        elif a == "free_completed" and e["addr"] in live:
            cur -= live.pop(e["addr"])
    live = {}
    for e in trace[: peak_i + 1]:
        if e["action"] == "alloc":
            live[e["addr"]] = e
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)
    # blocks alive when the history ended that no event allocated: allocated
    # before the recording started, so alive at the peak too (unless freed
    # and reused, which the trace would show as an alloc of that address)
    before = 0
    for seg in snap["segments"]:
        for blk in seg["blocks"]:
            if blk["state"] == "active_allocated" and blk["address"] not in traced:
                before += blk["size"]
    groups = {}
    for e in live.values():
        key = " < ".join(frames_of(e, 3)) or "(no frames)"
        n, b = groups.get(key, (0, 0))
        groups[key] = (n + 1, b + e["size"])
    lines = [
        f"case {rec['id']}: {len(trace)} events; traced peak {peak / MIB:.1f} MiB at event {peak_i}"
        f" + {before / MIB:.1f} MiB allocated before recording = {(peak + before) / MIB:.1f} MiB"
        f" (max_memory_allocated {torch.cuda.max_memory_allocated() / MIB:.1f} MiB);"
        f" {len(live)} traced blocks alive at the peak",
        "",
        "alive at the peak, grouped by innermost frames (MiB, blocks):",
    ]
    for key, (n, b) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:60]:
        lines.append(f"{b / MIB:10.1f} {n:6d}  {key}")
    lines += ["", "largest blocks alive at the peak:"]
    for e in sorted(live.values(), key=lambda e: -e["size"])[:40]:
        lines.append(f"{e['size'] / MIB:10.1f}  " + " < ".join(frames_of(e, 8)))
    # the 30 events before the peak (what the peak's last allocations were)
    lines += ["", "the 30 events up to the peak:"]
    for e in trace[max(0, peak_i - 29) : peak_i + 1]:
        lines.append(f"{e['action']:15s} {e['size'] / MIB:10.1f}  " + " < ".join(frames_of(e, 4)))
    return "\n".join(lines + reserve_at_peak(snap)) + "\n"


def reserve_at_peak(snap):
    """Where the reserve sits at the highest reserved total of the history:
    the segments then mapped (those made before the recording started are
    the snapshot's segments no trace event made), grouped by the stream they
    belong to, each with the allocation that made it, and how much of each
    stream's segments was allocated at that moment."""
    trace = snap["device_traces"][0]
    segs, cur, peak, peak_i = {}, 0, -1, -1
    for i, e in enumerate(trace):
        a = e["action"]
        if a in ("segment_alloc", "segment_map"):
            segs[(e["addr"], a)] = e
            cur += e["size"]
            if cur > peak:
                peak, peak_i = cur, i
        elif a in ("segment_free", "segment_unmap"):
            kind = "segment_alloc" if a == "segment_free" else "segment_map"
            if segs.pop((e["addr"], kind), None) is not None:
                cur -= e["size"]
    traced = {e["addr"] for e in trace if e["action"] in ("segment_alloc", "segment_map")}
    before = [seg for seg in snap["segments"] if seg["address"] not in traced]
    alive, blocks = {}, {}
    # through the allocation that made the peak's segment
    end = peak_i + 2 if peak_i + 1 < len(trace) and trace[peak_i + 1]["action"] == "alloc" else peak_i + 1
    for e in trace[:end]:
        a = e["action"]
        if a in ("segment_alloc", "segment_map"):
            alive[e["addr"]] = e
        elif a in ("segment_free", "segment_unmap"):
            alive.pop(e["addr"], None)
        elif a == "alloc":
            blocks[e["addr"]] = e
        elif a == "free_completed":
            blocks.pop(e["addr"], None)
    streams = {}
    for seg in alive.values():
        st = streams.setdefault(seg["stream"], [0, 0, 0, {}])
        st[0] += 1
        st[1] += seg["size"]
        key = " < ".join(frames_of(seg, 3))
        n, b = st[3].get(key, (0, 0))
        st[3][key] = (n + 1, b + seg["size"])
    # allocated bytes at the reserved peak, by the segment (stream) holding them
    starts = sorted((seg["addr"], seg["addr"] + seg["size"], seg["stream"]) for seg in alive.values())
    keys = [a for a, _, _ in starts]
    for blk in blocks.values():
        j = bisect.bisect_right(keys, blk["addr"]) - 1
        if j >= 0 and blk["addr"] < starts[j][1]:
            streams[starts[j][2]][2] += blk["size"]
    lines = [
        "",
        f"reserve: traced segments peak at {peak / MIB:.1f} MiB (event {peak_i}); {len(before)} segments made before"
        f" recording ({sum(seg['total_size'] for seg in before) / MIB:.1f} MiB, streams"
        f" {sorted({seg['stream'] for seg in before})}); max_memory_reserved"
        f" {torch.cuda.max_memory_reserved() / MIB:.1f} MiB",
        "traced segments alive at that peak, by stream (count, MiB, MiB of traced blocks allocated in them):",
    ]
    for stream, (n, b, used, groups) in sorted(streams.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"stream {stream}: {n} segments, {b / MIB:.1f} MiB, {used / MIB:.1f} MiB allocated")
        for key, (k, kb) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:12]:
            lines.append(f"    {kb / MIB:10.1f} {k:5d}  {key}")
    return lines


def finish(c, sampler, rec):
    torch.cuda.synchronize()
    time.sleep(0.02)
    rec["max_allocated"] = torch.cuda.max_memory_allocated()
    rec["max_reserved"] = torch.cuda.max_memory_reserved()
    stats = torch.cuda.memory_stats()
    rec["max_active"] = stats.get("active_bytes.all.peak")
    rec["alloc_retries"] = stats.get("num_alloc_retries")
    rec["nvml_end"] = nvml_used()
    rec["device_used"] = max(sampler.peak, rec["nvml_end"])
    if c["id"] == "l1b-ampbf16-b4-s2048":
        with open(os.path.join(OUT, "memory_summary.txt"), "w") as f:
            f.write(torch.cuda.memory_summary())
    if c["id"] == "qlora-l8b-r16all-ckpt-b4-s2048":
        with open(os.path.join(OUT, "memory_summary-qlora.txt"), "w") as f:
            f.write(torch.cuda.memory_summary())
        with open(os.path.join(OUT, "nvidia-smi-qlora.txt"), "w") as f:
            f.write(subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout)
    if c["id"] == "l8b-bf16-ckpt-b1-s2048":
        with open(os.path.join(OUT, "nvidia-smi.txt"), "w") as f:
            f.write(subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout)


def selected():
    """The cases to run: those ONLY names (all without it), none after DEADLINE."""
    only = os.environ.get("ONLY")
    for c in CASES:
        if only and c["id"] not in only.split(","):
            continue
        if time.time() > DEADLINE:
            print(f"time limit: skipping {c['id']}", flush=True)
            continue
        yield c


def main():
    if os.environ.get("ISOLATE") == "1":
        # One process per case: nothing one case leaves behind reaches the next.
        for c in selected():
            env = dict(os.environ, ISOLATE="0", ONLY=c["id"], DEADLINE=str(DEADLINE))
            subprocess.run([sys.executable, os.path.abspath(__file__)], env=env)
        return 0
    smi = subprocess.Popen(
        [
            "nvidia-smi",
            "--query-gpu=timestamp,index,name,memory.used,memory.total,utilization.gpu",
            "--format=csv",
            "-lms",
            "200",
        ],
        stdout=open(os.path.join(OUT, f"smi-{os.environ.get('SET', '1')}.csv"), "a"),
        stderr=subprocess.STDOUT,
    )
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    ctx_only = nvml_used()
    x = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    (x @ x).sum().item()
    del x
    torch.cuda.synchronize()
    env = dict(
        torch=torch.__version__,
        cuda=torch.version.cuda,
        transformers=transformers.__version__,
        gpu=torch.cuda.get_device_name(0),
        total=torch.cuda.get_device_properties(0).total_memory,
        nvml_total=pynvml.nvmlDeviceGetMemoryInfo(NV).total,
        driver=pynvml.nvmlSystemGetDriverVersion(),
        nvml_before_cuda=NVML_BEFORE_CUDA,
        nvml_after_context=ctx_only,
        nvml_after_first_matmul=nvml_used(),
        reserved_after_first_matmul=torch.cuda.memory_reserved(),
    )
    from importlib.metadata import version

    for name in ("peft", "accelerate", "bitsandbytes", "torchao", "liger-kernel", "deepspeed"):
        try:
            env[name] = version(name)
        except Exception as e:  # noqa: BLE001
            env[name] = repr(e)[:200]
    print(json.dumps(env), flush=True)
    with open(os.path.join(OUT, "env.json"), "w") as f:
        json.dump(env, f)
    sampler = Sampler()
    sampler.start()
    results = open(os.path.join(OUT, "results.jsonl"), "a")
    for c in selected():
        clean()
        torch.cuda.reset_peak_memory_stats()
        rec = dict(c)
        rec["env"] = env  # a case in a process of its own (ISOLATE=1) has its own
        rec["alloc_before"] = torch.cuda.memory_allocated()
        rec["nvml_before"] = nvml_used()
        sampler.reset()
        t0 = time.time()
        try:
            run_case(c, sampler, rec)
            rec["oom"] = False
        except torch.OutOfMemoryError as e:
            rec["oom"] = True
            rec["error"] = str(e)
            rec["max_allocated"] = torch.cuda.max_memory_allocated()
            rec["max_reserved"] = torch.cuda.max_memory_reserved()
            rec["device_used"] = sampler.peak
            with open(os.path.join(OUT, "oom.txt"), "a") as f:
                f.write("".join(traceback.format_exception(e)))
        except Exception as e:  # noqa: BLE001
            rec["error"] = "".join(traceback.format_exception(e))[-3000:]
        rec["wall_s"] = round(time.time() - t0, 2)
        results.write(json.dumps(rec) + "\n")
        results.flush()
        short = {k: rec.get(k) for k in ("id", "oom", "max_allocated", "max_reserved", "device_used", "wall_s")}
        for k in ("max_allocated", "max_reserved", "device_used"):
            if short[k]:
                short[k] = round(short[k] / MIB)
        print(json.dumps(short), "ERROR" if "error" in rec and not rec.get("oom") else "", flush=True)
        if "error" in rec and not rec.get("oom"):
            print(rec["error"][-1500:], flush=True)
    sampler.stop = True
    clean()
    time.sleep(0.5)
    smi.terminate()
    print(f"done in {time.time() - START:.1f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
