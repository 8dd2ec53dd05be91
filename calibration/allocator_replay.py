#!/usr/bin/env python3
"""Replay a training step's allocations through PyTorch's CUDA caching allocator, without a GPU.

The H200 runs (`calibration/h200-2026-11-30/set*.jsonl`) measured `max_memory_reserved` 0.5–16 % above
`max_memory_allocated`, and which cached blocks a tensor lands in depends on the order of every allocation
(docs/ACCURACY.md, nineteenth session: "what would settle it is a replay of the run's allocations through the
caching allocator's rules"). This script makes that replay:

1. It builds the case's model exactly as `calibration/measure.py` does (same configs, same transformers model
   classes) but on PyTorch's `meta` device, where every op computes shapes and allocates nothing, and runs
   measure.py's loop (forward with labels, backward, optimizer step, `zero_grad(set_to_none=True)`) STEPS times
   under a `TorchDispatchMode` that logs each new storage (bytes) as it is made and, through a weak reference,
   the moment it is freed: the sequence of `malloc`/`free` calls the CUDA run made, op for op. Full-size models
   cost nothing: no number is ever computed.
2. It replays that sequence through a re-implementation of `c10/cuda/CUDACachingAllocator.cpp`'s rules
   (PyTorch 2.x defaults: `expandable_segments` off, no `max_split_size_mb`, one stream):
   requests rounded up to 512 B; requests up to 1 MiB served from the small pool, whose segments are 2 MiB;
   larger ones from the large pool, a new segment being 20 MiB for requests under 10 MiB and the request rounded
   up to 2 MiB otherwise; a request takes the smallest cached block of its pool that fits (best fit), split when
   what remains is at least 512 B (small pool) or more than 1 MiB (large pool); a freed block merges with free
   neighbours of its segment; segments are never returned. `allocated` counts block sizes (as
   `max_memory_allocated` does), `reserved` segment sizes.

What the CUDA run does that the meta device cannot show, and how it is stood in for:
- attention: SDPA on `meta` would take the math kernel; CUDA's flash kernel is replaced by `FlashLike`, which
  allocates what `mha_fwd` / `mha_bwd` allocate (output and fp32 log-sum-exp; dq, dk, dv, fp32 `softmax_d`
  and `dq_accum`, and dk/dv expanded to every head under grouped-query attention); `EfficientLike` for the
  memory-efficient kernel SDPA takes when handed a mask (which it converts to a float one first); SDPA's math
  composite, as on the meta device, where flash cannot run (fp32) and the efficient kernel takes no `enable_gqa`;
- dropout: CUDA's fused `native_dropout`, which keeps a boolean mask (off CUDA `aten::dropout` keeps a noise
  tensor in the input's dtype);
- cuBLAS' workspace (`CUBLAS_WORKSPACE_CONFIG` default `:4096:8` on Hopper: 32 MiB), taken from the caching
  allocator at the first matrix multiply of the forward and again of the backward (autograd's own thread);
- autocast, which acts on CUDA tensors only: `CudaAutocast`, a `TorchFunctionMode` (above autograd, as the real
  one is, so autograd records the casts) with CUDA's op lists from aten/src/ATen/autocast_mode.cpp, the weight-cast
  cache, the recompute of a checkpointed block under the autocast its forward ran in, and CUDA's fp16-to-fp32
  softmax (`half_to_float`: no fp32 copy, an fp16 gradient); GradScaler's in-place scaling is left out;
- tensors on the CPU (the optimizer's step counts) are not logged.
The Liger, torchao, compiled, Trainer and distributed cases are not replayed; bitsandbytes' 4-bit base is, on the meta
device (`--qlora`, `quantize_4bit_meta`), its fp32 SDPA math-kernel backward apart (CUDA held one score tensor more).

    v/bin/python calibration/allocator_replay.py            # every replayable H200 case, a table
    v/bin/python calibration/allocator_replay.py ID [ID...] # those cases, with their phase readings
    v/bin/python calibration/allocator_replay.py --grid > /tmp/grid.csv   # replays beyond the measured runs
    memplan calibrate /tmp/grid.csv                         # the model against them
    v/bin/python calibration/allocator_replay.py --families [NAME...]     # the named families (all, without names)
    v/bin/python calibration/allocator_replay.py --families pythia-1.4b opt-1.3b bloom-1b7 falcon-7b gpt-j-6b \
        phi-1.5 gemma-2b qwen3-0.6b olmo-2-7b smollm2-360m qwen1.5-moe gpt2-large gemma-3-1b starcoder2-3b \
        roberta-large t5-base flan-t5-base bart-large > calibration/replay-families-2026-12-03.csv   # transformers 5.24
    v/bin/python calibration/allocator_replay.py --families phi-3-mini gemma-2-2b qwen2.5-1.5b llama-3.2-1b \
        mixtral-8x7b deepseek-v2-lite mpt-7b falcon-40b command-r stablelm-2-1.6b granite-3.0-2b olmoe-1b-7b \
        qwen3-30b-a3b > calibration/replay-families-2026-12-05.csv
    v/bin/python calibration/allocator_replay.py --families starcoderbase-1b gpt-neo-1.3b glm-4-9b \
        nemotron-mini-4b gemma-3-4b command-r7b smollm3-3b granite-moe-1b phi-3.5-moe distilbert-base \
        xlm-roberta-base modernbert-base mt5-base nllb-200-600m > calibration/replay-families-2026-12-05b.csv
    v/bin/python calibration/allocator_replay.py --families falcon-7b opus-mt-en-de mbart-large-50 pegasus-large \
        gpt-oss-20b glm-4.5-air llama-4-scout exaone-4.0-1.2b ernie-4.5-0.3b phi-4-mini hunyuan-1.8b \
        > calibration/replay-families-2026-12-05c.csv
    v/bin/python calibration/allocator_replay.py --families umt5-base byt5-base electra-base olmo-3-7b \
        ministral-8b mistral-nemo-12b seed-oss-36b > calibration/replay-families-2026-12-05d.csv
    v/bin/python calibration/allocator_replay.py --classifiers pythia-1.4b opt-1.3b gemma-2b qwen3-0.6b \
        smollm2-360m gpt2-large roberta-large phi-3-mini gemma-2-2b qwen2.5-1.5b llama-3.2-1b xlm-roberta-base \
        modernbert-base mistral-nemo-12b > calibration/replay-classifiers-2026-12-05.csv   # as 2-label classifiers
    v/bin/python calibration/allocator_replay.py --no-lora-dropout llama-3.2-1b llama-3.2-1b:cls qwen2.5-1.5b \
        qwen2.5-1.5b:cls phi-3-mini phi-3-mini:cls t5-base bart-large roberta-large roberta-large:cls gpt2-large \
        gemma-2b > calibration/replay-lora-nodropout-2026-12-05.csv   # LoRA with lora_dropout=0 (`:cls` classifiers)
    v/bin/python calibration/allocator_replay.py --no-lora-dropout qwen3-0.6b qwen3-0.6b:cls smollm2-360m falcon-7b \
        mistral-nemo-12b:cls | tail -n +2 >> calibration/replay-lora-nodropout-2026-12-05.csv   # held out, then added
    v/bin/python calibration/allocator_replay.py --qlora qlora-l8b-r16all-ckpt-b4-s2048 ...   # the H200's QLoRA cases
    v/bin/python calibration/allocator_replay.py --qlora-families llama-3.2-1b qwen2.5-1.5b qwen3-0.6b smollm2-360m \
        gemma-2b phi-3-mini olmo-2-7b falcon-7b opt-1.3b pythia-1.4b stablelm-2-1.6b granite-3.0-2b ministral-8b \
        gemma-3-1b mistral-nemo-12b > calibration/replay-qlora-2026-12-05.csv   # bitsandbytes NF4 on the meta device
    v/bin/python calibration/allocator_replay.py --qlora-noprep-families NAME... | tail -n +2 \
        >> calibration/replay-qlora-2026-12-05.csv   # the same without prepare_model_for_kbit_training
    v/bin/python calibration/allocator_replay.py --qlora-trl-families bloom-1b7 falcon-7b gemma-2-2b gemma-2b \
        gemma-3-1b granite-3.0-2b llama-3.2-1b ministral-8b mistral-nemo-12b olmo-2-7b opt-1.3b phi-3-mini \
        pythia-1.4b qwen2.5-1.5b qwen3-0.6b smollm2-360m stablelm-2-1.6b \
        > calibration/replay-qlora-trl-2026-12-05.csv   # prepared, then TRL <= 0.21's embeddings back in bf16
    v/bin/python calibration/allocator_replay.py --trl-fused-head llama-3.2-1b qwen2.5-1.5b gemma-2b smollm2-360m \
        qwen3-0.6b phi-3-mini > calibration/replay-trl-fused-head-2026-12-05.csv   # TRL >= 1.15's fused LM head
    v/bin/python calibration/allocator_replay.py --trl-dpo llama-3.2-1b qwen2.5-1.5b smollm2-360m qwen3-0.6b \
        > calibration/replay-trl-dpo-2026-12-05.csv   # TRL 1.16's DPOTrainer loss, its fused head
    v/bin/python calibration/allocator_replay.py --trl-dpo-logits llama-3.2-1b qwen2.5-1.5b smollm2-360m qwen3-0.6b \
        gemma-2-2b > calibration/replay-trl-dpo-logits-2026-12-05.csv   # TRL 0.29-1.13's DPO, the model's logits
    v/bin/python calibration/allocator_replay.py --trl-dpo-logits-0.24 llama-3.2-1b qwen2.5-1.5b
                                                 # TRL 0.15-0.28's DPO (concatenated_forward)
    v/bin/python calibration/allocator_replay.py --trl-dpo-logits-0.13 llama-3.2-1b qwen2.5-1.5b qwen3-0.6b \
        > calibration/replay-trl-dpo-logits-0.13-2026-12-07.csv   # TRL 0.12-0.14's: a whole log_softmax saved
    v/bin/python calibration/allocator_replay.py --trl-dpo-logits-0.11 llama-3.2-1b qwen2.5-1.5b smollm2-360m \
        > calibration/replay-trl-dpo-logits-0.11-2026-12-07.csv   # TRL 0.9-0.11's: the logits returned, the NLL
    v/bin/python calibration/allocator_replay.py --trl-dpo-logits-0.8 llama-3.2-1b qwen2.5-1.5b \
        > calibration/replay-trl-dpo-logits-0.8-2026-12-07.csv    # TRL 0.5-0.8's: the logits returned
    v/bin/python calibration/allocator_replay.py --trl-sft-logits llama-3.2-1b qwen2.5-1.5b smollm2-360m qwen3-0.6b \
        gemma-2-2b > calibration/replay-trl-sft-logits-2026-12-05.csv   # TRL <= 1.6's SFT: the Trainer's loss, metrics
    v/bin/python calibration/allocator_replay.py --trl-chunked-nll llama-3.2-1b qwen2.5-1.5b smollm2-360m qwen3-0.6b \
        gemma-2-2b > calibration/replay-trl-chunked-nll-2026-12-05.csv   # TRL 1.7-1.14's SFT default, chunked NLL
    v/bin/python calibration/allocator_replay.py --llamafactory-dpo llama-3.2-1b qwen2.5-1.5b smollm2-360m qwen3-0.6b \
        gemma-2-2b > calibration/replay-llamafactory-dpo-2026-12-05.csv   # LLaMA-Factory 0.9.5's DPO
    v/bin/python calibration/allocator_replay.py --llamafactory-orpo llama-3.2-1b qwen2.5-1.5b smollm2-360m \
        qwen3-0.6b gemma-2-2b > calibration/replay-llamafactory-orpo-2026-12-05.csv   # its pref_loss orpo, no reference
    v/bin/python calibration/allocator_replay.py --trl-orpo-kernel llama-3.2-1b qwen2.5-1.5b smollm2-360m \
        qwen3-0.6b gemma-2-2b > calibration/replay-trl-orpo-2026-12-05.csv   # TRL's ORPOTrainer, 1.14 on (its kernel)
    v/bin/python calibration/allocator_replay.py --trl-orpo llama-3.2-1b qwen2.5-1.5b smollm2-360m qwen3-0.6b \
        gemma-2-2b > calibration/replay-trl-orpo-1.13-2026-12-05.csv   # the same up to 1.13 (row-wise log-probs)
    v/bin/python calibration/allocator_replay.py --llamafactory-kto llama-3.2-1b qwen2.5-1.5b smollm2-360m \
        qwen3-0.6b gemma-2-2b > calibration/replay-llamafactory-kto-2026-12-05.csv   # LLaMA-Factory 0.9.5's KTO
    v/bin/python calibration/allocator_replay.py --trl-qlora llama-3.2-1b qwen2.5-1.5b smollm2-360m qwen3-0.6b \
        gemma-2b phi-3-mini > calibration/replay-trl-qlora-2026-12-05.csv   # TRL 1.16's QLoRA: bf16 adapters
    v/bin/python calibration/allocator_replay.py --segments --trl-chunked-nll smollm2-360m:bf16:ckpt:8:2048
                                                 # a full fine-tune's segment history under a mode (or --families)
    v/bin/python calibration/allocator_replay.py --segments --trl-dpo-logits-0.13 llama-3.2-1b:amp-bf16:ckpt:2:2048:lora
                                                 # the same with LoRA r16 on every linear layer
    v/bin/python calibration/allocator_replay.py --bert-guide   # the Trainer guide's V100 BERT-large rows
    v/bin/python calibration/allocator_replay.py --dropped-output llama-3.1-8b:bf16:ckpt:4:2048:lora ...
                                                 # each case holding its output through backward and dropping it

(`v` a virtual environment with torch, transformers and peft: `python3 -m venv v && v/bin/pip install torch
transformers peft`.) With torch 2.15, transformers 5.24 and peft 0.21.2 it reproduces the H200 runs' (torch 2.11,
transformers 5.17) `max_memory_allocated` to within 7 MiB in 32 of the 33 replayable cases that fitted and
`max_memory_reserved` within 0.6 % in 24, and needs more than the card for the three that ran out of memory
(docs/ACCURACY.md, "The caching allocator, replayed"). `--grid` writes 64 more cases (four Llama
and Qwen models, bf16, checkpointing on and off, full and LoRA, 2,048–8,192 tokens), each on both counters, as rows of
the calibration schema for `memplan calibrate` — replays, not measurements, so not a calibration set of their own.
`--families` does the same for eighteen model families the H200 runs did not cover (GPT-NeoX/Pythia, OPT, BLOOM,
Falcon, GPT-J, Phi-1.5, Gemma, Qwen3, OLMo-2, SmolLM2, Qwen1.5-MoE, GPT-2 large, Gemma-3, StarCoder2; RoBERTa-large as a masked LM;
T5-base, FLAN-T5-base and BART-large), each built from its published config.json and run six ways (pure bf16, with
and without checkpointing, AMP, fp32, LoRA on every linear with and without checkpointing; the encoders and
encoder–decoders at 512 tokens, and also under fp16 autocast with and without checkpointing); `calibration/replay-families-2026-12-03.csv` holds what it printed (torch 2.15,
transformers 5.24, peft 0.21.2), which `cost-model/tests/calibration.rs` holds the model to. Six more families
(Phi-3-mini, Gemma-2-2B under eager attention, Qwen2.5-1.5B, Llama-3.2-1B, Mixtral-8x7B and DeepSeek-V2-Lite, whose
narrower v heads send SDPA to the memory-efficient kernel) and seven of layouts of their own (MPT-7B under eager
attention with ALiBi, Falcon-40B, Command-R, StableLM-2-1.6B, Granite-3.0-2B, OLMoE-1B-7B, Qwen3-30B-A3B) are in
`calibration/replay-families-2026-12-05.csv` (torch 2.15, transformers 5.25, peft 0.21.2). Fourteen more, most of them
named by no preset when replayed (StarCoderBase, GPT-Neo, GLM-4, Nemotron, Gemma-3-4B, Command-R7B, SmolLM3,
Granite-MoE, Phi-3.5-MoE, DistilBERT, XLM-R, ModernBERT, mT5, NLLB-200), are in `replay-families-2026-12-05b.csv`, and
ten more (Marian, mBART-50, PEGASUS, gpt-oss under eager attention, GLM-4.5-Air, Llama-4-Scout, EXAONE-4.0,
ERNIE-4.5, Phi-4-mini, Hunyuan) with Falcon-7B again under transformers 5.25 in `replay-families-2026-12-05c.csv`;
seven more (UMT5, ByT5, ELECTRA, OLMo-3, Ministral-8B, Mistral-NeMo-12B, Seed-OSS-36B) in
`replay-families-2026-12-05d.csv`.
"""

import bisect
import math
import contextlib
import gc
import json
import os
import sys
import types
import weakref

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils.weak import WeakIdKeyDictionary

HERE = os.path.dirname(os.path.abspath(__file__))
GIB = float(1 << 30)
MIB = 1 << 20

# CUDACachingAllocator.cpp constants (PyTorch 2.0–2.11).
K_MIN_BLOCK = 512
K_SMALL_SIZE = 1 << 20
K_SMALL_BUFFER = 2 << 20
K_MIN_LARGE_ALLOC = 10 << 20
K_ROUND_LARGE = 2 << 20
K_LARGE_BUFFER = 20 << 20
# cuBLAS workspace on sm90 (`:4096:8`, CUDABlas.cpp `getChainedCublasWorkspaceSize`).
CUBLAS_WORKSPACE = 8 * 4096 * 1024


