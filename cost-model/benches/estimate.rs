//! `cargo bench -p cost-model`: one estimate, the searches and the fix ladder.
#![allow(clippy::field_reassign_with_default)] // one field at a time reads best here
use cost_model::plan::{Plan, Sharding};
use cost_model::{estimate, search};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

/// The preset over 64 GPUs: TP 8 with sequence parallelism × PP 8.
fn tp8_pp8(preset: &str) -> Plan {
    let mut p = Plan::default();
    p.model = cost_model::presets::preset(preset).unwrap().spec();
    p.parallel.num_gpus = 64;
    p.parallel.tp = 8;
    p.parallel.pp = 8;
    p.parallel.sequence_parallel = true;
    p
}

fn benches(c: &mut Criterion) {
    let plan = Plan::default();
    c.bench_function("estimate/llama-3.1-8b-8xh100-zero2", |b| {
        b.iter(|| estimate(black_box(&plan)))
    });
    let pp = tp8_pp8("llama-3.1-70b");
    c.bench_function("estimate/llama-3.1-70b-tp8-pp8", |b| {
        b.iter(|| estimate(black_box(&pp)))
    });
    // An MoE model with dense blocks: every per-block term is worked out for
    // both kinds of block.
    let mut moe = Plan::default();
    moe.model = cost_model::presets::preset("deepseek-moe-16b")
        .unwrap()
        .spec();
    moe.parallel.sharding = Sharding::Zero3;
    c.bench_function("estimate/deepseek-moe-16b-8xh100-zero3", |b| {
        b.iter(|| estimate(black_box(&moe)))
    });
    let mv = tp8_pp8("llama-4-maverick-17b-128e");
    c.bench_function("estimate/llama-4-maverick-tp8-pp8", |b| {
        b.iter(|| estimate(black_box(&mv)))
    });
    c.bench_function("search/max_micro_batch", |b| {
        b.iter(|| search::max_micro_batch(black_box(&plan)))
    });
    c.bench_function("search/max_seq_len", |b| {
        b.iter(|| search::max_seq_len(black_box(&plan)))
    });
    let mut oom = Plan::default();
    oom.parallel.sharding = Sharding::Ddp;
    oom.training.micro_batch = 8;
    c.bench_function("search/fix_ladder", |b| {
        b.iter(|| search::fix_ladder(black_box(&oom)))
    });
}

criterion_group!(g, benches);
criterion_main!(g);
