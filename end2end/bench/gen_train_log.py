#!/usr/bin/env python3
"""Writes a Trainer-style training log of about SIZE_MB megabytes — one
`{'loss': …, 'grad_norm': …, 'learning_rate': …, 'epoch': …}` dict per step,
every 50th step a `Max memory allocated: … GiB` print, an OOM message at the
end — for the log-reading benchmark in docs/BENCHMARKS.md:
    python3 end2end/bench/gen_train_log.py 1000 > /tmp/train.log
"""
import sys

size = int(sys.argv[1]) * 1_000_000 if len(sys.argv) > 1 else 1_000_000_000
out = sys.stdout
written, step, chunk = 0, 0, []
while written < size:
    line = (f"{{'loss': {2.5 - (step % 1000) / 1000:.4f}, 'grad_norm': {0.5 + (step % 7) / 10:.3f}, "
            f"'learning_rate': 2e-05, 'epoch': {step / 1000:.3f}}}\n")
    if step % 50 == 0:
        line += f"Max memory allocated: {20 + (step % 300) / 100:.2f} GiB\n"
    chunk.append(line)
    written += len(line)
    step += 1
    if len(chunk) >= 10_000:
        out.write("".join(chunk))
        chunk = []
out.write("".join(chunk))
out.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
          "capacity of 79.19 GiB of which 1.05 GiB is free. Including non-PyTorch memory, this process has "
          "78.13 GiB memory in use. Of the allocated memory 75.12 GiB is allocated by PyTorch, and 1.98 GiB "
          "is reserved by PyTorch but unallocated.\n")
