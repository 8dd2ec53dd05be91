"""Counts the score-sized tensors eager attention holds at its backward peak, per
checkpointing policy, on the CPU allocator — the numbers
`cost-model/tests/mechanisms.rs`
(`eager_attention_backward_holds_three_score_sized_tensors_at_the_softmax`) pins
the model to (`Ctx::score_grads_in_backward` in cost-model/src/estimate.rs).

No GPU needed: the profiler's memory events (`profile_memory=True`) report every
allocation and free of the CPU allocator, so the live bytes at each moment of a
forward and backward are exact. The model is transformers' eager Llama, small
enough that the attention scores (heads × seq² per block) dwarf everything else:
4 blocks, hidden 256, 16 heads of 16, MLP 512, vocabulary 256, batch 1 × 2048.
Figures are bytes per score element (16 · 2048² per block); the hidden-sized
tensors add about 0.3 (bf16) to 2.4 (fp32, kept) to each.

    python -m venv v && v/bin/pip install torch transformers
    v/bin/python calibration/score_grads.py            # the table below
    v/bin/python calibration/score_grads.py fp32,selective,eager,16,0   # one run:
        # dtype, policy (none|full|selective), eager|sdpa (SDPA's math kernel),
        # kv heads, attention dropout

Results of 2026-12-03 (torch 2.15.0, transformers 5.24.0):

    dtype  policy     kept as backward starts  backward peak  peak - kept
    fp32   none       18.41                    26.00          7.59
    fp32   full        0.54                    12.65         12.12
    fp32   selective   2.66                    14.26         11.59
    bf16   none       25.36                    31.11          5.75
    bf16   full        0.30                    12.36         12.06
    bf16   selective   1.49                    13.24         11.75

Read: without checkpointing each block keeps its probabilities (fp32: 4 bytes;
bf16: the fp32 softmax output and the 16-bit cast the value matmul saves, 6) and
the backward peak is at the top block's softmax backward, where P, dP and dS are
alive in fp32 (12) and the 16-bit cast is gone (the value matmul's node released
it after making dP): 4·3 + 12 = 24 and 6·3 + 12 = 30, plus the hidden-sized
tensors. A recomputed block (full, or selective: only the attention core
re-run, here with torch.utils.checkpoint around `eager_attention_forward`) holds
the same three: 12. SDPA's math kernel (forced with `sdpa_kernel(MATH)`) gives
the same as eager in fp32 (26.04 / 12.39); in bf16 on the CPU it computes in
fp32 throughout, unlike CUDA's. Attention dropout is not compared with CUDA here:
the CPU's dropout keeps its mask in the input dtype, CUDA's as bool.
"""
import contextlib
import sys

import torch
import transformers.models.llama.modeling_llama as ml
from torch._C._profiler import _EventType
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile, record_function
from transformers import LlamaConfig, LlamaForCausalLM

L, H, A, S, B, V = 4, 256, 16, 2048, 1, 256


def run(dtype, policy, impl="eager", kv=A, drop=0.0):
    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=H, num_attention_heads=A, num_key_value_heads=kv,
                      attention_dropout=drop, intermediate_size=512, num_hidden_layers=L,
                      vocab_size=V, max_position_embeddings=S, attn_implementation=impl)
    model = LlamaForCausalLM(cfg).to(dtype)
    model.train()
    orig = ml.eager_attention_forward
    if policy == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    elif policy == "selective":
        def core(module, q, k, v, mask, **kw):
            return torch.utils.checkpoint.checkpoint(
                lambda q, k, v: orig(module, q, k, v, mask, **kw), q, k, v, use_reentrant=False)
        ml.eager_attention_forward = core
    ids = torch.randint(0, V, (B, S))
    kernel = sdpa_kernel(SDPBackend.MATH) if impl == "sdpa" else contextlib.nullcontext()
    try:
        with kernel, profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            out = model(input_ids=ids, labels=ids)
            with record_function("BWD"):
                out.loss.backward()
    finally:
        ml.eager_attention_forward = orig
    events = []

    def walk(node):
        if node.tag == _EventType.Allocation:
            events.append((node.start_time_ns, node.extra_fields.alloc_size))
        elif node.tag == _EventType.TorchOp and node.name == "BWD":
            events.append((node.start_time_ns, None))
        for child in node.children:
            walk(child)

    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root)
    events.sort(key=lambda e: e[0])
    live, kept, peak = 0, None, 0
    for _, size in events:
        if size is None:
            kept = live
            continue
        live += size
        if kept is not None:
            peak = max(peak, live)
    per = lambda x: x / (A * S * S * B)
    print(f"{str(dtype):15s} {policy:9s} {impl} kv{kv} dropout {drop}: kept {per(kept):6.2f}"
          f"  backward peak {per(peak):6.2f}  peak - kept {per(peak - kept):6.2f}", flush=True)


if __name__ == "__main__":
    specs = sys.argv[1:] or [f"{d},{p},eager,{A},0" for d in ("fp32", "bf16")
                             for p in ("none", "full", "selective")]
    for spec in specs:
        d, pol, impl, kv, drop = spec.split(",")
        run({"fp32": torch.float32, "bf16": torch.bfloat16}[d], pol, impl, int(kv), float(drop))
