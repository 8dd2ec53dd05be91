#!/usr/bin/env python3
"""Writes an nvidia-smi --query-gpu CSV log of about SIZE_MB megabytes (8 GPUs,
one row per GPU per 100 ms, memory rising then steady) for the parse
throughput benchmark in docs/BENCHMARKS.md:
    python3 end2end/bench/gen_smi_csv.py 1000 > /tmp/big.csv
"""
import sys, datetime

size = int(sys.argv[1]) * 1_000_000 if len(sys.argv) > 1 else 1_000_000_000
out = sys.stdout
out.write("timestamp, index, name, utilization.gpu [%], utilization.memory [%], "
          "memory.total [MiB], memory.used [MiB], memory.free [MiB]\n")
t0 = datetime.datetime(2026, 11, 29, 12, 0, 0)
written, i = 0, 0
chunk = []
while written < size:
    ts = (t0 + datetime.timedelta(milliseconds=100 * i)).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
    for g in range(8):
        used = min(70000, 2000 + i // 10) + (g * 37 + i) % 500
        row = f"{ts}, {g}, NVIDIA H100 80GB HBM3, {90 + g}, 40, 81559 MiB, {used} MiB, {81559 - used} MiB\n"
        chunk.append(row)
        written += len(row)
    i += 1
    if len(chunk) > 8192:
        out.write("".join(chunk))
        chunk.clear()
out.write("".join(chunk))
