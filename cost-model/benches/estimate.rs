//! `cargo bench -p cost-model`: one estimate, the searches and the fix ladder.
#![allow(clippy::field_reassign_with_default)] // one field at a time reads best here
use cost_model::plan::{Plan, Sharding};
use cost_model::{estimate, search};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn benches(c: &mut Criterion) {
    let plan = Plan::default();
    c.bench_function("estimate/llama-3.1-8b-8xh100-zero2", |b| {
        b.iter(|| estimate(black_box(&plan)))
    });
    let mut pp = Plan::default();
    pp.model = cost_model::presets::preset("llama-3.1-70b").unwrap().spec();
    pp.parallel.num_gpus = 64;
    pp.parallel.tp = 8;
    pp.parallel.pp = 8;
    pp.parallel.sequence_parallel = true;
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
    let mut mv = Plan::default();
    mv.model = cost_model::presets::preset("llama-4-maverick-17b-128e")
        .unwrap()
        .spec();
    mv.parallel.num_gpus = 64;
    mv.parallel.tp = 8;
    mv.parallel.pp = 8;
    mv.parallel.sequence_parallel = true;
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
