#!/usr/bin/env python3
"""Turn measure.py's results.jsonl files into rows of the calibration schema.

    python3 calibration/to_csv.py calibration/h200-2026-11-30 > calibration/h200-2026-11-30.csv
    python3 calibration/to_csv.py calibration/h200-2026-12-04 > calibration/h200-2026-12-04.csv
    python3 calibration/to_csv.py calibration/h200-2026-12-04-deepspeed > calibration/h200-2026-12-04-deepspeed.csv
    python3 calibration/to_csv.py calibration/h200-2026-12-04-fsdp1 > calibration/h200-2026-12-04-fsdp1.csv

One run gives three rows, one per counter: `max_allocated`, `max_reserved` and
`device_used`. NVML's v1 `used` (what the sampler reads) counts the memory the
driver reserves for itself, which nvidia-smi does not print: `used` read before
CUDA was initialised (`nvml_before_cuda` in env.json, 615 MiB on the H200) is
subtracted, so `device_used` is the number nvidia-smi shows (checked against
nvidia-smi.txt, printed during l8b-bf16-ckpt-b1-s2048: 79059 MiB = 79674 − 615).
An out-of-memory run gives one `device_used` row holding the card's capacity.

A case that started with memory an earlier case in its process had left
behind (`inherited`) gives no rows: set 4 ran its cases in shared processes and
three of them left memory behind; set 5 measured those cases again, each in a
process of its own (measure.py ISOLATE=1), and its records carry that
process's env.
"""

import csv
import glob
import json
import os
import sys

HEADER = (
    "id,source_url,framework,model,arch,n_layers,hidden,n_heads,n_kv_heads,ffn_hidden,mlp,vocab,"
    "tied_embeddings,n_experts,experts_per_token,params_total,task,lora_rank,lora_targets,"
    "trainable_params,micro_batch,seq_len,grad_accum,precision,base_weight_bits,optimizer,"
    "optimizer_in_backward,activation_checkpointing,activation_offload,attention,loss,compile,"
    "num_gpus,sharding,tp,pp,cp,offload,gpu,gpu_mem_gib,metric,measured_gib,oom,quality,notes"
).split(",")

# name, arch, layers, hidden, heads, kv heads, ffn, mlp, vocab, tied, experts, top-k
MODELS = {
    "llama-3.2-1b": ("meta-llama/Llama-3.2-1B", "decoder", 16, 2048, 32, 8, 8192, "gated", 128256, True, 0, 0),
    "llama-3.2-3b": ("meta-llama/Llama-3.2-3B", "decoder", 28, 3072, 24, 8, 8192, "gated", 128256, True, 0, 0),
    "llama-3.1-8b": ("meta-llama/Llama-3.1-8B", "decoder", 32, 4096, 32, 8, 14336, "gated", 128256, False, 0, 0),
    "qwen2.5-0.5b": ("Qwen/Qwen2.5-0.5B", "decoder", 24, 896, 14, 2, 4864, "gated", 151936, True, 0, 0),
    "gpt2": ("openai-community/gpt2", "decoder", 12, 768, 12, 12, 3072, "plain", 50257, True, 0, 0),
    "gpt2-xl": ("openai-community/gpt2-xl", "decoder", 48, 1600, 25, 25, 6400, "plain", 50257, True, 0, 0),
    "bert-base": ("google-bert/bert-base-uncased", "encoder", 12, 768, 12, 12, 3072, "plain", 30522, True, 0, 0),
    "bert-large": ("google-bert/bert-large-uncased", "encoder", 24, 1024, 16, 16, 4096, "plain", 30522, True, 0, 0),
    "gemma-2-2b": ("google/gemma-2-2b", "decoder", 26, 2304, 8, 4, 9216, "gated", 256000, True, 0, 0),
    "phi-3-mini": ("microsoft/Phi-3-mini-4k-instruct", "decoder", 32, 3072, 32, 32, 8192, "gated", 32064, False, 0, 0),
    "mistral-7b": ("mistralai/Mistral-7B-v0.1", "decoder", 32, 4096, 32, 8, 14336, "gated", 32000, False, 0, 0),
    "qwen2.5-7b": ("Qwen/Qwen2.5-7B", "decoder", 28, 3584, 28, 4, 18944, "gated", 152064, False, 0, 0),
    "qwen2.5-14b": ("Qwen/Qwen2.5-14B", "decoder", 48, 5120, 40, 8, 13824, "gated", 152064, False, 0, 0),
    "qwen2.5-32b": ("Qwen/Qwen2.5-32B", "decoder", 64, 5120, 40, 8, 27648, "gated", 152064, False, 0, 0),
    "llama-3.2-1b-untied": (
        "transformers/LlamaForCausalLM-1B-untied", "decoder", 16, 2048, 32, 8, 8192, "gated", 128256, False, 0, 0
    ),
    "bloomz-7b1": ("bigscience/bloomz-7b1", "decoder", 30, 4096, 32, 32, 16384, "plain", 250880, True, 0, 0),
    "llama-2-70b-40l": (
        "transformers/LlamaForCausalLM-70B-40-blocks", "decoder", 40, 8192, 64, 8, 28672, "gated", 32000, False, 0, 0
    ),
    "mixtral-small": ("transformers/MixtralForCausalLM-small", "decoder", 8, 1024, 16, 8, 3584, "gated", 32000, False, 8, 2),
}
SHORT = {"query_key_value": "q+k+v", "q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o", "gate_proj": "gate", "up_proj": "up", "down_proj": "down"}
GIB = float(1 << 30)
# The run's date, from its folder's name (h200-YYYY-MM-DD), names its rows and source.
RUN = "h200-2026-11-30"


