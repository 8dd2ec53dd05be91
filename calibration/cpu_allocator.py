"""Exact live bytes of a training step on the CPU allocator: what autograd keeps and
frees, counted without a GPU. PyTorch's profiler with `profile_memory=True` reports
every allocation and free, so the bytes alive at each moment — as backward starts,
at the backward peak — are exact; what autograd saves and when it releases it is the
same on either device (CUDA differs in its kernels' own buffers, in SDPA's kernel
choice, in dropout masks — bool on CUDA, the input dtype on the CPU — and in
autocast's op lists). `cost-model/tests/mechanisms.rs` pins the model to these counts.
The live bytes are the allocator's own running total (`total_allocated`, carried by
every allocation event) over what was alive when the profiler started, less the
scratch buffers a matmul allocates and frees inside its own call: a 16-bit matmul on
the CPU writes an fp32 result and converts it, which cuBLAS does not (`MATMULS`).

    python -m venv v && v/bin/pip install torch transformers
    v/bin/python calibration/cpu_allocator.py scores    # eager attention's backward
    v/bin/python calibration/cpu_allocator.py bert      # a BERT block, fp32
    v/bin/python calibration/cpu_allocator.py loss      # BERT's MLM loss, fp32 and autocast
    v/bin/python calibration/cpu_allocator.py working   # a block's backward working set
    v/bin/python calibration/cpu_allocator.py working-none   # without checkpointing, final norm or not
    v/bin/python calibration/cpu_allocator.py working-none llama,1792,fp32,1,16,8   # one run:
        # kind (llama|bert), MLP, dtype, final norm (1|0), LoRA rank (0: full), kv heads
    v/bin/python calibration/cpu_allocator.py timeline llama,2816,bf16,1,0   # each backward
        # node's most-alive moment over what backward starts with
    v/bin/python calibration/cpu_allocator.py scores fp32,selective,eager,16,0   # one run:
        # dtype, policy (none|full|selective), eager|sdpa (SDPA's math kernel),
        # kv heads, attention dropout
    v/bin/python calibration/cpu_allocator.py torchtune-loss   # torchtune's loss, 0.2's
        # recipes (the shifted, transposed fp32 logits) against 0.3's
    v/bin/python calibration/cpu_allocator.py tp-backward   # saved_tensors.py's torchtitan block under
        # DTensor TP: each backward node's most-alive moment, with and without sequence parallelism
    v/bin/python calibration/cpu_allocator.py compiled   # torch.compile (Inductor's C++
        # backend) against eager, with and without checkpointing: the loss and the blocks

`torchtune-loss` (2026-12-06, torch 2.15.0; a bf16 head of 64 → 8,192 over 2 × 512
tokens), bytes per logit at the forward's peak / as backward starts / at the backward
peak: 0.3's recipes 8.00 / 4.00 / 12.00 (the upcast and log-softmax's output; then
the output, the NLL's gradient and log-softmax's input gradient); 0.2's with `del
logits` 11.98 / 3.99 / 11.98 (the shifted copy, log-softmax's contiguous copy of its
transposed input and its output), keeping `logits` 11.98 / 7.99 / 15.97 (the shifted
copy beside backward's three). `Ctx::torchtune_shifted_logits` counts these.

`compiled` (2026-12-04, torch 2.15.0, transformers 4.57.6; a bf16 Llama with tied
embeddings, batch 2 × 1024, each run compiled and stepped once before the profiled
step). Loss-dominated (2 blocks of 512, vocabulary 32,768), bytes per logit kept as
backward starts / at the backward peak: eager 7.51 / 15.51, compiled 3.21 / 7.21;
checkpointed eager 6.22 / 14.22, compiled 2.16 / 6.16 — HF checkpointing breaks the
compiled graph before the LM head, and the head and loss compiled apart still keep
4 bytes a logit more at their backward, as one graph does. Block-dominated (blocks of
1024, MLP 2816, vocabulary 512), MiB kept / at the peak, 4 and 8 blocks: checkpointed
eager 40.3 / 204.4 and 56.3 / 294.4, compiled 26.0 / 208.1 and 42.0 / 298.1 — the
compiled backward recomputes one block at a time, as eager checkpointing does.

Results of 2026-12-03 (torch 2.15.0, transformers 5.24.0):

`scores` — transformers' eager Llama, 4 blocks, hidden 256, 16 heads of 16, MLP
512, vocabulary 256, batch 1 × 2048, so that the scores (16 · 2048² a block) dwarf
the rest; bytes per score element (the hidden-sized tensors add 0.3 to 2.4):

    dtype  policy     kept as backward starts  backward peak  peak - kept
    fp32   none       18.41                    26.00          7.59
    fp32   full        0.54                    12.65         12.12
    fp32   selective   2.66                    14.26         11.59
    bf16   none       25.36                    31.11          5.75
    bf16   full        0.30                    12.36         12.06
    bf16   selective   1.49                    13.24         11.75

Without checkpointing each block keeps its probabilities (fp32: 4 bytes; bf16: the
fp32 softmax output and the 16-bit cast the value matmul saves, 6) and the backward
peak is at the top block's softmax backward, where P, dP and dS are alive in fp32
(12) and the 16-bit cast is gone (the value matmul's node released it after making
dP): 4·3 + 12 = 24 and 6·3 + 12 = 30, plus the hidden-sized tensors. A recomputed
block (full, or selective: the attention core alone re-run, torch.utils.checkpoint
around `eager_attention_forward`) holds the same three: 12. SDPA's math kernel
(forced with `sdpa_kernel(MATH)`) gives the same as eager in fp32 (26.04 / 12.39);
in bf16 the CPU's math kernel computes in fp32 throughout, unlike CUDA's.

`bert` — transformers' BertForMaskedLM blocks (hidden 1024, 16 heads, MLP 4096),
batch 4 × 512, fp32; bytes a block keeps per token per hidden unit (the growth from
2 to 4 blocks): SDPA 64.08 (the CPU's flash kernel: output and log-sum-exp, as
CUDA's), with hidden dropout 0.1 72.08 (two dropouts, each a mask in fp32 here,
bool on CUDA: +2 there), eager 96.02 (the 16 · 512 fp32 probabilities a token).

`loss` — BertForMaskedLM (one block of 256) over 4 × 512 tokens and its 30,522
logits, bytes per logit (the block, embeddings and head transform add about 0.7):
fp32 — 8.71 as backward starts (the logits the output holds and log-softmax's
output, 4 + 4), 16.71 at the backward peak (plus log-softmax's output gradient
and its input's, 4 + 4); under the CPU's autocast (bf16) — 6.72 as backward starts
(2 + 4: the fp32 copy `ForMaskedLMLoss` makes is gone when it returns), 14.72 at
the peak.

`working` — transformers' Llama (4 blocks, hidden 512, 8 heads, 2 kv heads, vocabulary
256, SDPA) and BERT (4 blocks, hidden 512, MLP 2048), bf16, batch 1; bytes per token per
hidden unit as backward starts and at its peak, from the growth 8,192 → 16,384 tokens
(so the gradients of the weights, which do not grow with the tokens, drop out):

    model  MLP   none: kept  peak    full checkpointing: kept  peak
    Llama  1408        183.84 197.81                    19.54  65.59
    Llama  1792        207.84 221.81                    19.54  74.59
    Llama  2816        271.84 285.81                    19.54  97.47
    BERT   2048        140.34 142.34                    20.03  49.09

With full checkpointing the peak is in the top block's MLP backward: the recomputed
block whole, plus the gradient of the down projection's input and of both factors of
the SwiGLU product (the product itself released), plus hidden-sized gradients — the
model's one working block and `Ctx::recomputed_mlp_grads`. Without checkpointing the
peak is 14.0 over what backward starts with whatever the MLP width (2.0 for BERT, whose
LayerNorm is one fused kernel): the final RMSNorm's fp32 backward, before any block;
the model's working block (a whole block's activations) is more than that — left for
a later session (see docs/ACCURACY.md).

`working-none` — the Llama of `working` without checkpointing (results of the
twenty-fourth session, with the allocator's running total and the matmul scratch left
out; `working`'s table above came out the same that way): the backward peaks 13.98
over what it starts with for MLP 1408, 1792 and 2816 alike. For 1408 and 1792 that is
the final RMSNorm's `PowBackward0` — its saved fp32 input and four fp32 gradients, 20
bytes per token per hidden unit over what the blocks keep once the loss's tensors are
gone; at 2816 the top block's MLP backward (`MulBackward0` of the SwiGLU product: the
two factors' gradients beside the down projection's input gradient, the product
released; about 2·MLP·2 bytes per token over the blocks' kept tensors) reaches the
same. `timeline llama,2816,bf16,1,0` shows every later node of the block lower, as
each node releases what it saved; nothing like a second copy of the block. Other
runs: `llama,1792,fp32,1,0,8` 401.34 kept, 419.31 peak (+17.98, at the MLP's
`MulBackward0`: in fp32 the MLP's gradients outweigh the norm's); `bert,2048,fp32,1,0`
280.42 / 284.42 (+4.00, at the MLM head's `AddmmBackward0`: BERT's LayerNorm is one
kernel and its MLP plain); `llama,1792,bf16,1,16` (LoRA rank 16 on every linear)
295.33 / 313.30 (+17.98, the final norm's `PowBackward0`). With the final
norm replaced by an identity the block's MLP moment is the peak (MLP 1792: 18.98 over
what backward starts with, which there holds less). The CPU's bf16 matmul allocates an
fp32 buffer the size of its output for the length of the call (22 bytes per token per
hidden unit in the down projection's backward at MLP 2816), left out as above.
"""
import contextlib
import sys
from typing import NamedTuple

