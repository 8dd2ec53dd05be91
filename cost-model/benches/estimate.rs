//! `cargo bench -p cost-model`: one estimate, the searches, the fix ladder and
//! the layout search.
#![allow(clippy::field_reassign_with_default)] // one field at a time reads best here
use cost_model::plan::{Plan, Sharding};
use cost_model::{estimate, layouts, query, search};
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
    // A torchtitan plan whose ladder tries every 4th block recomputed (and
    // takes it) before every block.
    let every_k = query::decode_str(
        "?model=llama-3.1-8b&gpus=8&mb=5&ga=1&seq=2048&fw=torchtitan&shard=fsdp-full&ckpt=none",
    )
    .unwrap();
    c.bench_function("search/fix_ladder_torchtitan_every_k", |b| {
        b.iter(|| search::fix_ladder(black_box(&every_k)))
    });
    // The layout search (DESIGN.md §4's auto-planner): the planner's default
    // plan, a 70B full fine-tune that does not fit 8 GPUs under the Trainer,
    // and Megatron-LM over 64 GPUs (TP, PP and interleaving in the space; at
    // 128K tokens context parallelism too).
    for (name, q) in LAYOUT_PLANS {
        let p = query::decode_str(q).unwrap();
        c.bench_function(&format!("layouts/{name}"), |b| {
            b.iter(|| layouts::search_layouts(black_box(&p), layouts::LAYOUTS_SHOWN))
        });
    }
}

/// The layout search's benchmark plans, as planner URLs.
const LAYOUT_PLANS: [(&str, &str); 4] = [
    ("default-8xh100", ""),
    (
        "llama-3.1-70b-8xh100-trainer",
        "?model=llama-3.1-70b&gpus=8&mb=4&ga=8",
    ),
    (
        "llama-3.1-70b-64xh100-megatron",
        "?model=llama-3.1-70b&gpus=64&fw=megatron&mb=1&ga=16&seq=8192",
    ),
    (
        "llama-3.1-70b-64xh100-megatron-128k",
        "?model=llama-3.1-70b&gpus=64&fw=megatron&shard=zero1&mb=1&ga=16&seq=131072&ckpt=full",
    ),
];

criterion_group!(g, benches);
criterion_main!(g);
