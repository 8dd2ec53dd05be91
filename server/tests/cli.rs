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
    for sub in ["serve", "estimate", "verify", "calibrate", "layouts"] {
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
    // The text form says what an offload needs of the host, and only then.
    let (_, text, _) = memplan(&["estimate", path.to_str().unwrap()]);
    assert!(!text.contains("offload needs"), "{text}");
    assert!(!text.contains("vision encoder"), "{text}");
    // A vision encoder is named in the headline.
    let vl = example.replace(
        "\"sliding_window\": 0",
        "\"sliding_window\": 0,\n    \"vision_params\": 676550144",
    );
    assert_ne!(vl, example);
    std::fs::write(&path, &vl).unwrap();
    let (code, text, err) = memplan(&["estimate", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.starts_with("llama-3.1-8b (with a 0.68 B vision encoder, frozen) on 8 × "),
        "{text}"
    );
    std::fs::write(&path, &example).unwrap();
    let offloaded = example.replace("\"optimizer\": \"none\"", "\"optimizer\": \"cpu\"");
    assert_ne!(offloaded, example);
    std::fs::write(&path, &offloaded).unwrap();
    let (_, text, _) = memplan(&["estimate", path.to_str().unwrap()]);
    // Llama-3.1-8B under ZeRO-2 over 8 GPUs: 18 bytes a parameter over 8 ranks.
    assert!(
        text.contains("offload needs per GPU: 16.83 GiB host RAM, 0 B NVMe"),
        "{text}"
    );
    // Pure bf16 under the Trainer's FSDP: a note that Accelerate keeps the
    // weights in fp32 under --bf16 (and in the JSON, `framework_upcasts`);
    // none for the example's AMP.
    assert!(!text.contains("note:"), "{text}");
    let pure = example
        .replace("\"zero2\"", "\"fsdp-full\"")
        .replace("\"amp-bf16\"", "\"bf16\"");
    std::fs::write(&path, &pure).unwrap();
    let (_, text, _) = memplan(&["estimate", path.to_str().unwrap()]);
    assert!(
        text.contains("note: The Trainer's --fp16, its --bf16 under FSDP"),
        "{text}"
    );
    let (_, json, _) = memplan(&["estimate", path.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["estimate"]["framework_upcasts"], true);
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
    assert!(!err.contains("warning"), "{err}");
    // A row whose columns disagree with its params_total: a warning on
    // standard error, the JSON on standard output unchanged in shape.
    let text = std::fs::read_to_string(cases).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let pi = header.split(',').position(|h| h == "params_total").unwrap();
    let mut row: Vec<&str> = lines.next().unwrap().split(',').collect();
    row[pi] = "8.0";
    let dir = std::env::temp_dir().join(format!("memplan-cal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("one.csv");
    std::fs::write(&path, format!("{header}\n{}\n", row.join(","))).unwrap();
    let (code, json, err) = memplan(&["calibrate", path.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: line 2") && err.contains("params_total"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["summary"]["n"], 1);
    let _ = std::fs::remove_dir_all(&dir);
}

fn fixture(name: &str) -> String {
    format!(
        "{}/../../shared/fixtures/traces/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn verify_prints_the_documented_json() {
    let (code, out, err) = memplan(&["verify", &fixture("smi_csv_04.txt"), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["format"], "nvidia-smi-csv");
    assert_eq!(v["gpus"][0]["index"], 0);
    assert_eq!(v["gpus"][0]["name"], "NVIDIA RTX A6000");
    assert_eq!(v["gpus"][0]["total_mib"], 49140.0);
    assert_eq!(v["gpus"][0]["peak_used_mib"], 25073.0);
    assert_eq!(v["gpus"][0]["samples"], 473);
    assert_eq!(v["oom"], serde_json::json!([]));
    assert!(v["allocator"].is_null() && v["verdict"].is_null());
    assert!(v["findings"].is_array());

    let (code, out, _) = memplan(&["verify", &fixture("oom_13.txt"), "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["oom"][0]["gpu"], 5);
    assert!(v["oom"][0]["tried_to_allocate_mib"].as_f64().unwrap() > 0.0);

    // A gzip-compressed log reads as its text.
    let dir = std::env::temp_dir().join(format!("memplan-gz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gpu.csv.gz");
    {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::default(),
        );
        e.write_all(
            std::fs::read_to_string(fixture("smi_csv_04.txt"))
                .unwrap()
                .as_bytes(),
        )
        .unwrap();
        e.finish().unwrap();
    }
    let (code, out, err) = memplan(&["verify", path.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["gpus"][0]["peak_used_mib"], 25073.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verify_with_a_plan_gives_a_verdict_and_exit_code() {
    let dir = std::env::temp_dir().join(format!("memplan-cli-verify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("plan.json");
    let (_, example, _) = memplan(&["estimate", "--print-example"]);
    std::fs::write(&plan, &example).unwrap();
    // 8 GPUs near 80 GiB used against a plan predicting far less: under-estimated, exit 1.
    let (code, out, _) = memplan(&[
        "verify",
        &fixture("smi_table_07.txt"),
        "--plan",
        plan.to_str().unwrap(),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verdict"]["counter"], "device_used");
    let overall = v["verdict"]["overall"].as_str().unwrap().to_string();
    assert_eq!(
        code,
        if overall == "under-estimated" { 1 } else { 0 },
        "{overall}"
    );
    assert_eq!(v["verdict"]["gpus"].as_array().unwrap().len(), 8);
    // As text: a line per GPU, then the verdict. Under the same plan in two
    // pipeline stages each GPU meets its own stage's peak, and the line says
    // which.
    let verify_07 = |plan: &std::path::Path| {
        let (_, out, err) = memplan(&[
            "verify",
            &fixture("smi_table_07.txt"),
            "--plan",
            plan.to_str().unwrap(),
        ]);
        format!("{out}{err}")
    };
    let out = verify_07(&plan);
    assert!(
        out.contains("  GPU 0: under-estimated: device_used measured 80407 MiB vs "),
        "{out}"
    );
    let mut staged: serde_json::Value = serde_json::from_str(&example).unwrap();
    staged["parallel"]["pp"] = 2.into();
    staged["training"]["grad_accum"] = 8.into();
    let staged_plan = dir.join("staged.json");
    std::fs::write(&staged_plan, staged.to_string()).unwrap();
    let out = verify_07(&staged_plan);
    assert!(
        out.contains("  GPU 3 (pipeline stage 0): ")
            && out.contains("  GPU 4 (pipeline stage 1): "),
        "{out}"
    );
    // Unknown input, unknown format: exit 2 with the reason.
    let junk = dir.join("junk.txt");
    std::fs::write(&junk, "hello\nworld\n").unwrap();
    let (code, _, err) = memplan(&["verify", junk.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("known formats"), "{err}");
    let (code, _, err) = memplan(&["verify", junk.to_str().unwrap(), "--format", "excel"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("unknown --format") && err.contains("nvidia-smi-csv"),
        "{err}"
    );
    // A headerless CSV with its columns named.
    let (code, out, err) = memplan(&[
        "verify",
        &fixture("smi_csv_09.txt"),
        "--json",
        "--columns",
        "index,name,utilization.gpu,memory.total,memory.used,temperature.gpu",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["gpus"][1]["peak_used_mib"], 23907.0);
    // A processes-only log (`--query-compute-apps`): listed in the summary,
    // and judged against the plan.
    let apps = dir.join("apps.csv");
    std::fs::write(
        &apps,
        "pid, process_name, used_gpu_memory [MiB]\n4242, python, 79000 MiB\n",
    )
    .unwrap();
    let (code, out, err) = memplan(&[
        "verify",
        apps.to_str().unwrap(),
        "--plan",
        plan.to_str().unwrap(),
    ]);
    assert!(
        out.contains("process 4242 on an unnamed GPU: 79000 MiB python"),
        "{out}{err}"
    );
    assert!(
        out.contains("verdict: ") && out.contains("processes"),
        "{out}"
    );
    assert!(code == 0 || code == 1, "{code}: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `memplan … | head`: the reader goes away before the output is written.
/// The command stops quietly with SIGPIPE's status instead of panicking.
#[test]
fn a_closed_pipe_on_standard_output_ends_the_command_quietly() {
    let cases = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/calibration/cases.csv"
    );
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures/traces/smi_csv_03.txt"
    );
    let runs: [&[&str]; 4] = [
        &["estimate", "--print-example"],
        &["calibrate", cases],
        &["calibrate", cases, "--json"],
        &["verify", trace],
    ];
    for args in runs {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_memplan"))
            .args(args)
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn layouts_lists_the_fastest_layouts_that_fit() {
    let dir = std::env::temp_dir().join(format!("memplan-layouts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut p = cost_model::Plan {
        model: cost_model::presets::preset("llama-3.1-70b").unwrap().spec(),
        ..Default::default()
    };
    p.training.micro_batch = 4;
    p.training.grad_accum = 8;
    let path = dir.join("plan.json");
    std::fs::write(&path, serde_json::to_string(&p).unwrap()).unwrap();
    let (code, out, err) = memplan(&["layouts", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("layouts considered"), "{out}");
    assert!(
        out.contains("ZeRO-3 · full recomputation · optimizer on CPU"),
        "{out}"
    );
    let (code, json, _) = memplan(&["layouts", path.to_str().unwrap(), "--json", "--top", "2"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["best"].as_array().unwrap().len(), 2);
    assert!(v["considered"].as_u64().unwrap() >= v["fitting"].as_u64().unwrap());
    // Nothing fits: exit code 1; a broken file: 2, naming the line.
    let mut big = cost_model::Plan {
        model: cost_model::presets::preset("llama-3.1-405b")
            .unwrap()
            .spec(),
        gpu: cost_model::gpu::gpu("rtx3060-12gb").unwrap(),
        ..Default::default()
    };
    big.parallel.num_gpus = 1;
    big.parallel.sharding = cost_model::plan::Sharding::None;
    std::fs::write(&path, serde_json::to_string(&big).unwrap()).unwrap();
    let (code, out, _) = memplan(&["layouts", path.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    std::fs::write(&path, "{\"version\": 2,\n").unwrap();
    let (code, _, err) = memplan(&["layouts", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("line 2"), "{err}");
}