def round_size(n):
    return K_MIN_BLOCK if n < K_MIN_BLOCK else K_MIN_BLOCK * ((n + K_MIN_BLOCK - 1) // K_MIN_BLOCK)


def allocation_size(n):
    if n <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if n < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return K_ROUND_LARGE * ((n + K_ROUND_LARGE - 1) // K_ROUND_LARGE)


class Block:
    __slots__ = ("ptr", "size", "small", "free", "prev", "next")

    def __init__(self, ptr, size, small):
        self.ptr, self.size, self.small, self.free = ptr, size, small, True
        self.prev = self.next = None


class CachingAllocator:
    """The caching allocator's bookkeeping for one device and one stream."""

    def __init__(self):
        self.pools = {True: [], False: []}  # sorted (size, ptr, block) of free blocks
        self.next_ptr = 0
        self.allocated = self.reserved = 0
        self.peak_allocated = self.peak_reserved = 0

    def _insert(self, b):
        bisect.insort(self.pools[b.small], (b.size, b.ptr, b))

    def _remove(self, b):
        pool = self.pools[b.small]
        i = bisect.bisect_left(pool, (b.size, b.ptr))
        assert pool[i][2] is b
        del pool[i]

    def malloc(self, n):
        size = round_size(n)
        small = size <= K_SMALL_SIZE
        pool = self.pools[small]
        i = bisect.bisect_left(pool, (size, -1))
        if i < len(pool):
            b = pool.pop(i)[2]
        else:
            seg = allocation_size(size)
            b = Block(self.next_ptr, seg, small)
            self.next_ptr += seg + K_ROUND_LARGE  # segments are not adjacent
            self.reserved += seg
            self.peak_reserved = max(self.peak_reserved, self.reserved)
        remaining = b.size - size
        if (remaining >= K_MIN_BLOCK) if small else (remaining > K_SMALL_SIZE):
            rest = Block(b.ptr + size, remaining, small)
            rest.prev, rest.next = b, b.next
            if b.next is not None:
                b.next.prev = rest
            b.next = rest
            b.size = size
            self._insert(rest)
        b.free = False
        self.allocated += b.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return b

    def release(self, b):
        b.free = True
        self.allocated -= b.size
        for nb in (b.prev, b.next):
            if nb is not None and nb.free:
                self._remove(nb)
                if nb is b.prev:
                    b.ptr, b.prev = nb.ptr, nb.prev
                    if nb.prev is not None:
                        nb.prev.next = b
                else:
                    b.next = nb.next
                    if nb.next is not None:
                        nb.next.prev = b
                b.size += nb.size
        self._insert(b)


class AllocationLog(TorchDispatchMode):
    """Logs every storage a meta-device op creates, and when the storage dies, as malloc/free events."""

    def __init__(self):
        super().__init__()
        self.seen = WeakIdKeyDictionary()
        self.events = []  # ("a", id, bytes) / ("f", id) / ("mark", name)
        self.n = 0
        self.workspaces = 0
        self.backward = False

    def _free(self, i):
        self.events.append(("f", i))

    def alloc_raw(self, nbytes):
        i = self.n
        self.n += 1
        self.events.append(("a", i, nbytes))
        return i

    def track(self, t):
        if not isinstance(t, torch.Tensor) or t.device.type != "meta":
            return
        st = t.untyped_storage()
        if st in self.seen or st.nbytes() == 0:
            return
        i = self.alloc_raw(st.nbytes())
        self.seen[st] = i
        weakref.finalize(st, self._free, i)

    def mark(self, name):
        self.events.append(("mark", name))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in MATMULS and self.workspaces < 1 + self.backward:
            # cuBLAS' workspace is kept per (handle, stream) and handles per thread: the first GEMM of the
            # forward takes one, the first of the backward (autograd's device thread) another; cuBLASLt
            # shares it (CUDABlas.cpp, `getCurrentCUDABlasHandle`, `cublas_handle_stream_to_workspace`).
            self.workspaces += 1
            self.alloc_raw(CUBLAS_WORKSPACE)
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            self.track(t)
        return out


aten = torch.ops.aten
SDPA = torch.nn.functional.scaled_dot_product_attention
MATMULS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default}


def _rounded(n, m):
    return (n + m - 1) // m * m


class FlashLike(torch.autograd.Function):
    """What PyTorch's flash-attention kernels allocate (aten/src/ATen/native/transformers/cuda/flash_attn/
    flash_api.cpp, `mha_fwd` / `mha_bwd`): forward, the output (B, S, H, D) and the fp32 log-sum-exp
    (B, H, S); backward, dq, dk, dv, the fp32 `softmax_d` (B, H, S rounded to 128) and `dq_accum`
    (B, S rounded to 128, H, D rounded to 32), and under grouped-query attention dk and dv for every head
    before they are summed over each group."""

    @staticmethod
    def forward(ctx, q, k, v):
        b, h, s, d = q.shape
        out = torch.empty(b, s, h, d, dtype=q.dtype, device=q.device).transpose(1, 2)
        lse = torch.empty(b, h, s, dtype=torch.float32, device=q.device)
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        b, h, s, d = q.shape
        hk = k.shape[1]
        dev = q.device
        dq = torch.empty(b, s, h, d, dtype=q.dtype, device=dev).transpose(1, 2)
        dk = torch.empty(b, k.shape[2], hk, d, dtype=k.dtype, device=dev).transpose(1, 2)
        dv = torch.empty(b, v.shape[2], hk, d, dtype=v.dtype, device=dev).transpose(1, 2)
        softmax_d = torch.empty(b, h, _rounded(s, 128), dtype=torch.float32, device=dev)
        dq_accum = torch.empty(b, _rounded(s, 128), h, _rounded(d, 32), dtype=torch.float32, device=dev)
        if hk != h:
            dk_expanded = torch.empty(b, k.shape[2], h, d, dtype=k.dtype, device=dev)
            dv_expanded = torch.empty(b, v.shape[2], h, d, dtype=v.dtype, device=dev)
            del dk_expanded, dv_expanded
        del softmax_d, dq_accum
        return dq, dk, dv


class EfficientLike(torch.autograd.Function):
    """What the memory-efficient kernel allocates when SDPA is handed a mask (flash takes none):
    forward, the output and the fp32 log-sum-exp (B, H, S rounded to 32); backward, dq, dk, dv, the fp32
    `delta` (B, H, S) and a workspace where dq accumulates in fp32 (attention_backward.cu,
    `_efficient_attention_backward`; the workspace's size depends on the kernel chosen, taken here as one fp32 dq)."""

    @staticmethod
    def forward(ctx, q, k, v, bias):
        b, h, s, d = q.shape
        # The output is as wide a head as v (latent attention's v heads are narrower than q and k).
        out = torch.empty(b, s, h, v.shape[-1], dtype=q.dtype, device=q.device).transpose(1, 2)
        lse = torch.empty(b, h, _rounded(s, 32), dtype=torch.float32, device=q.device)
        ctx.save_for_backward(q, k, v, bias, out, lse)
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, bias, out, lse = ctx.saved_tensors
        b, h, s, d = q.shape
        dev = q.device
        dq = torch.empty(b, s, h, d, dtype=q.dtype, device=dev).transpose(1, 2)
        dk = torch.empty(b, k.shape[2], k.shape[1], d, dtype=k.dtype, device=dev).transpose(1, 2)
        dv = torch.empty(b, v.shape[2], v.shape[1], v.shape[-1], dtype=v.dtype, device=dev).transpose(1, 2)
        delta = torch.empty(b, h, s, dtype=torch.float32, device=dev)
        workspace = torch.empty(b, h, s, d, dtype=torch.float32, device=dev)
        del delta, workspace
        return dq, dk, dv, None


def math_sdpa(q, k, v, attn_mask, dropout_p, is_causal, scale):
    """SDPA's math composite with grouped k/v (aten/src/ATen/native/transformers/attention.cpp,
    `_scaled_dot_product_attention_math`), its dropout CUDA's (`cuda_dropout`): q and k each scaled by the
    square root of the scale, k and v repeated to every head, a causal mask as a float one, `_safe_softmax`."""
    factor = math.sqrt(scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    query = q * factor
    n_rep = q.shape[1] // k.shape[1]
    key, value = k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)
    attn = torch.matmul(query, key.transpose(-2, -1) * factor)
    if is_causal:
        L, S = q.shape[-2], k.shape[-2]
        keep = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
        attn_mask = torch.zeros(L, S, dtype=q.dtype, device=q.device).masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_mask = torch.zeros(attn_mask.shape, dtype=q.dtype, device=q.device).masked_fill(
                ~attn_mask, float("-inf"))
        attn = attn + attn_mask
    attn = torch.ops.aten._safe_softmax(attn, -1)
    attn = cuda_dropout(attn, dropout_p, True)
    return torch.matmul(attn, value)


def flash_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False, **kw):
    if AUTOCAST:
        # `scaled_dot_product_attention` is on autocast's lower-precision list, which casts every floating
        # argument (`cached_cast` over all of them, autocast_mode.h): a float mask too — T5's position bias,
        # a new 16-bit copy per call, which the memory-efficient kernel keeps.
        q, k, v = (AUTOCAST[-1].low(t) for t in (q, k, v))
        attn_mask = AUTOCAST[-1].low(attn_mask)
    if q.dtype not in (torch.float16, torch.bfloat16) and enable_gqa and k.shape[1] != q.shape[1]:
        # Flash takes 16-bit inputs only and the memory-efficient kernel no `enable_gqa`: CUDA runs SDPA's
        # math composite (repeated k/v, the kept probabilities), which is what the meta device runs too —
        # except its dropout, `at::dropout` in C++, whose meta path keeps a noise tensor of the scores' dtype
        # where CUDA's fused kernel keeps a 1-byte mask; with dropout the composite is run here op for op.
        if dropout_p > 0.0:
            return math_sdpa(q, k, v, attn_mask, dropout_p, is_causal, scale)
        return SDPA(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                    enable_gqa=enable_gqa)
    if attn_mask is None and v.shape[-1] != q.shape[-1]:
        # Flash needs one head width for q, k and v (`check_head_dim_size_flash`); latent attention's v heads
        # are narrower, and SDPA takes the memory-efficient kernel, without a bias.
        return EfficientLike.apply(q, k, v, None)
    if attn_mask is None:
        if k.shape[1] != q.shape[1] and not enable_gqa:
            raise AssertionError("grouped k/v without enable_gqa")
        return FlashLike.apply(q, k, v)
    # SDPA turns a boolean mask into a float one (`convert_boolean_attn_mask`) and the memory-efficient
    # kernel keeps it; grouped k/v reach it already repeated (transformers' `repeat_kv`).
    if attn_mask.dtype == torch.bool:
        attn_mask = torch.zeros(attn_mask.shape, dtype=q.dtype, device=q.device)
    return EfficientLike.apply(q, k, v, attn_mask)


F = torch.nn.functional
# CUDA autocast's op lists (aten/src/ATen/autocast_mode.cpp), at the torch functions transformers calls: those cast
# to the lower precision, those run in fp32, those given `dtype=float32` when an input is lower precision, and those
# that promote to the widest input.
LOWER = {F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.Tensor.mm, torch.bmm,
         torch.Tensor.bmm, torch.addmm, torch.Tensor.addmm, torch.baddbmm, torch.Tensor.baddbmm, torch.einsum,
         F.conv1d, F.conv2d}
FP32 = {F.layer_norm, F.group_norm, torch.exp, torch.Tensor.exp, torch.rsqrt, torch.Tensor.rsqrt, torch.pow,
        torch.Tensor.pow, torch.Tensor.__pow__, torch.log, torch.Tensor.log, torch.log1p, torch.reciprocal,
        torch.Tensor.reciprocal, F.softplus, F.nll_loss, F.mse_loss, F.l1_loss, F.smooth_l1_loss,
        F.binary_cross_entropy_with_logits, F.kl_div, torch.logsumexp, torch.Tensor.logsumexp, torch.cdist}
FP32_OPT = {F.softmax, F.log_softmax, torch.softmax, torch.log_softmax, torch.Tensor.softmax,
            torch.Tensor.log_softmax, torch.cumsum, torch.Tensor.cumsum, torch.prod, torch.Tensor.prod,
            torch.sum, torch.Tensor.sum}
SOFTMAXES = {F.softmax, F.log_softmax, torch.softmax, torch.log_softmax, torch.Tensor.softmax,
             torch.Tensor.log_softmax}
PROMOTE = {torch.cat, torch.stack, torch.addcmul, torch.Tensor.addcmul, torch.addcdiv, torch.Tensor.addcdiv,
           torch.index_put, torch.Tensor.index_put, torch.Tensor.index_put_, torch.scatter_add,
           torch.Tensor.scatter_add}
LOW_FLOATS = (torch.float16, torch.bfloat16)


class CudaAutocast(TorchFunctionMode):
    """`torch.autocast("cuda", dtype)` for meta tensors (autocast acts on CUDA tensors only), above autograd as the
    real one is, so autograd records the casts and saves what it saves on CUDA. Casts of fp32 leaves that require
    grad (the weights) are cached until the region ends (`cached_cast`)."""

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype
        self.cache = {}

    def __exit__(self, *a):
        self.cache.clear()
        return super().__exit__(*a)

    def low(self, t):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
            return t
        if t.is_leaf and t.requires_grad:
            c = self.cache.get(id(t))
            if c is None or c[0] is not t:
                c = self.cache[id(t)] = (t, t.to(self.dtype))
            return c[1]
        return t.to(self.dtype)

    @staticmethod
    def fp32(t):
        return t.float() if isinstance(t, torch.Tensor) and t.dtype in LOW_FLOATS else t

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.cross_entropy and args[0].dtype in LOW_FLOATS:
            # aten's cross_entropy_loss is log_softmax then nll_loss, and autocast runs the log-softmax with
            # dtype=float32: its saved output is fp32, with no fp32 copy of the logits.
            return cross_entropy_fp32_log_softmax(*args, **kwargs)
        tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        if func in LOWER:
            args, kwargs = tree_map(self.low, (args, kwargs))
        elif func in FP32:
            args, kwargs = tree_map(self.fp32, (args, kwargs))
        elif func in FP32_OPT:
            if kwargs.get("dtype") is None and any(t.dtype in LOW_FLOATS for t in tensors):
                kwargs = dict(kwargs, dtype=torch.float32)
                if func in SOFTMAXES:
                    return softmax_fp32(func, *args, **kwargs)
        elif func in PROMOTE:
            floats = [t.dtype for t in tensors if t.is_floating_point()]
            if torch.float32 in floats and any(d in LOW_FLOATS for d in floats):
                args, kwargs = tree_map(self.fp32, (args, kwargs))
        return func(*args, **kwargs)


class HalfToFloat(torch.autograd.Function):
    """CUDA's `_softmax` / `_log_softmax` with `half_to_float`: an fp16 input read as is into an fp32 output, and a
    gradient made in fp16 (`softmax` in aten/src/ATen/native/SoftMax.cpp takes this path for a CUDA fp16 input given
    dtype=float32; a bf16 input, or any input off CUDA, is converted to fp32 first)."""

    @staticmethod
    def forward(ctx, x):
        out = torch.empty(x.shape, dtype=torch.float32, device=x.device)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return torch.empty(out.shape, dtype=torch.float16, device=out.device)


def softmax_fp32(func, x, dim=None, dtype=None, **kw):
    if x.dtype == torch.float16 and dtype == torch.float32:
        return HalfToFloat.apply(x)
    return func(x, dim, dtype=dtype, **kw) if dim is not None else func(x, dtype=dtype, **kw)


def cross_entropy_fp32_log_softmax(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                                   reduction="mean", label_smoothing=0.0):
    assert label_smoothing == 0.0 and size_average is None and reduce is None
    logp = softmax_fp32(F.log_softmax, input, 1 if input.dim() > 1 else 0, dtype=torch.float32)
    return F.nll_loss(logp, target, weight=weight, ignore_index=ignore_index, reduction=reduction)


AUTOCAST = []  # the active CudaAutocast, for the SDPA stand-in (a Python function, which modes do not see)


class Autocasting:
    """Enters a `CudaAutocast` for the region (and tells the SDPA stand-in)."""

    def __init__(self, dtype):
        self.mode = CudaAutocast(dtype) if dtype is not None else None

    def __enter__(self):
        if self.mode is not None:
            AUTOCAST.append(self.mode)
            self.mode.__enter__()

    def __exit__(self, *a):
        if self.mode is not None:
            self.mode.__exit__(*a)
            AUTOCAST.pop()


def checkpoint_contexts():
    """`context_fn` for torch.utils.checkpoint: the recompute runs under the autocast its forward ran under, as
    checkpoint does for the real autocast (which it saves and restores itself)."""
    dtype = AUTOCAST[-1].dtype if AUTOCAST else None
    return contextlib.nullcontext(), Autocasting(dtype)


def cuda_dropout(input, p=0.5, training=True, inplace=False):
    """`F.dropout` as it runs on CUDA: the fused `native_dropout`, which keeps a boolean mask. Off CUDA
    `aten::dropout` multiplies by a noise tensor of the input's dtype and keeps that instead
    (`is_fused_kernel_acceptable` in aten/src/ATen/native/Dropout.cpp)."""
    if not training or p == 0.0:
        return input
    return torch.native_dropout(input, p, True)[0]


def load_measure():
    """calibration/measure.py's model configs and case lists (it imports pynvml at the top: a stub)."""
    sys.modules.setdefault("pynvml", types.ModuleType("pynvml"))
    os.environ["DEVICE"] = "meta"
    sys.path.insert(0, HERE)
    import measure

    return measure


def measure_cases(measure):
    """measure.py's cases by id, from every `CASES…` list (the first of an id where two lists hold it)."""
    cases = {}
    for name in dir(measure):
        v = getattr(measure, name)
        if name.startswith("CASES") and isinstance(v, list):
            for c in v:
                cases.setdefault(c["id"], c)
    return cases


def measured_cases():
    out = {}
    d = os.path.join(HERE, "h200-2026-11-30")
    for f in sorted(os.listdir(d)):
        if f.endswith(".jsonl"):
            for line in open(os.path.join(d, f)):
                r = json.loads(line)
                out[r["id"]] = r  # a later set's rerun replaces the earlier reading
    return out


def replayable(c):
    return (
        c["precision"] in ("bf16", "fp32", "amp-bf16", "amp-fp16")
        and not c.get("trainer")
        and not c.get("compile")
        and not c.get("quant")
        and not c.get("liger")
        and not c.get("fp8")
        and not c.get("wrap")
        and not c.get("offload")
        and c["optimizer"] in ("adamw", "sgd-momentum")
        and c["attn"] == "sdpa"
    )


