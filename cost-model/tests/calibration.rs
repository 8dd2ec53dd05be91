//! The public calibration cases (../shared/calibration/cases.csv): every row is
//! predicted, and the accuracy may not slip below the recorded level (a ratchet;
//! docs/ACCURACY.md holds the full report and the targets).

use cost_model::calibrate::calibrate;

fn cases() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/calibration/cases.csv"
    );
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e} (the shared/ folder sits beside the checkout)"))
}

#[test]
fn public_cases_hold_the_recorded_accuracy() {
    let r = calibrate(&cases()).unwrap();
    let s = &r.summary;
    assert!(s.n >= 90, "{} cases", s.n);
    // Skipped rows state why (unknown sequence length, an unmodelled optimizer).
    for c in &r.cases {
        if let Some(why) = &c.skipped {
            assert!(!why.is_empty());
        }
    }
    assert!(s.skipped <= 7, "skipped {}", s.skipped);
    let median = s.median_abs_error_pct.unwrap();
    let p90 = s.p90_abs_error_pct.unwrap();
    assert!(median <= 9.0, "median |error| {median} %");
    assert!(p90 <= 22.0, "p90 |error| {p90} %");
    assert!(
        s.oom_detected >= 9,
        "OOM detected {}/{}",
        s.oom_detected,
        s.oom_total
    );
}

#[test]
fn malformed_case_files_are_rejected_with_the_line() {
    assert!(calibrate("").unwrap_err().contains("empty"));
    assert!(calibrate("foo,bar\n1,2\n")
        .unwrap_err()
        .contains("line 1: header has no `id` column"));
    let bad = "id,metric,measured_gib,n_layers,hidden\nx,max_allocated,3,notanumber,4\n";
    let r = calibrate(bad).unwrap();
    assert!(
        r.cases[0].skipped.as_deref().unwrap().contains("line 2"),
        "{:?}",
        r.cases[0].skipped
    );
}
