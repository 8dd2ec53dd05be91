"""Counts the bytes LitGPT's transformer blocks keep for backward, per token per
block, in units of the hidden size — the numbers `cost-model/tests/mechanisms.rs`
(`litgpt_blocks_keep_what_their_saved_tensors_add_up_to`) pins the model to.

No GPU needed: the blocks run on the CPU under `torch.autograd.graph.saved_tensors_hooks`,
which sees every tensor autograd saves; storages are counted once. The block input
requires grad, so a block counts what it keeps when something beneath it trains. Scaled dot-product
attention is replaced by a function that saves what CUDA's flash kernel saves
(q, k, v, output, fp32 log-sum-exp) and returns its output in CUDA's memory layout, so the
count is the CUDA one except that CPU dropout masks are in the input dtype (CUDA: bool;
the test takes 1 byte per masked element off).

Set-up (any machine with PyPI; LitGPT's own imports pull in lightning, which the
counted modules do not need, so they are taken straight out of the wheel):

    python -m venv v && v/bin/pip install torch pyyaml numpy
    pip download litgpt==0.5.13 --no-deps -d whl && unzip -q whl/litgpt-*.whl -d whl/lg
    v/bin/python calibration/saved_tensors.py whl/lg/litgpt
    v/bin/pip install transformers && v/bin/python calibration/saved_tensors.py --transformers
    v/bin/pip install peft && v/bin/python calibration/saved_tensors.py --peft [boft]
    v/bin/python calibration/saved_tensors.py --scratch
    v/bin/python calibration/saved_tensors.py --methods
    v/bin/python calibration/saved_tensors.py --compile      # and --compile-backward (7 min)
    v/bin/python calibration/saved_tensors.py --t5           # T5 encoder / decoder blocks under SDPA
    v/bin/python calibration/saved_tensors.py --padded       # padding under the CPU's own SDPA
    v/bin/pip install peft==0.20.0 && v/bin/python calibration/saved_tensors.py --osf   # and 0.21.2, --osf fp32
    v/bin/python calibration/saved_tensors.py --tp       # DTensor TP (torchtitan's plan), with and without SP
    v/bin/python calibration/saved_tensors.py --moe      # torchtitan 0.3.0's MoE layers (same install as --tp)
    v/bin/python calibration/saved_tensors.py --mla      # its DeepSeek-V3 blocks, latent attention and MoE

Results of 2026-11-30 (litgpt 0.5.13, torch 2.15.0; B=2, T=64, bf16), bytes per token
per block / hidden (blocks 1, 2, 3 of a 4-block model):

    lora   Llama-2-7b-hf (q+v, r=8, dropout 0.05)   44.35
    lora   phi-1_5       (q+v, r=8, dropout 0.05)   30.21
    lora   stablelm-base-alpha-3b (same)            30.17
    full   tiny-llama-1.1b                          50.13
    lora   Llama-3-8B (q+v)                         43.68
    lora   Llama-3-8B, Mistral-7B-v0.1 (every linear: q, k, v, proj, mlp)   67.12
    full   phi-1_5                                  32.06
    full   Llama-3-8B                               56.10
    adapter    Llama-2-7b-hf  block 1 / 2, 3        36.22 / 38.56 38.56
    adapter_v2 Llama-2-7b-hf  block 1 / 2, 3        64.97 / 67.78 67.31

transformers 5.24 (`--transformers`; small configs: hidden 1024, 16 heads, MLP 2816), full fine-tune:

    llama / qwen2 / mistral (16 heads, 4 kv heads)   43.07
    llama (16 kv heads)                              46.07
    phi3 (fused qkv, 16 kv heads)                    50.07
    gpt_neox (fused qkv, parallel, 2 norms, MLP 4096) 34.07
    falcon (fused qkv, multi-query, 1 norm, MLP 4096) 24.32
    mixtral (8 experts, top 2; router and expert outputs kept) 73.18
    gemma2 (eager: soft-capped scores; 4 fp32-scaling RMSNorms; 8 heads of 128) 70.14

and PEFT 0.21 LoRA on the llama config (fp32 adapters; a CPU dropout mask over an fp32
copy is 4 bytes, CUDA's 1):

    q+v r8, dropout 0.05 / none                      45.63 / 37.63
    all-linear r16, dropout 0.05 / none              100.01 / 65.01

`--tp` (2026-12-07, torch 2.15.0; torchtitan's Llama block, hidden 1024, 16 heads over 8, MLP 3584, B 2, T 64,
bf16; rank 0 of a fake process group; per-op checkpointing is torchtitan 0.3.0's policy, installed with
`pip install --no-deps torchtitan==0.3.0 spmd_types==0.2.3 tyro einops torchdata torch_checkpointing`):

    no checkpointing   TP 1 56.07; TP 2 38.04, with SP 30.04; TP 4 29.02, with SP 17.02; TP 8 with SP 10.51
    per-op (`op` SAC)  TP 1 14.04; TP 4 6.54, with SP 6.04 (the CPU's SDPA is not on the save list)
    full               TP 1 2.04; TP 4 2.04, with SP 0.54
    0.3.0's fused wqkv and `enable_gqa` (the rest separate projections and 0.1's `repeat_kv`): no checkpointing
                       TP 1 54.07, TP 4 with SP 16.52; per-op TP 1 15.04, TP 4 with SP 6.29
    final norm + head  TP 1 10.00; TP 4 10.00, with SP 4.00 (bytes per token / hidden; the logits not counted)

`--moe` (2026-12-07, torch 2.15.0, torchtitan 0.3.0 wheel; the MoE modules of its Qwen3 `debugmodel_moe` — hidden
256, 64 experts of FFN 768, top 8, no shared expert — and DeepSeek-V3 `debugmodel` — 8 experts of FFN 256, top 3, two
shared experts as one FFN of 512; B 2, T 64, bf16; bytes per token per MoE layer / hidden, `x + moe(x)`):

    Qwen3        no checkpointing top 4 122.95, top 8 243.39: 30.11 per routed token (8·FFN 24.00, the routed
                 input 2, its fp32 copy scaled by the score 4, two int64 indices); per-op 2.97; full 2.15
    DeepSeek-V3  no checkpointing top 4 74.47, top 8 130.88: 14.10 per routed token (8·FFN 8.00); per-op 6.33
                 (the shared up projection's output 4 more); full 2.15

(The CPU leaves autocast off: on CUDA 0.3.0's router gate runs under fp32 autocast, its input and scores fp32.)

`--mla` (the same install; torchtitan 0.3.0's DeepSeek-V3 `debugmodel` MoE blocks — 16 heads of 192 with 64 rotary,
values 128, a 512-wide kv latent — with no q latent and with one of 384, the inner attention `flash_like`; bytes per
token per block / hidden):

    q latent 0:    none 194.67, op 110.33, full 2.15
    q latent 384:  none 209.68, op 65.77, full 2.15

(Under `op` the CPU's SDPA math kernel is on the save list and its norms keep fp32 copies, alike in both: the
difference, 44.56, is the count's.)

(lit-gpt as of 0.2.0 under torch 2.1.2 gave the same LoRA counts except for RMSNorm,
whose `mean` then also kept its fp32 input: Llama-2-7b 52.29.)

`--peft` (PEFT 0.21.2; Llama-3.2-3B-shaped bf16 blocks, fp32 adapters, r 32 on q and v;
per token per block / hidden, and token-independent MB per block):

    lora, no dropout / dropout 0.05                  37.45 / 45.45
    lora-fa (every lora_A frozen), no dropout / 0.05 29.45 / 37.45
    dora, no dropout                                 45.45
    dora, dropout 0.05                               56.12, 50.38 MB (fp32 weight copies)
    ln tuning                                        33.37
    boft block 4 (q, v)                              34.03, 113.59 MB (3 bf16 in x in per layer)

`--methods` (other PEFT methods on q and v of the small bf16 Llama, hidden 1024; per token
per block / hidden, MB per block): frozen base (TinyLoRA) 29.59; input casts only — LoRA r8
37.63, C3A, OFT (+1.05 MB), DeLoRA 37.70, GraLoRA 38.07, VeRA 36.57, RoAd 39.57, AdaLoRA 42.66;
a weight-sized update kept — LoHa, LoKr, FourierFT 37.57 + 5.24 MB, WaveFT + 10.52 MB,
RandLoRA 34.57 + 4.46 MB, HRA + 86.11 MB (r 8: nine or eleven 1024² fp32 products per
matrix); VB-LoRA 37.60 + 0.16 MB; SHiRA 31.57 + 4.75 MB (its 16-bit input and sparse
updates); MiSS 30.07; trainable tokens 29.57; prefix tuning 32.57 (its mask makes SDPA
expand the grouped k/v: +3); p-tuning 29.57 + 0.61 MB (20 virtual tokens). PEFT's other
tuners with their default configs (a loop over `peft.*Config`, same model): BEFT 29.57,
CPT 29.57 + 0.03 MB, Cartridge 32.57 + 0.08 MB (a prefix, as prefix tuning), DEFT 42.70 +
0.11 MB, FRoD 33.57 + 4.95 MB, GLoRA 31.57 + 2.62 MB, HiRA 37.57 + 5.24 MB, LiLy 37.84 +
0.16 MB, PEANuT 37.57 + 10.75 MB, PSOFT 29.82, PVeRA 42.57, SuperTuning 31.57 + 2.73 MB,
UniLoRA 37.60 + 0.05 MB.

`--osf [fp32]` (OSF on every linear of the small bf16 Llama, 32 trained directions per
matrix, 581 856 trainable per block; per token per block / hidden, MB per block, frozen
buffer elements per block):

    PEFT 0.20.0, bf16 adapters (weight rebuilt every forward)  39.07, 23.13 MB, 16 069 920
    PEFT 0.21.2, bf16 adapters (factored rank-2r update)       39.95,  2.33 MB,  9 421 024
    PEFT 0.21.2, fp32 adapters                                 66.32,  4.65 MB,  9 421 024

`--compile` (whole-model torch.compile, inductor on the CPU, torch 2.15, transformers 5.24; the
small bf16 Llama, per token per block / hidden): eager 43.07, compiled 32.57; with
non-reentrant checkpointing 2.00 either way (only the block input). `--compile-backward` profiles the
CPU allocations of a forward and backward (2 × 2048 tokens, 2/4/6 blocks): with
checkpointing the peak grew by 22.55 MB per block eager and 20.71 MB compiled (one block's
bf16 gradients, 22.5 MB; 180.65 MB without checkpointing): the H200's excess under compile
with checkpointing (calibration/h200-2026-11-30) is not reproduced on the CPU.

`--scratch` (LLMs-from-scratch LayerNorm / GELU; bytes per element beyond the input, fp32
and bf16 alike in elements): custom LayerNorm 2 tensors with its scale trained, 1 frozen;
custom tanh GELU 3; F.layer_norm and the fused GELU none.

`--t5` (transformers 5.24's T5ForConditionalGeneration, v1.1 shape: hidden 512, 8 heads of
64, gated-GELU MLP 1024, no dropout; batch 2; 3 blocks of a stack less 2; SDPA replaced by
`efficient_like`, which saves what CUDA's memory-efficient kernel saves with a float mask:
q, k, v, the mask, the output in CUDA's layout, an fp32 log-sum-exp), bytes per block:

    dtype  padded  source target  encoder block  decoder block
    fp32   yes     64     16      6 558 720      2 501 248
    fp32   yes     128    16      13 641 728     3 091 072
    fp32   yes     64     32      6 558 720      4 495 104
    fp32   no      64     16      6 427 648      2 435 712
    bf16   yes     64     16      3 806 208      1 448 576
    bf16   yes     128    16      7 874 560      1 743 488
    bf16   yes     64     32      3 806 208      2 643 712
    bf16   no      64     16      3 740 672      1 415 808

T5 hands SDPA its relative position bias as a float mask built per call
(`create_position_bias_mask`), which the kernel keeps: with a padding mask (B, heads, S, S)
per encoder block and (B, heads, T, S) per cross-attention, (1, heads, T, T) per causal
decoder self-attention; without padding one row each (the encoder's 131 072 B fewer at
fp32, 64 tokens). In bf16 each T5LayerNorm keeps its 16-bit input beside the fp32 copy it
squares (2 · 512 B per token per norm). Eager attention (`_attn_implementation = "eager"`)
in fp32: 6 554 624 / 2 507 136 at 64/16.

`--padded` (the CPU's own SDPA, which saves the float mask it converts a boolean one to, as
CUDA's memory-efficient kernel does; batch 2, the first row's second half padding), bytes
per block:

    llama bf16 (8 heads over 2 kv heads)   no padding 2 429 952   padded 2 642 944
    bart fp32 encoder / decoder            no padding 3 151 872 / 1 575 680   padded 3 184 640 / 1 583 872
    bart bf16 encoder / decoder            no padding 1 577 984 / 788 864     padded 1 594 368 / 792 960

Padding makes transformers hand SDPA a `(B, 1, S, S)` boolean mask (an expanded view) and,
with grouped k/v, repeat k and v to every head: the Llama block keeps B·S·S·2 B of mask and
2·(512 − 128)·B·S·2 B of k and v more (16 384 + 196 608 = 212 992). BART's encoder keeps
B·S·S of mask, its decoder B·T·S for the cross-attention and nothing for its causal
self-attention.

Only tensors still alive when the forward returns are counted (a graph built and dropped
inside the forward, as DoRA's detached weight norm, saves tensors that are freed).
"""