def trace(measure, c, steps=3):
    """The case's allocation log over `steps` training steps, and the model's parameter count."""
    import transformers
    import transformers.integrations.sdpa_attention as sa
    import transformers.masking_utils as mu

    # Data-dependent checks cannot run on meta tensors; the replayed batches are unpacked and unpadded.
    mu.find_packed_sequence_indices = lambda position_ids: None
    mu.fast_all = lambda mask: True  # a padding mask's "no padding" test (BART's decoder); nothing is padded
    # The warning when a pad token leads or ends unmasked input ids (GPT-2's classifier reads its pad token).
    transformers.PreTrainedModel.warn_if_padding_and_no_attention_mask = lambda *a, **k: None
    sa.torch.nn.functional.scaled_dot_product_attention = flash_sdpa
    torch.nn.functional.scaled_dot_product_attention = flash_sdpa
    torch.nn.functional.dropout = cuda_dropout
    # A QLoRA case runs SDPA's math kernel over fp32 activations wherever grouped k/v send it there: its
    # `_safe_softmax` mask logged too (`SafeSoftmaxMask`; the replay files before the QLoRA ones without it).
    if FUSED_HEAD or DPO_LOGITS or SFT_LOGITS:
        log = (FusedHeadQuantLog if c.get("quant") else FusedHeadLog)()
    else:
        log = (SafeSoftmaxMask if c.get("quant") else AllocationLog)()
    with log:
        rec = {}
        cfg, model = measure.build(c, rec)
        if FUSED_HEAD:
            trl_fused_head(model)
        if DPO and not c["lora"] and not (LLAMAFACTORY_ORPO or TRL_ORPO):
            # TRL loads the reference in the policy's dtype (`create_model_from_path(..., dtype=model.dtype)`).
            _, ref = measure.build(c, {})
            if FUSED_HEAD:
                trl_fused_head(ref)
            ref.eval().requires_grad_(False)
            REFERENCE[:] = [ref]
        model = measure.with_lora(c, model)
        if BF16_ADAPTERS:
            # trl 1.16.0 `SFTTrainer.__init__`: `param.data = param.data.to(torch.bfloat16)` for every trainable
            # parameter of a quantized model (from 0.26).
            for p in model.parameters():
                if p.requires_grad:
                    p.data = p.data.to(torch.bfloat16)
        model.train()
        if c["ckpt"]:
            # The RNG state of the meta device cannot be saved; on CUDA it is a few bytes on the host.
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={
                    "use_reentrant": False,
                    "preserve_rng_state": False,
                    "context_fn": checkpoint_contexts,
                }
            )
        params = [p for p in model.parameters() if p.requires_grad]
        if c["optimizer"] == "adamw":
            opt = torch.optim.AdamW(params, lr=1e-5, foreach=True)  # CUDA's default
        else:
            opt = torch.optim.SGD(params, lr=1e-5, momentum=0.9, foreach=True)
        # DPO: chosen and rejected, concatenated (KTO: one sequence an example).
        rows = 2 * c["mb"] if DPO and not LLAMAFACTORY_KTO else c["mb"]
        ids = torch.randint(0, cfg.vocab_size, (rows, c["seq"]), device="meta")
        log.mark("load")
        amp = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}.get(c["precision"])
        train_steps(log, model, opt, dict(input_ids=ids, labels=measure.case_labels(c, ids)), amp, steps,
                    set_to_none=True)
        del model, opt, params
        REFERENCE.clear()
        gc.collect()
    return log.events, rec["params_total"]


# The order of transformers' Trainer, whose `compute_loss` returns the loss alone: the model's output (its logits)
# is gone before `loss.backward()` (`--dropped-output`).
DROP_OUTPUT = False

# TRL's own fused LM head (trl 1.15.0 on, `--trl-fused-head`): the model patched with `add_fused_lm_head` as
# `SFTTrainer` patches it (outputs log_probs, entropy and is_top1) and called with `fused_lm_head=True`.
FUSED_HEAD = False
# TRL 1.16.0's `DPOTrainer._compute_loss` (`--trl-dpo`): each micro-batch's chosen and rejected completions as one
# batch of twice its rows, the policy's fused-head forward, then the reference's under `no_grad` (the adapters
# disabled, or a frozen copy of the model for a full fine-tune), the sigmoid loss; the outputs dropped before
# backward, as the Trainer's `compute_loss` returns the loss alone.
DPO = False
REFERENCE = []
# TRL's `SFTTrainer` from 0.26 casts a quantized model's trainable parameters to bf16 (`--trl-qlora`).
BF16_ADAPTERS = False


def dpo_loss(model, batch, amp, beta=0.1):
    """TRL 1.16.0's `DPOTrainer._compute_loss` for one concatenated micro-batch (chosen rows first): the policy's
    per-sequence log-probabilities, the reference's under `no_grad`, the sigmoid loss."""
    import torch.nn.functional as F

    with Autocasting(amp):
        logps = model(**batch, fused_lm_head=True).log_probs.sum(dim=1)
        with torch.no_grad():
            if REFERENCE:
                ref_logps = REFERENCE[0](**batch, fused_lm_head=True).log_probs.sum(dim=1)
            else:
                with model.disable_adapter():
                    ref_logps = model(**batch, fused_lm_head=True).log_probs.sum(dim=1)
        chosen, rejected = logps.chunk(2)
        ref_chosen, ref_rejected = ref_logps.chunk(2)
        delta = (chosen - ref_chosen) - (rejected - ref_rejected)
        return -F.logsigmoid(beta * delta).mean()


# TRL 0.29.0 to 1.13.0's `DPOTrainer._compute_loss` without Liger (`--trl-dpo-logits`): the model's logits —
# `.float()`ed by Accelerate's `convert_outputs_to_fp32` under its native AMP, which the Trainer's `bf16=True`
# (TRL's configs default to it) turns on — their per-token log-probabilities through `selective_log_softmax`, the
# reference's logits under `no_grad` (alive, as `ref_outputs`, until the loss returns), the sigmoid loss, then the
# metrics the trainer logs from the policy's logits (their entropy, the mean chosen and rejected logit, the chosen
# tokens' accuracy). Copied from the trl 1.13.0 wheel (`trainer/dpo_trainer.py`, `trainer/utils.py`); trl 1.14.0
# computes the log-probabilities with a Triton kernel instead and 1.15.0 with its fused LM head (`--trl-dpo`).
DPO_LOGITS = False


def selective_log_softmax_1_13(logits, index):
    """trl 1.13.0 `selective_log_softmax`: a logsumexp per row for fp32 logits, a log-softmax per row for 16-bit
    ones (each row's kept for backward)."""
    import torch.nn.functional as F

    index = index.unsqueeze(-1)
    if logits.dtype in (torch.float32, torch.float64):
        selected_logits = torch.gather(logits, dim=-1, index=index)
        logsumexp_values = torch.stack([torch.logsumexp(lg, dim=-1) for lg in logits])
        per_token_logps = selected_logits - logsumexp_values.unsqueeze(-1)
    else:
        per_token_logps = []
        for row_logits, row_labels in zip(logits, index, strict=True):
            row_logps = F.log_softmax(row_logits, dim=-1)
            per_token_logps.append(row_logps.gather(dim=-1, index=row_labels))
        per_token_logps = torch.stack(per_token_logps)
    return per_token_logps.squeeze(-1)


def entropy_from_logits_1_13(logits, chunk_size=128):
    """trl 1.13.0 `entropy_from_logits`: the logits flattened (`reshape`, a copy of a shifted view), then 128 rows
    at a time."""
    import torch.nn.functional as F

    flat_logits = logits.reshape(-1, logits.shape[-1])
    entropies = []
    for chunk in flat_logits.split(chunk_size, dim=0):
        logps = F.log_softmax(chunk, dim=-1)
        entropies.append(-(torch.exp(logps) * logps).sum(-1))
    return torch.cat(entropies).reshape(logits.shape[:-1])


def wrapped_logits(model, ids, amp):
    """The model's logits as the Trainer's Accelerate wrapper returns them: the forward under autocast, its 16-bit
    outputs `.float()`ed (`convert_outputs_to_fp32`) and the originals dropped; without AMP as the model gives
    them."""
    with Autocasting(amp):
        out = model(input_ids=ids, use_cache=False)
    logits = out.logits.float() if amp is not None else out.logits
    del out
    return logits