def source():
    # the date alone (a folder may name what its runs were after it)
    return f"calibration/measure.py (this repository; H200 run of {RUN[len('h200-'):][:10]})"


# measure.py's optimizer names that are not the schema's own
OPTIMIZER = {"adamw-fused": "adamw"}
# measure.py's bitsandbytes optimizers and their classes
BNB_OPTIMIZERS = {"adamw-8bit": "AdamW8bit", "paged-adamw-8bit": "PagedAdamW8bit", "paged-adamw": "PagedAdamW"}


def rows(rec, env):
    name, arch, layers, hidden, heads, kv, ffn, mlp, vocab, tied, experts, topk = MODELS[rec["model"]]
    lora = rec.get("lora")
    versions = [f"torch {env['torch']}", f"transformers {env['transformers']}"]
    for pkg, used in (
        ("peft", lora or rec.get("prep")),
        ("bitsandbytes", rec.get("quant") or rec["optimizer"] in BNB_OPTIMIZERS),
        ("torchao", rec.get("fp8")),
        ("liger-kernel", rec.get("liger")),
        ("accelerate", rec.get("wrap") == "accelerate"),
        ("deepspeed", rec.get("ds")),
    ):
        if used:
            versions.append(f"{pkg} {env.get(pkg)}")
    notes = [
        " + ".join(versions),
        "random weights from the model config (no checkpoint load)"
        if rec.get("ds") and rec["ds"]["stage"] == 3
        else "random weights built on the GPU from the model config (no checkpoint load)",
        f"{len(rec.get('step_s') or []) or 3} steps; zero_grad(set_to_none=True)",
        f"attention {rec.get('attn_impl') or rec['attn']}",
    ]
    ds = rec.get("ds")
    if ds:
        zo = rec["ds_config"]["zero_optimization"]
        keys = [k for k in zo if k not in ("stage", "offload_optimizer", "offload_param")]
        notes.append(
            f"DeepSpeed ZeRO-{ds['stage']} on one rank over NCCL (deepspeed.initialize; engine backward/step)"
            + {"params+optimizer": "; optimizer and parameters offloaded to pinned host memory",
               "optimizer": "; optimizer offloaded to pinned host memory"}.get(ds_offload(ds), "")
        )
        if ds["style"] == "trainer":
            notes.append(
                "config as the Trainer fills transformers' guide's ZeRO config ("
                + " ".join(f"{k}={zo[k]}" for k in keys)
                + ")"
            )
        else:
            notes.append("config as Accelerate's DeepSpeedPlugin writes it (no bucket keys: DeepSpeed's defaults)")
        if ds["stage"] == 3:
            notes.append("model built under deepspeed.zero.Init (zero3_init)")
        notes.append(
            "gradient_clipping 1.0; "
            + ("bf16 enabled (16-bit weights; fp32 master in the optimizer); no autocast" if rec["precision"] != "fp32" else "fp32")
        )
        notes.append(
            "torch.optim.AdamW "
            + ("(foreach) on the host; zero_force_ds_cpu_optimizer false" if ds.get("offload") else "(fused=True)")
        )
        if rec["ckpt"]:
            notes.append("reentrant checkpointing (torch 2.11's non-reentrant recomputation fails in ZeRO-3's linear)")
    elif rec.get("trainer"):
        notes.append(f"transformers Trainer (optim {rec.get('optim', '').split('.')[-1].lower()}; max_grad_norm 1.0)")
        if rec.get("pad"):
            notes.append(f"last {int(rec['pad'] * 100)} % of every row padding (attention_mask 0; labels -100)")
    elif rec["optimizer"] == "adamw-fused" or rec.get("optimizer_impl") == "fused":
        # set 11's FSDP1 runs: the Trainer's default `adamw_torch_fused`
        notes.append("torch.optim.AdamW(fused=True)")
    elif rec["optimizer"] == "adamw":
        notes.append("torch.optim.AdamW (foreach)")
    if lora:
        notes.append("lora_alpha=2r; lora_dropout=0.05")
    if rec.get("quant"):
        notes.append(
            "bitsandbytes Linear4bit NF4 + double quant + bf16 compute on every block linear (LM head and embeddings"
            " 16-bit); model built in bf16 then quantized on the GPU; peak counters reset after quantizing"
        )
    if rec.get("prep"):
        notes.append("prepare_model_for_kbit_training (unquantized parameters cast to fp32)")
    if rec.get("liger"):
        notes.append("Liger Kernel defaults (RoPE; RMSNorm; SwiGLU; fused linear cross-entropy)")
    if rec.get("fp8"):
        notes.append("torchao convert_to_float8_training (tensorwise scaling; LM head kept bf16); eager (no compile)")
    if rec["optimizer"] in BNB_OPTIMIZERS:
        notes.append(f"bitsandbytes.optim.{BNB_OPTIMIZERS[rec['optimizer']]}")
    if rec.get("trainer_optim"):
        notes.append(f"optim={rec['trainer_optim']}")
    if rec.get("wrap") in ("ddp", "ddp-view"):
        view = rec["wrap"] == "ddp-view"
        notes.append(
            f"DistributedDataParallel on one rank over NCCL (bucket_cap_mb 25; gradient_as_bucket_view {view})"
        )
    if rec.get("wrap") in ("fsdp2", "fsdp2-offload", "fsdp2-noreshard"):
        notes.append(
            "FSDP2 fully_shard per block and root on one rank over NCCL; MixedPrecisionPolicy(param_dtype bf16;"
            " reduce_dtype fp32); no autocast"
        )
    if rec.get("wrap") == "fsdp2-noreshard":
        notes.append("reshard_after_forward=False")
    if rec.get("wrap") == "fsdp2-offload":
        notes.append(
            "CPUOffloadPolicy(pin_memory=True): sharded parameters; gradients and the AdamW step on the host;"
            " model built on the GPU; peak counters reset once its shards were on the host"
        )
    if rec.get("wrap") == "accelerate":
        notes.append("Accelerator(mixed_precision='bf16') prepare + backward")
    fsdp1 = rec.get("wrap") in ("fsdp1", "fsdp1-offload")
    if fsdp1:
        notes.append(
            "FSDP1 FullyShardedDataParallel as Accelerate's plugin builds it from peft's FSDP-QLoRA config"
            " (FULL_SHARD; BACKWARD_PRE; limit_all_gathers; use_orig_params False; sync_module_states; no mixed"
            " precision; peft fsdp_auto_wrap_policy) in a plain loop doing what the Trainer's training_step does (the"
            " loss kept; the model's outputs dropped before backward); rank 0 of a world of"
            f" {rec['world_size']} whose other rank is a fake process group (collectives move no data and NCCL"
            " allocates nothing); model moved to the host and counters reset before wrapping; reentrant"
            " checkpointing"
        )
    if rec.get("wrap") == "fsdp1-offload":
        notes.append("CPUOffload(offload_params=True): shards; gradients and the AdamW step on the host")
    if rec.get("quant") and fsdp1:
        notes.append("bnb_4bit_quant_storage=bfloat16")
    if rec["model"] == "llama-2-70b-40l":
        notes.append("LlamaConfig of Llama-2-70B's blocks with 40 of its 80 (not a published model)")
    if rec["model"] == "mixtral-small":
        notes.append("MixtralConfig of this shape (not a published model)")
    if rec["model"] == "llama-3.2-1b-untied":
        notes.append("LlamaConfig of Llama-3.2-1B with tie_word_embeddings=False (not a published model)")
    if rec["model"] == "gemma-2-2b":
        notes.append("head_dim 256 (not hidden/heads)")
    base = {
        "source_url": source(),
        "framework": "hf-trainer"
        if rec.get("trainer") or (ds and ds["style"] == "trainer") or fsdp1
        else "hf-accelerate"
        if ds or rec.get("wrap") == "accelerate"
        else "plain-pytorch",
        "model": name,
        "arch": arch,
        "n_layers": layers,
        "hidden": hidden,
        "n_heads": heads,
        "n_kv_heads": kv,
        "ffn_hidden": ffn,
        "mlp": mlp,
        "vocab": vocab,
        "tied_embeddings": str(tied).lower(),
        "n_experts": experts,
        "experts_per_token": topk,
        "params_total": f"{rec['params_total'] / 1e9:.4f}" if rec.get("params_total") else "",
        "task": ("qlora" if rec.get("quant") else "lora") if lora else "full",
        "lora_rank": lora[0] if lora else "",
        "lora_targets": "+".join(SHORT[t] for t in lora[1]) if lora else "",
        "trainable_params": f"{rec['trainable_params'] / 1e6:.3f}" if lora and rec.get("trainable_params") else "",
        "micro_batch": rec["mb"],
        "seq_len": rec["seq"],
        "grad_accum": 1,
        # DeepSpeed's bf16 is what a Trainer's `bf16=True` (Accelerate's
        # mixed_precision bf16) asks of it: amp-bf16 as a user writes it, with
        # the 16-bit weights DeepSpeed keeps
        "precision": "fp8" if rec.get("fp8") else "amp-bf16" if ds and rec["precision"] == "bf16" else rec["precision"],
        "base_weight_bits": rec.get("quant") or (32 if rec["precision"] in ("fp32", "amp-fp16", "amp-bf16") else 16),
        "optimizer": trainer_optimizer(rec) or OPTIMIZER.get(rec["optimizer"], rec["optimizer"]),
        "optimizer_in_backward": "false",
        "activation_checkpointing": "full" if rec["ckpt"] else "none",
        "activation_offload": str(bool(rec.get("offload"))).lower(),
        "attention": "eager" if rec["attn"] == "eager" else "flash",
        "loss": "chunked" if rec.get("liger") else "standard",
        "compile": str(bool(rec.get("compile"))).lower(),
        "num_gpus": rec.get("world_size", 1),
        "sharding": f"zero{ds['stage']}"
        if ds
        else {
            "ddp": "ddp",
            "ddp-view": "ddp",
            "fsdp2": "fsdp-full",
            "fsdp2-offload": "fsdp-full",
            "fsdp2-noreshard": "fsdp-grad-op",
            "fsdp1": "fsdp-full",
            "fsdp1-offload": "fsdp-full",
        }.get(rec.get("wrap"), "none"),
        "tp": 1,
        "pp": 1,
        "cp": 1,
        "offload": "params+optimizer" if rec.get("wrap") in ("fsdp2-offload", "fsdp1-offload") else ds_offload(ds),
        "gpu": "H200",
        "gpu_mem_gib": f"{env['nvml_total'] / GIB:.2f}",
        "quality": "A",
    }
    if rec.get("error") and not rec.get("oom"):
        return
    if rec.get("oom"):
        notes.append("CUDA OOM: " + rec["error"].split(". ")[1][:60])
        yield dict(
            base,
            id=f"{RUN}-{rec['id']}",
            metric="device_used",
            measured_gib=f"{(env['nvml_total'] - env['nvml_before_cuda']) / GIB:.3f}",
            oom="true",
            notes="; ".join(notes),
        )
        return
    for metric, value, suffix in (
        ("max_allocated", rec["max_allocated"], "alloc"),
        ("max_reserved", rec["max_reserved"], "resv"),
        ("device_used", rec["device_used"] - env["nvml_before_cuda"], "smi"),
    ):
        yield dict(
            base,
            id=f"{RUN}-{rec['id']}-{suffix}",
            metric=metric,
            measured_gib=f"{value / GIB:.3f}",
            oom="false",
            notes="; ".join(notes),
        )