import torch
from torch._C._profiler import _EventType
from torch.profiler import ProfilerActivity, profile, record_function


# Matmuls whose scratch buffers the CPU allocates and frees inside the op: a
# 16-bit matmul on the CPU (oneDNN) writes an fp32 result and converts it, one
# output-sized fp32 buffer for the length of the call. cuBLAS writes the 16-bit
# output directly (its workspace is a fixed size, `Ctx::workspaces`), so these
# are left out of the counts.
MATMULS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


class Live(NamedTuple):
    """What `live_bytes` counted: the bytes alive at the mark, the peak after it,
    the backward node the peak fell in, and the most alive during each backward
    node, in the order they ran."""
    kept: int
    peak: int
    peak_op: str
    nodes: dict
    forward_peak: int = 0


def live_bytes(step):
    """Runs `step(mark)` under the profiler; `mark()` must be called as backward
    starts. Returns `Live`: the bytes alive at the mark and the peak after it, the
    CPU allocator's own running total (`total_allocated`, which every allocation
    and free event carries, so the order of events that share a timestamp
    cannot change it) over what was alive when the profiler started, less the
    scratch buffers a matmul allocates and frees
    within its own call (`MATMULS`)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step(lambda: record_function("MARK"))
    events, mark, scratch, backward_nodes = [], None, set(), 0

    def walk(node, op):
        nonlocal mark, backward_nodes
        if node.tag == _EventType.Allocation:
            f = node.extra_fields
            events.append((node.start_time_ns, f.total_allocated, op, f.ptr, f.alloc_size))
        elif node.tag == _EventType.TorchOp:
            if node.name == "MARK":
                mark = node.start_time_ns
            if node.name.startswith("autograd::engine::evaluate_function"):
                backward_nodes += 1
                op = f"backward node {backward_nodes} {node.name.split(': ')[-1]}"
            elif not op.startswith("backward node"):
                op = node.name
            if node.name in MATMULS:
                # A buffer allocated and freed by the op itself (not its output).
                mine = {}
                for child in node.children:
                    if child.tag == _EventType.Allocation:
                        f = child.extra_fields
                        if f.alloc_size > 0:
                            mine[f.ptr] = child.start_time_ns
                        elif f.ptr in mine:
                            scratch.add((f.ptr, mine.pop(f.ptr)))
                            scratch.add((f.ptr, child.start_time_ns))
        for child in node.children:
            walk(child, op)

    roots = sorted(prof.profiler.kineto_results.experimental_event_tree(),
                   key=lambda n: n.start_time_ns)
    for root in roots:
        walk(root, "")
    events.sort(key=lambda e: e[0])
    # Counted from what was alive when the profiler started (an earlier run's
    # leftovers in the same process would otherwise count).
    base = events[0][1] - events[0][4] if events else 0
    series, held = [], 0
    for t, total, op, ptr, size in events:
        if (ptr, t) in scratch:
            held += size
        series.append((t, total - held - base, op))
    before = [total for t, total, _ in series if t < mark]
    kept = before[-1] if before else 0
    after = [(total, op) for t, total, op in series if t >= mark]
    peak, peak_op = max(after, default=(kept, ""))
    nodes = {}
    for total, op in after:
        if op.startswith("backward node"):
            nodes[op] = max(nodes.get(op, 0), total)
    forward_peak = max(before, default=0)
    return Live(kept, peak, peak_op, nodes, forward_peak)


def scores(dtype, policy, impl="eager", kv=16, drop=0.0):
    import transformers.models.llama.modeling_llama as ml
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from transformers import LlamaConfig, LlamaForCausalLM

    L, H, A, S = 4, 256, 16, 2048
    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=H, num_attention_heads=A, num_key_value_heads=kv,
                      attention_dropout=drop, intermediate_size=512, num_hidden_layers=L,
                      vocab_size=256, max_position_embeddings=S, attn_implementation=impl)
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
    ids = torch.randint(0, 256, (1, S))
    kernel = sdpa_kernel(SDPBackend.MATH) if impl == "sdpa" else contextlib.nullcontext()

    def step(mark):
        out = model(input_ids=ids, labels=ids)
        with mark():
            out.loss.backward()

    try:
        with kernel:
            kept, peak, *_ = live_bytes(step)
    finally:
        ml.eager_attention_forward = orig
    per = lambda x: x / (A * S * S)
    print(f"scores {str(dtype):14s} {policy:9s} {impl} kv{kv} dropout {drop}: kept {per(kept):6.2f}"
          f"  backward peak {per(peak):6.2f}  peak - kept {per(peak - kept):6.2f}", flush=True)


def bert_model(layers, hidden, heads, mlp, attn_drop, hid_drop, impl, positions=512, vocab=30522):
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    cfg = BertConfig(hidden_size=hidden, num_attention_heads=heads, intermediate_size=mlp,
                     num_hidden_layers=layers, attention_probs_dropout_prob=attn_drop,
                     hidden_dropout_prob=hid_drop, attn_implementation=impl,
                     max_position_embeddings=positions, vocab_size=vocab)
    model = BertForMaskedLM(cfg)
    model.train()
    return model, cfg.vocab_size


def bert(attn_drop, hid_drop, impl):
    B, S, H = 4, 512, 1024

    def kept(layers):
        model, vocab = bert_model(layers, H, 16, 4096, attn_drop, hid_drop, impl)
        ids = torch.randint(0, vocab, (B, S))
        labels = ids.masked_fill(torch.rand(ids.shape) > 0.15, -100)

        def step(mark):
            out = model(input_ids=ids, labels=labels)
            with mark():
                out.loss.backward()

        return live_bytes(step).kept

    per_block = (kept(4) - kept(2)) / 2 / (B * S * H)
    print(f"bert fp32 {impl} attention dropout {attn_drop} hidden dropout {hid_drop}: "
          f"{per_block:.2f} bytes a block keeps per token per hidden unit", flush=True)


def loss(amp):
    B, S = 4, 512
    model, vocab = bert_model(1, 256, 4, 1024, 0.0, 0.0, "sdpa")
    ids = torch.randint(0, vocab, (B, S))
    labels = ids.masked_fill(torch.rand(ids.shape) > 0.15, -100)

    def step(mark):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            out = model(input_ids=ids, labels=labels)
        with mark():
            out.loss.backward()

    kept, peak, *_ = live_bytes(step)
    u = B * S * vocab
    print(f"loss {'autocast bf16' if amp else 'fp32':13s}: as backward starts {kept / u:.2f}, "
          f"backward peak {peak / u:.2f}, peak - kept {(peak - kept) / u:.2f} bytes per logit",
          flush=True)


def torchtune_loss(release, keep):
    """torchtune's LM head and standard loss as its recipes call them, over a
    bf16 head input: `release` "0.2" (0.1.1–0.2.1: the decoder's
    `self.output(h).float()`, `logits[..., :-1, :].contiguous()`, then
    `CrossEntropyLoss` over `logits.transpose(1, 2)`) or "0.3" (0.3.1–0.6.x:
    the labels shifted with an ignore index, `logits.reshape(-1, vocab)`, `del
    logits`); `keep` leaves the recipe's `logits` alive through backward (0.1's
    recipes, 0.2's but the LoRA distributed one). Bytes per logit at the
    forward's peak, as backward starts and at the backward peak."""
    B, S, H, V = 2, 512, 64, 8192
    head = torch.nn.Linear(H, V, bias=False, dtype=torch.bfloat16)
    h = torch.randn(B, S, H, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, V, (B, S))
    ce = torch.nn.CrossEntropyLoss()

    def step(mark):
        logits = head(h).float()
        if release == "0.2":
            logits = logits[..., :-1, :].contiguous()
            lab = labels[..., 1:].contiguous()
            logits = logits.transpose(1, 2)
            loss = ce(logits, lab)
        else:
            lab = torch.hstack((labels[..., 1:], torch.full((B, 1), -100)))
            logits = logits.reshape(-1, V)
            loss = ce(logits, lab.reshape(-1))
        if not keep:
            del logits
        with mark():
            loss.backward()

    live = live_bytes(step)
    u = B * S * V
    print(f"torchtune-loss {release} {'kept' if keep else 'del '}: forward peak "
          f"{live.forward_peak / u:.2f}, as backward starts {live.kept / u:.2f}, backward "
          f"peak {live.peak / u:.2f} bytes per logit (at {live.peak_op})", flush=True)