def dpo_loss_logits(model, batch, amp, beta=0.1):
    """trl 1.13.0 `DPOTrainer._compute_loss` for one concatenated micro-batch (chosen rows first, every position a
    completion token), sigmoid loss, through the Trainer's Accelerate wrapper (`convert_outputs_to_fp32` under
    AMP)."""
    import torch.nn.functional as F

    ids = batch["input_ids"]
    logits = wrapped_logits(model, ids, amp)
    shift_logits = logits[..., :-1, :]
    shift_labels = ids[..., 1:]
    shift_completion_mask = torch.ones_like(shift_labels)
    per_token_logps = selective_log_softmax_1_13(shift_logits, shift_labels)
    per_token_logps[shift_completion_mask == 0] = 0.0
    chosen_logps, rejected_logps = per_token_logps.sum(dim=1).chunk(2, dim=0)
    with torch.no_grad():
        if REFERENCE:
            ref_logits = wrapped_logits(REFERENCE[0], ids, amp)
        else:
            with model.disable_adapter():
                ref_logits = wrapped_logits(model, ids, amp)
        ref_per_token_logps = selective_log_softmax_1_13(ref_logits[..., :-1, :], shift_labels)
        ref_per_token_logps[shift_completion_mask == 0] = 0.0
        ref_chosen_logps, ref_rejected_logps = ref_per_token_logps.sum(dim=1).chunk(2, dim=0)
    delta = (chosen_logps - ref_chosen_logps) - (rejected_logps - ref_rejected_logps)
    loss = -F.logsigmoid(beta * delta).mean()
    # The metrics.
    per_token_entropy = entropy_from_logits_1_13(shift_logits.detach())
    (per_token_entropy * shift_completion_mask).sum()
    chosen_logits, rejected_logits = shift_logits.detach().chunk(2, dim=0)
    chosen_mask, rejected_mask = shift_completion_mask.chunk(2, dim=0)
    chosen_logits[chosen_mask.bool()].mean(-1).sum()
    rejected_logits[rejected_mask.bool()].mean(-1).sum()
    predictions = chosen_logits.argmax(dim=-1)
    ((predictions == shift_labels[: len(shift_labels) // 2]) & chosen_mask.bool()).sum()
    return loss


def reference_logps(concatenated_forward, model):
    """The reference's chosen and rejected log-probabilities, its pass under `no_grad` after the policy's (TRL's
    `compute_ref_log_probs`): the adapters disabled or, for a full fine-tune, the frozen copy; nothing else of its
    outputs kept."""
    with torch.no_grad():
        if REFERENCE:
            return concatenated_forward(REFERENCE[0])[:2]
        with model.disable_adapter():
            return concatenated_forward(model)[:2]


def sigmoid_dpo_loss(chosen, rejected, ref_chosen, ref_rejected, beta):
    """DPO's sigmoid loss over the policy's and the reference's log-probabilities."""
    import torch.nn.functional as F

    delta = (chosen - ref_chosen) - (rejected - ref_rejected)
    return -F.logsigmoid(beta * delta).mean()


# TRL 0.15.0 to 0.28.0's `DPOTrainer.concatenated_forward` without Liger (`--trl-dpo-logits-0.24`, copied from the
# trl 0.24.0 wheel; 0.12.0 to 0.14.0 take a whole `log_softmax` of the shifted logits instead, `--trl-dpo-logits-0.13`
# below): the same model call and `selective_log_softmax` over the unshifted logits (labels rolled), the
# mean chosen and rejected logits by boolean mask inside it, and nothing of the outputs kept once it returns; the
# reference's pass is the same function under `no_grad` (`compute_ref_log_probs`), after the policy's.
DPO_LOGITS_0_24 = False


def dpo_loss_logits_0_24(model, batch, amp, beta=0.1):
    """trl 0.24.0 `DPOTrainer.get_batch_loss_metrics` for one concatenated micro-batch (chosen rows first, every
    position a completion token), sigmoid loss, through the Trainer's Accelerate wrapper."""
    ids = batch["input_ids"]
    num_examples = ids.shape[0] // 2

    def concatenated_forward(m):
        with Autocasting(amp):
            out = m(input_ids=ids, use_cache=False, output_hidden_states=True)
        out.logits = out.logits.float() if amp is not None else out.logits
        logits = out.logits
        labels = torch.roll(ids, shifts=-1, dims=1)
        loss_mask = torch.ones_like(labels, dtype=torch.bool)
        per_token_logps = selective_log_softmax_1_13(logits, labels)
        per_token_logps[~loss_mask] = 0
        per_token_logps = torch.roll(per_token_logps, shifts=1, dims=1)
        all_logps = per_token_logps[:, 1:].sum(-1)
        logits[:num_examples][loss_mask[:num_examples]].mean()
        logits[num_examples:][loss_mask[num_examples:]].mean()
        return all_logps[:num_examples], all_logps[num_examples:]

    chosen, rejected = concatenated_forward(model)
    return sigmoid_dpo_loss(chosen, rejected, *reference_logps(concatenated_forward, model), beta)


# TRL 0.12.0 to 0.14.0's `DPOTrainer.concatenated_forward` without Liger (`--trl-dpo-logits-0.13`, copied from the
# trl 0.13.0 wheel): the model called without `use_cache=False` (0.15.0 to 0.17.0 neither), a whole `log_softmax` of
# the shifted logits gathered (its output saved for backward), the mean chosen and rejected logits by boolean mask,
# and nothing of the outputs kept once it returns; the reference's pass the same under `no_grad`, after the
# policy's (`compute_ref_log_probs`). 0.14.0 rolls the labels rather than shifting the logits: the same bytes.
DPO_LOGITS_0_13 = False


def dpo_loss_logits_0_13(model, batch, amp, beta=0.1):
    """trl 0.13.0 `DPOTrainer.get_batch_loss_metrics` for one concatenated micro-batch (chosen rows first, every
    position a completion token), sigmoid loss, through the Trainer's Accelerate wrapper."""
    ids = batch["input_ids"]
    num_examples = ids.shape[0] // 2

    def concatenated_forward(m):
        # The published configs ask for a cache (`use_cache: true`), which the replay's configs turn off: on, as
        # the model call without `use_cache=False` then runs — but off where the model checkpoints in training
        # mode, as the transformers these releases ran (4.46-4.48, `LlamaModel.forward`: "`use_cache=True` is
        # incompatible with gradient checkpointing") turned it off whatever the grad mode (5.x keeps it under
        # `no_grad`).
        m.config.use_cache = not (m.training and m.is_gradient_checkpointing)
        with Autocasting(amp):
            outputs = m(input_ids=ids)
        outputs.logits = outputs.logits.float() if amp is not None else outputs.logits
        logits = outputs.logits[:, :-1, :]
        labels = ids[:, 1:].clone()
        loss_mask = torch.ones_like(labels, dtype=torch.bool)
        labels[~loss_mask] = 0
        per_token_logps = torch.gather(logits.log_softmax(-1), dim=2, index=labels.unsqueeze(2)).squeeze(2)
        per_token_logps[~loss_mask] = 0
        all_logps = per_token_logps.sum(-1)
        logits[:num_examples][loss_mask[:num_examples]].mean()
        logits[num_examples:][loss_mask[num_examples:]].mean()
        return all_logps[:num_examples], all_logps[num_examples:]

    chosen, rejected = concatenated_forward(model)
    return sigmoid_dpo_loss(chosen, rejected, *reference_logps(concatenated_forward, model), beta)


# TRL 0.5.0 to 0.11.4's `DPOTrainer.concatenated_forward` without Liger (`--trl-dpo-logits-0.11`, copied from the
# trl 0.11.4 wheel; `--trl-dpo-logits-0.8` from 0.8.6's): the model called with `use_cache=False`, its logits
# (`all_logits`) returned as the chosen and rejected halves (views) and held until the loss and its metrics
# (`logits/chosen`, `logits/rejected`) are computed; `get_batch_logps`: a whole `log_softmax` of the shifted logits
# gathered; from 0.9.0 to 0.11.4 also the chosen half's NLL, whatever `rpo_alpha` (`cross_entropy_loss` over a
# contiguous copy of its shifted logits, its log-softmax saved until the loss returns); the reference's pass the
# same under `no_grad`, after the policy's, its log-probabilities alone kept.
DPO_LOGITS_0_11 = False
DPO_LOGITS_0_8 = False


def dpo_loss_logits_0_11(model, batch, amp, beta=0.1):
    """trl 0.11.4 (0.8.6 with `DPO_LOGITS_0_8`) `DPOTrainer.get_batch_loss_metrics` for one concatenated
    micro-batch (chosen rows first, every position a completion token), sigmoid loss, through the Trainer's
    Accelerate wrapper."""
    ids = batch["input_ids"]
    len_chosen = ids.shape[0] // 2

    def get_batch_logps(logits, labels):
        labels = labels[:, 1:].clone()
        logits = logits[:, :-1, :]
        loss_mask = labels != -100
        labels[labels == -100] = 0
        per_token_logps = torch.gather(logits.log_softmax(-1), dim=2, index=labels.unsqueeze(2)).squeeze(2)
        return (per_token_logps * loss_mask).sum(-1), loss_mask.sum(-1)

    def cross_entropy_loss(logits, labels):
        logits = logits[..., :-1, :].contiguous()
        labels = labels[..., 1:].contiguous()
        loss_fct = torch.nn.CrossEntropyLoss(ignore_index=-100)
        logits = logits.view(-1, logits.shape[-1])
        labels = labels.view(-1)
        return loss_fct(logits, labels)

    def concatenated_forward(m):
        with Autocasting(amp):
            out = m(input_ids=ids, use_cache=False)
        all_logits = out.logits.float() if amp is not None else out.logits
        del out
        all_logps, _ = get_batch_logps(all_logits, ids)
        nll_loss = None
        if not DPO_LOGITS_0_8:
            labels = ids.clone()
            nll_loss = cross_entropy_loss(all_logits[:len_chosen], labels[:len_chosen])
        return (all_logps[:len_chosen], all_logps[len_chosen:], all_logits[:len_chosen], all_logits[len_chosen:],
                nll_loss)

    chosen, rejected, chosen_logits, rejected_logits, nll_loss = concatenated_forward(model)
    loss = sigmoid_dpo_loss(chosen, rejected, *reference_logps(concatenated_forward, model), beta)
    rejected_logits.detach().mean()
    chosen_logits.detach().mean()
    return loss


# TRL's `SFTTrainer.compute_loss` with the Trainer's loss (`loss_type="nll"`, the default up to 1.6; `--trl-sft-logits`,
# copied from the trl 1.6.0 wheel): the model's loss and logits (`.float()`ed by Accelerate's `convert_outputs_to_fp32`
# under AMP), then under `no_grad` the metrics it logs from the shifted logits — their entropy over a flattened copy
# (`entropy_from_logits`, 128 rows at a time) and the token accuracy (`argmax`) — before the outputs are dropped.
# (0.16 to 1.0 copy the shifted logits with `.contiguous()` first, the same bytes; 1.7 to 1.14 default to
# `chunked_nll`, 1.15 on to the fused LM head.)
SFT_LOGITS = False


def sft_loss_logits(model, batch, amp):
    """trl 1.6.0 `SFTTrainer.compute_loss` (`loss_type="nll"`, no Liger) for one micro-batch."""
    with Autocasting(amp):
        out = model(**batch)
    if amp is not None:
        out.logits = out.logits.float()
    loss = out.loss
    with torch.no_grad():
        shift_logits = out.logits[..., :-1, :]
        shift_labels = batch["labels"][..., 1:]
        per_token_entropy = entropy_from_logits_1_13(shift_logits)
        predictions = shift_logits.argmax(dim=-1)
        mask = shift_labels != -100
        (per_token_entropy * mask).sum()
        ((predictions == shift_labels) & mask).sum()
    return loss


# TRL 1.7 to 1.14's `SFTTrainer` default loss, `loss_type="chunked_nll"` (`--trl-chunked-nll`, copied from the trl
# 1.14.2 wheel, `trainer/sft_trainer.py` `_chunked_cross_entropy_loss` and `_chunk`): the backbone's last hidden
# states, shifted and flattened (a copy), packed valid-first (`hidden[order]`, another), then 256 positions at a time
# through the head, each chunk under non-reentrant checkpointing (its logits, their fp32 upcast, log-softmax and
# entropy recomputed in backward). The trip count is the number of valid positions, read on the host: every position
# here.
CHUNKED_NLL = False
CHUNKED_NLL_SIZE = 256  # trl 1.7.0 to 1.14.2 `_CHUNKED_LM_HEAD_CHUNK_SIZE`


def _chunk_1_14(h, w, b, lbl, logit_scale, final_logit_softcapping):
    """trl 1.14.2 `_chunk` (ZeRO-3's gather context left out: nothing is sharded here)."""
    import torch.nn.functional as F

    logits = (h @ w.to(h.dtype).t()).float()
    if b is not None:
        logits = logits + b.float()
    if logit_scale != 1.0:
        logits = logits * logit_scale
    if final_logit_softcapping is not None:
        logits = final_logit_softcapping * torch.tanh(logits / final_logit_softcapping)
    log_p = F.log_softmax(logits, dim=-1)
    chunk_loss = F.nll_loss(log_p, lbl, ignore_index=-100, reduction="sum")
    valid = lbl != -100
    chunk_correct = ((logits.argmax(dim=-1) == lbl) & valid).sum().float()
    chunk_entropy = (-(log_p.exp() * log_p).sum(dim=-1) * valid).sum()
    return chunk_loss, chunk_correct, chunk_entropy


def chunked_nll_loss(model, batch, amp):
    """trl 1.14.2's patched forward (`_patch_chunked_ce_lm_head`) and `_chunked_cross_entropy_loss` for one
    micro-batch, every position labelled, inside the Trainer's autocast."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    text_config = base.config.get_text_config()
    softcap = getattr(text_config, "final_logit_softcapping", None)
    logit_scale = getattr(text_config, "logit_scale", None)
    logit_scale = 1.0 if logit_scale is None else logit_scale
    head = base.get_output_embeddings()
    ids, labels = batch["input_ids"], batch["labels"]
    with Autocasting(amp):
        hidden_states = base.base_model(input_ids=ids, use_cache=False).last_hidden_state
        hidden = hidden_states[..., :-1, :].reshape(-1, hidden_states.size(-1))
        labels = labels[..., 1:].reshape(-1)
        valid = labels != -100
        n_valid = labels.numel()  # every position labelled (the host-side trip count)
        order = valid.to(torch.int8).argsort(descending=True, stable=True)
        hidden = hidden[order]
        labels = labels[order]
        n_padded = max(1, -(-n_valid // CHUNKED_NLL_SIZE)) * CHUNKED_NLL_SIZE
        loss = hidden.new_zeros((), dtype=torch.float32)
        for start in range(0, n_padded, CHUNKED_NLL_SIZE):
            chunk_loss, _, _ = torch.utils.checkpoint.checkpoint(
                _chunk_1_14, hidden[start:start + CHUNKED_NLL_SIZE], head.weight, head.bias,
                labels[start:start + CHUNKED_NLL_SIZE], logit_scale, softcap,
                use_reentrant=False, preserve_rng_state=False, context_fn=checkpoint_contexts)
            loss = loss + chunk_loss
        return loss / n_valid


# LLaMA-Factory's DPO (`--llamafactory-dpo`, copied from the llamafactory 0.9.5 wheel: `train/dpo/trainer.py`
# `concatenated_forward`, `compute_reference_log_probs`, `get_batch_loss_metrics`; `train/trainer_utils.py`
# `get_batch_logps`): the logits upcast (`.to(torch.float32)`) whatever the precision, a whole log-softmax of the
# shifted logits gathered, the policy's logits kept for the metrics through the reference's pass (the adapters
# disabled, or a frozen copy), the sigmoid loss; every position a completion token.
LLAMAFACTORY_DPO = False


def llamafactory_batch_logps(logits, labels):
    """llamafactory 0.9.5 `train/trainer_utils.py` `get_batch_logps`: a whole log-softmax of the shifted logits,
    gathered; each row's sum and its count of labelled positions."""
    labels = labels[:, 1:].clone()
    logits = logits[:, :-1, :]
    loss_mask = labels != -100
    labels[labels == -100] = 0
    per_token_logps = torch.gather(logits.log_softmax(-1), dim=2, index=labels.unsqueeze(2)).squeeze(2)
    return (per_token_logps * loss_mask).sum(-1), loss_mask.sum(-1)


# Its reference-free preference losses (`--llamafactory-orpo`): the same trainer with `pref_loss: orpo` (or
# `simpo`) has `use_ref_model` false (`hparams/finetuning_args.py`), so `compute_reference_log_probs` returns
# nothing and no reference model is loaded; the log-probabilities are averaged over each row's length and the odds
# ratio (ORPO) or the margin (SimPO) taken on them — a few numbers a row.
LLAMAFACTORY_ORPO = False


def llamafactory_dpo_loss(model, batch, amp, beta=0.1):
    """llamafactory 0.9.5 `CustomDPOTrainer.get_batch_loss_metrics` for one concatenated micro-batch (sigmoid
    loss, no ftx; or, with `LLAMAFACTORY_ORPO`, the odds-ratio loss with its SFT term and no reference pass),
    through the Trainer's Accelerate wrapper under AMP."""
    import torch.nn.functional as F

    ids = batch["input_ids"]

    def concatenated_forward(m):
        logits = wrapped_logits(m, ids, amp)
        all_logits = logits.to(torch.float32)
        del logits
        all_logps, _ = llamafactory_batch_logps(all_logits, ids)
        n = ids.shape[0] // 2
        chosen_logps, rejected_logps = all_logps.split(n, dim=0)
        chosen_logits, rejected_logits = all_logits.split(n, dim=0)
        return chosen_logps, rejected_logps, chosen_logits, rejected_logits

    chosen, rejected, chosen_logits, rejected_logits = concatenated_forward(model)
    if LLAMAFACTORY_ORPO:
        # `odds_ratio_loss` over the length-averaged log-probabilities (every position a completion token).
        chosen, rejected = chosen / ids.shape[1], rejected / ids.shape[1]
        log_odds = (chosen - rejected) - (torch.log1p(-torch.exp(chosen)) - torch.log1p(-torch.exp(rejected)))
        losses = -chosen + beta * -F.logsigmoid(log_odds)
        chosen_logits.mean()
        rejected_logits.mean()
        return losses.mean()
    with torch.no_grad():
        if REFERENCE:
            ref_chosen, ref_rejected, _, _ = concatenated_forward(REFERENCE[0])
        else:
            with model.disable_adapter():
                ref_chosen, ref_rejected, _, _ = concatenated_forward(model)
    logits = beta * ((chosen - ref_chosen) - (rejected - ref_rejected))
    losses = -F.logsigmoid(logits)
    chosen_logits.mean()
    rejected_logits.mean()
    return losses.mean()


# LLaMA-Factory's KTO (`--llamafactory-kto`, copied from the llamafactory 0.9.5 wheel: `train/kto/trainer.py`
# `forward`, `concatenated_forward`, `compute_reference_log_probs`, `get_batch_loss_metrics`; TRL's `kto_loss`):
# one sequence an example (half of each micro-batch desirable), the target forward with its logits upcast and a
# whole log-softmax gathered, the KL forward over mismatched completions (as many rows) under `no_grad`, the
# desirable and undesirable rows' logits and log-probabilities selected by boolean mask (a copy of those rows, as
# CUDA's boolean indexing makes), then the same under `no_grad` for the reference (the adapters disabled, or a
# frozen copy), the loss, and the sums of the selected logits it logs.
LLAMAFACTORY_KTO = False


def llamafactory_kto_loss(model, batch, amp, beta=0.1):
    """llamafactory 0.9.5 `CustomKTOTrainer.get_batch_loss_metrics` for one micro-batch (its first half desirable;
    no ftx), through the Trainer's Accelerate wrapper under AMP."""
    ids = batch["input_ids"]
    n = ids.shape[0]
    chosen_rows = torch.arange(0, n // 2, device=ids.device)
    rejected_rows = torch.arange(n // 2, n, device=ids.device)

    def forward(m):
        logits = wrapped_logits(m, ids.clone(), amp)
        logits = logits.to(torch.float32)
        logps, valid_length = llamafactory_batch_logps(logits, ids)
        return logits, logps, logps / valid_length

    def concatenated_forward(m):
        target_logits, target_logps, target_logps_avg = forward(m)
        with torch.no_grad():
            _, kl_logps, _ = forward(m)
        # `target_logits[batch["kto_tags"]]`: a boolean mask's rows, copied.
        chosen_logits = target_logits.index_select(0, chosen_rows)
        chosen_logps = target_logps.index_select(0, chosen_rows)
        rejected_logits = target_logits.index_select(0, rejected_rows)
        rejected_logps = target_logps.index_select(0, rejected_rows)
        chosen_logps_avg = target_logps_avg.index_select(0, chosen_rows)
        return chosen_logps, rejected_logps, chosen_logits, rejected_logits, kl_logps, chosen_logps_avg

    chosen, rejected, chosen_logits, rejected_logits, kl_logps, _ = concatenated_forward(model)
    with torch.no_grad():
        if REFERENCE:
            ref_chosen, ref_rejected, _, _, ref_kl, _ = concatenated_forward(REFERENCE[0])
        else:
            with model.disable_adapter():
                ref_chosen, ref_rejected, _, _, ref_kl, _ = concatenated_forward(model)
    # TRL's `kto_loss`.
    kl = (kl_logps - ref_kl).mean().clamp(min=0).detach()
    chosen_losses = 1 - torch.sigmoid(beta * ((chosen - ref_chosen) - kl))
    rejected_losses = 1 - torch.sigmoid(beta * (kl - (rejected - ref_rejected)))
    losses = torch.cat((chosen_losses, rejected_losses), 0).nanmean()
    chosen_logits.nansum()
    rejected_logits.nansum()
    return losses


# TRL's ORPO (`--trl-orpo`, copied from trl 1.16.0's `experimental/orpo/orpo_trainer.py`, the code it has run
# since 0.8 but for the log-probabilities' kernel): chosen and rejected concatenated, the model's logits through
# the Trainer's Accelerate wrapper, the chosen half's NLL (`cross_entropy_loss`: the shifted half made contiguous,
# then `nn.CrossEntropyLoss`), the per-token log-probabilities of every row (`get_batch_logps`, averaged) with trl
# 1.13.0's `selective_log_softmax` (from 1.14 a Triton kernel computes them on CUDA), the odds-ratio loss and the
# mean chosen and rejected logits it logs. No reference model.
TRL_ORPO = False
# The same from trl 1.14.0 (`--trl-orpo-kernel`): `selective_log_softmax` runs the Triton kernel on CUDA
# (`kernels/logprob_entropy.py` `_LogProbEntropyFunction`): four fp32 numbers a row made in forward, the logits
# saved as they are, and in backward their gradient made contiguous in their dtype (`torch.empty_like(logits,
# memory_format=torch.contiguous_format)`), which the kernel fills.
TRL_LOGPROB_KERNEL = False


class LogProbKernelLike(torch.autograd.Function):
    """trl 1.16.0 `_LogProbEntropyFunction` as it allocates on CUDA (the kernels themselves allocate nothing)."""

    @staticmethod
    def forward(ctx, logits, index):
        logprobs = torch.empty(logits.shape[:-1], device=logits.device, dtype=torch.float32)
        log_z = torch.empty_like(logprobs)
        expected_logit = torch.empty_like(logprobs)
        torch.empty_like(logprobs)  # the entropy, dropped by `selective_log_softmax`
        ctx.save_for_backward(logits, index, log_z, expected_logit)
        return logprobs

    @staticmethod
    def backward(ctx, grad_logprobs):
        logits = ctx.saved_tensors[0]
        grad_logprobs.contiguous()
        return torch.empty_like(logits, memory_format=torch.contiguous_format), None


def trl_orpo_loss(model, batch, amp, beta=0.1):
    """trl 1.16.0 `ORPOTrainer.concatenated_forward` and `get_batch_loss_metrics` for one concatenated micro-batch
    (chosen rows first, every position a completion token), decoder-only, no auxiliary loss."""
    import torch.nn.functional as F

    ids = batch["input_ids"]
    all_logits = wrapped_logits(model, ids, amp)
    len_chosen = ids.shape[0] // 2

    def cross_entropy_loss(logits, labels):
        logits = logits[..., :-1, :].contiguous()
        labels = labels[..., 1:].contiguous()
        loss_fct = torch.nn.CrossEntropyLoss()
        logits = logits.view(-1, logits.shape[-1])
        labels = labels.view(-1)
        return loss_fct(logits, labels)

    labels = ids.clone()
    chosen_nll_loss = cross_entropy_loss(all_logits[:len_chosen], labels[:len_chosen])
    # get_batch_logps(all_logits, labels, average_log_prob=True)
    shifted = ids[:, 1:].clone()
    logits = all_logits[:, :-1, :]
    loss_mask = shifted != -100
    shifted = torch.where(shifted == -100, 0, shifted)
    if TRL_LOGPROB_KERNEL:
        per_token_logps = LogProbKernelLike.apply(logits, shifted)
    else:
        per_token_logps = selective_log_softmax_1_13(logits, shifted)
    all_logps = (per_token_logps * loss_mask).sum(-1) / loss_mask.sum(-1)
    chosen_logps, rejected_logps = all_logps[:len_chosen], all_logps[len_chosen:]
    chosen_logits = all_logits[:len_chosen, :-1, :]
    rejected_logits = all_logits[len_chosen:, :-1, :]
    # odds_ratio_loss
    log_odds = (chosen_logps - rejected_logps) - (
        torch.log1p(-torch.exp(chosen_logps)) - torch.log1p(-torch.exp(rejected_logps))
    )
    ratio = F.logsigmoid(log_odds)
    losses = beta * ratio
    loss = chosen_nll_loss - losses.mean()
    rejected_logits.detach().mean()
    chosen_logits.detach().mean()
    return loss


class _NoKernel:
    """A Triton kernel's launch that allocates nothing: `kernel[grid](...)` folds a tile into buffers made before."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: None


def trl_fused_head(model):
    """Patches `model` with TRL's fused LM head as CUDA runs it: the Triton path (`_use_triton`: the compacted
    positions, the tile folded in place by the kernels, which allocate nothing), and `_addmm_fp32` as
    `torch.addmm(..., out_dtype=torch.float32, out=acc)`, which writes into the fp32 accumulator (torch >= 2.8 on
    CUDA: no 16-bit product first) — no-ops on the meta device, where nothing is computed."""
    import trl.kernels.chunked_logprob as ck
    import trl.trainer.utils as tu

    ck._use_triton = tu._use_triton = lambda device: True
    ck._forward_kernel = ck._backward_kernel = _NoKernel()
    # The kernel computes in autocast's dtype where autocast is on (`torch.get_autocast_dtype(device.type)`): the
    # replay's stand-in for CUDA's, on the meta device.
    if not getattr(torch.is_autocast_enabled, "replay", False):
        enabled, dtype = torch.is_autocast_enabled, torch.get_autocast_dtype

        def is_enabled(*device_type):
            return bool(AUTOCAST) if device_type == ("meta",) else enabled(*device_type)

        def autocast_dtype(device_type):
            return AUTOCAST[-1].dtype if device_type == "meta" else dtype(device_type)

        is_enabled.replay = True
        torch.is_autocast_enabled, torch.get_autocast_dtype = is_enabled, autocast_dtype
    ck._addmm_fp32 = lambda acc, a, b: None
    tu.add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))


class FusedHeadLog(AllocationLog):
    """The log, with boolean-mask indexing on the meta device read as every position labelled (the replayed
    batches label every token): `hidden_states[mask]` makes a copy of all of them, its backward's `index_put_`
    writes in place, and `nonzero` lists every position."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is aten.index.Tensor and any(
            isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1]
        ):
            x, (mask,) = args[0], args[1]
            out = x.reshape(-1, *x.shape[mask.dim():]).clone()
            self.track(out)
            return out
        if func in (aten.index_put_.default, aten._index_put_impl_.default):
            return args[0]
        if func is aten.index_put.default:
            out = args[0].clone()
            self.track(out)
            return out
        if func is aten.nonzero.default:
            x = args[0]
            out = torch.empty((x.numel(), x.dim()), dtype=torch.long, device=x.device)
            self.track(out)
            return out
        return super().__torch_dispatch__(func, types, args, kwargs)


def mode_loss():
    """The loss the replay's mode computes itself from the model's outputs, as its framework does (the first mode
    set, in this order); `None` where the model's own loss (or TRL's fused head) is the step's."""
    modes = (
        (LLAMAFACTORY_KTO, llamafactory_kto_loss),
        (LLAMAFACTORY_DPO, llamafactory_dpo_loss),
        (TRL_ORPO, trl_orpo_loss),
        (CHUNKED_NLL, chunked_nll_loss),
        (SFT_LOGITS, sft_loss_logits),
        (DPO_LOGITS_0_24, dpo_loss_logits_0_24),
        (DPO_LOGITS_0_13, dpo_loss_logits_0_13),
        (DPO_LOGITS_0_11, dpo_loss_logits_0_11),
        (DPO_LOGITS, dpo_loss_logits),
        (DPO, dpo_loss),
    )
    return next((loss for on, loss in modes if on), None)


def train_steps(log, model, opt, batch, amp, steps, set_to_none):
    """measure.py's loop, marking each phase in the log: forward with labels (under `amp` autocast, if any),
    backward, the optimizer's step, `zero_grad`."""
    for _ in range(steps):
        # GradScaler's scaling and unscaling (amp-fp16) multiply in place: nothing the size of a tensor.
        loss_of_mode = mode_loss()
        if loss_of_mode is not None:
            out, loss = None, loss_of_mode(model, batch, amp)
        else:
            with Autocasting(amp):
                out = model(**batch, fused_lm_head=True) if FUSED_HEAD else model(**batch)
            loss = out.loss
        if DROP_OUTPUT:
            out = None
        log.mark("forward")
        log.backward = True
        loss.backward()
        log.backward = False
        log.mark("backward")
        opt.step()
        opt.zero_grad(set_to_none=set_to_none)
        del out, loss
        log.mark("step")


def replay(events, reset_at_load=False):
    """The events through the caching allocator, and (name, allocated, peak, reserved) at each mark; with
    `reset_at_load` the cache emptied and the peaks reset at the "load" mark (measure.py after quantizing)."""
    a = CachingAllocator()
    live = {}
    marks = []
    for e in events:
        if e[0] == "a":
            live[e[1]] = a.malloc(e[2])
        elif e[0] == "f":
            b = live.pop(e[1], None)
            if b is not None:
                a.release(b)
        else:
            if reset_at_load and e[1] == "load":
                empty_cache(a)
                a.peak_allocated, a.peak_reserved = a.allocated, a.reserved
            marks.append((e[1], a.allocated, a.peak_allocated, a.reserved))
    return a, marks


GRID_MODELS = ("llama-3.2-1b", "llama-3.2-3b", "qwen2.5-7b", "llama-3.1-8b")
# The H200 rows whose columns the grid's rows copy (model, framework, GPU, notes).
GRID_TEMPLATES = {
    "llama-3.2-1b": "l1b-bf16-b4-s2048",
    "llama-3.2-3b": "l3b-bf16-ckpt-b4-s4096",
    "qwen2.5-7b": "q7b-bf16-ckpt-b2-s4096",
    "llama-3.1-8b": "l8b-bf16-ckpt-b1-s2048",
}


def counter_rows(base, cid, a):
    """Two calibration rows from `base` for a replayed case: its allocated and its reserved peak."""
    for metric, value, suffix in (("max_allocated", a.peak_allocated, "alloc"),
                                  ("max_reserved", a.peak_reserved, "resv")):
        yield dict(base, id=f"{cid}-{suffix}", metric=metric, measured_gib=f"{value / GIB:.3f}")


def grid(measure):
    """Replays beyond the measured runs, as rows of the calibration schema on stdout."""
    import csv

    path = os.path.join(HERE, "h200-2026-11-30.csv")
    rows = {r["id"]: r for r in csv.DictReader(open(path))}
    w = csv.DictWriter(sys.stdout, list(next(iter(rows.values())).keys()), lineterminator="\n")
    w.writeheader()
    for model in GRID_MODELS:
        template = rows[f"h200-2026-11-30-{GRID_TEMPLATES[model]}-alloc"]
        big = model in ("qwen2.5-7b", "llama-3.1-8b")
        for ckpt in (False, True):
            for mb, seq in ((1, 2048), (4, 2048), (2, 4096), (8, 1024), (1, 8192)):
                if big and not ckpt and mb * seq > 4096:
                    continue  # past the H200 without checkpointing
                for lora in (None, (16, measure.ALL)):
                    kind = "lora" if lora else "full"
                    cid = f"replay-{model}-{'ckpt' if ckpt else 'nock'}-b{mb}-s{seq}-{kind}"
                    c = measure.case(cid, model, mb, seq, "bf16", ckpt=ckpt, lora=lora)
                    a, _ = replay(trace(measure, c)[0])
                    for r in counter_rows(template, cid, a):
                        r.update(micro_batch=str(mb), seq_len=str(seq), quality="A",
                                 activation_checkpointing="full" if ckpt else "none",
                                 source_url="calibration/allocator_replay.py --grid (a replay, not a measurement)")
                        if lora:
                            r.update(task="lora", lora_rank="16", lora_targets="q+k+v+o+gate+up+down",
                                     trainable_params="",
                                     notes=r["notes"] + " + peft 0.21.0; lora_alpha=2r; lora_dropout=0.05")
                        w.writerow(r)
                    sys.stdout.flush()


# Model families beyond the measured runs' (`--families`): each the Hugging Face config of a published checkpoint
# (its config.json), and the calibration-schema columns that describe it.
def family_configs():
    from transformers import (BartConfig, BloomConfig, Cohere2Config, CohereConfig, DeepseekV2Config, DistilBertConfig,
                              FalconConfig, Gemma2Config, Gemma3TextConfig, GemmaConfig, Glm4Config, GPT2Config,
                              GPTBigCodeConfig, GPTJConfig, GPTNeoConfig, GPTNeoXConfig, GraniteConfig,
                              GraniteMoeConfig, LlamaConfig, M2M100Config, MixtralConfig, ModernBertConfig, MptConfig,
                              MT5Config, NemotronConfig, Olmo2Config, OlmoeConfig, OPTConfig, Phi3Config, PhiConfig,
                              PhimoeConfig, Qwen2Config, Qwen2MoeConfig, Qwen3Config, Qwen3MoeConfig, RobertaConfig,
                              SmolLM3Config, StableLmConfig, Starcoder2Config, T5Config, XLMRobertaConfig,
                              MarianConfig, MBartConfig, PegasusConfig, GptOssConfig, Glm4MoeConfig,
                              Llama4TextConfig, Exaone4Config, Ernie4_5Config, HunYuanDenseV1Config, UMT5Config,
                              ElectraConfig, Olmo3Config, MinistralConfig, MistralConfig,
                              SeedOssConfig)

    def row(model, layers, hidden, heads, kv, ffn, mlp, vocab, tied, experts=0, top_k=0, arch="decoder", notes=""):
        return dict(model=model, arch=arch, n_layers=layers, hidden=hidden, n_heads=heads, n_kv_heads=kv,
                    ffn_hidden=ffn, mlp=mlp, vocab=vocab, tied_embeddings=str(tied).lower(), n_experts=experts,
                    experts_per_token=top_k, notes=notes)

    return {
        "pythia-1.4b": (lambda: GPTNeoXConfig(hidden_size=2048, num_hidden_layers=24, num_attention_heads=16,
                                              intermediate_size=8192, vocab_size=50304, rotary_pct=0.25,
                                              use_parallel_residual=True, tie_word_embeddings=False,
                                              max_position_embeddings=2048, use_cache=False),
                        row("EleutherAI/pythia-1.4b", 24, 2048, 16, 16, 8192, "plain", 50304, False)),
        "opt-1.3b": (lambda: OPTConfig(hidden_size=2048, num_hidden_layers=24, num_attention_heads=32, ffn_dim=8192,
                                       vocab_size=50272, max_position_embeddings=2048, word_embed_proj_dim=2048,
                                       dropout=0.1, attention_dropout=0.0, activation_function="relu",
                                       do_layer_norm_before=True, use_cache=False),
                     row("facebook/opt-1.3b", 24, 2048, 32, 32, 8192, "plain", 50272, True)),
        "bloom-1b7": (lambda: BloomConfig(hidden_size=2048, n_layer=24, n_head=16, vocab_size=250880,
                                          use_cache=False),
                      row("bigscience/bloom-1b7", 24, 2048, 16, 16, 8192, "plain", 250880, True)),
        "falcon-7b": (lambda: FalconConfig(hidden_size=4544, num_hidden_layers=32, num_attention_heads=71,
                                           multi_query=True, parallel_attn=True, new_decoder_architecture=False,
                                           bias=False, vocab_size=65024, alibi=False, use_cache=False),
                      row("tiiuae/falcon-7b", 32, 4544, 71, 1, 18176, "plain", 65024, True)),
        "gpt-j-6b": (lambda: GPTJConfig(n_embd=4096, n_layer=28, n_head=16, rotary_dim=64, vocab_size=50400,
                                        n_positions=2048, tie_word_embeddings=False, use_cache=False),
                     row("EleutherAI/gpt-j-6b", 28, 4096, 16, 16, 16384, "plain", 50400, False)),
        "phi-1.5": (lambda: PhiConfig(hidden_size=2048, num_hidden_layers=24, num_attention_heads=32,
                                      intermediate_size=8192, vocab_size=51200, partial_rotary_factor=0.5,
                                      tie_word_embeddings=False, resid_pdrop=0.0, embd_pdrop=0.0,
                                      attention_dropout=0.0, use_cache=False),
                    row("microsoft/phi-1_5", 24, 2048, 32, 32, 8192, "plain", 51200, False)),
        "gemma-2b": (lambda: GemmaConfig(hidden_size=2048, intermediate_size=16384, num_hidden_layers=18,
                                         num_attention_heads=8, num_key_value_heads=1, head_dim=256,
                                         vocab_size=256000, hidden_activation="gelu_pytorch_tanh",
                                         tie_word_embeddings=True, use_cache=False),
                     row("google/gemma-2b", 18, 2048, 8, 1, 16384, "gated", 256000, True)),
        "qwen3-0.6b": (lambda: Qwen3Config(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                                           num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                                           vocab_size=151936, tie_word_embeddings=True,
                                           max_position_embeddings=40960, use_cache=False),
                       row("Qwen/Qwen3-0.6B", 28, 1024, 16, 8, 3072, "gated", 151936, True)),
        "olmo-2-7b": (lambda: Olmo2Config(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                          num_attention_heads=32, num_key_value_heads=32, vocab_size=100352,
                                          tie_word_embeddings=False, max_position_embeddings=4096,
                                          use_cache=False),
                      row("allenai/OLMo-2-1124-7B", 32, 4096, 32, 32, 11008, "gated", 100352, False)),
        "smollm2-360m": (lambda: LlamaConfig(hidden_size=960, intermediate_size=2560, num_hidden_layers=32,
                                             num_attention_heads=15, num_key_value_heads=5, vocab_size=49152,
                                             tie_word_embeddings=True, max_position_embeddings=8192,
                                             use_cache=False),
                         row("HuggingFaceTB/SmolLM2-360M", 32, 960, 15, 5, 2560, "gated", 49152, True)),
        "qwen1.5-moe": (lambda: Qwen2MoeConfig(hidden_size=2048, intermediate_size=5632, moe_intermediate_size=1408,
                                               shared_expert_intermediate_size=5632, num_hidden_layers=24,
                                               num_attention_heads=16, num_key_value_heads=16, num_experts=60,
                                               num_experts_per_tok=4, vocab_size=151936,
                                               tie_word_embeddings=False, use_cache=False),
                        row("Qwen/Qwen1.5-MoE-A2.7B", 24, 2048, 16, 16, 1408, "gated", 151936, False, 60, 4)),
        "gpt2-large": (lambda: GPT2Config(n_embd=1280, n_layer=36, n_head=20, use_cache=False),
                       row("openai-community/gpt2-large", 36, 1280, 20, 20, 5120, "plain", 50257, True)),
        "gemma-3-1b": (lambda: Gemma3TextConfig(hidden_size=1152, intermediate_size=6912, num_hidden_layers=26,
                                                num_attention_heads=4, num_key_value_heads=1, head_dim=256,
                                                vocab_size=262144, sliding_window=512, max_position_embeddings=32768,
                                                use_cache=False),
                       row("google/gemma-3-1b-pt", 26, 1152, 4, 1, 6912, "gated", 262144, True)),
        # No preset: what a row naming an unknown plain-MLP decoder gets.
        "starcoder2-3b": (lambda: Starcoder2Config(hidden_size=3072, intermediate_size=12288, num_hidden_layers=30,
                                                   num_attention_heads=24, num_key_value_heads=2, vocab_size=49152,
                                                   max_position_embeddings=16384, sliding_window=4096,
                                                   use_cache=False),
                          row("bigcode/starcoder2-3b", 30, 3072, 24, 2, 12288, "plain", 49152, True)),
        # Encoders and encoder–decoders, at 512 tokens (their usual length; four times the batch).
        "roberta-large": (lambda: RobertaConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                                intermediate_size=4096, vocab_size=50265,
                                                max_position_embeddings=514, type_vocab_size=1),
                          row("FacebookAI/roberta-large", 24, 1024, 16, 16, 4096, "plain", 50265, True,
                              arch="encoder")),
        "t5-base": (lambda: T5Config(d_model=768, d_ff=3072, num_layers=12, num_heads=12, d_kv=64,
                                     vocab_size=32128, feed_forward_proj="relu", dropout_rate=0.1,
                                     tie_word_embeddings=True, decoder_start_token_id=0, pad_token_id=0,
                                     use_cache=False),
                    row("google-t5/t5-base", 12, 768, 12, 12, 3072, "plain", 32128, True, arch="encoder-decoder")),
        "flan-t5-base": (lambda: T5Config(d_model=768, d_ff=2048, num_layers=12, num_heads=12, d_kv=64,
                                          vocab_size=32128, feed_forward_proj="gated-gelu", dropout_rate=0.1,
                                          tie_word_embeddings=False, decoder_start_token_id=0, pad_token_id=0,
                                          use_cache=False),
                         # transformers 5 ties every T5's head to its embedding (`T5Config` sets
                         # `tie_word_embeddings = True` and reads a stated False only as "do not scale the
                         # decoder's output"): the replayed FLAN-T5 has 222.9 M parameters, not the
                         # checkpoint's 247.6 M, so its rows say tied.
                         row("google/flan-t5-base", 12, 768, 12, 12, 2048, "gated", 32128, True,
                             arch="encoder-decoder")),
        # The forty-second session's (2026-12-05): families whose shapes the ones above do not have — fused
        # qkv and gate/up projections (Phi-3), logit soft-capping and a 256k vocabulary (Gemma-2), q/k/v biases
        # (Qwen2.5), a 128k vocabulary on a tied head (Llama-3.2), eight routed experts of top-2 (Mixtral).
        "phi-3-mini": (lambda: Phi3Config(hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
                                          num_attention_heads=32, num_key_value_heads=32, vocab_size=32064,
                                          max_position_embeddings=4096, original_max_position_embeddings=4096,
                                          tie_word_embeddings=False, resid_pdrop=0.0, embd_pdrop=0.0,
                                          attention_dropout=0.0, pad_token_id=32000, use_cache=False),
                       row("microsoft/Phi-3-mini-4k-instruct", 32, 3072, 32, 32, 8192, "gated", 32064, False)),
        "gemma-2-2b": (lambda: Gemma2Config(hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
                                            num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                                            vocab_size=256000, hidden_activation="gelu_pytorch_tanh",
                                            final_logit_softcapping=30.0, attn_logit_softcapping=50.0,
                                            query_pre_attn_scalar=256, sliding_window=4096,
                                            tie_word_embeddings=True, use_cache=False),
                       row("google/gemma-2-2b", 26, 2304, 8, 4, 9216, "gated", 256000, True)),
        "qwen2.5-1.5b": (lambda: Qwen2Config(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                                             num_attention_heads=12, num_key_value_heads=2, vocab_size=151936,
                                             max_position_embeddings=32768, tie_word_embeddings=True,
                                             use_cache=False),
                         row("Qwen/Qwen2.5-1.5B", 28, 1536, 12, 2, 8960, "gated", 151936, True)),
        "llama-3.2-1b": (lambda: LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                                             num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                                             vocab_size=128256, tie_word_embeddings=True, rope_theta=500000.0,
                                             max_position_embeddings=131072, use_cache=False),
                         row("meta-llama/Llama-3.2-1B", 16, 2048, 32, 8, 8192, "gated", 128256, True)),
        "mixtral-8x7b": (lambda: MixtralConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                               num_attention_heads=32, num_key_value_heads=8, num_local_experts=8,
                                               num_experts_per_tok=2, vocab_size=32000, tie_word_embeddings=False,
                                               max_position_embeddings=32768, use_cache=False),
                         row("mistralai/Mixtral-8x7B-v0.1", 32, 4096, 32, 8, 14336, "gated", 32000, False, 8, 2)),
        # And seven with no preset of their own or a layout of their own: ALiBi under eager attention (MPT),
        # Falcon's new decoder (grouped k/v, two norms, parallel blocks), Cohere's parallel block over a tied 256k
        # head, StableLM-2's partial rotary and q/k/v biases, Granite's multipliers, and two MoE decoders of
        # 64 and 128 experts (OLMoE, Qwen3-MoE).
        "mpt-7b": (lambda: MptConfig(d_model=4096, n_heads=32, n_layers=32, expansion_ratio=4, max_seq_len=2048,
                                     vocab_size=50432, no_bias=True, attn_config={"alibi": True},
                                     use_cache=False),
                   row("mosaicml/mpt-7b", 32, 4096, 32, 32, 16384, "plain", 50432, True)),
        "falcon-40b": (lambda: FalconConfig(hidden_size=8192, num_hidden_layers=60, num_attention_heads=128,
                                            num_kv_heads=8, new_decoder_architecture=True, parallel_attn=True,
                                            bias=False, vocab_size=65024, alibi=False, use_cache=False),
                       row("tiiuae/falcon-40b", 60, 8192, 128, 8, 32768, "plain", 65024, True)),
        "command-r": (lambda: CohereConfig(hidden_size=8192, intermediate_size=22528, num_hidden_layers=40,
                                           num_attention_heads=64, num_key_value_heads=64, vocab_size=256000,
                                           logit_scale=0.0625, use_qk_norm=False, tie_word_embeddings=True,
                                           max_position_embeddings=8192, use_cache=False),
                      row("CohereForAI/c4ai-command-r-v01", 40, 8192, 64, 64, 22528, "gated", 256000, True)),
        "stablelm-2-1.6b": (lambda: StableLmConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=24,
                                                   num_attention_heads=32, num_key_value_heads=32,
                                                   vocab_size=100352, partial_rotary_factor=0.25,
                                                   use_qkv_bias=True, tie_word_embeddings=False,
                                                   max_position_embeddings=4096, hidden_dropout=0.0,
                                                   attention_dropout=0.0, use_cache=False),
                            row("stabilityai/stablelm-2-1_6b", 24, 2048, 32, 32, 5632, "gated", 100352, False)),
        "granite-3.0-2b": (lambda: GraniteConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=40,
                                                 num_attention_heads=32, num_key_value_heads=8, vocab_size=49155,
                                                 tie_word_embeddings=True, embedding_multiplier=12.0,
                                                 logits_scaling=8.0, residual_multiplier=0.22,
                                                 attention_multiplier=0.015625, max_position_embeddings=4096,
                                                 use_cache=False),
                           row("ibm-granite/granite-3.0-2b-base", 40, 2048, 32, 8, 8192, "gated", 49155, True)),
        "olmoe-1b-7b": (lambda: OlmoeConfig(hidden_size=2048, intermediate_size=1024, num_hidden_layers=16,
                                            num_attention_heads=16, num_key_value_heads=16, num_experts=64,
                                            num_experts_per_tok=8, vocab_size=50304, tie_word_embeddings=False,
                                            max_position_embeddings=4096, use_cache=False),
                        row("allenai/OLMoE-1B-7B-0924", 16, 2048, 16, 16, 1024, "gated", 50304, False, 64, 8)),
        "qwen3-30b-a3b": (lambda: Qwen3MoeConfig(hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768,
                                                 num_hidden_layers=48, num_attention_heads=32, num_key_value_heads=4,
                                                 head_dim=128, num_experts=128, num_experts_per_tok=8,
                                                 vocab_size=151936, tie_word_embeddings=False,
                                                 max_position_embeddings=40960, use_cache=False),
                          row("Qwen/Qwen3-30B-A3B", 48, 2048, 32, 4, 768, "gated", 151936, False, 128, 8)),
        # Multi-head latent attention (its k/v through a 512-wide latent) and 64 routed experts of top-6 beside
        # two shared ones, the first block dense.
        "deepseek-v2-lite": (lambda: DeepseekV2Config(hidden_size=2048, intermediate_size=10944,
                                                      moe_intermediate_size=1408, num_hidden_layers=27,
                                                      num_attention_heads=16, num_key_value_heads=16,
                                                      n_routed_experts=64, n_shared_experts=2,
                                                      num_experts_per_tok=6, first_k_dense_replace=1,
                                                      kv_lora_rank=512, q_lora_rank=None, qk_nope_head_dim=128,
                                                      qk_rope_head_dim=64, v_head_dim=128, vocab_size=102400,
                                                      tie_word_embeddings=False, max_position_embeddings=163840,
                                                      use_cache=False),
                             row("deepseek-ai/DeepSeek-V2-Lite", 27, 2048, 16, 16, 1408, "gated", 102400, False,
                                 64, 6)),
        # The forty-third session's (2026-12-05): fourteen more, mostly with no preset — what a row naming them
        # gets from its columns. Multi-query k/v with learned positions (StarCoder's GPT-BigCode), GPT-Neo's
        # local attention (eager: no SDPA path), GLM-4's sandwich norms and fused gate/up, Nemotron's squared
        # ReLU and LayerNorm1P, Gemma-3's sliding layers, Cohere2's sliding layers, SmolLM3's position-free
        # layers, two MoE decoders (Granite-MoE's 32 experts of top-8, Phi-3.5-MoE's 16 of top-2), three
        # encoders (DistilBERT, XLM-R's 250k vocabulary, ModernBERT's GeGLU and local attention) and two
        # encoder–decoders (mT5's 250k vocabulary, NLLB's M2M100).
        "starcoderbase-1b": (lambda: GPTBigCodeConfig(n_embd=2048, n_layer=24, n_head=16, n_inner=8192,
                                                      multi_query=True, vocab_size=49152, n_positions=8192,
                                                      activation_function="gelu_pytorch_tanh", bos_token_id=0,
                                                      eos_token_id=0, use_cache=False),
                             row("bigcode/starcoderbase-1b", 24, 2048, 16, 1, 8192, "plain", 49152, True)),
        "gpt-neo-1.3b": (lambda: GPTNeoConfig(hidden_size=2048, num_layers=24, num_heads=16, vocab_size=50257,
                                              max_position_embeddings=2048, attention_types=[[["global", "local"], 12]],
                                              window_size=256, use_cache=False),
                         row("EleutherAI/gpt-neo-1.3B", 24, 2048, 16, 16, 8192, "plain", 50257, True)),
        "glm-4-9b": (lambda: Glm4Config(hidden_size=4096, intermediate_size=13696, num_hidden_layers=40,
                                        num_attention_heads=32, num_key_value_heads=2, head_dim=128,
                                        vocab_size=151552, partial_rotary_factor=0.5, attention_bias=True,
                                        tie_word_embeddings=False, max_position_embeddings=131072, use_cache=False),
                     row("THUDM/glm-4-9b-hf", 40, 4096, 32, 2, 13696, "gated", 151552, False)),
        "nemotron-mini-4b": (lambda: NemotronConfig(hidden_size=3072, intermediate_size=9216, num_hidden_layers=32,
                                                    num_attention_heads=24, num_key_value_heads=8, head_dim=128,
                                                    vocab_size=256000, partial_rotary_factor=0.5, hidden_act="relu2",
                                                    tie_word_embeddings=False, max_position_embeddings=4096,
                                                    use_cache=False),
                             row("nvidia/Nemotron-Mini-4B-Instruct", 32, 3072, 24, 8, 9216, "plain", 256000, False)),
        "gemma-3-4b": (lambda: Gemma3TextConfig(hidden_size=2560, intermediate_size=10240, num_hidden_layers=34,
                                                num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                                                vocab_size=262208, sliding_window=1024,
                                                max_position_embeddings=131072, use_cache=False),
                       row("google/gemma-3-4b-pt", 34, 2560, 8, 4, 10240, "gated", 262208, True)),
        "command-r7b": (lambda: Cohere2Config(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                              num_attention_heads=32, num_key_value_heads=8, vocab_size=256000,
                                              sliding_window=4096, logit_scale=0.25, tie_word_embeddings=True,
                                              max_position_embeddings=8192, use_cache=False),
                        row("CohereForAI/c4ai-command-r7b-12-2024", 32, 4096, 32, 8, 14336, "gated", 256000, True)),
        "smollm3-3b": (lambda: SmolLM3Config(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36,
                                             num_attention_heads=16, num_key_value_heads=4, vocab_size=128256,
                                             tie_word_embeddings=True, max_position_embeddings=65536,
                                             use_cache=False),
                       row("HuggingFaceTB/SmolLM3-3B", 36, 2048, 16, 4, 11008, "gated", 128256, True)),
        "granite-moe-1b": (lambda: GraniteMoeConfig(hidden_size=1024, intermediate_size=512, num_hidden_layers=24,
                                                    num_attention_heads=16, num_key_value_heads=8,
                                                    num_local_experts=32, num_experts_per_tok=8, vocab_size=49155,
                                                    tie_word_embeddings=True, embedding_multiplier=12.0,
                                                    logits_scaling=6.0, residual_multiplier=0.22,
                                                    attention_multiplier=0.015625, max_position_embeddings=4096,
                                                    use_cache=False),
                           row("ibm-granite/granite-3.0-1b-a400m-base", 24, 1024, 16, 8, 512, "gated", 49155, True,
                               32, 8)),
        "phi-3.5-moe": (lambda: PhimoeConfig(hidden_size=4096, intermediate_size=6400, num_hidden_layers=32,
                                             num_attention_heads=32, num_key_value_heads=8, num_local_experts=16,
                                             num_experts_per_tok=2, vocab_size=32064, tie_word_embeddings=False,
                                             max_position_embeddings=131072, use_cache=False),
                        row("microsoft/Phi-3.5-MoE-instruct", 32, 4096, 32, 8, 6400, "gated", 32064, False, 16, 2)),
        "distilbert-base": (lambda: DistilBertConfig(dim=768, n_layers=6, n_heads=12, hidden_dim=3072,
                                                     vocab_size=30522, max_position_embeddings=512),
                            row("distilbert/distilbert-base-uncased", 6, 768, 12, 12, 3072, "plain", 30522, True,
                                arch="encoder")),
        "xlm-roberta-base": (lambda: XLMRobertaConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                                      intermediate_size=3072, vocab_size=250002,
                                                      max_position_embeddings=514, type_vocab_size=1),
                             row("FacebookAI/xlm-roberta-base", 12, 768, 12, 12, 3072, "plain", 250002, True,
                                 arch="encoder")),
        "modernbert-base": (lambda: ModernBertConfig(hidden_size=768, num_hidden_layers=22, num_attention_heads=12,
                                                     intermediate_size=1152, vocab_size=50368,
                                                     max_position_embeddings=8192, global_attn_every_n_layers=3,
                                                     local_attention=128),
                            row("answerdotai/ModernBERT-base", 22, 768, 12, 12, 1152, "gated", 50368, True,
                                arch="encoder")),
        # transformers 5 ties mT5's head to its embedding as it does T5's (390 M parameters built, not the
        # checkpoint's 580 M), so the row says tied. NLLB's checkpoints train without LayerDrop (config.json
        # `encoder_layerdrop` / `decoder_layerdrop` 0; `M2M100Config`'s default 0.05 skips blocks at random).
        "mt5-base": (lambda: MT5Config(d_model=768, d_ff=2048, num_layers=12, num_heads=12, d_kv=64,
                                       vocab_size=250112, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                                       decoder_start_token_id=0, pad_token_id=0, use_cache=False),
                     row("google/mt5-base", 12, 768, 12, 12, 2048, "gated", 250112, True, arch="encoder-decoder")),
        "nllb-200-600m": (lambda: M2M100Config(d_model=1024, encoder_layers=12, decoder_layers=12,
                                               encoder_attention_heads=16, decoder_attention_heads=16,
                                               encoder_ffn_dim=4096, decoder_ffn_dim=4096, vocab_size=256206,
                                               max_position_embeddings=1024, scale_embedding=True,
                                               encoder_layerdrop=0.0, decoder_layerdrop=0.0, use_cache=False),
                          row("facebook/nllb-200-distilled-600M", 12, 1024, 16, 16, 4096, "plain", 256206, True,
                              arch="encoder-decoder")),
        # And ten more (the same session): three of BART's lineage (Marian's opus-mt, mBART-50, PEGASUS), MoE
        # decoders of three more layouts (gpt-oss's 32 experts of top-4 under eager attention, GLM-4.5-Air's 128 of
        # top-8 beside a shared one after a dense first block, Llama-4-Scout's 16 of top-1 beside a shared one), and
        # four small decoders people fine-tune (EXAONE-4.0, ERNIE-4.5, Phi-4-mini, Hunyuan).
        "opus-mt-en-de": (lambda: MarianConfig(d_model=512, encoder_layers=6, decoder_layers=6,
                                               encoder_attention_heads=8, decoder_attention_heads=8,
                                               encoder_ffn_dim=2048, decoder_ffn_dim=2048, vocab_size=58101,
                                               decoder_vocab_size=58101, max_position_embeddings=512,
                                               scale_embedding=True, activation_function="swish", pad_token_id=58100,
                                               decoder_start_token_id=58100, use_cache=False),
                          row("Helsinki-NLP/opus-mt-en-de", 6, 512, 8, 8, 2048, "plain", 58101, True,
                              arch="encoder-decoder")),
        "mbart-large-50": (lambda: MBartConfig(d_model=1024, encoder_layers=12, decoder_layers=12,
                                               encoder_attention_heads=16, decoder_attention_heads=16,
                                               encoder_ffn_dim=4096, decoder_ffn_dim=4096, vocab_size=250054,
                                               max_position_embeddings=1024, scale_embedding=True, use_cache=False),
                           row("facebook/mbart-large-50", 12, 1024, 16, 16, 4096, "plain", 250054, True,
                               arch="encoder-decoder")),
        "pegasus-large": (lambda: PegasusConfig(d_model=1024, encoder_layers=16, decoder_layers=16,
                                                encoder_attention_heads=16, decoder_attention_heads=16,
                                                encoder_ffn_dim=4096, decoder_ffn_dim=4096, vocab_size=96103,
                                                max_position_embeddings=1024, scale_embedding=True,
                                                activation_function="relu", pad_token_id=0, decoder_start_token_id=0,
                                                use_cache=False),
                          row("google/pegasus-large", 16, 1024, 16, 16, 4096, "plain", 96103, True,
                              arch="encoder-decoder")),
        "gpt-oss-20b": (lambda: GptOssConfig(hidden_size=2880, intermediate_size=2880, num_hidden_layers=24,
                                             num_attention_heads=64, num_key_value_heads=8, head_dim=64,
                                             num_local_experts=32, num_experts_per_tok=4, vocab_size=201088,
                                             sliding_window=128, tie_word_embeddings=False, use_cache=False),
                        row("openai/gpt-oss-20b", 24, 2880, 64, 8, 2880, "gated", 201088, False, 32, 4)),
        "glm-4.5-air": (lambda: Glm4MoeConfig(hidden_size=4096, intermediate_size=10944, moe_intermediate_size=1408,
                                              num_hidden_layers=46, num_attention_heads=96, num_key_value_heads=8,
                                              head_dim=128, n_routed_experts=128, n_shared_experts=1,
                                              num_experts_per_tok=8, first_k_dense_replace=1, vocab_size=151552,
                                              partial_rotary_factor=0.5, attention_bias=True, use_qk_norm=False,
                                              tie_word_embeddings=False, use_cache=False),
                        row("zai-org/GLM-4.5-Air", 46, 4096, 96, 8, 1408, "gated", 151552, False, 128, 8)),
        "llama-4-scout": (lambda: Llama4TextConfig(hidden_size=5120, intermediate_size=8192,
                                                   intermediate_size_mlp=16384, num_hidden_layers=48,
                                                   num_attention_heads=40, num_key_value_heads=8, head_dim=128,
                                                   num_local_experts=16, num_experts_per_tok=1, vocab_size=202048,
                                                   interleave_moe_layer_step=1, tie_word_embeddings=False,
                                                   use_cache=False),
                          row("meta-llama/Llama-4-Scout-17B-16E", 48, 5120, 40, 8, 8192, "gated", 202048, False,
                              16, 1)),
        "exaone-4.0-1.2b": (lambda: Exaone4Config(hidden_size=2048, intermediate_size=4096, num_hidden_layers=30,
                                                  num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                                                  vocab_size=102400, tie_word_embeddings=True, sliding_window=None,
                                                  layer_types=["full_attention"] * 30, use_cache=False),
                            row("LGAI-EXAONE/EXAONE-4.0-1.2B", 30, 2048, 32, 8, 4096, "gated", 102400, True)),
        "ernie-4.5-0.3b": (lambda: Ernie4_5Config(hidden_size=1024, intermediate_size=3072, num_hidden_layers=18,
                                                  num_attention_heads=16, num_key_value_heads=2, head_dim=128,
                                                  vocab_size=103424, tie_word_embeddings=True, use_bias=False,
                                                  use_cache=False),
                           row("baidu/ERNIE-4.5-0.3B-PT", 18, 1024, 16, 2, 3072, "gated", 103424, True)),
        "phi-4-mini": (lambda: Phi3Config(hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
                                          num_attention_heads=24, num_key_value_heads=8, vocab_size=200064,
                                          partial_rotary_factor=0.75, tie_word_embeddings=True,
                                          max_position_embeddings=131072, original_max_position_embeddings=4096,
                                          resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0, pad_token_id=199999,
                                          use_cache=False),
                       row("microsoft/Phi-4-mini-instruct", 32, 3072, 24, 8, 8192, "gated", 200064, True)),
        "hunyuan-1.8b": (lambda: HunYuanDenseV1Config(hidden_size=2048, intermediate_size=6144, num_hidden_layers=32,
                                                      num_attention_heads=16, num_key_value_heads=4, head_dim=128,
                                                      vocab_size=120818, tie_word_embeddings=True, use_qk_norm=True,
                                                      use_cache=False),
                         row("tencent/Hunyuan-1.8B-Pretrain", 32, 2048, 16, 4, 6144, "gated", 120818, True)),
        # And seven more (the same session): T5's multilingual and byte-level kin (UMT5's per-layer position bias,
        # ByT5's 18 + 6 blocks over 384 byte ids), ELECTRA, and four decoders (OLMo-3, Ministral-8B,
        # Mistral-NeMo-12B, Seed-OSS-36B). (MPNet and ALBERT were left out: transformers' `MPNetForMaskedLM` and
        # `AlbertForMaskedLM` refuse gradient checkpointing.)
        "umt5-base": (lambda: UMT5Config(d_model=768, d_ff=2048, num_layers=12, num_heads=12, d_kv=64,
                                         vocab_size=256384, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                                         decoder_start_token_id=0, pad_token_id=0, use_cache=False),
                      row("google/umt5-base", 12, 768, 12, 12, 2048, "gated", 256384, True, arch="encoder-decoder")),
        "byt5-base": (lambda: T5Config(d_model=1536, d_ff=3968, num_layers=18, num_decoder_layers=6, num_heads=12,
                                       d_kv=64, vocab_size=384, feed_forward_proj="gated-gelu",
                                       tie_word_embeddings=False, decoder_start_token_id=0, pad_token_id=0,
                                       use_cache=False),
                      row("google/byt5-base", 6, 1536, 12, 12, 3968, "gated", 384, True, arch="encoder-decoder",
                          notes="18 encoder + 6 decoder blocks")),
        "electra-base": (lambda: ElectraConfig(embedding_size=768, hidden_size=768, num_hidden_layers=12,
                                               num_attention_heads=12, intermediate_size=3072, vocab_size=30522),
                         row("google/electra-base-generator", 12, 768, 12, 12, 3072, "plain", 30522, True,
                             arch="encoder")),
        "olmo-3-7b": (lambda: Olmo3Config(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                          num_attention_heads=32, num_key_value_heads=32, vocab_size=100278,
                                          sliding_window=4096, tie_word_embeddings=False, use_cache=False),
                      row("allenai/Olmo-3-1025-7B", 32, 4096, 32, 32, 11008, "gated", 100278, False)),
        "ministral-8b": (lambda: MinistralConfig(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                                                 num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                                 vocab_size=131072, sliding_window=32768, tie_word_embeddings=False,
                                                 use_cache=False),
                         row("mistralai/Ministral-8B-Instruct-2410", 36, 4096, 32, 8, 12288, "gated", 131072,
                             False)),
        "mistral-nemo-12b": (lambda: MistralConfig(hidden_size=5120, intermediate_size=14336, num_hidden_layers=40,
                                                   num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                                   vocab_size=131072, sliding_window=None, tie_word_embeddings=False,
                                                   use_cache=False),
                             row("mistralai/Mistral-Nemo-Base-2407", 40, 5120, 32, 8, 14336, "gated", 131072,
                                 False)),
        "seed-oss-36b": (lambda: SeedOssConfig(hidden_size=5120, intermediate_size=27648, num_hidden_layers=64,
                                               num_attention_heads=80, num_key_value_heads=8, head_dim=128,
                                               vocab_size=155136, attention_bias=True, tie_word_embeddings=False,
                                               use_cache=False),
                         row("ByteDance-Seed/Seed-OSS-36B-Base", 64, 5120, 80, 8, 27648, "gated", 155136, False)),
        "bart-large": (lambda: BartConfig(d_model=1024, encoder_layers=12, decoder_layers=12,
                                          encoder_attention_heads=16, decoder_attention_heads=16,
                                          encoder_ffn_dim=4096, decoder_ffn_dim=4096, vocab_size=50265,
                                          max_position_embeddings=1024, use_cache=False),
                       row("facebook/bart-large", 12, 1024, 16, 16, 4096, "plain", 50265, True,
                           arch="encoder-decoder")),
    }


