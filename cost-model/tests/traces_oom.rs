//! Every PyTorch OOM fixture in ../shared/fixtures/traces parses to the figures it states.

use cost_model::trace::oom::{parse, OomEvent};

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/../../shared/fixtures/traces/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const GIB: f64 = 1024.0;

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 0.01)
}

fn first(name: &str) -> OomEvent {
    let ev = parse(&fixture(name));
    assert!(!ev.is_empty(), "{name}: no OOM found");
    ev[0].clone()
}

#[test]
fn messages_without_figures_are_found_and_state_nothing() {
    for name in ["oom_01.txt", "oom_03.txt"] {
        let ev = parse(&fixture(name));
        assert_eq!(ev.len(), 1, "{name}: {ev:?}");
        let e = &ev[0];
        assert_eq!(e.tried_to_allocate_mib, None);
        assert_eq!(e.capacity_mib, None);
        assert_eq!(e.reserved_by_pytorch_mib, None);
    }
}

#[test]
fn pytorch_1_x_form() {
    let e = first("oom_05.txt");
    assert_eq!(e.gpu, Some(0));
    assert!(close(e.tried_to_allocate_mib, 96.0));
    assert!(close(e.capacity_mib, 5.81 * GIB));
    assert!(close(e.allocated_by_pytorch_mib, 4.66 * GIB));
    assert!(close(e.free_mib, 77.5));
    assert!(close(e.reserved_by_pytorch_mib, 4.68 * GIB));
    let e = first("oom_07.txt");
    assert!(close(e.tried_to_allocate_mib, 160.0));
    assert!(close(e.capacity_mib, 79.35 * GIB));
    assert!(close(e.allocated_by_pytorch_mib, 78.58 * GIB));
    assert!(close(e.free_mib, 145.19));
    assert!(close(e.reserved_by_pytorch_mib, 78.58 * GIB));
}

#[test]
fn pytorch_2_x_form_including_the_capacty_typo_hip_and_ranks() {
    // (file, gpu, tried, capacity, free, allocated, reserved-but-unallocated), MiB.
    type Case = (&'static str, Option<u32>, f64, f64, f64, f64, f64);
    let cases: [Case; 6] = [
        (
            "oom_09.txt",
            Some(0),
            98.0,
            79.33 * GIB,
            45.81,
            78.32 * GIB,
            53.99,
        ),
        (
            "oom_11.txt",
            Some(0),
            22.0,
            23.65 * GIB,
            11.06,
            22.90 * GIB,
            194.87,
        ),
        (
            "oom_13.txt",
            Some(5),
            56.0,
            79.33 * GIB,
            49.81,
            77.92 * GIB,
            150.18,
        ),
        (
            "oom_15.txt",
            Some(0),
            16.0 * GIB,
            15.24 * GIB,
            15.09 * GIB,
            0.0,
            0.0,
        ),
        (
            "oom_17.txt",
            Some(0),
            2.0,
            287.98 * GIB,
            275.86 * GIB,
            1017.01,
            54.99,
        ),
        (
            "oom_19.txt",
            Some(0),
            32.0 * GIB,
            23.69 * GIB,
            14.12 * GIB,
            9.00 * GIB,
            982.5 / 1024.0,
        ),
    ];
    for (name, gpu, tried, cap, free, alloc, unalloc) in cases {
        let e = first(name);
        assert_eq!(e.gpu, gpu, "{name}");
        assert!(
            close(e.tried_to_allocate_mib, tried),
            "{name}: tried {:?}",
            e.tried_to_allocate_mib
        );
        assert!(
            close(e.capacity_mib, cap),
            "{name}: capacity {:?}",
            e.capacity_mib
        );
        assert!(close(e.free_mib, free), "{name}: free {:?}", e.free_mib);
        assert!(
            close(e.allocated_by_pytorch_mib, alloc),
            "{name}: allocated {:?}",
            e.allocated_by_pytorch_mib
        );
        assert!(
            close(e.reserved_by_pytorch_mib, alloc + unalloc),
            "{name}: reserved {:?}",
            e.reserved_by_pytorch_mib
        );
    }
}