def working(kind, ffn, ckpt, tokens, final_norm=True, dtype=torch.bfloat16, lora=0, kv=2):
    """A training step of the 4-block probe (`kind` llama or bert) at `tokens`
    positions: `Live`."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    if kind == "llama":
        cfg = LlamaConfig(hidden_size=512, num_attention_heads=8, num_key_value_heads=kv,
                          intermediate_size=ffn, num_hidden_layers=4, vocab_size=256,
                          max_position_embeddings=tokens, attn_implementation="sdpa")
        model = LlamaForCausalLM(cfg)
    else:
        model, _ = bert_model(4, 512, 8, ffn, 0.0, 0.0, "sdpa", positions=tokens, vocab=256)
    model = model.to(dtype)
    model.train()
    if not final_norm and kind == "llama":
        model.model.norm = torch.nn.Identity()
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=lora, lora_alpha=2 * lora, lora_dropout=0.0,
                                                 target_modules="all-linear"))
    ids = torch.randint(0, 256, (1, tokens))

    def step(mark):
        out = model(input_ids=ids, labels=ids)
        with mark():
            out.loss.backward()

    return live_bytes(step)


def working_spec(spec):
    """`kind,MLP,dtype,final norm (1|0),LoRA rank (0: a full fine-tune)[,kv heads (2)]`
    as `working`'s kind, MLP and remaining arguments."""
    kind, ffn, d, final_norm, lora, *kv = spec.split(",")
    return kind, int(ffn), (final_norm == "1", DTYPES[d], int(lora), int(kv[0]) if kv else 2)