FAMILY_RUNS = (
    # (precision, checkpointing, micro-batch, sequence, LoRA)
    ("bf16", False, 4, 2048, None),
    ("bf16", True, 8, 2048, None),
    ("amp-bf16", False, 2, 2048, None),
    ("fp32", False, 2, 1024, None),
    ("bf16", False, 4, 2048, (16, "all-linear")),
    ("bf16", True, 8, 2048, (16, "all-linear")),
)
# fp16 autocast allocates what bf16 autocast does (both 2 bytes) except where a loss reads 16-bit scores: CUDA's
# `half_to_float` log-softmax then keeps no fp32 copy and hands back an fp16 gradient. A causal LM's loss upcasts
# first, so a decoder's fp16 replay equals its bf16 one byte for byte (checked: SmolLM2-360M, Qwen3-0.6B); the
# masked-LM and encoder–decoder heads do not, so those families run these too.
NON_DECODER_RUNS = (
    ("amp-fp16", False, 2, 2048, None),
    ("amp-fp16", True, 4, 2048, None),
)


def family_attention(name):
    """transformers' BLOOM, MPT, GPT-Neo and gpt-oss (its attention sinks) have no SDPA path; Gemma-2's
    soft-capped scores none either (5.25 refuses "sdpa")."""
    return "eager" if name.startswith(("bloom", "gemma-2", "mpt", "gpt-neo", "gpt-oss")) else "sdpa"


