//! Helpers shared by the integration tests.

use cost_model::estimate::{Breakdown, Estimate, Phase};

/// The largest breakdown of a phase on the first stage.
pub fn phase(e: &Estimate, ph: Phase) -> Breakdown {
    e.stages[0]
        .phases
        .iter()
        .filter(|p| p.phase == ph)
        .map(|p| p.breakdown)
        .max_by_key(|b| b.allocated())
        .unwrap()
}

/// The counters of a phase on the first stage.
#[allow(dead_code)] // not every test binary uses it
pub fn phase_counters(p: &cost_model::Plan, ph: Phase) -> cost_model::estimate::Counters {
    cost_model::estimate(p).unwrap().stages[0]
        .phases
        .iter()
        .find(|x| x.phase == ph)
        .unwrap()
        .counters
}

/// The backward's reserve over its allocated bytes on the first stage: the
/// allocator's share, or more.
#[allow(dead_code)] // not every test binary uses it
pub fn backward_reserve_share(p: &cost_model::Plan) -> f64 {
    let c = phase_counters(p, Phase::Backward);
    c.reserved.as_f64() / c.allocated.as_f64() - 1.0
}

/// The activations the forward's largest point holds on the first stage
/// (bytes).
#[allow(dead_code)] // not every test binary uses it
pub fn forward_activations(plan: &cost_model::Plan) -> f64 {
    phase(&cost_model::estimate(plan).unwrap(), Phase::Forward)
        .activations
        .get() as f64
}

/// The cuBLAS workspaces every phase after the first matmul holds among its
/// temporaries (bytes), on the plan's GPU.
#[allow(dead_code)] // not every test binary uses it
pub fn cublas_workspaces(plan: &cost_model::Plan) -> u64 {
    use cost_model::estimate::{CUBLAS_HANDLES, CUBLAS_WORKSPACE_HOPPER_MIB, CUBLAS_WORKSPACE_MIB};
    let per = if plan.gpu.is_hopper() {
        CUBLAS_WORKSPACE_HOPPER_MIB
    } else {
        CUBLAS_WORKSPACE_MIB
    };
    (CUBLAS_HANDLES * per * (1u64 << 20) as f64) as u64
}

/// LoRA rank 16 on every linear layer over a 16-bit base.
#[allow(dead_code)] // not every test binary uses it
pub fn lora16_all() -> cost_model::plan::Finetune {
    use cost_model::plan::{Finetune, LoraTargets, LoraVariant};
    Finetune::Lora {
        rank: 16,
        targets: LoraTargets::ALL_LINEAR,
        base_bits: 16,
        dropout: false,
        variant: LoraVariant::Lora,
    }
}
