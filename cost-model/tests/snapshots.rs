//! PyTorch memory snapshots (`torch.cuda.memory._dump_snapshot()`'s pickle),
//! read through the same entry point as every other upload. The fixtures in
//! `tests/fixtures/snapshots/` are written by `make.py` beside them, which
//! also replays each history forwards to the peaks in `expected.json`; the
//! reader walks the same history backwards from the segments, so the two
//! computations must meet.

use cost_model::trace::{self, findings, Format, ParseOptions, Trace};
use serde_json::Value;
use std::path::PathBuf;

const MIB: f64 = 1048576.0;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshots")
}

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(format!("{name}.pickle"))).expect(name)
}

fn read(name: &str) -> Trace {
    trace::parse_reader(&bytes(name)[..], &ParseOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn expected(name: &str) -> Value {
    let text = std::fs::read_to_string(dir().join("expected.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()[name].clone()
}

fn mib(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap() / MIB
}

fn same(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

/// The allocator's counters when the snapshot was taken are its segments'.
fn state_at_the_snapshot(a: &trace::AllocatorStats, d: &Value, name: &str) {
    assert!(
        same(a.current_allocated_mib, mib(d, "allocated_now")),
        "{name}"
    );
    assert!(
        same(a.current_reserved_mib, mib(d, "reserved_now")),
        "{name}"
    );
}

#[test]
fn a_snapshot_with_its_history_reads_to_the_replayed_peaks() {
    for name in ["train", "late", "two_devices"] {
        let t = read(name);
        assert_eq!(t.format, Format::PytorchMemorySnapshot, "{name}");
        let e = expected(name);
        let devices = e["devices"].as_array().unwrap();
        // Its "lines" are the history's entries, over every device.
        let entries: u64 = devices.iter().map(|d| d["entries"].as_u64().unwrap()).sum();
        assert_eq!(t.lines, entries, "{name}");
        assert_eq!(t.format.count_unit(), "history entries");
        // The device whose allocator reserved the most is compared.
        let d = devices
            .iter()
            .max_by(|a, b| mib(a, "peak_reserved").total_cmp(&mib(b, "peak_reserved")))
            .unwrap();
        let a = t.allocator.as_ref().unwrap();
        assert!(
            same(a.peak_allocated_mib, mib(d, "peak_allocated")),
            "{name}: {a:?} vs {d}"
        );
        assert!(
            same(a.peak_reserved_mib, mib(d, "peak_reserved")),
            "{name}: {a:?} vs {d}"
        );
        state_at_the_snapshot(a, d, name);
        // The peaks are not where the snapshot was taken.
        assert!(a.peak_allocated_mib > a.current_allocated_mib, "{name}");
        // What was allocated when the history began.
        let start = t
            .notes
            .iter()
            .find(|(l, _)| l.contains("allocated when the recorded history"))
            .unwrap_or_else(|| panic!("{name}: {:?}", t.notes));
        assert!(
            (start.1 - mib(d, "start_allocated")).abs() < 1e-9,
            "{name}: {start:?}"
        );
        let late = t.warnings.iter().any(|w| w.contains("already allocated"));
        assert_eq!(
            late,
            mib(d, "start_allocated") > 1.0,
            "{name}: {:?}",
            t.warnings
        );
        // Every other device is noted with its own peaks.
        for o in devices.iter().filter(|o| o != &d) {
            let dev = o["device"].as_u64().unwrap();
            let noted = |what: &str| {
                t.notes
                    .iter()
                    .find(|(l, _)| l == &format!("device {dev}: peak {what} in its history"))
                    .map(|n| n.1)
            };
            assert!(
                same(noted("allocated"), mib(o, "peak_allocated")),
                "{name}: {:?}",
                t.notes
            );
            assert!(same(noted("reserved"), mib(o, "peak_reserved")), "{name}");
        }
        // The out-of-memory events the history holds, at the counters then.
        let ooms: Vec<f64> = e["oom"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() / MIB)
            .collect();
        assert_eq!(t.oom.len(), ooms.len(), "{name}");
        for (o, size) in t.oom.iter().zip(ooms) {
            assert!(same(o.tried_to_allocate_mib, size), "{name}: {o:?}");
            assert_eq!(o.free_mib, Some(512.0), "{name}");
            assert!(o.allocated_by_pytorch_mib.unwrap() <= a.peak_allocated_mib.unwrap());
        }
    }
}

#[test]
fn a_snapshot_without_history_gives_its_state_not_peaks() {
    // `_dump_snapshot()` without `_record_memory_history()`, and the list of
    // segments `torch.cuda.memory_snapshot()` returns, pickled.
    for name in ["no_history", "segments_list"] {
        let t = read(name);
        let d = &expected(name)["devices"][0];
        let a = t.allocator.as_ref().unwrap();
        assert_eq!(
            (a.peak_allocated_mib, a.peak_reserved_mib),
            (None, None),
            "{name}"
        );
        state_at_the_snapshot(a, d, name);
        assert!(
            t.warnings
                .iter()
                .any(|w| w.contains("no allocation history")),
            "{name}: {:?}",
            t.warnings
        );
    }
}

#[test]
fn a_snapshot_is_judged_against_a_plan_on_the_reserved_counter() {
    let t = read("train");
    let r = findings::report(&t, Some(&cost_model::Plan::default()));
    let v = r.verdict.expect("a verdict");
    assert_eq!(v.counter, "reserved");
    assert!(same(
        Some(v.gpus[0].measured_mib),
        t.allocator.unwrap().peak_reserved_mib.unwrap()
    ));
}

#[test]
fn broken_or_misnamed_snapshots_are_refused_with_a_reason() {
    let opts = ParseOptions::default();
    let whole = bytes("late");
    // Cut short: the byte where it ends.
    let e = trace::parse_reader(&whole[..whole.len() / 2], &opts).unwrap_err();
    assert!(e.message.contains("the pickle at byte"), "{e}");
    assert!(e.message.contains("truncated"), "{e}");
    // A pickle that is not a snapshot.
    let e = trace::parse_reader(
        &b"\x80\x04\x95\x06\x00\x00\x00\x00\x00\x00\x00]\x94K\x01a."[..],
        &opts,
    )
    .unwrap_err();
    assert!(e.message.contains("not a PyTorch memory snapshot"), "{e}");
    // A snapshot read as another format, and text read as a snapshot.
    let forced = |f| ParseOptions {
        format: Some(f),
        ..ParseOptions::default()
    };
    let e = trace::parse_reader(&whole[..], &forced(Format::NvidiaSmiTable)).unwrap_err();
    assert!(e.message.contains("not nvidia-smi-table output"), "{e}");
    let e = trace::parse(
        "|    0  NVIDIA H100 |\n",
        &forced(Format::PytorchMemorySnapshot),
    )
    .unwrap_err();
    assert_eq!(e.line, Some(1), "{e}");
    // Every cut of a snapshot is read or refused, never a panic.
    for cut in (0..whole.len()).step_by(97) {
        let _ = trace::parse_reader(&whole[..cut], &opts);
    }
    // Every byte flipped in the head, likewise.
    for i in 2..600.min(whole.len()) {
        let mut b = whole.clone();
        b[i] ^= 0x5a;
        let _ = trace::parse_reader(&b[..], &opts);
    }
}