# Two-label sequence classifiers (`--classifiers`: a reward model's shape, PEFT's SEQ_CLS task): no vocabulary
# logits, so a block's backward, not the loss, is the peak; LoRA on every linear and on PEFT's default targets
# (q and v), with and without checkpointing.
CLASSIFIER_RUNS = (
    ("bf16", False, 4, 2048, None),
    ("bf16", True, 8, 2048, None),
    ("bf16", False, 4, 2048, (16, "all-linear")),
    ("bf16", True, 8, 2048, (16, "all-linear")),
    ("amp-bf16", True, 8, 2048, (16, "all-linear")),
    ("bf16", True, 8, 2048, (16, None)),
)


# QLoRA (`--qlora-families`): bf16 autocast over the fp32 parts `prepare_model_for_kbit_training` leaves (the
# QLoRA paper's and PEFT's recipe), on every linear and on PEFT's default targets, with and without checkpointing.
QLORA_RUNS = (
    ("amp-bf16", True, 4, 2048, (16, "all-linear")),
    ("amp-bf16", False, 2, 2048, (16, "all-linear")),
    ("amp-bf16", True, 4, 2048, (16, None)),
)


def peft_default_targets(model_type):
    """PEFT's LoRA targets for a model type when none are given (q and v, by their names), if it has any."""
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as defaults

    return defaults.get(model_type)