import gc
import importlib
import os
import shutil
import sys
import tempfile
import weakref

import torch
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                               SequenceParallel, parallelize_module)

MODULES = ["config.py", "model.py", "lora.py", "adapter.py", "adapter_v2.py"]

UTILS_STUB = '''
def map_old_state_dict_weights(state_dict, mapping, prefix):
    for old, new in mapping.items():
        if prefix + old in state_dict:
            state_dict[prefix + new] = state_dict.pop(prefix + old)
    return state_dict

def find_multiple(n, k):
    return n if n % k == 0 else n + k - (n % k)
'''

CONVERT_STUB = '''
import torch
def qkv_reassemble(param, config):
    q_per_kv = config.n_head // config.n_query_groups
    qs, ks, vs = [], [], []
    for chunk in torch.chunk(param, config.n_query_groups):
        q, k, v = torch.split(chunk, [config.head_size * q_per_kv, config.head_size, config.head_size])
        qs.append(q); ks.append(k); vs.append(v)
    return torch.cat((torch.cat(qs), torch.cat(ks), torch.cat(vs)))
'''


def install_litgpt(src: str) -> None:
    """A `litgpt` package of the counted modules with lightning-free stubs."""
    root = tempfile.mkdtemp()
    pkg = os.path.join(root, "litgpt")
    os.makedirs(os.path.join(pkg, "scripts"))
    for f in MODULES:
        shutil.copy(os.path.join(src, f), pkg)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    open(os.path.join(pkg, "scripts", "__init__.py"), "w").close()
    with open(os.path.join(pkg, "utils.py"), "w") as f:
        f.write(UTILS_STUB)
    with open(os.path.join(pkg, "scripts", "convert_hf_checkpoint.py"), "w") as f:
        f.write(CONVERT_STUB)
    sys.path.insert(0, root)


_SDPA = F.scaled_dot_product_attention