def compiled(layers, hidden, ffn, vocab):
    """A bf16 transformers Llama (tied embeddings, batch 2 × 1024) eager and under
    `torch.compile`, with and without HF's checkpointing: what is alive as backward
    starts and the backward peak, per logit and in MiB."""
    from transformers import LlamaConfig, LlamaForCausalLM

    n = 2 * 1024 * vocab
    for ckpt in (True, False):
        for comp in (False, True):
            cfg = LlamaConfig(hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers,
                              num_attention_heads=hidden // 64, num_key_value_heads=hidden // 128,
                              vocab_size=vocab, attn_implementation="sdpa", tie_word_embeddings=True)
            model = LlamaForCausalLM(cfg).to(torch.bfloat16)
            model.train()
            if ckpt:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            run = torch.compile(model) if comp else model
            ids = torch.randint(0, vocab, (2, 1024))
            run(input_ids=ids, labels=ids).loss.backward()  # compiles outside the profiler
            model.zero_grad(set_to_none=True)

            def step(mark):
                out = run(input_ids=ids, labels=ids)
                with mark():
                    pass
                out.loss.backward()

            r = live_bytes(step)
            model.zero_grad(set_to_none=True)
            print(f"compiled {layers} blocks of {hidden}, vocabulary {vocab}: checkpointing {ckpt}, "
                  f"compile {comp}: kept {r.kept / n:.2f} B/logit ({r.kept / 2**20:.1f} MiB), peak "
                  f"{r.peak / n:.2f} B/logit ({r.peak / 2**20:.1f} MiB) at {r.peak_op}", flush=True)