# LoRA without dropout (`--no-lora-dropout`: Unsloth's and torchtune's default, `lora_dropout=0`): each adapter then
# keeps PEFT's cast of its input rather than a dropped-out copy and a mask, and the recompute stops at other tensors;
# as causal LMs (or encoders' and encoder-decoders' own heads) and as classifiers.
DPO_RUNS = (
    # (precision, checkpointing, pairs per micro-batch, sequence, LoRA)
    ("bf16", True, 4, 2048, (16, "all-linear")),
    ("bf16", False, 2, 2048, (16, "all-linear")),
    ("amp-bf16", True, 2, 2048, (16, "all-linear")),
    ("bf16", True, 4, 2048, None),
    ("bf16", False, 1, 2048, None),
)
# TRL's DPO through the model's logits (`--trl-dpo-logits`): the Trainer's AMP (TRL's `bf16=True` default) and
# pure bf16.
DPO_LOGITS_RUNS = (
    ("amp-bf16", True, 2, 2048, (16, "all-linear")),
    ("amp-bf16", False, 1, 2048, (16, "all-linear")),
    ("bf16", True, 4, 2048, (16, "all-linear")),
    ("bf16", False, 2, 2048, (16, "all-linear")),
    ("amp-bf16", True, 2, 2048, None),
    ("bf16", True, 4, 2048, None),
)
# TRL's SFT through the Trainer's loss and its logged metrics (`--trl-sft-logits`) and its chunked NLL
# (`--trl-chunked-nll`): the DPO runs' sequences, one per row rather than two per pair.
SFT_LOGITS_RUNS = tuple((prec, ckpt, 2 * pairs, seq, lora) for prec, ckpt, pairs, seq, lora in DPO_LOGITS_RUNS)
NO_DROPOUT_RUNS = (
    ("bf16", False, 4, 2048, (16, "all-linear")),
    ("bf16", True, 8, 2048, (16, "all-linear")),
    ("amp-bf16", True, 8, 2048, (16, "all-linear")),
)


def families(measure, only=(), head=None, lora_dropout=0.05, header=True, quant=False, prep=True, trl=False):
    """Replays of other model families (plain PyTorch loop, H200), as rows of the calibration schema on stdout:
    those named in `only` (every one, without names); with `head="cls"` as two-label sequence classifiers; with
    `lora_dropout=0` the LoRA runs without dropout; with `quant` QLoRA as measure.py's `quant=4, prep=True` cases
    run it (bitsandbytes NF4 on the meta device, `use_bnb_on_meta`), with `prep` false without PEFT's
    `prepare_model_for_kbit_training` (TRL's `SFTTrainer` from 0.22.0), with `prep="trl"` prepared and then with
    the embeddings and LM head put back in bf16 (TRL's `SFTTrainer` from 0.7.5 to 0.21.0, measure.py's
    `trl_casting_to_bf16`); the schema's header line first unless `header` is false."""
    import csv

    import transformers

    path = os.path.join(HERE, "h200-2026-11-30.csv")
    columns = next(csv.reader(open(path)))
    w = csv.DictWriter(sys.stdout, columns, lineterminator="\n")
    if header:
        w.writeheader()
    for name, (config, cols) in family_configs().items():
        if only and name not in only:
            continue
        measure.MODELS[name] = config
        attn = family_attention(name)
        non_decoder = cols["arch"] != "decoder"
        if SFT_LOGITS:
            runs = SFT_LOGITS_RUNS
        elif DPO:
            runs = DPO_LOGITS_RUNS if DPO_LOGITS else DPO_RUNS
        elif quant:
            use_bnb_on_meta(measure)
            runs = QLORA_RUNS
        elif lora_dropout == 0:
            runs = NO_DROPOUT_RUNS
        elif head:
            runs = CLASSIFIER_RUNS
        else:
            runs = FAMILY_RUNS + (NON_DECODER_RUNS if non_decoder else ())
        for precision, ckpt, mb, seq, lora in runs:
            if name == "gpt2-large":
                seq = min(seq, 1024)
            if non_decoder:
                mb, seq = mb * seq // 512, 512
            if lora and cols["n_experts"]:
                # transformers 5 keeps an MoE's experts as 3-D parameters (`Qwen2MoeExperts`), which PEFT's
                # `all-linear` does not adapt; transformers 4's per-expert `nn.Linear`s, which the model counts
                # adapters on, it did. Not a case the rows' columns can tell apart: left out.
                continue
            if lora and lora[1] is None and not peft_default_targets(config().model_type):
                continue  # PEFT has no default targets for it (Phi-3's fused qkv_proj)
            kind = ("lora" if lora[1] else "loraqv") if lora else "full"
            if lora and lora_dropout == 0:
                kind += "-nodrop"
            if quant:
                kind = "q" + kind + {True: "", False: "-noprep", "trl": "-trl"}[prep]
            if DPO:
                kind = ("orpo-" if LLAMAFACTORY_ORPO or TRL_ORPO else "kto-" if LLAMAFACTORY_KTO else "dpo-") + kind
            cid = f"replay-{name}{'-cls' if head else ''}-{precision}-{'ckpt' if ckpt else 'nock'}-b{mb}-s{seq}-{kind}"
            c = measure.case(cid, name, mb, seq, precision, ckpt=ckpt, lora=lora, attn=attn, head=head,
                             lora_dropout=lora_dropout, quant=4 if quant else None, prep=quant and prep)
            events, params = trace(measure, c)
            a, _ = replay(events, reset_at_load=quant)
            for r in counter_rows({**{k: "" for k in columns}, **cols}, cid, a):
                r.update(source_url="calibration/allocator_replay.py --families (a replay, not a measurement)",
                         framework="plain-pytorch", params_total=f"{params / 1e9:.4f}", task=kind,
                         micro_batch=str(mb), seq_len=str(seq), grad_accum="1", precision=precision,
                         base_weight_bits="16" if precision == "bf16" else "32", optimizer="adamw",
                         optimizer_in_backward="false", activation_checkpointing="full" if ckpt else "none",
                         activation_offload="false", attention="eager" if attn == "eager" else "flash",
                         loss="standard", compile="false", num_gpus="1", sharding="none", tp="1", pp="1", cp="1",
                         offload="none", gpu="H200", gpu_mem_gib="140.40", oom="false", quality="A",
                         notes=f"torch {torch.__version__.split('+')[0]} + transformers {transformers.__version__}; "
                               "random weights built from the model config (no checkpoint load); 3 steps; "
                               f"zero_grad(set_to_none=True); attention {attn}; torch.optim.AdamW (foreach)"
                               + (f"; {cols['notes']}" if cols["notes"] else ""))
                if lora:
                    r.update(lora_rank=str(lora[0]), lora_targets="all-linear" if lora[1] else "q+v",
                             task="lora", notes=r["notes"] + f"; peft 0.21.2; lora_alpha=2r; lora_dropout={lora_dropout}"
                             + ("" if lora[1] else "; PEFT's default target modules"))
                if head:
                    r.update(notes=r["notes"] + "; sequence classification head (2 labels; no LM head), "
                                                "PEFT task SEQ_CLS")
                if DPO and not lora:
                    r.update(task="full")
                if trl:
                    copied = trl_copied_notes()
                    if copied:
                        # LLaMA-Factory's rows read as the schema's "other" with the tool in the notes.
                        r.update(framework="other" if LLAMAFACTORY_DPO else "trl", notes=r["notes"] + copied)
                        w.writerow(r)
                        continue
                    import trl as trl_package

                    r.update(framework="trl",
                             notes=r["notes"] + f"; trl {trl_package.__version__} fused LM head "
                             "(add_fused_lm_head with SFTTrainer's outputs log_probs, entropy, is_top1; "
                             "fused_lm_head=True; every position labelled)"
                             + ("; DPO (DPOTrainer's _compute_loss: chosen and rejected concatenated, twice "
                                "micro_batch sequences; the reference pass under no_grad with the adapters disabled "
                                "or, for a full fine-tune, a frozen copy of the model in its dtype; sigmoid loss; "
                                "the outputs dropped before backward)" if DPO
                                else "; the model's output held to the step")
                             + ("; trainable parameters cast to bf16 (SFTTrainer, a quantized model, TRL >= 0.26)"
                                if BF16_ADAPTERS else ""))
                if quant:
                    r.update(task="qlora", base_weight_bits="4",
                             notes=r["notes"] + "; bitsandbytes 0.50.2 Linear4bit NF4 + double quant + bf16 compute "
                             "on every block linear (LM head and embeddings 16-bit); model built in bf16 then "
                             "quantized; peak counters reset after quantizing; "
                             + {True: "prepare_model_for_kbit_training (unquantized parameters cast to fp32)",
                                False: "no k-bit preparation (norms and embeddings left bf16, as TRL's SFTTrainer "
                                       "from 0.22.0 leaves them)",
                                "trl": "prepare_model_for_kbit_training then TRL's peft_module_casting_to_bf16 "
                                       "(norms fp32; embeddings and LM head named as Llama's back to bf16), as "
                                       "TRL's SFTTrainer up to 0.21.0 ran an unsharded 4-bit model under bf16=True"}
                             [prep])
                w.writerow(r)
            sys.stdout.flush()


def trl_copied_notes():
    """What the rows of a replay that runs TRL's code copied (rather than imported) add to their notes, by mode;
    `None` for the modes that import trl."""
    if CHUNKED_NLL:
        return ("; trl 1.14.2 SFTTrainer loss_type chunked_nll (its default from 1.7) copied: the "
                "backbone's last hidden states shifted and flattened, packed valid-first, then 256 "
                "positions at a time through the LM head under non-reentrant checkpointing (the chunk's "
                "logits, fp32 upcast, log-softmax, accuracy and entropy); every position labelled")
    if SFT_LOGITS:
        return ("; trl 1.6.0 SFTTrainer.compute_loss copied (loss_type nll): the model's loss and "
                "logits (.float()ed by Accelerate's convert_outputs_to_fp32 under autocast), then under "
                "no_grad the logged entropy (entropy_from_logits over the shifted logits, flattened) "
                "and token accuracy (argmax); the outputs dropped before backward")
    if LLAMAFACTORY_KTO:
        return ("; LLaMA-Factory 0.9.5 KTO (CustomKTOTrainer) copied: one sequence an example, half of each "
                "micro-batch desirable; the model's logits (.float()ed by Accelerate's convert_outputs_to_fp32 "
                "under autocast) upcast with .to(torch.float32) in any case; get_batch_logps: a whole log_softmax "
                "of the shifted logits gathered; the KL forward over as many mismatched completions under "
                "no_grad; the desirable and undesirable rows' logits selected by boolean mask (copies); the "
                "reference's passes under no_grad (the adapters disabled or, for a full fine-tune, a frozen copy "
                "of the model in its dtype); TRL's kto_loss; every position a completion token"
                "; the weights in the run's dtype: a bf16 run's stay bf16 as under LLaMA-Factory's pure_bf16 "
                "(without it, it casts trainable weights to fp32)")
    if LLAMAFACTORY_ORPO:
        return ("; LLaMA-Factory 0.9.5 CustomDPOTrainer with pref_loss orpo copied: chosen and rejected "
                "concatenated, twice micro_batch sequences; the model's logits (.float()ed by Accelerate's "
                "convert_outputs_to_fp32 under autocast) upcast with .to(torch.float32) in any case; "
                "get_batch_logps: a whole log_softmax of the shifted logits gathered, averaged over each row; no "
                "reference model (use_ref_model false); the odds-ratio loss with its SFT term; the mean chosen and "
                "rejected logits logged; every position a completion token"
                "; the weights in the run's dtype: a bf16 run's stay bf16 as under LLaMA-Factory's pure_bf16 "
                "(without it, it casts trainable weights to fp32)")
    if TRL_ORPO:
        # One trainer's code; the releases differ in how `selective_log_softmax` takes the log-probabilities.
        release, kept = (
            ("trl 1.16.0 ORPOTrainer copied with its selective_log_softmax's Triton kernel (from trl 1.14.0 on CUDA)",
             ", their logits saved and a contiguous gradient made in backward")
            if TRL_LOGPROB_KERNEL else
            ("trl 1.13.0 ORPOTrainer (the code 1.16.0 still runs; copied) with its row-wise selective_log_softmax",
             ""))
        return (f"; {release}: chosen and rejected concatenated, twice micro_batch sequences; the model's logits "
                "(.float()ed by Accelerate's convert_outputs_to_fp32 under autocast); the chosen half's NLL over its "
                "shifted logits made contiguous (nn.CrossEntropyLoss); the averaged per-token log-probabilities of "
                f"every row{kept}; no reference model; the odds-ratio loss; the mean chosen and rejected logits "
                "logged; every position a completion token")
    if LLAMAFACTORY_DPO:
        return ("; LLaMA-Factory 0.9.5 DPO (CustomDPOTrainer) copied: chosen and rejected concatenated, twice "
                "micro_batch sequences; the model's logits (.float()ed by Accelerate's convert_outputs_to_fp32 "
                "under autocast) upcast with .to(torch.float32) in any case; get_batch_logps: a whole "
                "log_softmax of the shifted logits gathered; the policy's logits kept for the metrics through "
                "the reference pass under no_grad (the adapters disabled or, for a full fine-tune, a frozen copy "
                "of the model in its dtype); sigmoid loss; every position a completion token"
                "; the weights in the run's dtype: a bf16 run's stay bf16 as under LLaMA-Factory's pure_bf16 "
                "(without it, it casts trainable weights to fp32)")
    if DPO_LOGITS_0_13:
        return ("; trl 0.13.0 DPOTrainer.concatenated_forward copied: chosen and rejected "
                "concatenated, twice micro_batch sequences; the model called without use_cache=False, its config's "
                "use_cache on (as published) unless it checkpoints in training mode (as transformers 4.46-4.48 "
                "turned it off); its "
                "logits (.float()ed by Accelerate's convert_outputs_to_fp32 under autocast) shifted, a whole "
                "log_softmax gathered; the mean chosen and rejected logits by boolean mask; nothing of the "
                "outputs kept once it returns; the reference pass the same under no_grad with the adapters "
                "disabled or, for a full fine-tune, a frozen copy of the model in its dtype; sigmoid loss; every "
                "position a completion token")
    if DPO_LOGITS_0_11:
        release, nll = (("trl 0.8.6", "") if DPO_LOGITS_0_8 else
                        ("trl 0.11.4", "; the chosen half's NLL over a contiguous copy of its shifted logits "
                         "(nn.CrossEntropyLoss), its graph held until the loss returns"))
        return (f"; {release} DPOTrainer.concatenated_forward copied: chosen and rejected "
                "concatenated, twice micro_batch sequences; use_cache=False; the model's logits (.float()ed by "
                "Accelerate's convert_outputs_to_fp32 under autocast) returned as chosen and rejected halves and "
                "held until the loss and the logged mean logits; get_batch_logps: a whole log_softmax of the "
                f"shifted logits gathered{nll}; the reference pass the same under no_grad with the adapters "
                "disabled or, for a full fine-tune, a frozen copy of the model in its dtype; sigmoid loss; every "
                "position a completion token")
    if DPO_LOGITS_0_24:
        return ("; trl 0.24.0 DPOTrainer.concatenated_forward copied: chosen and rejected "
                "concatenated, twice micro_batch sequences; output_hidden_states; the model's "
                "logits (.float()ed by Accelerate's convert_outputs_to_fp32 under autocast), "
                "unshifted with the labels rolled, selective_log_softmax; the mean chosen and "
                "rejected logits by boolean mask; nothing of the outputs kept once it returns; "
                "the reference pass the same under no_grad with the adapters disabled or, for a "
                "full fine-tune, a frozen copy of the model in its dtype; sigmoid loss; every "
                "position a completion token")
    if DPO_LOGITS:
        return ("; trl 1.13.0 DPOTrainer._compute_loss copied: "
                "chosen and rejected concatenated, twice micro_batch sequences; the model's "
                "logits (.float()ed by Accelerate's convert_outputs_to_fp32 under autocast), "
                "selective_log_softmax; the reference pass under no_grad with the adapters "
                "disabled or, for a full fine-tune, a frozen copy of the model in its dtype, its "
                "logits alive until the loss returns; sigmoid loss; the logged metrics (entropy "
                "of the reshaped shifted logits, mean chosen and rejected logits by boolean mask, "
                "token accuracy); every position a completion token; the outputs dropped before "
                "backward")
    return None


# The public rows of the Trainer's performance guide (hf_transformers_perf_train_gpu_one-128 … 136: BERT-large
# sequence classification, eager attention, 512 tokens, AdamW's per-parameter loop, zero_grad keeping the
# gradients, on a V100) as (batch, precision, checkpointing) and the NVML reading after `trainer.train()`, GiB.
BERT_GUIDE = [
    (4, "fp32", False, 14.599),
    (1, "fp32", False, 8.478),
    (4, "amp-fp16", False, 13.612),
    (1, "fp32", True, 6.616),
    (1, "amp-fp16", True, 7.104),
]
# The CUDA context the guide measured before training (`torch.ones((1, 1)).to("cuda")`: 1343 MB).
BERT_GUIDE_CONTEXT_GIB = 1343 / 1024