class FlashLike(torch.autograd.Function):
    """Saves q, k, v, the output and an fp32 log-sum-exp, as CUDA flash attention does."""

    @staticmethod
    def forward(ctx, q, k, v):
        with torch.no_grad():
            kk, vv = k, v
            if k.shape[1] != q.shape[1]:  # grouped k/v (enable_gqa)
                kk = k.repeat_interleave(q.shape[1] // k.shape[1], 1)
                vv = v.repeat_interleave(q.shape[1] // k.shape[1], 1)
            out = _SDPA(q.float(), kk.float(), vv.float(), is_causal=True).to(q.dtype)
            # CUDA's kernels return (B, H, T, D) as a view of (B, T, H, D) memory.
            out = out.transpose(1, 2).contiguous().transpose(1, 2)
        lse = torch.zeros(q.shape[:-1], dtype=torch.float32)
        ctx.save_for_backward(q, k, v, out, lse)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, _, _ = ctx.saved_tensors
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)


def flash_like(q, k, v, attn_mask=None, dropout_p=0.0, scale=None, is_causal=False, enable_gqa=False, **kw):
    return FlashLike.apply(q, k, v)


class SavedBytes:
    """Bytes of the distinct storages autograd saves inside the `with` block."""

    def __init__(self, exclude):
        self.exclude = exclude
        self.storages = {}

    def pack(self, t):
        # A weak reference: a tensor saved by a graph that is dropped before
        # backward (DoRA's detached weight-norm branch) is not kept, and its
        # storage's address may be reused by a later one.
        if t.layout == torch.sparse_coo:
            # A sparse tensor (SHiRA's update): its indices and values.
            ptr, nbytes = id(t), t._indices().nbytes + t._values().nbytes
        else:
            s = t.untyped_storage()
            ptr, nbytes = s.data_ptr(), s.nbytes()
        if ptr not in self.exclude:
            old = self.storages.get(ptr)
            size = nbytes if old is None or old[0]() is None else max(old[1], nbytes)
            self.storages[ptr] = (weakref.ref(t), size)
        return t

    def __enter__(self):
        self.hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, lambda t: t)
        self.hooks.__enter__()
        return self

    def __exit__(self, *a):
        self.hooks.__exit__(*a)

    def total(self):
        """Bytes of the saved storages still alive (call while the output is held)."""
        return sum(size for ref, size in self.storages.values() if ref() is not None)


def per_block(mod_name, name, n_layer=4, B=2, T=64, dtype=torch.bfloat16, **over):
    """Saved bytes per token per block / hidden for blocks 1..n_layer-1."""
    mod = importlib.import_module("litgpt." + mod_name)
    cfg = mod.Config.from_name(name, n_layer=n_layer, **over)
    model = mod.GPT(cfg)
    model.max_seq_length = T
    model = model.to(dtype)
    if mod_name == "lora":
        mod.mark_only_lora_as_trainable(model)
    elif mod_name == "adapter":
        mod.mark_only_adapter_as_trainable(model)
    elif mod_name == "adapter_v2":
        mod.mark_only_adapter_v2_as_trainable(model)
    fixed = {p.untyped_storage().data_ptr() for p in model.parameters()}
    fixed |= {b.untyped_storage().data_ptr() for b in model.buffers()}
    idx = torch.randint(0, cfg.padded_vocab_size, (B, T))
    cos, sin = model.cos[:T].unsqueeze(0), model.sin[:T].unsqueeze(0)
    totals = []
    for n in range(1, n_layer + 1):
        x0 = model.transformer.wte(idx).detach().requires_grad_(True)
        with SavedBytes(fixed | {x0.untyped_storage().data_ptr()}) as c:
            x = x0
            for block in model.transformer.h[:n]:
                x = block(x, cos, sin, None, None)
        totals.append(c.total())
    return [(b - a) / (B * T * cfg.n_embd) for a, b in zip(totals, totals[1:])]


# The small Llama-shaped config the method counts use: hidden 1024, 16 heads over 4 kv
# heads, MLP 2816, a 1000-token vocabulary.
SMALL_LLAMA = dict(model_type="llama", hidden_size=1024, intermediate_size=2816, num_attention_heads=16,
                   num_key_value_heads=4, vocab_size=1000, pad_token_id=0, bos_token_id=1, eos_token_id=2)


def small_llama(n, ckpt=False, comp=False):
    """The small bf16 Llama with `n` blocks in training mode, optionally with non-reentrant
    checkpointing and whole-model torch.compile: (model, the callable to run, config)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(**dict(SMALL_LLAMA, num_hidden_layers=n))
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    model.train()
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model, (torch.compile(model) if comp else model), cfg


def per_block_transformers(config, B=2, T=64, dtype=torch.bfloat16, lora=None, attn="sdpa", peft_config=None,
                           after=None, raw=False, autocast_adapter_dtype=True, buffers=None):
    """The same count for a transformers model built from `config` (random weights), full
    fine-tune or PEFT LoRA (`lora`: LoraConfig arguments; PEFT keeps fp32 adapters over a
    16-bit base), `use_cache=False` as training scripts set (a KV cache in the training
    forward copies v, which frees a fused qkv output)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    totals = []
    for n in ((config["num_hidden_layers"],) if raw else (2, 3)):
        cfg = AutoConfig.for_model(**dict(config, num_hidden_layers=n))
        cfg._attn_implementation = attn
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
        if lora is not None:
            from peft import LoraConfig, get_peft_model

            model = get_peft_model(model, LoraConfig(**lora))
        if peft_config is not None:
            from peft import get_peft_model

            model = get_peft_model(model, peft_config(), autocast_adapter_dtype=autocast_adapter_dtype)
            if after is not None:
                after(model)
        model.train()
        fixed = {p.untyped_storage().data_ptr() for p in model.parameters()}
        fixed |= {b.untyped_storage().data_ptr() for b in model.buffers()}
        if buffers is not None:
            buffers[n] = sum(b.numel() for name, b in model.named_buffers() if "rotary" not in name)
        idx = torch.randint(0, cfg.vocab_size, (B, T))
        with SavedBytes(fixed) as c:
            out = model(input_ids=idx, use_cache=False)
        totals.append(c.total())
        del out
    if raw:
        return totals[0]
    return (totals[1] - totals[0]) / (B * T * config["hidden_size"])


