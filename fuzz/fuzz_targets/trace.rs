//! Any bytes as an uploaded trace: read, then judged against the example plan
//! and a pipelined one. Must return a report or a typed error, never panic.
#![no_main]
use cost_model::trace::{findings, parse_reader, ParseOptions};
use cost_model::Plan;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(t) = parse_reader(data, &ParseOptions::default()) else {
        return;
    };
    let plan = Plan::default();
    let _ = serde_json::to_string(&findings::report(&t, None));
    let _ = serde_json::to_string(&findings::report(&t, Some(&plan)));
    if let Ok(staged) = cost_model::query::apply(&plan, "pp", "4") {
        let _ = serde_json::to_string(&findings::report(&t, Some(&staged)));
    }
});
