//! Plans written under an older schema keep loading: a version-1 plan file
//! (as `memplan estimate --print-example` wrote it before schema 2) migrates.

use cost_model::plan::{Offload, OffloadDevice, PLAN_VERSION};
use cost_model::Plan;

const V1: &str = include_str!("fixtures/plan-v1.json");

#[test]
fn a_version_1_plan_migrates_to_the_current_schema() {
    assert!(V1.contains("\"version\": 1"));
    let p = Plan::from_json(V1).expect("v1 plan loads");
    assert_eq!(p.version, PLAN_VERSION);
    // v1 `"offload": "optimizer"` meant optimizer states to host RAM.
    assert_eq!(p.parallel.offload, Offload::OPTIMIZER_CPU);
    assert_eq!(p.parallel.offload.params, OffloadDevice::None);
    assert_eq!(p.training.micro_batch, 2);
    assert_eq!(p.model.name, "llama-3.1-8b");
    let e = cost_model::estimate(&p).expect("migrated plan estimates");
    assert!(e.host_offload.get() > 0);
    // Saving it again writes the current version, which loads unchanged.
    let again = Plan::from_json(&serde_json::to_string(&p).unwrap()).unwrap();
    assert_eq!(again, p);
}

#[test]
fn a_plan_file_saved_with_a_byte_order_mark_loads() {
    // Windows editors save UTF-8 with a byte-order mark.
    let p = Plan::from_json(&format!("\u{feff}{V1}")).expect("BOM skipped");
    assert_eq!(p, Plan::from_json(V1).unwrap());
}

#[test]
fn a_version_1_plan_with_a_bad_offload_names_the_field() {
    let bad = V1.replace("\"offload\": \"optimizer\"", "\"offload\": \"gpu\"");
    let e = Plan::from_json(&bad).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("parallel.offload"), "{e}");
}