# What a case may find in use when it starts: the caching allocator holds
# nothing (`alloc_before`), and the device no more than the context and the
# first matmul's cuBLAS workspace (`nvml_after_first_matmul`).
INHERITED_ALLOC = 64 << 20
INHERITED_DEVICE = 256 << 20


def inherited(rec, env):
    """Why a case's counters include memory an earlier case in the same
    process left behind (None when they do not): bitsandbytes' paged optimizer
    buffers are never freed, a Trainer run can leave tensors allocated,
    DDP's reducer its buckets. Such a case is measured again on its own."""
    if rec.get("alloc_before", 0) > INHERITED_ALLOC:
        return f"{rec['alloc_before'] / GIB:.2f} GiB already allocated when it started"
    extra = rec.get("nvml_before", 0) - env["nvml_after_first_matmul"]
    if extra > INHERITED_DEVICE:
        return f"{extra / GIB:.2f} GiB of device memory already in use when it started"
    return None


def ds_offload(ds):
    """The schema's `offload` of a DeepSpeed case ("none" without one): ZeRO-3
    offloads parameters with the optimizer, ZeRO-2 the optimizer alone."""
    if not (ds and ds.get("offload")):
        return "none"
    return "params+optimizer" if ds["stage"] == 3 else "optimizer"