def transformers_main():
    F.scaled_dot_product_attention = flash_like
    import transformers

    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    small = dict(hidden_size=1024, intermediate_size=2816, num_attention_heads=16,
                 num_key_value_heads=4, vocab_size=1000, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    for name, config in [
        ("llama (GQA 16/4)", dict(small, model_type="llama")),
        ("llama (MHA)", dict(small, model_type="llama", num_key_value_heads=16)),
        ("qwen2 (GQA)", dict(small, model_type="qwen2")),
        ("mistral (GQA)", dict(small, model_type="mistral")),
        ("phi3 (fused qkv, MHA)", dict(small, model_type="phi3", num_key_value_heads=16)),
        ("gpt_neox (parallel)", dict(model_type="gpt_neox", hidden_size=1024, intermediate_size=4096,
                                     num_attention_heads=16, vocab_size=1000)),
        ("falcon (multi-query)", dict(model_type="falcon", hidden_size=1024, num_attention_heads=16,
                                      vocab_size=1000, new_decoder_architecture=False, multi_query=True,
                                      parallel_attn=True)),
    ]:
        print(f"full {name:24s} {per_block_transformers(config):6.2f}")
    mixtral = dict(small, model_type="mixtral", num_local_experts=8, num_experts_per_tok=2)
    print(f"full {'mixtral (8 experts, top 2)':24s} {per_block_transformers(mixtral):6.2f}")
    gemma2 = dict(small, model_type="gemma2", num_attention_heads=8, head_dim=128)
    print(f"full {'gemma2 (eager)':24s} {per_block_transformers(gemma2, attn='eager'):6.2f}")
    llama = dict(small, model_type="llama")
    qv = dict(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"])
    every = dict(r=16, lora_alpha=32, target_modules="all-linear")
    for name, lora in [
        ("q+v, dropout 0.05", dict(qv, lora_dropout=0.05)),
        ("q+v, no dropout", dict(qv, lora_dropout=0.0)),
        ("all-linear, dropout 0.05", dict(every, lora_dropout=0.05)),
        ("all-linear, no dropout", dict(every, lora_dropout=0.0)),
    ]:
        print(f"peft llama {name:24s} {per_block_transformers(llama, lora=lora):6.2f}")


def per_token_and_constant(config, make, after=None, **kw):
    """One block's saved bytes (a 3-block minus a 2-block model, PEFT config from `make`) at
    32 and 64 tokens, split into bytes per token / hidden and token-independent bytes."""
    blocks = {}
    for T in (32, 64):
        totals = [per_block_transformers(dict(config, num_hidden_layers=n), B=1, T=T, peft_config=make,
                                         after=after, raw=True, **kw) for n in (2, 3)]
        blocks[T] = totals[1] - totals[0]
    per_token = (blocks[64] - blocks[32]) / 32
    return per_token / config["hidden_size"], blocks[32] - 32 * per_token


def peft_main():
    """PEFT variants over a Llama-3.2-3B-shaped bf16 model (fp32 adapters), r 32 on q
    and v: per token per block (hidden units) and per block (MB, token-independent),
    from 2- and 3-block models at 32 and 64 tokens. LoRA-FA is LoRA with every
    `lora_A` frozen, as `peft.optimizers.create_lorafa_optimizer` leaves it."""
    import peft

    F.scaled_dot_product_attention = flash_like
    config = dict(model_type="llama", hidden_size=3072, intermediate_size=8192, num_attention_heads=24,
                  num_key_value_heads=8, vocab_size=1000, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    qv = dict(r=32, lora_alpha=64, target_modules=["q_proj", "v_proj"])

    def freeze_a(model):
        for n, p in model.named_parameters():
            if "lora_A" in n:
                p.requires_grad_(False)

    print(f"torch {torch.__version__}, peft {peft.__version__}")
    for name, make, after in [
        ("lora, no dropout", lambda: peft.LoraConfig(**qv), None),
        ("lora, dropout 0.05", lambda: peft.LoraConfig(**qv, lora_dropout=0.05), None),
        ("lora-fa, no dropout", lambda: peft.LoraConfig(**qv), freeze_a),
        ("lora-fa, dropout 0.05", lambda: peft.LoraConfig(**qv, lora_dropout=0.05), freeze_a),
        ("dora, no dropout", lambda: peft.LoraConfig(**qv, use_dora=True), None),
        ("dora, dropout 0.05", lambda: peft.LoraConfig(**qv, use_dora=True, lora_dropout=0.05), None),
        ("ln tuning", lambda: peft.LNTuningConfig(task_type="CAUSAL_LM"), None),
        ("boft block 4 (q, v)", lambda: peft.BOFTConfig(boft_block_size=4, target_modules=["q_proj", "v_proj"]), None),
    ]:
        if len(sys.argv) > 2 and sys.argv[2] not in name:
            continue
        per_token, const = per_token_and_constant(config, make, after)
        print(f"peft {name:24s} {per_token:6.2f} per token, {const / 1e6:6.2f} MB per block")


def methods_main():
    """Other PEFT methods on q and v of the small bf16 Llama (hidden 1024, 16 heads / 4 kv,
    MLP 2816), PEFT's default settings: per token per block / hidden and MB per block."""
    import peft

    F.scaled_dot_product_attention = flash_like
    config = SMALL_LLAMA
    qv = ["q_proj", "v_proj"]
    print(f"torch {torch.__version__}, peft {peft.__version__}")
    for name, make in [
        ("tinylora (frozen base)", lambda: peft.TinyLoraConfig(target_modules=qv)),
        ("lora r8, no dropout", lambda: peft.LoraConfig(r=8, target_modules=qv)),
        ("adalora", lambda: peft.AdaLoraConfig(r=8, target_modules=qv, total_step=100)),
        ("loha", lambda: peft.LoHaConfig(r=8, target_modules=qv)),
        ("lokr", lambda: peft.LoKrConfig(r=8, target_modules=qv)),
        ("vera", lambda: peft.VeraConfig(r=256, target_modules=qv)),
        ("fourierft", lambda: peft.FourierFTConfig(n_frequency=1000, target_modules=qv)),
        ("waveft", lambda: peft.WaveFTConfig(n_frequency=1000, target_modules=qv)),
        ("randlora", lambda: peft.RandLoraConfig(r=32, target_modules=qv)),
        ("oft", lambda: peft.OFTConfig(r=0, oft_block_size=32, target_modules=qv)),
        ("hra", lambda: peft.HRAConfig(r=8, target_modules=qv)),
        ("c3a", lambda: peft.C3AConfig(block_size=256, target_modules=qv)),
        ("road", lambda: peft.RoadConfig(target_modules=qv)),
        ("delora", lambda: peft.DeloraConfig(r=8, target_modules=qv)),
        ("gralora", lambda: peft.GraloraConfig(r=32, target_modules=qv)),
        ("miss", lambda: peft.MissConfig(r=64, target_modules=qv)),
        ("shira", lambda: peft.ShiraConfig(r=32, target_modules=qv)),
        ("vblora", lambda: peft.VBLoRAConfig(r=4, num_vectors=256, vector_length=256, target_modules=qv)),
        ("trainable tokens (10)", lambda: peft.TrainableTokensConfig(target_modules=["embed_tokens"],
                                                                     token_indices=list(range(10)))),
        ("prefix tuning (20)", lambda: peft.PrefixTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=20)),
        ("p-tuning (20)", lambda: peft.PromptEncoderConfig(task_type="CAUSAL_LM", num_virtual_tokens=20,
                                                           encoder_hidden_size=128)),
    ]:
        if len(sys.argv) > 2 and sys.argv[2] not in name:
            continue
        per_token, const = per_token_and_constant(config, make)
        print(f"peft {name:24s} {per_token:6.2f} per token, {const / 1e6:6.2f} MB per block")


def osf_main():
    """PEFT's OSF on every linear of the small bf16 Llama (hidden 1024, 16 heads / 4 kv, MLP
    2816) with bf16 adapters (`autocast_adapter_dtype=False`, as PEFT's MetaMathQA run),
    training the bottom 32 singular directions of each matrix: per token per block / hidden,
    MB per block, and the frozen OSF buffers (elements per block) and trainable parameters."""
    import peft

    F.scaled_dot_product_attention = flash_like
    config = SMALL_LLAMA
    linear = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    # effective_rank is the frozen (top) rank: min(out, in) - 32 trains 32 directions
    # (k and v are 1024 -> 256).
    def make():
        return peft.OSFConfig(target_modules=linear, effective_rank=1024 - 32,
                              rank_pattern={"k_proj": 256 - 32, "v_proj": 256 - 32})

    # `--osf fp32`: PEFT's default fp32 adapters (autocast_adapter_dtype=True) instead.
    autocast = len(sys.argv) > 2 and sys.argv[2] == "fp32"
    print(f"torch {torch.__version__}, peft {peft.__version__}, {'fp32' if autocast else 'bf16'} adapters")
    buffers = {}
    per_token, const = per_token_and_constant(config, make, autocast_adapter_dtype=autocast, buffers=buffers)
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.for_model(**dict(config, num_hidden_layers=1))
    model = peft.get_peft_model(AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16), make(),
                                autocast_adapter_dtype=autocast)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"osf all-linear, 32 trained directions: {per_token:6.2f} per token, {const / 1e6:6.2f} MB per block;"
          f" buffers {buffers[3] - buffers[2]} elements per block; trainable {trainable} per block")