def tp_backward(tp, sp, tokens, n=3, dtype=torch.bfloat16):
    """`n` of saved_tensors.py's torchtitan blocks under DTensor TP (rank 0 of a fake process group), no
    checkpointing, one sequence of `tokens`: `Live` of their backward from the last block's output."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    import saved_tensors as st

    if not dist.is_initialized():
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=8)
    blocks = st.tp_blocks(n, tp, sp, dtype)
    x0 = torch.randn(1, tokens // tp if sp else tokens, st.TP_H, dtype=dtype, requires_grad=True)
    cis = st.rope_cache(tokens)

    def step(mark):
        x = x0
        for b in blocks:
            x = b(x, cis)
        g = torch.ones_like(x)
        with mark():
            x.backward(g)

    return live_bytes(step)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "scores"
    runs = sys.argv[2:]
    if what == "scores":
        for spec in runs or [f"{d},{p},eager,16,0" for d in ("fp32", "bf16")
                             for p in ("none", "full", "selective")]:
            d, pol, impl, kv, drop = spec.split(",")
            scores(DTYPES[d], pol, impl, int(kv), float(drop))
    elif what == "bert":
        for attn_drop, hid_drop, impl in [(0.0, 0.0, "sdpa"), (0.0, 0.1, "sdpa"), (0.0, 0.0, "eager")]:
            bert(attn_drop, hid_drop, impl)
    elif what == "loss":
        for amp in (False, True):
            loss(amp)
    elif what == "working":
        for kind, ffn in [("llama", 1408), ("llama", 1792), ("llama", 2816), ("bert", 2048)]:
            row = []
            for ckpt in (False, True):
                (k1, p1, *_), (k2, p2, *_) = (working(kind, ffn, ckpt, n) for n in (8192, 16384))
                row.append(f"kept {(k2 - k1) / 8192 / 512:7.2f} peak {(p2 - p1) / 8192 / 512:7.2f}")
            print(f"working {kind} MLP {ffn}: none {row[0]}; full {row[1]}", flush=True)
    elif what == "timeline":
        # the most alive during each backward node over what backward starts with,
        # bytes per token per hidden unit, from the growth 4,096 → 8,192 tokens (the
        # nodes line up, the allocations need not)
        kind, ffn, args = working_spec(runs[0])
        short, long = (working(kind, ffn, False, n, *args) for n in (4096, 8192))
        for op, most in long.nodes.items():
            if op in short.nodes:
                grown = most - short.nodes[op] - long.kept + short.kept
                print(f"{op:45s} {grown / 4096 / 512:7.2f}")
    elif what == "torchtune-loss":
        for release, keep in [("0.3", False), ("0.2", False), ("0.2", True)]:
            torchtune_loss(release, keep)
    elif what == "compiled":
        compiled(2, 512, 1408, 32768)  # the loss dominates
        for layers in (4, 8):
            compiled(layers, 1024, 2816, 512)  # the blocks dominate
    elif what == "tp-backward":
        # the most alive during each backward node over what backward starts with, bytes per token per hidden
        # unit, from the growth 512 → 1,024 tokens (the weights' gradients cancel)
        for tp, sp in [(1, False), (4, False), (4, True), (8, True)]:
            short, long = (tp_backward(tp, sp, n) for n in (512, 1024))
            grown = {op: (most - short.nodes[op] - long.kept + short.kept) / 512 / 1024
                     for op, most in long.nodes.items() if op in short.nodes}
            top = sorted(grown.items(), key=lambda kv: -kv[1])[:3]
            print(f"tp-backward TP {tp} SP {sp}: kept {(long.kept - short.kept) / 512 / 1024:.2f}; "
                  + "; ".join(f"{op} {v:+.2f}" for op, v in top), flush=True)
    elif what == "working-none":
        for spec in runs or [f"llama,{f},bf16,{n},0" for f in (1792, 2816) for n in (1, 0)]:
            kind, ffn, args = working_spec(spec)
            short, long = (working(kind, ffn, False, n, *args) for n in (8192, 16384))
            kept, peak = (long.kept - short.kept) / 8192 / 512, (long.peak - short.peak) / 8192 / 512
            print(f"working-none {spec}: kept {kept:7.2f} peak {peak:7.2f} peak - kept {peak - kept:6.2f}"
                  f" (peak at {short.peak_op} and {long.peak_op})", flush=True)
