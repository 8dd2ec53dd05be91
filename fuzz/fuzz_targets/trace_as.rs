//! Any bytes read as a format the user named (`--format`, the upload's
//! `format` field), skipping detection: the first byte picks the format (and,
//! for a headerless `--query-gpu` CSV, whether columns are given), the rest
//! is the trace. Must return a report or a typed error, never panic.
#![no_main]
use cost_model::trace::{findings, parse_reader, Format, ParseOptions};
use cost_model::Plan;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let format = Format::ALL[pick as usize % Format::ALL.len()];
    let csv_columns = (pick >= 128).then(|| {
        ["index", "name", "memory.total", "memory.used"]
            .map(String::from)
            .to_vec()
    });
    let opts = ParseOptions {
        format: Some(format),
        csv_columns,
    };
    let Ok(t) = parse_reader(text, &opts) else {
        return;
    };
    let _ = serde_json::to_string(&findings::report(&t, Some(&Plan::default())));
});
