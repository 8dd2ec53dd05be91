//! Any text as a plan: a plan file, a planner URL's query and a pasted
//! Hugging Face config.json. What loads is estimated, searched, reported and
//! must read back from its planner URL unchanged.
#![no_main]
use cost_model::{hf_config, query, schema, search, Plan};
use libfuzzer_sys::fuzz_target;

fn exercise(plan: &Plan) {
    if cost_model::estimate(plan).is_err() {
        return;
    }
    let _ = cost_model::report::report(plan);
    let _ = search::max_micro_batch(plan);
    let _ = search::max_seq_len(plan);
    let _ = search::fix_ladder(plan);
    // The URL is the first home of plan state: every plan the model accepts
    // comes back from its query unchanged (as the property test
    // `every_valid_plan_round_trips_through_the_url` asserts of random plans).
    assert_eq!(
        query::decode_str(&query::encode(plan)).as_ref(),
        Ok(plan),
        "{}",
        query::encode(plan)
    );
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(plan) = schema::load_plan(text) {
        exercise(&plan);
    }
    if let Ok(plan) = query::decode_str(text) {
        exercise(&plan);
    }
    if let Ok(m) = hf_config::from_config_json(text, "fuzz") {
        let mut plan = Plan::default();
        plan.model = m;
        exercise(&plan);
    }
});