def compile_main():
    """Whole-model torch.compile (inductor, CPU) with and without non-reentrant gradient
    checkpointing on the small bf16 Llama (B=2, T=64, labels given so the loss is in the
    graph): saved bytes per token per block / hidden at the end of the forward."""
    config = SMALL_LLAMA
    print(f"torch {torch.__version__}")

    def saved(n, ckpt, comp, B=2, T=64):
        model, fwd, cfg = small_llama(n, ckpt, comp)
        fixed = {p.untyped_storage().data_ptr() for p in model.parameters()}
        fixed |= {b.untyped_storage().data_ptr() for b in model.buffers()}
        idx = torch.randint(0, cfg.vocab_size, (B, T))
        if comp:  # compile outside the count
            out = fwd(input_ids=idx, labels=idx, use_cache=False)
            out.loss.backward()
            del out
        with SavedBytes(fixed) as c:
            out = fwd(input_ids=idx, labels=idx, use_cache=False)
        total = c.total()
        del out
        return total

    for ckpt in (False, True):
        for comp in (False, True):
            per_block = (saved(3, ckpt, comp) - saved(2, ckpt, comp)) / (2 * 64 * config["hidden_size"])
            print(f"checkpointing {str(ckpt):5s} compile {str(comp):5s} {per_block:6.2f}")


def compile_backward_main():
    """The peak of CPU allocations over one forward and backward (torch.profiler,
    profile_memory=True) of the small bf16 Llama with 2, 4 and 6 blocks at 2 x 2048 tokens,
    with non-reentrant checkpointing, eager and compiled, and without checkpointing:
    how the peak grows per block."""
    from torch.profiler import ProfilerActivity, profile


    def peak(n, ckpt, comp, B=2, T=2048):
        model, fwd, cfg = small_llama(n, ckpt, comp)
        idx = torch.randint(0, cfg.vocab_size, (B, T))
        for _ in range(2):  # compile and warm up outside the profile
            fwd(input_ids=idx, labels=idx, use_cache=False).loss.backward()
            model.zero_grad(set_to_none=True)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            loss = fwd(input_ids=idx, labels=idx, use_cache=False).loss
            loss.backward()
            del loss
        events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                        if e.name() == "[memory]")
        live = top = 0
        for _, nbytes in events:
            live += nbytes
            top = max(top, live)
        return top

    print(f"torch {torch.__version__}")
    for ckpt, comp in [(True, False), (True, True), (False, False)]:
        p = {n: peak(n, ckpt, comp) for n in (2, 4, 6)}
        print(f"checkpointing {str(ckpt):5s} compile {str(comp):5s} peak MB "
              f"{[round(p[n] / 1e6, 1) for n in (2, 4, 6)]}, per block {(p[6] - p[2]) / 4 / 1e6:.2f} MB")


def scratch_main():
    """LLMs-from-scratch's LayerNorm and GELU (ch04, written as tensor ops) against
    F.layer_norm and the fused tanh GELU: bytes per element kept beyond the input."""

    class LayerNorm(torch.nn.Module):
        def __init__(self, emb_dim):
            super().__init__()
            self.eps = 1e-5
            self.scale = torch.nn.Parameter(torch.ones(emb_dim))
            self.shift = torch.nn.Parameter(torch.zeros(emb_dim))

        def forward(self, x):
            mean = x.mean(dim=-1, keepdim=True)
            var = x.var(dim=-1, keepdim=True, unbiased=False)
            norm_x = (x - mean) / torch.sqrt(var + self.eps)
            return self.scale * norm_x + self.shift

    class GELU(torch.nn.Module):
        def forward(self, x):
            return 0.5 * x * (1 + torch.tanh(torch.sqrt(torch.tensor(2.0 / torch.pi)) * (x + 0.044715 * torch.pow(x, 3))))

    H, N = 768, 4096
    for dtype in (torch.float32, torch.bfloat16):
        for name, mod in [("custom LayerNorm", LayerNorm(H)), ("F.layer_norm", torch.nn.LayerNorm(H)),
                          ("custom GELU", GELU()), ("fused tanh GELU", torch.nn.GELU(approximate="tanh"))]:
            mod = mod.to(dtype)
            for train in (True, False):
                for p in mod.parameters():
                    p.requires_grad_(train)
                fixed = {p.untyped_storage().data_ptr() for p in mod.parameters()}
                x = torch.randn(N, H, dtype=dtype).requires_grad_(True)
                fixed.add(x.untyped_storage().data_ptr())
                with SavedBytes(fixed) as c:
                    y = mod(x)
                print(f"{str(dtype):15s} {name:17s} {'trained' if train else 'frozen':8s} {c.total() / (N * H):6.2f}")
                del y


class EfficientLike(torch.autograd.Function):
    """Saves what CUDA's memory-efficient SDPA kernel saves when it gets a float mask
    (`_scaled_dot_product_efficient_attention`: q, k, v, `attn_bias`, the output in CUDA's
    (B, T, H, D) layout and an fp32 log-sum-exp; `tools/autograd/derivatives.yaml`)."""

    @staticmethod
    def forward(ctx, q, k, v, bias):
        with torch.no_grad():
            out = _SDPA(q.float(), k.float(), v.float(),
                        attn_mask=None if bias is None else bias.float()).to(q.dtype)
            out = out.transpose(1, 2).contiguous().transpose(1, 2)
        lse = torch.zeros(q.shape[:-1], dtype=torch.float32)
        ctx.save_for_backward(q, k, v, bias, out, lse)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, bias, _, _ = ctx.saved_tensors
        return (torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v),
                None if bias is None else torch.zeros_like(bias))


def efficient_like(q, k, v, attn_mask=None, dropout_p=0.0, scale=None, is_causal=False, enable_gqa=False, **kw):
    return EfficientLike.apply(q, k, v, attn_mask)


def saved_by_forward(model, **inputs):
    """Bytes autograd saves in one training-mode forward of `model` (`use_cache=False`),
    its parameters left out."""
    model.train()
    fixed = {p.untyped_storage().data_ptr() for p in model.parameters()}
    with SavedBytes(fixed) as c:
        out = model(**inputs, use_cache=False)
        kept = c.total()
    del out
    return kept


