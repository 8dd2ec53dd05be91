//! The CLI's exact interface (other tools depend on it).

use std::process::Command;

fn memplan(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_memplan"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn help_lists_the_subcommands() {
    let (code, out, _) = memplan(&["--help"]);
    assert_eq!(code, 0);
    for sub in ["serve", "estimate", "verify", "calibrate"] {
        assert!(out.contains(sub), "{sub} missing from --help");
    }
}

#[test]
fn example_plan_round_trips_through_estimate() {
    let (code, example, _) = memplan(&["estimate", "--print-example"]);
    assert_eq!(code, 0);
    assert!(example.contains(&format!("\"version\": {}", cost_model::plan::PLAN_VERSION)));
    assert!(
        example.contains("llama-3.1-8b")
            && example.contains("zero2")
            && example.contains("amp-bf16")
    );
    let dir = std::env::temp_dir().join(format!("memplan-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("plan.json");
    std::fs::write(&path, &example).unwrap();
    let (code, json, err) = memplan(&["estimate", path.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["estimate"]["peak"]["device_used"].as_u64().unwrap() > 0);
    assert_eq!(v["estimate"]["fits"], true);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_plans_exit_2_naming_line_and_field() {
    let dir = std::env::temp_dir().join(format!("memplan-cli-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    std::fs::write(&path, "{\n  \"version\": 2,\n  \"bogus\": true\n}").unwrap();
    let (code, _, err) = memplan(&["estimate", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("line 3") && err.contains("bogus"), "{err}");
    // An older schema version is migrated first, so the field is named by path.
    std::fs::write(&path, "{\n  \"version\": 1,\n  \"bogus\": true\n}").unwrap();
    let (code, _, err) = memplan(&["estimate", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("field `bogus`"), "{err}");
    let (_, example, _) = memplan(&["estimate", "--print-example"]);
    std::fs::write(&path, example.replace("\"tp\": 1", "\"tp\": 3")).unwrap();
    let (code, _, err) = memplan(&["estimate", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("model.heads (32) is not divisible by parallel.tp (3)"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn calibrate_json_has_the_documented_shape() {
    let cases = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/calibration/cases.csv"
    );
    let (code, json, err) = memplan(&["calibrate", cases, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let case = &v["cases"][0];
    for k in [
        "id",
        "metric",
        "measured_gib",
        "predicted_gib",
        "error_pct",
        "oom",
        "skipped",
    ] {
        assert!(case.get(k).is_some(), "case key {k}");
    }
    for k in [
        "n",
        "skipped",
        "median_abs_error_pct",
        "p90_abs_error_pct",
        "worst_under_prediction_pct",
        "oom_detected",
        "oom_total",
    ] {
        assert!(v["summary"].get(k).is_some(), "summary key {k}");
    }
}