def bert_guide():
    """Replays the guide's BERT-large steps (transformers 4.x's eager `BertSelfAttention`, `attn_implementation=
    "eager"`; a `transformers<5` install) and prints them beside its readings less the stated context: what the
    replay's allocator reserves against what the run held. The replay runs the installed PyTorch's autograd,
    whose softmax keeps no input (1.11 on); the difference per sample is what an older release kept."""
    from transformers import BertConfig, BertForSequenceClassification

    torch.nn.functional.dropout = cuda_dropout
    print("| batch | precision | checkpointing | replayed allocated | replayed reserved | read − context | "
          "read − replayed |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for mb, precision, ckpt, read in BERT_GUIDE:
        log = AllocationLog()
        with log:
            cfg = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                             intermediate_size=4096, vocab_size=30522, max_position_embeddings=512,
                             type_vocab_size=2, num_labels=2, attn_implementation="eager")
            with torch.device("meta"):
                model = BertForSequenceClassification(cfg)
            model.train()
            # Its padding check reads a value, which a meta tensor has not (the guide's inputs are unpadded).
            model.bert.warn_if_padding_and_no_attention_mask = lambda *a, **k: None
            if ckpt:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
            params = [p for p in model.parameters() if p.requires_grad]
            # transformers' own AdamW (`adamw_hf`, the Trainer's default then) loops over the parameters.
            opt = torch.optim.AdamW(params, lr=1e-5, foreach=False)
            ids = torch.randint(100, 30000, (mb, 512), device="meta")
            labels = torch.zeros((mb,), dtype=torch.long, device="meta")
            log.mark("load")
            amp = {"amp-fp16": torch.float16}.get(precision)
            # PyTorch 1.x's `zero_grad` kept the gradients.
            train_steps(log, model, opt, dict(input_ids=ids, labels=labels), amp, 3, set_to_none=False)
            del model, opt, params
            gc.collect()
        a, _ = replay(log.events)
        held = read - BERT_GUIDE_CONTEXT_GIB
        print(f"| {mb} | {precision} | {'full' if ckpt else 'none'} | {a.peak_allocated / GIB:.3f} | "
              f"{a.peak_reserved / GIB:.3f} | {held:.3f} | {held - a.peak_reserved / GIB:+.3f} |", flush=True)


def dropped_output(measure, specs):
    """Each case (`MODEL:PRECISION:ckpt|nock:BATCH:SEQ:lora|full`, a `--families` model or one of measure.py's)
    replayed with the loop holding the output through backward and with the Trainer's order, which drops it:
    how the reserve over the allocated peak moves (model version 27, `Ctx::dropped_logits_segment`)."""
    global DROP_OUTPUT
    fams = family_configs()
    print("| case | holding: allocated | reserved | dropping: allocated | reserved | reserve − allocated, dropping − holding |")
    print("|---|---:|---:|---:|---:|---:|")
    for spec in specs:
        name, precision, ck, mb, seq, kind = spec.split(":")
        if name in fams:
            measure.MODELS[name] = fams[name][0]
        attn = family_attention(name)
        lora = (16, "all-linear") if kind == "lora" else None
        c = measure.case(f"dropped-{spec}", name, int(mb), int(seq), precision, ckpt=ck == "ckpt", lora=lora, attn=attn)
        peaks = []
        for drop in (False, True):
            DROP_OUTPUT = drop
            try:
                a, _ = replay(trace(measure, c)[0])
            finally:
                DROP_OUTPUT = False
            peaks.append((a.peak_allocated / GIB, a.peak_reserved / GIB))
        (ha, hr), (da, dr) = peaks
        print(f"| {spec} | {ha:.3f} | {hr:.3f} | {da:.3f} | {dr:.3f} | {(dr - da) - (hr - ha):+.3f} |", flush=True)


def quantize_4bit_meta(model, storage=torch.uint8):
    """measure.quantize_4bit on the meta device: every block linear (not the LM head) becomes bitsandbytes'
    `Linear4bit` (NF4, double quantization, bf16 compute) holding what `Params4bit` holds once quantized on CUDA —
    the packed codes (one byte per two weights), the 8-bit absmax per 64 weights, its fp32 absmax per 256 of those
    and the code books — as meta tensors of those sizes (quantizing itself cannot run on meta)."""
    import bitsandbytes as bnb
    from bitsandbytes.functional import QuantState

    for mod in list(model.modules()):
        for name, child in list(mod.named_children()):
            # Subclasses too (Falcon's `FalconLinear`), as transformers' loader replaces them
            # (`replace_with_bnb_linear`: `isinstance(module, nn.Linear)`); measure.py's own runs had none.
            if not isinstance(child, torch.nn.Linear) or name == "lm_head":
                continue
            q = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                  compute_dtype=torch.bfloat16, compress_statistics=True, quant_type="nf4",
                                  quant_storage=storage, device="meta")
            n = child.weight.numel()
            blocks = (n + 63) // 64

            def empty(size, dtype):
                return torch.empty(size, dtype=dtype, device="meta")

            state2 = QuantState(absmax=empty((blocks + 255) // 256, torch.float32), code=empty(256, torch.float32),
                                blocksize=256, dtype=torch.float32)
            state = QuantState(absmax=empty(blocks, torch.uint8), shape=child.weight.shape,
                               code=empty(16, torch.float32), blocksize=64, quant_type="nf4",
                               dtype=child.weight.dtype, offset=empty((), torch.float32), state2=state2)
            codes = empty((((n + 1) // 2) // storage.itemsize, 1), storage)
            q.weight = bnb.nn.Params4bit(codes, requires_grad=False, quant_state=state, blocksize=64,
                                         compress_statistics=True, quant_type="nf4", quant_storage=storage,
                                         module=q, bnb_quantized=True)
            if child.bias is not None:
                q.bias = child.bias
            setattr(mod, name, q)
            del child
    model.is_loaded_in_4bit = True  # what PEFT reads to pick its bitsandbytes LoRA layer
    gc.collect()


# bitsandbytes 0.50's CUDA `gemm_4bit` runs its own kernel up to this many rows (`_gemm_4bit_custom_max_m` on sm80
# and later) and past it dequantizes the weight (bf16, out × in) and calls `F.linear` (`_dequant_linear_fallback`):
# a training batch's rows are past it.
BNB_CUSTOM_MAX_M = 1536


def bnb_matmul_4bit_forward(ctx, A, B, out=None, bias=None, quant_state=None):
    """`MatMul4Bit.forward` with the CUDA backend's allocations: the meta device's fake `gemm_4bit` allocates its
    output only; past `BNB_CUSTOM_MAX_M` rows CUDA dequantizes the weight first (bitsandbytes' default
    implementation, whose dequantize ops have meta kernels)."""
    from bitsandbytes.backends.default.ops import _gemm_4bit_default_impl

    K = A.shape[-1]
    if A.numel() // K <= BNB_CUSTOM_MAX_M:
        return BNB_MATMUL_4BIT_FORWARD(ctx, A, B, out, bias, quant_state)
    B = B.view(-1, 1)
    s = quant_state
    output = _gemm_4bit_default_impl(A, B, s.shape, s.state2.absmax, s.blocksize, s.quant_type, bias=bias,
                                     absmax_8bit=s.absmax, absmax_code=s.state2.code, absmax_offset=s.offset)
    ctx.is_empty = False
    ctx.state = s
    ctx.dtype_A, ctx.dtype_B, ctx.dtype_bias = A.dtype, B.dtype, None if bias is None else bias.dtype
    ctx.tensors = (None, B) if any(ctx.needs_input_grad[:2]) else (None, None)
    return output


BNB_MATMUL_4BIT_FORWARD = None


class SafeSoftmaxMask(AllocationLog):
    """The log with `_safe_softmax`'s boolean `-inf` mask (`self.eq(-inf)`, one byte per score), which its
    CompositeExplicitAutograd kernel makes below the dispatcher, where the log cannot see it: alive while the
    output is made."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is not aten._safe_softmax.default:
            return super().__torch_dispatch__(func, types, args, kwargs)
        mask = self.alloc_raw(args[0].numel())
        out = super().__torch_dispatch__(func, types, args, kwargs)
        self._free(mask)
        return out


class FusedHeadQuantLog(FusedHeadLog, SafeSoftmaxMask):
    """The fused head's log over a quantized base, with `_safe_softmax`'s mask as the QLoRA replays log it."""


def empty_cache(a):
    """`torch.cuda.empty_cache()`: every segment with no block in use goes back."""
    for small in (True, False):
        keep = []
        for size, ptr, b in a.pools[small]:
            if b.prev is None and b.next is None:
                a.reserved -= b.size
            else:
                keep.append((size, ptr, b))
        a.pools[small] = keep


def use_bnb_on_meta(measure):
    """bitsandbytes on the meta device for measure.py's `quant=4` cases (whose `trace` logs `_safe_softmax`'s
    mask too)."""
    global BNB_MATMUL_4BIT_FORWARD
    import bitsandbytes.autograd._functions as bnb_functions

    if BNB_MATMUL_4BIT_FORWARD is None:
        BNB_MATMUL_4BIT_FORWARD = bnb_functions.MatMul4Bit.forward
        bnb_functions.MatMul4Bit.forward = staticmethod(bnb_matmul_4bit_forward)
    measure.quantize_4bit = quantize_4bit_meta


def qlora(measure, ids):
    """The H200's QLoRA cases (bitsandbytes NF4, set 5) replayed: measure.py's build with `quantize_4bit_meta`,
    the cache emptied and the peaks reset once quantized (as measure.py does), then its loop; each phase's reading
    after the first step beside the measured one."""
    use_bnb_on_meta(measure)
    cases = measure_cases(measure)
    measured = measured_cases()
    for cid in ids:
        a, marks = replay(trace(measure, cases[cid])[0], reset_at_load=True)
        readings = {}
        for name, alloc, peak, _ in marks:
            readings.setdefault(name, (alloc, peak))
        readings.pop("load", None)
        m = measured.get(cid, {})
        print(f"{cid}: replayed max_allocated {a.peak_allocated / GIB:.3f} max_reserved {a.peak_reserved / GIB:.3f};"
              f" measured {m.get('max_allocated', 0) / GIB:.3f} {m.get('max_reserved', 0) / GIB:.3f}")
        for phase, (alloc, peak) in readings.items():
            print(f"  after the first {phase}: allocated {alloc / GIB:.3f} (measured "
                  f"{m.get('alloc_after_' + phase, 0) / GIB:.3f}), peak {peak / GIB:.3f} (measured "
                  f"{m.get('peak_alloc_' + phase, 0) / GIB:.3f})", flush=True)


def segment_history(measure, spec):
    """One family's replay (`NAME:PRECISION:ckpt|nock:MB:SEQ`, a full fine-tune, or with `:lora` appended LoRA r16
    on every linear layer, under the mode the flags set), printed as its segment history: the counters at each
    phase's end of each step, the segments each step's phases mapped, and every segment mapped after the first step
    (in it, those of a GiB or more), with the request that mapped it — which of the first step's tensors took the
    segments the later steps make again."""
    name, precision, ckpt, mb, seq, *lora = spec.split(":")
    config, _ = family_configs()[name]
    measure.MODELS[name] = config
    lora = (16, "all-linear") if lora == ["lora"] else None
    c = measure.case(f"segments-{name}", name, int(mb), int(seq), precision, ckpt=ckpt == "ckpt", lora=lora,
                     attn=family_attention(name), head=None, lora_dropout=0.05, quant=None, prep=False)
    events, _ = trace(measure, c)
    a = CachingAllocator()
    live, maps = {}, []
    step, phase = 0, "forward"
    for e in events:
        if e[0] == "a":
            before = a.reserved
            live[e[1]] = a.malloc(e[2])
            if a.reserved > before:
                maps.append((step, phase, e[2], a.reserved - before, a.reserved))
        elif e[0] == "f":
            b = live.pop(e[1], None)
            if b is not None:
                a.release(b)
        else:
            print(f"step {step} {e[1]}: allocated {a.allocated / GIB:.3f} peak {a.peak_allocated / GIB:.3f} "
                  f"reserved {a.reserved / GIB:.3f} GiB")
            phase = {"load": "forward", "forward": "backward", "backward": "step"}.get(e[1], "forward")
            if e[1] == "step":
                step += 1
    for key in sorted({(s, ph) for s, ph, *_ in maps}):
        segs = [m for m in maps if m[:2] == key]
        print(f"step {key[0]} {key[1]}: mapped {sum(m[3] for m in segs) / GIB:.3f} GiB in {len(segs)} segments")
    for s, ph, request, seg, reserved in maps:
        # Every segment after the first step; in it, those of a GiB or more (the logits-sized ones).
        if s >= 1 or seg >= GIB:
            print(f"  step {s} {ph}: a {request / 2**20:.1f} MiB request mapped {seg / 2**20:.1f} MiB "
                  f"(reserved {reserved / GIB:.3f} GiB)")
    print(f"peak allocated {a.peak_allocated / GIB:.3f} GiB, peak reserved {a.peak_reserved / GIB:.3f} GiB")


def main():
    if sys.argv[1:] == ["--bert-guide"]:
        return bert_guide()
    measure = load_measure()
    # `--segments MODE SPEC...`: the segment history of each SPEC under a mode's flags (`--families` or a TRL mode).
    segments = sys.argv[1:2] == ["--segments"]
    if segments:
        del sys.argv[1]
        if sys.argv[1:2] == ["--families"]:
            for spec in sys.argv[2:]:
                segment_history(measure, spec)
            return
    if sys.argv[1:] == ["--grid"]:
        return grid(measure)
    if sys.argv[1:2] == ["--dropped-output"]:
        return dropped_output(measure, sys.argv[2:])
    if sys.argv[1:2] == ["--families"]:
        return families(measure, sys.argv[2:])
    if sys.argv[1:2] == ["--classifiers"]:
        return families(measure, sys.argv[2:], head="cls")
    if sys.argv[1:2] == ["--qlora"]:
        return qlora(measure, sys.argv[2:])
    if sys.argv[1:2] == ["--qlora-families"]:
        return families(measure, sys.argv[2:], quant=True)
    if sys.argv[1:2] == ["--qlora-noprep-families"]:
        return families(measure, sys.argv[2:], quant=True, prep=False)
    if sys.argv[1:2] == ["--qlora-trl-families"]:
        return families(measure, sys.argv[2:], quant=True, prep="trl")
    if sys.argv[1:2] in (["--trl-fused-head"], ["--trl-dpo"], ["--trl-qlora"], ["--trl-dpo-logits"],
                         ["--trl-dpo-logits-0.24"], ["--trl-dpo-logits-0.13"], ["--trl-dpo-logits-0.11"],
                         ["--trl-dpo-logits-0.8"], ["--trl-sft-logits"], ["--trl-chunked-nll"],
                         ["--llamafactory-dpo"], ["--llamafactory-orpo"], ["--trl-orpo"],
                         ["--trl-orpo-kernel"], ["--llamafactory-kto"]):
        global FUSED_HEAD, DPO, BF16_ADAPTERS, DPO_LOGITS, DPO_LOGITS_0_24, SFT_LOGITS, CHUNKED_NLL
        global DPO_LOGITS_0_13, DPO_LOGITS_0_11, DPO_LOGITS_0_8
        global LLAMAFACTORY_DPO, LLAMAFACTORY_ORPO, TRL_ORPO, TRL_LOGPROB_KERNEL, LLAMAFACTORY_KTO
        LLAMAFACTORY_ORPO = sys.argv[1] == "--llamafactory-orpo"
        LLAMAFACTORY_KTO = sys.argv[1] == "--llamafactory-kto"
        TRL_LOGPROB_KERNEL = sys.argv[1] == "--trl-orpo-kernel"
        TRL_ORPO = TRL_LOGPROB_KERNEL or sys.argv[1] == "--trl-orpo"
        LLAMAFACTORY_DPO = LLAMAFACTORY_ORPO or LLAMAFACTORY_KTO or sys.argv[1] == "--llamafactory-dpo"
        CHUNKED_NLL = sys.argv[1] == "--trl-chunked-nll"
        SFT_LOGITS = CHUNKED_NLL or sys.argv[1] == "--trl-sft-logits"
        DPO_LOGITS_0_24 = sys.argv[1] == "--trl-dpo-logits-0.24"
        DPO_LOGITS_0_13 = sys.argv[1] == "--trl-dpo-logits-0.13"
        DPO_LOGITS_0_8 = sys.argv[1] == "--trl-dpo-logits-0.8"
        DPO_LOGITS_0_11 = DPO_LOGITS_0_8 or sys.argv[1] == "--trl-dpo-logits-0.11"
        DPO_LOGITS = (DPO_LOGITS_0_24 or DPO_LOGITS_0_13 or DPO_LOGITS_0_11 or LLAMAFACTORY_DPO or TRL_ORPO
                      or sys.argv[1] == "--trl-dpo-logits")
        FUSED_HEAD = not (DPO_LOGITS or SFT_LOGITS)
        DPO = DPO_LOGITS or sys.argv[1] == "--trl-dpo"
        BF16_ADAPTERS = quant = sys.argv[1] == "--trl-qlora"
        if segments:
            for spec in sys.argv[2:]:
                segment_history(measure, spec)
            return
        families(measure, sys.argv[2:], trl=True, quant=quant, prep=False)
        return
    if sys.argv[1:2] == ["--no-lora-dropout"]:
        # Each family as its own LM and, with `:cls`, as a classifier: `llama-3.2-1b llama-3.2-1b:cls`.
        for i, spec in enumerate(sys.argv[2:]):
            name, _, cls = spec.partition(":")
            families(measure, [name], head="cls" if cls else None, lora_dropout=0, header=i == 0)
        return
    measured = measured_cases()
    # The card's capacity as the runs' CUDA reported it (`get_device_properties(0).total_memory`).
    card = json.load(open(os.path.join(HERE, "h200-2026-11-30", "env.json")))["total"] / GIB
    ids = sys.argv[1:]
    cases = measure_cases(measure)
    print("| case | allocated measured | replayed | reserved measured | replayed | reserved − allocated measured | replayed |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for cid, c in cases.items():
        if ids and cid not in ids:
            continue
        if not ids and not replayable(c):
            continue
        m = measured.get(cid)
        if m is None:
            continue
        a, marks = replay(trace(measure, c)[0])
        if ids:
            for name, alloc, peak, resv in marks[:4]:
                print(f"  {name}: allocated {alloc / GIB:.3f} peak {peak / GIB:.3f} reserved {resv / GIB:.3f}")
            for k in ("alloc_after_load", "alloc_after_forward", "peak_alloc_forward", "alloc_after_backward",
                      "peak_alloc_backward", "alloc_after_step"):
                print(f"  measured {k}: {m.get(k, 0) / GIB:.3f}")
        ma, mr = m["max_allocated"] / GIB, m["max_reserved"] / GIB
        ra, rr = a.peak_allocated / GIB, a.peak_reserved / GIB
        if m.get("oom"):
            print(f"| {cid} (out of memory at {card:.1f} GiB) | {ma:.3f} | "
                  f"{ra:.3f} | {mr:.3f} | {rr:.3f} | — | — |", flush=True)
            continue
        print(f"| {cid} | {ma:.3f} | {ra:.3f} ({100 * (ra - ma) / ma:+.1f} %) | {mr:.3f} | {rr:.3f} ({100 * (rr - mr) / mr:+.1f} %) | {mr - ma:.3f} | {rr - ra:.3f} |", flush=True)


if __name__ == "__main__":
    main()