def padding_mask(B, S, pad):
    """An `attention_mask` of B rows of S tokens; with `pad`, the first row's second half
    is padding."""
    mask = torch.ones(B, S, dtype=torch.long)
    if pad:
        mask[0, S // 2:] = 0
    return mask


def saved_by_seq2seq(cls, cfg, dtype, B, S, T, pad, first_id):
    """What an encoder–decoder of class `cls` built from `cfg` (in `dtype`, under SDPA) keeps for a batch of B
    sources of S tokens and targets of T, token ids from `first_id` up (below it the special ones), the first
    source row's second half padding when `pad`."""
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = cls(cfg).to(dtype)
    return saved_by_forward(model, input_ids=torch.randint(first_id, 1000, (B, S)),
                            attention_mask=padding_mask(B, S, pad),
                            labels=torch.randint(first_id, 1000, (B, T)))


def t5_blocks(dtype, pad, S, T, B=2):
    """Saved bytes of one T5 encoder block and one decoder block (3 against 2 of each
    stack; transformers' T5ForConditionalGeneration, v1.1 shape: hidden 512, 8 heads of
    64, gated-GELU MLP 1024, no dropout), source S and target T, SDPA as CUDA runs it."""
    from transformers import T5Config, T5ForConditionalGeneration

    def total(enc, dec):
        cfg = T5Config(d_model=512, d_kv=64, num_heads=8, d_ff=1024, num_layers=enc,
                       num_decoder_layers=dec, vocab_size=1000, feed_forward_proj="gated-gelu",
                       dropout_rate=0.0, tie_word_embeddings=False, decoder_start_token_id=0,
                       pad_token_id=0)
        return saved_by_seq2seq(T5ForConditionalGeneration, cfg, dtype, B, S, T, pad, first_id=1)

    base = total(2, 2)
    return total(3, 2) - base, total(2, 3) - base


def t5_main():
    F.scaled_dot_product_attention = efficient_like
    import transformers

    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    for dtype in (torch.float32, torch.bfloat16):
        for pad in (True, False):
            for S, T in [(64, 16), (128, 16), (64, 32)]:
                enc, dec = t5_blocks(dtype, pad, S, T)
                print(f"t5 {str(dtype):14s} padded {pad!s:5s} source {S:3d} target {T:2d}: "
                      f"encoder block {enc:9d} B, decoder block {dec:9d} B", flush=True)


def padded_main():
    """Bytes a block keeps with and without padding in the batch, under the CPU's own SDPA
    (which, like CUDA's memory-efficient kernel, saves the mask it is given): a small
    bf16 Llama (hidden 512, 8 heads over 2 kv heads, MLP 1024) and BART (hidden 512, 8
    heads, MLP 1024, no dropout), batch 2, 64 tokens (BART: 64 source, 16 target), the
    first row's second half padding."""
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, BartConfig, BartForConditionalGeneration

    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    B, S, T = 2, 64, 16

    def llama(n, pad):
        cfg = AutoConfig.for_model(model_type="llama", hidden_size=512, intermediate_size=1024,
                                   num_attention_heads=8, num_key_value_heads=2, vocab_size=1000,
                                   num_hidden_layers=n, pad_token_id=0)
        cfg._attn_implementation = "sdpa"
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        return saved_by_forward(model, input_ids=torch.randint(1, 1000, (B, S)),
                                attention_mask=padding_mask(B, S, pad))

    def bart(enc, dec, pad, dtype):
        cfg = BartConfig(d_model=512, encoder_attention_heads=8, decoder_attention_heads=8,
                         encoder_ffn_dim=1024, decoder_ffn_dim=1024, encoder_layers=enc,
                         decoder_layers=dec, vocab_size=1000, dropout=0.0, attention_dropout=0.0,
                         activation_dropout=0.0, max_position_embeddings=128)
        return saved_by_seq2seq(BartForConditionalGeneration, cfg, dtype, B, S, T, pad, first_id=3)

    for pad in (False, True):
        print(f"llama bf16 padded {pad!s:5s}: block {llama(3, pad) - llama(2, pad)} B", flush=True)
    for dtype in (torch.float32, torch.bfloat16):
        for pad in (False, True):
            base = bart(2, 2, pad, dtype)
            print(f"bart {str(dtype):14s} padded {pad!s:5s}: encoder block {bart(3, 2, pad, dtype) - base} B, "
                  f"decoder block {bart(2, 3, pad, dtype) - base} B", flush=True)


# --tp: PyTorch's DTensor tensor parallelism (torchtitan's layer plan: the sequence-sharded norm output gathered to
# `Replicate` before attention and the MLP, q/k/v and w1/w3 column-wise, wo and w2 row-wise back to the shard).
TP_H, TP_NH, TP_KV, TP_FF, TP_B, TP_T = 1024, 16, 8, 3584, 2, 64
TP_HD = TP_H // TP_NH


def rope_cache(n):
    freqs = 1.0 / (500000 ** (torch.arange(0, TP_HD, 2)[: TP_HD // 2].float() / TP_HD))
    return torch.polar(torch.ones(n, TP_HD // 2), torch.outer(torch.arange(n).float(), freqs))


def apply_rotary_emb(xq, xk, cis):  # torchtitan ComplexRoPE.apply_rotary_emb
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    cis = cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    return torch.view_as_real(xq_ * cis).flatten(3).type_as(xq), torch.view_as_real(xk_ * cis).flatten(3).type_as(xk)


class TpAttention(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.wq = torch.nn.Linear(TP_H, TP_NH * TP_HD, bias=False); s.wk = torch.nn.Linear(TP_H, TP_KV * TP_HD, bias=False)
        s.wv = torch.nn.Linear(TP_H, TP_KV * TP_HD, bias=False); s.wo = torch.nn.Linear(TP_NH * TP_HD, TP_H, bias=False)
    def forward(s, x, cis):
        bs, sl, _ = x.shape
        q, k, v = s.wq(x).view(bs, sl, -1, TP_HD), s.wk(x).view(bs, sl, -1, TP_HD), s.wv(x).view(bs, sl, -1, TP_HD)
        q, k = apply_rotary_emb(q, k, cis)
        rep = q.shape[2] // k.shape[2]
        k = k.repeat_interleave(rep, dim=2); v = v.repeat_interleave(rep, dim=2)  # torchtitan 0.1 repeat_kv
        out = flash_like(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return s.wo(out.transpose(1, 2).contiguous().view(bs, sl, -1))


class TpFusedAttention(torch.nn.Module):
    """torchtitan 0.3.0's attention: `FusedQKVLinear` (one wqkv, its output viewed as kv groups of
    heads-per-kv q heads, k and v, split and made contiguous) and SDPA with `enable_gqa`."""
    def __init__(s):
        super().__init__()
        s.wqkv = torch.nn.Linear(TP_H, (TP_NH + 2 * TP_KV) * TP_HD, bias=False)
        s.wo = torch.nn.Linear(TP_NH * TP_HD, TP_H, bias=False)
    def forward(s, x, cis):
        bs, sl, _ = x.shape
        hpk = TP_NH // TP_KV
        qkv = s.wqkv(x).view(bs, sl, -1, hpk + 2, TP_HD)
        q, k, v = (t.reshape(bs, sl, -1, TP_HD).contiguous() for t in torch.split(qkv, [hpk, 1, 1], dim=-2))
        q, k = apply_rotary_emb(q, k, cis)
        out = flash_like(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True)
        return s.wo(out.transpose(1, 2).contiguous().view(bs, sl, -1))


class TpFFN(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.w1 = torch.nn.Linear(TP_H, TP_FF, bias=False); s.w2 = torch.nn.Linear(TP_FF, TP_H, bias=False); s.w3 = torch.nn.Linear(TP_H, TP_FF, bias=False)
    def forward(s, x): return s.w2(F.silu(s.w1(x)) * s.w3(x))


class TpBlock(torch.nn.Module):
    def __init__(s, fused=False):  # fused: 0.3.0's attention (TpFusedAttention), else 0.1's
        super().__init__()
        s.attention_norm = torch.nn.RMSNorm(TP_H, eps=1e-5); s.ffn_norm = torch.nn.RMSNorm(TP_H, eps=1e-5)
        s.attention = TpFusedAttention() if fused else TpAttention(); s.feed_forward = TpFFN()
    def forward(s, x, cis):
        h = x + s.attention(s.attention_norm(x), cis)
        return h + s.feed_forward(s.ffn_norm(h))


def tp_plan(sp, fused=False):  # torchtitan 0.1/0.2 apply_tp's layer plan (0.3.0 sharding configs: the same layouts)
    seq = Shard(1) if sp else Replicate()
    p = {"attention": PrepareModuleInput(input_layouts=(seq, None), desired_input_layouts=(Replicate(), None)),
         **({"attention.wqkv": ColwiseParallel()} if fused else
            {"attention.wq": ColwiseParallel(), "attention.wk": ColwiseParallel(), "attention.wv": ColwiseParallel()}),
         "attention.wo": RowwiseParallel(output_layouts=seq),
         "feed_forward": PrepareModuleInput(input_layouts=(seq,), desired_input_layouts=(Replicate(),)),
         "feed_forward.w1": ColwiseParallel(), "feed_forward.w2": RowwiseParallel(output_layouts=seq),
         "feed_forward.w3": ColwiseParallel()}
    if sp:
        p["attention_norm"] = SequenceParallel(); p["ffn_norm"] = SequenceParallel()
    return p


def tp_local(t):
    """A DTensor's local shard (what this rank's allocator holds); any other tensor as it is."""
    return t._local_tensor if isinstance(t, DTensor) else t


def tp_input(tp, sp, dtype=torch.bfloat16):
    """The block input one rank holds: the sequence shard under sequence parallelism, else all of it."""
    return torch.randn(TP_B, TP_T // tp if sp and tp > 1 else TP_T, TP_H, dtype=dtype, requires_grad=True)


class TpSavedBytes(SavedBytes):
    """`SavedBytes` over the local shards of the DTensors autograd saves."""

    def pack(self, t):
        super().pack(tp_local(t))
        return t


def tp_blocks(n, tp, sp, dtype=torch.bfloat16, fused=False):
    """`n` TpBlocks in `dtype`, under `tp_plan(sp)` over a TP mesh of `tp` ranks when `tp` > 1."""
    torch.manual_seed(0)
    blocks = [TpBlock(fused).to(dtype) for _ in range(n)]
    if tp > 1:
        mesh = init_device_mesh("cpu", (tp,))
        for b in blocks:
            parallelize_module(b, mesh, tp_plan(sp, fused))
    return blocks


def saved_by_layers(layers, x, params, saver=SavedBytes):
    """Bytes the callables `layers`, run in turn from `x`, keep for backward without checkpointing; `x` and
    `params` (weights, buffers: their local shards for DTensors) are not counted."""
    fixed = {tp_local(p).untyped_storage().data_ptr() for p in params} | {x.untyped_storage().data_ptr()}
    with saver(fixed) as c:
        for f in layers:
            x = f(x)
        return c.total()


def kept_by_checkpointed(layers, x, mode):
    """Bytes the callables `layers`, each checkpointed (non-reentrant) and run in turn from `x`, keep after
    forward under torchtitan's per-op policy (`op`) or full checkpointing: the storages alive beyond those
    before, the output not counted. The policy's matmul count restarts in every layer."""
    from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

    kw = {"context_fn": lambda: create_selective_checkpoint_contexts(tp_policy())} if mode == "op" else {}
    gc.collect()
    before = set(tp_live_storages())
    for f in layers:
        x = checkpoint(f, x, use_reentrant=False, **kw)
    gc.collect()
    return sum(tp_live_storages(before).values()) - tp_local(x).untyped_storage().nbytes()


def params_of(modules):
    return [p for m in modules for p in list(m.parameters()) + list(m.buffers())]


def tp_kept(n, tp, sp, dtype=torch.bfloat16, fused=False):
    """Bytes `n` blocks keep for backward without checkpointing."""
    blocks = tp_blocks(n, tp, sp, dtype, fused)
    cis = rope_cache(TP_T)
    layers = [lambda y, b=b: b(y, cis) for b in blocks]
    return saved_by_layers(layers, tp_input(tp, sp, dtype), params_of(blocks) + [cis], TpSavedBytes)


def tp_head_kept(tp, sp, vocab=8192, dtype=torch.bfloat16):
    """Bytes torchtitan's final norm and LM head keep for backward (its plan: the norm sequence-parallel, the
    head column-parallel over the vocabulary from the gathered norm output, its output left sharded for the
    loss-parallel cross-entropy), the logits themselves not counted."""
    torch.manual_seed(0)
    head = torch.nn.ModuleDict({"norm": torch.nn.RMSNorm(TP_H, eps=1e-5),
                                "output": torch.nn.Linear(TP_H, vocab, bias=False)}).to(dtype)
    if tp > 1:
        seq = Shard(1) if sp else Replicate()
        plan = {"output": ColwiseParallel(input_layouts=seq, output_layouts=Shard(-1), use_local_output=False)}
        if sp:
            plan["norm"] = SequenceParallel()
        parallelize_module(head, init_device_mesh("cpu", (tp,)), plan)
    layers = [lambda y: head["output"](head["norm"](y))]
    return saved_by_layers(layers, tp_input(tp, sp, dtype), list(head.parameters()), TpSavedBytes)


def tp_policy():
    """torchtitan's per-op selective checkpointing policy (0.3.0 `SelectiveAC._wrap_block`): save what is on
    its save list (compute-intensive ops, SDPA, `reduce_scatter_tensor`, ...) except every second matmul."""
    from torch.utils.checkpoint import CheckpointPolicy
    from torchtitan.distributed.activation_checkpoint import _get_default_save_ops

    save, mms = _get_default_save_ops(), (torch.ops.aten.mm.default, torch.ops.aten.linear.default)
    meta = {"forward_mm_count": 0, "recompute_mm_count": 0}

    def policy(ctx, func, *args, **kwargs):
        key = ("recompute" if ctx.is_recompute else "forward") + "_mm_count"
        if func in mms:
            meta[key] += 1
        if func in save:
            if func in mms and meta[key] % 2 == 0:
                return CheckpointPolicy.PREFER_RECOMPUTE
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return policy


def tp_live_storages(exclude=()):
    """Bytes of the CPU storages Python reaches (checkpointing keeps what it saves in Python objects)."""
    seen = {}
    for o in gc.get_objects():
        if isinstance(o, torch.Tensor) and not isinstance(o, DTensor) and o.device.type == "cpu":
            s = o.untyped_storage()
            if s.data_ptr() not in exclude and s.nbytes() > 0:
                seen[s.data_ptr()] = s.nbytes()
    return seen


def tp_checkpointed(n, tp, sp, mode, dtype=torch.bfloat16, fused=False):
    """What `n` blocks keep after forward under torchtitan's `op` selective or full checkpointing."""
    blocks = tp_blocks(n, tp, sp, dtype, fused)
    cis = rope_cache(TP_T)
    return kept_by_checkpointed([lambda y, b=b: b(y, cis) for b in blocks], tp_input(tp, sp, dtype), mode)


def tp_per_block(count, *args, **kw):
    """Bytes per token per block / hidden: what three blocks keep (`count(3, ...)`) less what two keep."""
    return (count(3, *args, **kw) - count(2, *args, **kw)) / (TP_B * TP_T * TP_H)


def tp_main():
    """A torchtitan Llama block (RMSNorm, wq/wk/wv/wo, its complex RoPE, SDPA as the flash kernel saves, SwiGLU)
    under PyTorch's DTensor tensor parallelism as torchtitan's plan applies it, on rank 0 of a fake process
    group on the CPU: bytes it keeps per token per block / hidden, with and without sequence parallelism."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=8)
    print(f"torch {torch.__version__}; hidden {TP_H}, heads {TP_NH} over {TP_KV} kv, FFN {TP_FF}, "
          f"B {TP_B}, T {TP_T}, bf16")
    for tp, sp in [(1, False), (2, False), (2, True), (4, False), (4, True), (8, True)]:
        per_block = tp_per_block(tp_kept, tp, sp)
        print(f"TP {tp} SP {sp!s:5s}: {per_block:6.2f} bytes per token per block / hidden", flush=True)
    for tp, sp in [(1, False), (4, False), (4, True)]:
        print(f"final norm and LM head, TP {tp} SP {sp!s:5s}: "
              f"{tp_head_kept(tp, sp) / (TP_B * TP_T * TP_H):6.2f} bytes per token / hidden", flush=True)
    for mode in ("op", "full"):
        for tp, sp in [(1, False), (4, False), (4, True)]:
            per_block = tp_per_block(tp_checkpointed, tp, sp, mode)
            print(f"{mode} checkpointing, TP {tp} SP {sp!s:5s}: {per_block:6.2f} bytes per token per block / hidden",
                  flush=True)
    # 0.3.0's attention: one fused wqkv (colwise under TP: each rank's share of the kv groups) and
    # `enable_gqa` instead of 0.1-0.2's separate projections.
    for tp, sp in [(1, False), (4, True)]:
        per_block = tp_per_block(tp_kept, tp, sp, fused=True)
        print(f"0.3.0 fused qkv, TP {tp} SP {sp!s:5s}: {per_block:6.2f} bytes per token per block / hidden",
              flush=True)
        per_block = tp_per_block(tp_checkpointed, tp, sp, "op", fused=True)
        print(f"0.3.0 fused qkv, op checkpointing, TP {tp} SP {sp!s:5s}: {per_block:6.2f} bytes per token per "
              f"block / hidden", flush=True)


# --moe: torchtitan 0.3.0's MoE layer (router, token dispatcher, grouped-mm experts, shared experts), from its
# wheel, on the CPU: what it keeps per token, by routed token, and under torchtitan's per-op and full checkpointing.
def moe_layers(flavor, dtype=torch.bfloat16):
    """The MoE modules of torchtitan 0.3.0's `flavor` ("qwen3" debugmodel_moe: 64 experts, top 8, no shared
    experts; "deepseek_v3" debugmodel: 8 experts, top 3, two shared experts), hidden 256, expert FFN 768 / 256,
    initialised and cast to `dtype`."""
    torch.manual_seed(0)
    if flavor == "qwen3":
        from torchtitan.models.qwen3 import model_registry
        model = model_registry("debugmodel_moe", attn_backend="flex").model.build()
    else:
        from torchtitan.models.deepseek_v3 import model_registry
        model = model_registry("debugmodel", attn_backend="flex").model.build()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.02)
    model = model.to(dtype)
    return [b.moe for b in model.layers.values() if getattr(b, "moe_enabled", False)]


def moe_set_top_k(mods, k):
    for m in mods:
        m.router.top_k = k
        m.routed_experts.token_dispatcher.top_k = k


MOE_B, MOE_T = 2, 64


def moe_input(mods, dtype=torch.bfloat16):
    return torch.randn(MOE_B, MOE_T, mods[0].router.gate.weight.shape[1], dtype=dtype, requires_grad=True)


def moe_kept(mods, n, mode, dtype=torch.bfloat16):
    """What `n` MoE layers (each `x + moe(x)`) keep: for backward without checkpointing (`none`), or after
    forward under torchtitan's per-op (`op`) or full checkpointing. The policy's matmul count starts at zero, as
    it does after a block's attention (an even number of mms: fused wqkv and wo in 0.3.0, wq/wk/wv/wo in
    0.1-0.2)."""
    layers = [lambda y, m=m: y + m(y) for m in mods[:n]]
    if mode == "none":
        return saved_by_layers(layers, moe_input(mods, dtype), params_of(mods[:n]))
    return kept_by_checkpointed(layers, moe_input(mods, dtype), mode)


def moe_main():
    """Bytes per token per MoE layer / hidden: kept without checkpointing (and their growth per routed token,
    from top-k 4 to 8), under per-op and full checkpointing. The CPU leaves autocast off, so the router's gate
    runs in bf16 here; on CUDA 0.3.0 runs it under fp32 autocast (`TokenChoiceTopKRouter.forward`)."""
    print(f"torch {torch.__version__}; B {MOE_B}, T {MOE_T}, bf16")
    for flavor in ("qwen3", "deepseek_v3"):
        mods = moe_layers(flavor)
        D = mods[0].router.gate.weight.shape[1]
        tok = MOE_B * MOE_T * D
        E, K = mods[0].router.num_experts, mods[0].router.top_k
        F_ = mods[0].routed_experts.inner_experts.w1_EFD.shape[1]
        shared = mods[0].shared_experts.w1.weight.shape[0] if mods[0].shared_experts is not None else 0
        print(f"{flavor}: hidden {D}, {E} experts of FFN {F_}, top {K}, shared FFN {shared}")
        per = {}
        for k in (4, 8) if E >= 8 else (K,):
            moe_set_top_k(mods, k)
            per[k] = (moe_kept(mods, 2, "none") - moe_kept(mods, 1, "none")) / tok
            print(f"  no checkpointing, top {k}: {per[k]:7.2f}", flush=True)
        if len(per) == 2:
            print(f"  per routed token: {(per[8] - per[4]) / 4:7.2f} (of which 8·FFN/hidden = {8 * F_ / D:.2f})")
        moe_set_top_k(mods, K)
        for mode in ("op", "full"):
            kept = (moe_kept(mods, 2, mode) - moe_kept(mods, 1, mode)) / tok
            print(f"  {mode} checkpointing, top {K}: {kept:7.2f}", flush=True)


def mla_blocks(q_rank, dtype=torch.bfloat16):
    """The MoE blocks of torchtitan 0.3.0's DeepSeek-V3 `debugmodel` (latent attention: 16 heads of 192 with 64
    rotary, values 128, a 512-wide kv latent, a q latent `q_rank` wide or none), their inner attention replaced by
    `flash_like` (the flex kernel needs a compiler); initialised and cast to `dtype`."""
    import torchtitan.models.deepseek_v3 as ds

    orig = ds._build_dsv3_layers
    ds._build_dsv3_layers = lambda **kw: orig(**{**kw, "q_lora_rank": q_rank})
    try:
        cfg = ds.deepseekv3_configs["debugmodel"](attn_backend="flex", moe_comm_backend="standard")
    finally:
        ds._build_dsv3_layers = orig
    torch.manual_seed(0)
    model = cfg.build()
    model.init_states(buffer_device=None)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.02)
    model = model.to(dtype)

    class Inner(torch.nn.Module):
        def forward(self, q, k, v, attention_masks=None, scale=None, **kw):
            return flash_like(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True).transpose(1, 2)

    blocks = [b for b in model.layers.values() if b.moe_enabled]
    for b in blocks:
        b.attention.inner_attention = Inner()
    return blocks


def mla_kept(blocks, n, mode, dtype=torch.bfloat16):
    """What `n` blocks keep: for backward without checkpointing (`none`), or after forward under torchtitan's
    per-op (`op`) or full checkpointing."""
    x = torch.randn(MOE_B, MOE_T, blocks[0].attention.dim, dtype=dtype, requires_grad=True)
    layers = [lambda y, b=b: b(y, None) for b in blocks[:n]]
    if mode == "none":
        return saved_by_layers(layers, x, params_of(blocks[:n]))
    return kept_by_checkpointed(layers, x, mode)


def mla_main():
    """Bytes per token per block / hidden of torchtitan's DeepSeek-V3 blocks (latent attention and MoE), with and
    without a q latent. Under per-op checkpointing the CPU's attention is counted too (its math kernel is on the
    save list, and it keeps fp32 scores), the same in both: compare the two."""
    print(f"torch {torch.__version__}; B {MOE_B}, T {MOE_T}, bf16")
    for q_rank in (0, 384):
        blocks = mla_blocks(q_rank)
        tok = MOE_B * MOE_T * blocks[0].attention.dim
        counts = {mode: (mla_kept(blocks, 3, mode) - mla_kept(blocks, 2, mode)) / tok for mode in ("none", "op", "full")}
        print(f"q latent {q_rank}: " + ", ".join(f"{mode} {v:.2f}" for mode, v in counts.items()), flush=True)


MODES = {
    "--t5": t5_main,
    "--padded": padded_main,
    "--transformers": transformers_main,
    "--peft": peft_main,
    "--scratch": scratch_main,
    "--methods": methods_main,
    "--osf": osf_main,
    "--compile": compile_main,
    "--compile-backward": compile_backward_main,
    "--tp": tp_main,
    "--moe": moe_main,
    "--mla": mla_main,
}


def main():
    if sys.argv[1] in MODES:
        return MODES[sys.argv[1]]()
    install_litgpt(sys.argv[1])
    F.scaled_dot_product_attention = flash_like
    torch.manual_seed(0)
    lora = dict(lora_r=8, lora_alpha=16, lora_dropout=0.05, lora_query=True, lora_value=True)
    every_linear = dict(lora, lora_key=True, lora_projection=True, lora_mlp=True)
    adapter = dict(adapter_prompt_length=10, adapter_start_layer=2)
    print(f"torch {torch.__version__}")
    for mod_name, name, over in [
        ("lora", "Llama-2-7b-hf", lora),
        ("lora", "phi-1_5", lora),
        ("lora", "stablelm-base-alpha-3b", lora),
        ("model", "tiny-llama-1.1b", {}),
        ("lora", "Llama-3-8B", lora),
        ("lora", "Llama-3-8B", every_linear),
        ("lora", "Mistral-7B-v0.1", every_linear),
        ("model", "phi-1_5", {}),
        ("model", "Llama-3-8B", {}),
        ("adapter", "Llama-2-7b-hf", adapter),
        ("adapter_v2", "Llama-2-7b-hf", adapter),
    ]:
        blocks = per_block(mod_name, name, **over)
        print(f"{mod_name:10s} {name:24s} blocks 1, 2, 3: " + " ".join(f"{b:6.2f}" for b in blocks))


if __name__ == "__main__":
    main()