def trainer_optimizer(rec):
    """The schema's name for the Trainer's `optim` when one was set."""
    return {"paged_adamw_8bit": "paged-adamw-8bit", "paged_adamw_32bit": "paged-adamw"}.get(rec.get("trainer_optim"))


def main(folder):
    global RUN
    RUN = os.path.basename(os.path.normpath(folder))
    out = csv.DictWriter(sys.stdout, fieldnames=HEADER, lineterminator="\n")
    out.writeheader()
    sets = [
        (path, [json.loads(line) for line in open(path)])
        for path in sorted(glob.glob(os.path.join(folder, "*.jsonl")))
    ]
    # a case measured again in a later set stands for its earlier measurement
    later = {rec["id"]: path for path, recs in sets for rec in recs}
    for path, recs in sets:
        # a set run on another machine has its own env-<set>.json
        own = os.path.join(folder, "env-" + os.path.basename(path)[: -len(".jsonl")] + ".json")
        env = json.load(open(own if os.path.exists(own) else os.path.join(folder, "env.json")))
        for rec in recs:
            # a case run in a process of its own carries that process's env
            rec_env = rec.get("env") or env
            if later[rec["id"]] != path:
                print(f"to_csv: {rec['id']} in {os.path.basename(path)} left out: measured again in"
                      f" {os.path.basename(later[rec['id']])}", file=sys.stderr)
                continue
            why = inherited(rec, rec_env)
            if why:
                print(f"to_csv: {rec['id']} in {os.path.basename(path)} left out: {why}", file=sys.stderr)
                continue
            for row in rows(rec, rec_env):
                out.writerow(row)


if __name__ == "__main__":
    main(sys.argv[1])
