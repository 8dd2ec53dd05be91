//! Every public fixture in `shared/fixtures/traces/` (INDEX.md says where
//! each came from) either parses to the figures it contains — asserted here —
//! or is refused with a stated reason.

use cost_model::trace::{self, Format, ParseOptions, Trace};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/traces")
}

fn read(name: &str) -> String {
    String::from_utf8_lossy(&std::fs::read(dir().join(name)).expect(name)).into_owned()
}

/// Every fixture, as `(file name, text)`.
fn fixtures() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".txt"))
        .map(|n| {
            let text = read(&n);
            (n, text)
        })
        .collect();
    v.sort();
    assert!(v.len() >= 58, "{}", v.len());
    v
}

/// `npu-smi info` as version 23.0 lays it out (the banner, the two header
/// rows, an NPU row and a chip row per NPU, the process table): two 910B3,
/// training on NPU 1 (illustrative figures, not a measured run).
const NPU_SMI: &str = "+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.rc2                 Version: 23.0.rc2                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.2        35                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3162 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | OK            | 380.5       41                0    / 0             |
| 0                         | 0000:C2:00.0  | 87          0    / 0          58844/ 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| No running processes found in NPU 0                                                            |
+===========================+===============+====================================================+
| 1       0                 | 182365        | python3.9                | 55629                   |
+===========================+===============+====================================================+
";

/// Outputs of tools the public fixtures do not cover, written as the tools
/// print them (each reader's test cites the source): read through the same
/// copy, paste and launcher rewrites as the fixtures.
fn samples() -> Vec<(String, String)> {
    [
        (
            "axolotl usage lines (0.11 and earlier)",
            "[2024-05-01 10:00:30,123] [INFO] [axolotl.load_model:794] [PID:1234] [RANK:0] GPU memory usage after model load: 3.843GB (+0.292GB cache, +0.498GB misc)\n\
             [2024-05-01 10:05:00,123] [INFO] [axolotl.utils.callbacks.on_step_end:124] [PID:1234] [RANK:0] GPU memory usage while training: 15.472GB (+4.113GB cache, +0.602GB misc)\n",
        ),
        (
            "axolotl usage lines (0.12 and later)",
            "[DEBUG] [axolotl.loaders.model:275] [PID:99] Memory usage after model load 14.210GB (+14.250GB allocated, +15.000GB reserved)\n",
        ),
        (
            "axolotl 0.12 metrics",
            "{'loss': 1.1, 'grad_norm': 0.4, 'learning_rate': 2e-05, 'memory/max_mem_active(gib)': 17.51, 'memory/max_mem_allocated(gib)': 17.48, 'memory/device_mem_reserved(gib)': 19.94, 'epoch': 0.2}\n",
        ),
        (
            "verl memory lines",
            "(WorkerDict pid=4242) dp actor After update_policy, memory allocated (GB): 18.25, memory reserved (GB): 52.50, device memory used/total (GB): 70.00/79.25\n",
        ),
        (
            "Transformers docs print",
            "Time: 57.82\nSamples/second: 8.86\nGPU memory occupied: 14949 MB.\n",
        ),
        (
            "Composer MemoryMonitor",
            "[batch=10/1000]:\n\t Train memory/peak_allocated_mem: 33.477\n\t Train memory/peak_reserved_mem: 40.647\n",
        ),
        (
            "dcgm-exporter page",
            "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n# TYPE DCGM_FI_DEV_FB_USED gauge\n\
             DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-604a\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"node1\"} 59870\n\
             DCGM_FI_DEV_FB_FREE{gpu=\"0\",UUID=\"GPU-604a\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"node1\"} 21211\n",
        ),
        ("npu-smi info", NPU_SMI),
        (
            "a Python session",
            ">>> import torch\n>>> torch.cuda.max_memory_allocated()\n15032385536\n\
             >>> round(torch.cuda.max_memory_reserved() / 2**30, 2)\n15.5\n",
        ),
        (
            "dcgmi dmon",
            "#Entity   FBTTL      FBFRE      FBUSD\nID\nGPU 0     81559      2233       78795\nGPU 1     81559      81020      0\n",
        ),
    ]
    .into_iter()
    .map(|(n, t)| (n.to_string(), t.to_string()))
    .collect()
}

/// The whole report a text reads to, or its refusal: what a rewritten
/// fixture must read to again.
fn report_json(text: &str) -> String {
    match trace::parse(text, &ParseOptions::default()) {
        Ok(t) => serde_json::to_string(&trace::findings::report(&t, None)).unwrap(),
        Err(e) => format!("refused: {e}"),
    }
}

fn parse(name: &str) -> Trace {
    trace::parse(&read(name), &ParseOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn refused(name: &str) -> String {
    match trace::parse(&read(name), &ParseOptions::default()) {
        Ok(t) => panic!("{name} should be refused, got {:?}", t.format),
        Err(e) => e.to_string(),
    }
}

/// Why a text is not read, when it must not be.
fn refusal(text: &str) -> trace::TraceError {
    match trace::parse(text, &ParseOptions::default()) {
        Ok(t) => panic!("should be refused, got {:?}", t.format),
        Err(e) => e,
    }
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.map(|a| (a - b).abs() <= 0.01 * b.abs().max(1.0))
        .unwrap_or(false)
}

/// (file, [used, total] per GPU in index order, [gpu, used, total] per MIG
/// instance, processes listed with memory, their MiB summed) — read off the
/// files independently with regular expressions.
type TableCase = (
    &'static str,
    &'static [[u32; 2]],
    &'static [[u32; 3]],
    usize,
    u32,
);

const TABLES: &[TableCase] = &[
    ("smi_table_01.txt", &[[2, 81559]], &[], 0, 0),
    (
        "smi_table_03.txt",
        &[[24238, 24576], [16190, 24576], [13152, 24576]],
        &[],
        12,
        53568,
    ),
    (
        "smi_table_05.txt",
        &[[11015, 24576], [9459, 24576]],
        &[],
        5,
        20453,
    ),
    (
        "smi_table_06.txt",
        &[
            [22377, 81920],
            [15995, 81920],
            [16122, 81920],
            [15995, 81920],
            [15995, 81920],
            [15995, 81920],
            [15995, 81920],
            [15947, 81920],
        ],
        &[],
        10,
        134396,
    ),
    (
        "smi_table_07.txt",
        &[
            [80407, 81920],
            [73999, 81920],
            [74149, 81920],
            [73987, 81920],
            [59741, 81920],
            [59787, 81920],
            [59829, 81920],
            [59743, 81920],
        ],
        &[],
        8,
        541618,
    ),
    (
        "smi_table_08.txt",
        &[
            [74053, 81920],
            [74315, 81920],
            [74269, 81920],
            [74301, 81920],
            [74351, 81920],
            [74457, 81920],
            [74485, 81920],
            [74203, 81920],
        ],
        &[],
        0,
        0,
    ),
    (
        "smi_table_12.txt",
        &[
            [65759, 81559],
            [65785, 81559],
            [68925, 81559],
            [68513, 81559],
            [59785, 81559],
            [62865, 81559],
            [59993, 81559],
            [59511, 81559],
        ],
        &[],
        8,
        510872,
    ),
    ("smi_table_13.txt", &[[60787, 81559]], &[], 1, 60570),
    (
        "smi_table_14.txt",
        &[[9661, 81920], [9661, 81920], [9663, 81920], [9663, 81920]],
        &[],
        4,
        38608,
    ),
    (
        "smi_table_15.txt",
        &[
            [1, 81559],
            [1, 81559],
            [1, 81559],
            [1, 81559],
            [1, 81559],
            [1, 81559],
            [1, 81559],
            [1, 81559],
        ],
        &[],
        0,
        0,
    ),
    (
        "smi_table_16.txt",
        &[
            [1, 16384],
            [1, 16384],
            [1, 16384],
            [1, 16384],
            [1, 16384],
            [1, 16384],
            [1, 16384],
            [1, 16384],
        ],
        &[],
        0,
        0,
    ),
    ("smi_table_17.txt", &[[0, 2000]], &[], 0, 0),
    ("smi_table_18.txt", &[[2, 32607]], &[], 0, 0),
    (
        "smi_table_19.txt",
        &[[1, 81920], [1, 81920], [1, 81920], [1, 81920]],
        &[],
        0,
        0,
    ),
    ("smi_table_20.txt", &[[0, 16160]], &[], 0, 0),
    ("smi_table_22.txt", &[[1597, 2048]], &[], 6, 1323),
    ("smi_table_24.txt", &[[0, 16160]], &[], 0, 0),
    (
        "smi_table_26.txt",
        &[],
        &[[1, 14366, 19968], [1, 9880, 19968], [1, 13, 19968]],
        0,
        0,
    ),
    (
        "smi_table_28.txt",
        &[[31186, 40960], [425, 40960]],
        &[],
        3,
        31588,
    ),
];

#[test]
fn nvidia_smi_tables() {
    for (name, gpus, mig, nproc, proc_sum) in TABLES {
        let t = parse(name);
        assert_eq!(t.format, Format::NvidiaSmiTable, "{name}");
        let whole: Vec<_> = t.gpus.iter().filter(|g| g.mig.is_none()).collect();
        assert_eq!(whole.len(), gpus.len(), "{name}: GPUs");
        for (g, [used, total]) in whole.iter().zip(gpus.iter()) {
            assert_eq!(
                g.peak_used_mib,
                Some(*used as f64),
                "{name} GPU {}",
                g.index
            );
            assert_eq!(g.total_mib, Some(*total as f64), "{name} GPU {}", g.index);
            assert!(
                g.name.as_deref().is_some_and(|n| !n.is_empty()),
                "{name}: name"
            );
            assert_eq!(g.samples, 1);
        }
        let inst: Vec<_> = t.gpus.iter().filter(|g| g.mig.is_some()).collect();
        assert_eq!(inst.len(), mig.len(), "{name}: MIG instances");
        for (g, [gpu, used, total]) in inst.iter().zip(mig.iter()) {
            assert_eq!(
                (g.index, g.peak_used_mib, g.total_mib),
                (*gpu, Some(*used as f64), Some(*total as f64))
            );
        }
        let with_mem: Vec<_> = t
            .processes
            .iter()
            .filter(|p| p.used_mib.is_some())
            .collect();
        assert_eq!(
            with_mem.len(),
            *nproc,
            "{name}: processes {:?}",
            t.processes
        );
        let sum: f64 = with_mem.iter().filter_map(|p| p.used_mib).sum();
        assert_eq!(sum, *proc_sum as f64, "{name}: process memory");
    }
    // Details: the one-GPU capture of GPU 7, truncated names, process rows.
    let t = parse("smi_table_13.txt");
    assert_eq!(t.gpus[0].index, 7);
    let t = parse("smi_table_07.txt");
    assert_eq!(t.gpus[0].name.as_deref(), Some("NVIDIA A800 80G..."));
    let t = parse("smi_table_03.txt");
    let g = t.processes.iter().find(|p| p.pid == Some(68435)).unwrap();
    assert_eq!(
        (g.gpu, g.name.as_str(), g.used_mib),
        (Some(1), "gunicorn: worker [intent_api:app]", Some(2928.0))
    );
    let t = parse("smi_table_22.txt");
    assert!(t.processes.iter().any(|p| p.kind.as_deref() == Some("C+G")));
    // CRLF file: same figures as if it had LF.
    assert!(read("smi_table_12.txt").contains("\r\n"));
    // The Processes section alone, as people paste it: the same processes
    // as the whole table gives.
    let whole = read("smi_table_28.txt");
    let section = &whole[whole.find("| Processes:").unwrap()..];
    let t = parse_text(section);
    assert_eq!(t.format, Format::NvidiaSmiTable);
    assert!(t.gpus.is_empty());
    assert_eq!(t.processes, parse("smi_table_28.txt").processes);
    assert_eq!(t.processes.len(), 3);
}

#[test]
fn concatenated_snapshots_become_a_time_series() {
    let one = read("smi_table_12.txt");
    let many = format!(
        "{one}\n{}",
        one.replace("65759MiB", "70001MiB")
            .replace("19:25:22", "19:25:52")
    );
    let t = trace::parse(&many, &ParseOptions::default()).unwrap();
    let g0 = &t.gpus[0];
    assert_eq!(g0.samples, 2);
    assert_eq!(g0.peak_used_mib, Some(70001.0));
    assert_eq!(g0.series.points[1].t - g0.series.points[0].t, 30.0);
}

#[test]
fn nvidia_smi_csv_logs() {
    let t = parse("smi_csv_03.txt");
    assert_eq!(t.format, Format::NvidiaSmiCsv);
    assert_eq!((t.gpus.len(), t.gpus[0].samples), (1, 1639));
    assert_eq!(t.gpus[0].peak_used_mib, Some(71162.0));
    assert_eq!(t.gpus[0].total_mib, None, "memory.total was not queried");

    let t = parse("smi_csv_04.txt");
    assert_eq!(t.gpus.len(), 2);
    assert_eq!(
        (
            t.gpus[0].samples,
            t.gpus[0].peak_used_mib,
            t.gpus[0].total_mib
        ),
        (473, Some(25073.0), Some(49140.0))
    );
    assert_eq!(
        (t.gpus[1].samples, t.gpus[1].peak_used_mib),
        (473, Some(15.0))
    );
    assert_eq!(t.gpus[0].name.as_deref(), Some("NVIDIA RTX A6000"));
    // One second between samples of the same GPU.
    let p = &t.gpus[0].series.points;
    assert!((p[1].t - p[0].t - 1.0).abs() < 0.1, "{:?}", &p[..2]);

    // A hand-made header, epoch seconds, nounits values.
    let t = parse("smi_csv_06.txt");
    assert_eq!(
        (
            t.gpus[0].samples,
            t.gpus[0].peak_used_mib,
            t.gpus[0].total_mib
        ),
        (90, Some(10904.0), Some(24576.0))
    );
    assert_eq!(
        t.gpus[0].series.points.last().unwrap().t,
        1764194422.0 - 1764189075.0
    );

    // No header: NVIDIA's documented logging query is recognised by its shape
    // (13 fields, bus id, P-state, total = free + used + reserve), and says so;
    // naming the columns gives the same figures.
    let guessed = parse("smi_csv_07.txt");
    assert!(
        guessed
            .warnings
            .iter()
            .any(|w| w.contains("documented logging query")),
        "{:?}",
        guessed.warnings
    );
    let cols = "timestamp,name,pci.bus_id,driver_version,pstate,pcie.link.gen.max,pcie.link.gen.current,\
                temperature.gpu,utilization.gpu,utilization.memory,memory.total,memory.free,memory.used";
    let opts = ParseOptions {
        csv_columns: Some(cols.split(',').map(String::from).collect()),
        ..Default::default()
    };
    let t = trace::parse(&read("smi_csv_07.txt"), &opts).unwrap();
    let peaks: Vec<_> = t.gpus.iter().map(|g| g.peak_used_mib.unwrap()).collect();
    assert_eq!(
        peaks,
        vec![39427.0, 39671.0, 38803.0],
        "GPUs in order of first bus id"
    );
    assert!(t.gpus.iter().all(|g| g.total_mib == Some(40960.0)));
    assert_eq!(guessed.gpus, t.gpus);
    // The same shape whose memory figures do not add up is not guessed at.
    let odd = read("smi_csv_07.txt").replace("40960 MiB, 1534 MiB", "40960 MiB, 9534 MiB");
    let why = refusal(&odd).to_string();
    assert!(
        why.contains("without its header") && why.contains("line 4"),
        "{why}"
    );
    let odd = read("smi_csv_07.txt").replace(", P0,", ", high,");
    let why = refusal(&odd).to_string();
    assert!(
        why.contains("without its header") && why.contains("line 1"),
        "{why}"
    );

    let why = refused("smi_csv_09.txt");
    assert!(why.contains("without its header"), "{why}");
    let cols = [
        "index",
        "name",
        "utilization.gpu",
        "memory.total",
        "memory.used",
        "temperature.gpu",
    ];
    let opts = ParseOptions {
        csv_columns: Some(cols.map(String::from).to_vec()),
        ..Default::default()
    };
    let t = trace::parse(&read("smi_csv_09.txt"), &opts).unwrap();
    assert_eq!(
        t.gpus
            .iter()
            .map(|g| g.peak_used_mib.unwrap())
            .collect::<Vec<_>>(),
        vec![15276.0, 23907.0]
    );

    // The smallest logging query, `--query-gpu=memory.used --format=csv -l 1`:
    // one column, its header the only clue.
    let t = parse_text("memory.used [MiB]\n1234 MiB\n40211 MiB\n39876 MiB\n");
    assert_eq!(t.format, Format::NvidiaSmiCsv);
    assert_eq!(
        (t.gpus.len(), t.gpus[0].peak_used_mib, t.gpus[0].samples),
        (1, Some(40211.0), 3)
    );

    // A power-only log holds no memory: its header is read as one, and the
    // refusal names its columns (it had said the header was missing).
    let why = refused("smi_csv_05.txt");
    assert!(
        why.contains("memory.used") && why.contains("timestamp, power.draw [W]"),
        "{why}"
    );
    assert!(!why.contains("without its header"), "{why}");
}

#[test]
fn dmon_pmon_and_query_output() {
    let t = parse("dmon_03.txt");
    assert_eq!(t.format, Format::NvidiaSmiDmon);
    let fb: Vec<_> = t.gpus.iter().map(|g| g.peak_used_mib.unwrap()).collect();
    assert_eq!(fb, vec![11651.0, 11653.0, 11653.0, 11660.0]);
    for f in ["dmon_01.txt", "dmon_05.txt"] {
        let why = refused(f);
        assert!(
            why.contains("`fb`") && why.contains("utilisation"),
            "{f}: {why}"
        );
    }
    let why = refused("pmon_01.txt");
    assert!(why.contains("`fb`") && why.contains("7 processes"), "{why}");

    let t = parse("smi_q_01.txt");
    assert_eq!(t.format, Format::NvidiaSmiQuery);
    assert_eq!(
        (t.gpus.len(), t.gpus[0].peak_used_mib, t.gpus[0].total_mib),
        (1, Some(22377.0), Some(81920.0))
    );
    assert_eq!(t.gpus[0].name.as_deref(), Some("NVIDIA A100-SXM4-80GB"));
    assert!(t
        .processes
        .iter()
        .any(|p| p.pid == Some(280058) && p.used_mib == Some(22374.0)));
    let t = parse("smi_q_02.txt");
    assert_eq!(t.gpus.len(), 8);
    assert_eq!(t.gpus[0].peak_used_mib, Some(22377.0));
    for (f, n, total) in [
        ("smi_q_03.txt", 8, 81559.0),
        ("smi_q_04.txt", 1, 32607.0),
        ("smi_q_05.txt", 1, 2000.0),
    ] {
        let t = parse(f);
        assert_eq!(t.gpus.len(), n, "{f}");
        assert!(
            t.gpus
                .iter()
                .all(|g| g.total_mib == Some(total) && g.peak_used_mib.is_some()),
            "{f}: {:?}",
            t.gpus[0]
        );
    }
    let t = parse("smi_q_06.txt");
    assert_eq!(
        (t.gpus[0].peak_used_mib, t.gpus[0].total_mib),
        (Some(659.0), Some(8192.0))
    );
}

#[test]
fn pytorch_and_framework_reports() {
    let t = parse("mem_summary_05.txt");
    assert_eq!(t.format, Format::PytorchMemorySummary);
    let a = t.allocator.unwrap();
    assert!(close(a.peak_allocated_mib, 192833.0 / 1024.0), "{a:?}");
    assert!(close(a.peak_reserved_mib, 235520.0 / 1024.0), "{a:?}");
    for f in ["mem_summary_01.txt", "mem_summary_03.txt"] {
        let a = parse(f).allocator.unwrap();
        assert!(
            a.peak_allocated_mib.unwrap() > 0.0
                && a.peak_reserved_mib.unwrap() >= a.peak_allocated_mib.unwrap() * 0.5,
            "{f}: {a:?}"
        );
    }

    let t = parse("ds_see_memory_02.txt");
    assert_eq!(t.format, Format::DeepspeedSeeMemoryUsage);
    let a = t.allocator.unwrap();
    assert!(
        close(a.peak_allocated_mib, 4.95 * 1024.0) && close(a.peak_reserved_mib, 6.0 * 1024.0),
        "{a:?}"
    );
    let a = parse("ds_see_memory_01.txt").allocator.unwrap();
    assert!(
        close(a.peak_allocated_mib, 0.73 * 1024.0) && close(a.peak_reserved_mib, 1024.0),
        "{a:?}"
    );
    let a = parse("ds_see_memory_03.txt").allocator.unwrap();
    assert!(
        close(a.peak_allocated_mib, 0.08 * 1024.0) && close(a.peak_reserved_mib, 0.08 * 1024.0),
        "{a:?}"
    );

    let t = parse("megatron_mem_01.txt");
    assert_eq!(t.format, Format::MegatronMemoryReport);
    let a = t.allocator.unwrap();
    assert!(close(a.peak_allocated_mib, 7253.22705078125) && close(a.peak_reserved_mib, 7622.0));
    assert_eq!(a.ranks.len(), 4);
    assert!(close(a.ranks[3].peak_reserved_mib, 5968.0));
    assert!(t.gpus.is_empty(), "no device figure in the 2023 report");
    // megatron-core 0.19.2's `report_memory` with `--log-device-memory-used`
    // appends the device's used memory: a reading of the printing rank's GPU.
    let t = parse_text(
        "[Rank 3] (after 10 iterations) memory (MB) | allocated: 23110.42 | max allocated: \
         51234.87 | reserved: 54020.00 | max reserved: 54020.00 | total device memory used: 56113.25\n",
    );
    assert_eq!(t.format, Format::MegatronMemoryReport);
    let a = t.allocator.as_ref().unwrap();
    assert!(close(a.peak_allocated_mib, 51234.87) && close(a.peak_reserved_mib, 54020.0));
    assert_eq!(t.gpus.len(), 1);
    assert_eq!(t.gpus[0].index, 3);
    assert_eq!(t.gpus[0].name.as_deref(), Some("rank 3"));
    assert!(close(t.gpus[0].peak_used_mib, 56113.25), "{:?}", t.gpus);
    // Megatron-Bridge prints `torch.cuda.memory_stats()` in GB = 10^9
    // (megatron-bridge 0.6.2 `report_memory`: bytes / 1.0e9).
    let t = parse_text(
        "[Rank 0] (after 2 iterations) memory (GB) | mem-allocated-gigabytes: 23.456 | \
         mem-active-gigabytes: 23.456 | mem-inactive-gigabytes: 0.51234 | mem-reserved-gigabytes: \
         60.123 | mem-max-allocated-gigabytes: 51.234 | mem-max-active-gigabytes: 51.234 | \
         mem-max-inactive-gigabytes: 3.4567 | mem-max-reserved-gigabytes: 60.123 | \
         mem-alloc-retires: 3 | mem-allocated-count: 1234\n",
    );
    assert_eq!(t.format, Format::MegatronMemoryReport);
    let a = t.allocator.as_ref().unwrap();
    let mib = |gb: f64| gb * 1e9 / 1048576.0;
    assert!(close(a.peak_allocated_mib, mib(51.234)) && close(a.peak_reserved_mib, mib(60.123)));
    assert!(close(a.current_allocated_mib, mib(23.456)), "{a:?}");
    assert_eq!(a.ranks.len(), 1);
    assert!(
        t.warnings.iter().any(|w| w.contains("retried 3 times")),
        "{:?}",
        t.warnings
    );
    // Its theoretical footprint is a prediction: a note, not a peak.
    let t = parse_text(
        "Theoretical memory footprints: weight and optimizer=1713.63 MB, activation=2473.26 MB, \
         total=4186.89 MB\n",
    );
    assert_eq!(t.format, Format::MegatronMemoryReport);
    assert!(t.allocator.is_none());
    assert_eq!(t.notes.len(), 1);
    assert!(t.notes[0].0.contains("prediction") && t.notes[0].1 == 4186.89);
    // Megatron-Bridge's: GB (2^30), or the weights and optimizer alone.
    let t =
        parse_text("Theoretical memory footprints: weight and optimizer=1.67 GB, total=4.09 GB\n");
    assert!(close(Some(t.notes[0].1), 4.09 * 1024.0), "{:?}", t.notes);
    let t = parse_text("Theoretical memory footprints: weight and optimizer=1713.63 MB\n");
    assert!(t.notes[0].0.contains("weights and optimizer") && t.notes[0].1 == 1713.63);

    let t = parse("hf_trainer_mem_01.txt");
    assert_eq!(t.format, Format::HfTrainerMetrics);
    assert!(
        t.notes
            .contains(&("train_mem_gpu_alloc_delta".to_string(), 693.0)),
        "{:?}",
        t.notes
    );
    assert!(t
        .notes
        .contains(&("init_mem_gpu_alloc_delta".to_string(), 230.0)));
    assert!(t.allocator.is_none(), "deltas are not an absolute peak");
    // Their sum is shown: 230 + 693 + 7 MiB over what preceded the Trainer.
    assert!(
        t.notes
            .iter()
            .any(|(k, v)| k.starts_with("train peak allocated") && *v == 930.0),
        "{:?}",
        t.notes
    );
    // The metrics dict printed whole holds bytes; its keys are not read as a
    // script's own peak print.
    let dict = "{'train_runtime': 83.4512, 'train_loss': 1.234, 'init_mem_cpu_alloc_delta': 1364297728, \
                'init_mem_gpu_alloc_delta': 241172480, 'init_mem_gpu_peaked_delta': 0, \
                'train_mem_gpu_alloc_delta': 726663168, 'train_mem_gpu_peaked_delta': 8247075328, 'epoch': 3.0}";
    let t = parse_text(dict);
    assert_eq!(t.format, Format::HfTrainerMetrics);
    assert!(t.allocator.is_none());
    assert!(
        t.notes.contains(&(
            "train_mem_gpu_peaked_delta".to_string(),
            8247075328.0 / 1048576.0
        )),
        "{:?}",
        t.notes
    );

    let t = parse("accel_tracemalloc_01.txt");
    assert_eq!(t.format, Format::AccelerateTracemalloc);
    assert_eq!(t.allocator.unwrap().peak_allocated_mib, Some(9404.0));
}

#[test]
fn gpustat_and_rocm_smi() {
    let t = parse("gpustat_01.txt");
    assert_eq!(t.format, Format::Gpustat);
    assert_eq!(t.gpus.len(), 4);
    assert!(t
        .gpus
        .iter()
        .all(|g| g.peak_used_mib == Some(103.0) && g.total_mib == Some(16384.0)));
    assert_eq!(t.gpus[0].name.as_deref(), Some("Tesla P100-PCIE-16GB"));
    for f in ["rocm_smi_01.txt", "rocm_smi_02.txt"] {
        let why = refused(f);
        assert!(why.contains("percentage"), "{f}: {why}");
    }
    let why = refused("rocm_smi_03.txt");
    assert!(why.contains("without memory"), "{why}");
    // `rocm-smi --showmeminfo vram` (format of ROCm 5/6), parsed to MiB.
    let text = "GPU[0]\t\t: VRAM Total Memory (B): 205822885888\nGPU[0]\t\t: VRAM Total Used Memory (B): 10737418240\n";
    let t = trace::parse(text, &ParseOptions::default()).unwrap();
    assert_eq!(
        (t.gpus[0].peak_used_mib, t.gpus[0].total_mib),
        (Some(10240.0), Some(196288.0))
    );
}

#[test]
fn gpustat_json_pretty_or_one_object_a_line() {
    // `gpustat --json` (gpustat 1.x `print_json`: indent 4, the GPU's and
    // process's keys in this order; written for this test, not a capture).
    let snapshot = |time: &str, used: u32| {
        format!(
            r#"{{
    "hostname": "node7",
    "driver_version": "535.104.05",
    "query_time": "2024-06-01T12:00:{time}.123456",
    "gpus": [
        {{
            "index": 0,
            "uuid": "GPU-5f2a",
            "name": "NVIDIA A100-SXM4-80GB",
            "temperature.gpu": 45,
            "fan.speed": null,
            "utilization.gpu": 97,
            "power.draw": 350,
            "enforced.power.limit": 400,
            "memory.used": {used},
            "memory.total": 81920,
            "processes": [
                {{
                    "username": "ana",
                    "command": "python",
                    "full_command": ["python", "train.py", "--bs", "8"],
                    "gpu_memory_usage": {p},
                    "cpu_percent": 101.2,
                    "cpu_memory_usage": 12345678,
                    "pid": 4242
                }}
            ]
        }},
        {{
            "index": 1,
            "uuid": "GPU-77c1",
            "name": "NVIDIA A100-SXM4-80GB",
            "memory.used": 4,
            "memory.total": 81920,
            "processes": []
        }}
    ]
}}
"#,
            p = used - 23
        )
    };
    let t = trace::parse(&snapshot("00", 70123), &ParseOptions::default()).unwrap();
    assert_eq!(t.format, Format::Gpustat);
    assert_eq!(
        peaks_and_totals(&t),
        vec![
            (0, Some(70123.0), Some(81920.0)),
            (1, Some(4.0), Some(81920.0))
        ]
    );
    assert_eq!(t.gpus[0].name.as_deref(), Some("NVIDIA A100-SXM4-80GB"));
    let p = &t.processes[0];
    assert_eq!(
        (p.gpu, p.pid, p.name.as_str(), p.used_mib),
        (Some(0), Some(4242), "python", Some(70100.0))
    );
    // A loop writing one object a line: a time series.
    let one_line = |s: String| s.lines().map(str::trim).collect::<String>() + "\n";
    let log = one_line(snapshot("00", 70123)) + &one_line(snapshot("05", 71000));
    let t = trace::parse(&log, &ParseOptions::default()).unwrap();
    assert_eq!(t.gpus[0].peak_used_mib, Some(71000.0));
    assert_eq!(t.gpus[0].samples, 2);
    assert_eq!(t.gpus[0].series.points[1].t, 5.0);
}

#[test]
fn every_oom_fixture_is_read_through_the_trace_api() {
    for f in [
        "oom_01.txt",
        "oom_03.txt",
        "oom_05.txt",
        "oom_07.txt",
        "oom_09.txt",
        "oom_11.txt",
        "oom_13.txt",
        "oom_15.txt",
        "oom_17.txt",
        "oom_19.txt",
    ] {
        let t = parse(f);
        assert_eq!(t.format, Format::PytorchOom, "{f}");
        assert!(!t.oom.is_empty(), "{f}");
    }
    let t = parse("oom_11.txt");
    let o = &t.oom[0];
    assert!(
        o.tried_to_allocate_mib.is_some() && o.capacity_mib.is_some(),
        "{o:?}"
    );
}

#[test]
fn every_fixture_is_covered() {
    for (name, text) in fixtures() {
        // Either figures or a reason; never a panic.
        match trace::parse(&text, &ParseOptions::default()) {
            Ok(t) => assert!(t.lines > 0, "{name}"),
            Err(e) => assert!(e.message.len() > 20, "{name}: {e}"),
        }
    }
}

#[test]
fn logs_behind_a_launchers_line_prefix_read_as_the_originals() {
    // `srun --label` (one task and several), `mpirun --tag-output`, `pdsh`,
    // `docker compose logs`, `kubectl logs --timestamps` (whose times vary in
    // length: Go trims trailing zeros), Ray's worker prefix, journald's and
    // moreutils `ts`'s syslog times, a local date and time, torchrun's.
    // Every fixture reads to the same report (or the same refusal) behind
    // each.
    type Prefix = fn(usize) -> String;
    let prefixes: [(&str, Prefix); 16] = [
        ("date '+%F %T'", |i| {
            format!("2024-06-01 12:{:02}:{:02} ", i / 60 % 60, i % 60)
        }),
        ("Python logging's asctime", |i| {
            format!("2024-06-01 12:00:{:02},{:03} ", i % 60, i * 7 % 1000)
        }),
        ("journalctl", |i| {
            format!(
                "Jun  3 10:{:02}:{:02} gpu-node-07 python3[48213]: ",
                i / 60 % 60,
                i % 60
            )
        }),
        ("moreutils ts", |i| format!("Dec 06 10:00:{:02} ", i % 60)),
        ("Ray", |_| {
            "(RayTrainWorker pid=48213, ip=10.0.3.17) ".into()
        }),
        ("Ray, local", |_| "(pid=48213) ".into()),
        ("torchrun --tee", |_| "[default0]:".into()),
        ("torchrun's rank prefix", |_| "[rank0]: ".into()),
        ("torchrun --tee, rank prefix", |_| {
            "[default0]:[rank0]: ".into()
        }),
        ("srun --label", |_| "0: ".into()),
        ("srun --label, 8 tasks", |i| format!("{}: ", i % 8)),
        ("mpirun --tag-output", |i| format!("[1,{}]<stdout>:", i % 4)),
        ("pdsh", |_| "gpu-node-07: ".into()),
        ("pdsh -w localhost", |_| "localhost: ".into()),
        ("docker compose", |_| "trainer-1  | ".into()),
        ("kubectl --timestamps", |i| {
            format!("2024-06-01T12:00:{:02}.{}Z ", i % 60, 1 + i * 37 % 1000)
        }),
    ];
    // torchrun's prefix names a rank: the same report, but for the rank a
    // script's prints are then kept under too.
    let without_ranks = |report: String| {
        let Ok(mut r) = serde_json::from_str::<serde_json::Value>(&report) else {
            return report;
        };
        if let Some(a) = r["allocator"].as_object_mut() {
            a.remove("ranks");
        }
        r.to_string()
    };
    for (name, text) in fixtures().into_iter().chain(samples()) {
        let want = report_json(&text);
        for (what, prefix) in prefixes {
            let v: String = text
                .lines()
                .enumerate()
                .map(|(i, l)| format!("{}{l}\n", prefix(i)))
                .collect();
            if what.starts_with("torchrun") {
                assert_eq!(
                    without_ranks(report_json(&v)),
                    without_ranks(want.clone()),
                    "{name} behind {what}"
                );
            } else {
                assert_eq!(report_json(&v), want, "{name} behind {what}");
            }
        }
    }
}

/// A report's figures without the line numbers (which move when lines are
/// added above): the same figures, or "refused".
fn figures_without_lines(text: &str) -> String {
    match trace::parse(text, &ParseOptions::default()) {
        Ok(t) => {
            let mut r = serde_json::to_value(trace::findings::report(&t, None)).unwrap();
            let o = r.as_object_mut().unwrap();
            o.remove("lines");
            o.remove("warnings");
            for f in r["findings"].as_array_mut().unwrap() {
                f.as_object_mut().unwrap().remove("detail");
            }
            for o in r["oom"].as_array_mut().unwrap() {
                o.as_object_mut().unwrap().remove("line");
            }
            r.to_string()
        }
        Err(_) => "refused".into(),
    }
}

#[test]
fn a_terminal_session_copied_whole_reads_as_the_tools_output() {
    // The prompt and the command typed above the output, the `^C` that
    // stopped a looping `nvidia-smi -l`/`dmon`, the next prompt below: each
    // fixture reads to the same figures (or the same refusal) inside any of
    // these shells' sessions.
    let prompts = [
        "user@gpu-box:~/run$ ",
        "root@3f2a9c1b7d4e:/workspace# ",
        "(base) user@gpu-box:~$ ",
        "(.venv) me@node-07:/scratch/me/run$ ",
        "[me@login01 run]$ ",
        "me@MacBook-Pro run % ",
        "$ ",
        "PS C:\\Users\\me> ",
    ];
    for (name, text) in fixtures().into_iter().chain(samples()) {
        let want = figures_without_lines(&text);
        for p in prompts {
            let v = format!("{p}nvidia-smi -l 1\n{text}^C\n{p}\n");
            assert_eq!(figures_without_lines(&v), want, "{name} after `{p}`");
        }
        // A job's log under bash's `set -x`: the traced command above.
        let traced = format!("+ nvidia-smi -l 1\n++ date\n{text}");
        assert_eq!(figures_without_lines(&traced), want, "{name} under set -x");
    }
    // What only looks like a prompt is read as it is.
    for not_a_prompt in [
        "me@example.com wrote:",
        "$5.00 an hour",
        "(note) GPU 0 is idle",
        "PS: nvidia-smi below",
    ] {
        let text = format!("{not_a_prompt}\n{}", read("oom_11.txt"));
        let t = trace::parse(&text, &ParseOptions::default()).unwrap();
        assert_eq!(t.oom[0].line, 2, "{not_a_prompt}");
    }
}

#[test]
fn a_jupyter_notebook_reads_as_what_its_cells_printed() {
    // Each fixture as a notebook cell's printed output (nbformat 4, its text
    // a list of lines as Jupyter saves it, the file indented as Jupyter
    // writes it): the same figures, or a refusal.
    for (name, text) in fixtures().into_iter().chain(samples()) {
        let lines: Vec<String> = text.split_inclusive('\n').map(String::from).collect();
        let nb = serde_json::json!({
            "cells": [
                {"cell_type": "markdown", "metadata": {}, "source": ["# The run\n"]},
                {"cell_type": "code", "execution_count": 3, "metadata": {}, "source": ["!nvidia-smi"],
                 "outputs": [{"output_type": "stream", "name": "stdout", "text": lines}]}
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5
        });
        let file = serde_json::to_string_pretty(&nb).unwrap();
        assert_eq!(
            figures_without_lines(&file),
            figures_without_lines(&text),
            "{name} in a notebook"
        );
    }
    // A counter a cell evaluated, and the error a cell died with.
    let nb = serde_json::json!({"cells": [
        {"cell_type": "code", "execution_count": 9, "source": ["trainer.train()\n", "torch.cuda.max_memory_reserved() / 2**30"],
         "outputs": [{"output_type": "execute_result", "execution_count": 9, "metadata": {},
                      "data": {"text/plain": ["71.5"]}}]},
        {"cell_type": "code", "execution_count": 10, "source": ["trainer.train()"],
         "outputs": [{"output_type": "error", "ename": "OutOfMemoryError",
                      "evalue": "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.12 GiB memory in use. Of the allocated memory 74.50 GiB is allocated by PyTorch, and 2.80 GiB is reserved by PyTorch but unallocated.",
                      "traceback": ["\u{1b}[0;31mOutOfMemoryError\u{1b}[0m Traceback (most recent call last)"]}]}
    ], "nbformat": 4});
    let t = parse_text(&serde_json::to_string_pretty(&nb).unwrap());
    assert!(close(t.allocator.unwrap().peak_reserved_mib, 71.5 * 1024.0));
    assert_eq!(t.oom.len(), 1, "{:?}", t.oom);
    assert!(close(t.oom[0].capacity_mib, 79.19 * 1024.0), "{:?}", t.oom);
    assert!(
        t.warnings[0].contains("Jupyter notebook"),
        "{:?}",
        t.warnings
    );
    // Broken JSON is said so, with where.
    let e = refusal("{\n \"cells\": [\n  {\"cell_type\": \"code\",\n");
    assert!(e.to_string().contains("does not parse (line"), "{e}");
}

#[test]
fn a_csv_after_a_job_logs_own_lines_reads_as_the_csv() {
    // A job's output file: its `echo`s, then nvidia-smi's CSV. The same
    // figures as the CSV alone (or the same refusal), the skipped lines said.
    for (name, text) in fixtures() {
        if !name.starts_with("smi_csv") {
            continue;
        }
        let job = format!("Job 4242 started on gpu-node-07\n=== GPU memory log ===\n{text}");
        assert_eq!(
            figures_without_lines(&job),
            figures_without_lines(&text),
            "{name}"
        );
        if let Ok(t) = trace::parse(&job, &ParseOptions::default()) {
            assert!(
                t.warnings
                    .iter()
                    .any(|w| w.contains("2 line(s) of text before the CSV")),
                "{name}: {:?}",
                t.warnings
            );
        }
    }
}

#[test]
fn a_headerless_csv_takes_its_columns_from_the_command_above_it() {
    // `--format=csv,noheader,nounits`: the rows alone cannot say which column
    // is memory.used; the command pasted above them does.
    let rows =
        "2024/06/01 10:00:00.000, 0, 1234, 81559\n2024/06/01 10:00:00.500, 0, 40000, 81559\n\
                2024/06/01 10:00:00.500, 1, 39000, 81559\n";
    let cmd = "nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv,noheader,nounits -lms 500";
    let err = refusal(rows);
    assert!(err.to_string().contains("without its header"), "{err}");
    for session in [
        format!("{cmd}\n{rows}"),
        format!("user@gpu-box:~$ {cmd}\n{rows}^C\nuser@gpu-box:~$ \n"),
    ] {
        let t = parse_text(&session);
        assert_eq!(t.format, Format::NvidiaSmiCsv);
        assert_eq!(
            peaks_and_totals(&t),
            vec![
                (0, Some(40000.0), Some(81559.0)),
                (1, Some(39000.0), Some(81559.0))
            ],
            "{session}"
        );
        assert!(
            t.warnings.iter().any(|w| w.contains("command on line 1")),
            "{:?}",
            t.warnings
        );
    }
    // With its header the output names its columns itself (the command's
    // are not needed, and its line is no malformed row).
    let with_header = "$ nvidia-smi --query-gpu=timestamp,index,memory.used --format=csv -l 1\n\
         timestamp, index, memory.used [MiB]\n2024/06/01 10:00:00.000, 0, 1234 MiB\n";
    let t = parse_text(with_header);
    assert_eq!(peaks_and_totals(&t), vec![(0, Some(1234.0), None)]);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    // A command that queries no memory.used is said so, at its line.
    let e = refusal(
        "$ nvidia-smi --query-gpu=timestamp,index,utilization.gpu --format=csv,noheader -l 1\n\
         2024/06/01 10:00:00.000, 0, 97 %\n2024/06/01 10:00:01.000, 0, 98 %\n",
    );
    assert!(e.to_string().contains("queries no memory.used"), "{e}");
}

#[test]
fn peaks_read_at_a_python_or_jupyter_prompt() {
    // The counter and its unit come from the expression typed; the value
    // from the next line (Python) or `Out[n]:` (IPython, Jupyter).
    let gib = 1024.0;
    let t = parse_text(
        ">>> torch.cuda.max_memory_allocated()\n15032385536\n\
         >>> torch.cuda.max_memory_reserved() >> 20\n16384\n",
    );
    assert_eq!(t.format, Format::PytorchPeakCounters);
    let a = t.allocator.unwrap();
    assert!(close(a.peak_allocated_mib, 14.0 * gib), "{a:?}");
    assert!(close(a.peak_reserved_mib, 16.0 * gib), "{a:?}");
    let t = parse_text(
        "In [7]: torch.cuda.max_memory_allocated() / 1e9\nOut[7]: 15.0\n\n\
         In [8]: torch.cuda.memory_stats()['reserved_bytes.all.peak'] / 1024**3\n\nOut[8]: 16.0\n",
    );
    let a = t.allocator.unwrap();
    assert!(close(a.peak_allocated_mib, 15e9 / 1048576.0), "{a:?}");
    assert!(close(a.peak_reserved_mib, 16.0 * gib), "{a:?}");
    // What the prompt's expression does not reduce to the counter over a
    // constant is not read as it.
    for text in [
        ">>> torch.cuda.max_memory_allocated() - base\n1234567890\n",
        ">>> torch.cuda.memory_allocated()\n1234567890\n",
    ] {
        assert!(
            trace::parse(text, &ParseOptions::default()).is_err(),
            "{text}"
        );
    }
}

#[test]
fn torchruns_prefix_keeps_the_rank_it_names() {
    // One rank's prints behind `[default3]:` (`--tee`) or `[rank3]:`: read
    // without the prefix, each figure still that rank's.
    for prefix in ["[default3]:", "[rank3]: ", "[default3]:[rank3]: "] {
        let text = format!(
            "{prefix}step 1\n{prefix}Max memory allocated: 30.00 GiB\n{prefix}Max memory reserved: 34.00 GiB\n"
        );
        assert_eq!(
            rank_peaks(&text),
            vec![(3, Some(30.0 * 1024.0), Some(34.0 * 1024.0))],
            "{prefix}"
        );
    }
    // A memory_summary() printed under `--tee` reads as printed bare.
    let bare = parse("mem_summary_01.txt");
    let tee: String = read("mem_summary_01.txt")
        .lines()
        .map(|l| format!("[default0]:{l}\n"))
        .collect();
    let t = parse_text(&tee);
    assert_eq!(t.format, Format::PytorchMemorySummary);
    let (a, b) = (t.allocator.unwrap(), bare.allocator.unwrap());
    assert_eq!(
        (a.peak_allocated_mib, a.peak_reserved_mib),
        (b.peak_allocated_mib, b.peak_reserved_mib)
    );
}

#[test]
fn a_line_without_end_is_read_only_so_far() {
    // 40 MiB without a line end (a file of zeros, a binary), then a log: the
    // long line is cut (memory stays bounded), said so, and the rest read.
    let mut text = "\0".repeat(40 << 20);
    text.push('\n');
    text.push_str(&read("oom_11.txt"));
    let t = trace::parse(&text, &ParseOptions::default()).unwrap();
    assert_eq!(t.oom.len(), 1);
    assert_eq!(t.oom[0].line, 2);
    assert!(
        t.warnings.iter().any(|w| w.contains("longer than 16 MiB")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn a_table_behind_any_prefix_is_read_from_its_border() {
    // A prefix of no known shape: the table parser learns it from the
    // table's top border.
    for n in [3, 5, 7, 12, 13, 15, 18, 28] {
        let name = format!("smi_table_{n:02}.txt");
        let text = read(&name);
        let v: String = text
            .lines()
            .map(|l| format!("[gpu-node-07] {l}\n"))
            .collect();
        let (a, b) = (
            parse(&name),
            trace::parse(&v, &ParseOptions::default()).unwrap(),
        );
        let figures = |t: &Trace| {
            let g: Vec<_> = t
                .gpus
                .iter()
                .map(|g| (g.index, g.name.clone(), g.total_mib, g.peak_used_mib))
                .collect();
            (g, t.processes.clone())
        };
        assert_eq!(figures(&b), figures(&a), "{name}");
    }
}

#[test]
fn pasted_copies_read_as_the_originals() {
    // What a log becomes when copied from a rendered page, a chat or a
    // coloured terminal: no-break, narrow or ideographic spaces for spaces,
    // zero-width characters, colour escapes around each line; or pasted into
    // Markdown. Each fixture reads to the same figures (or the same refusal)
    // either way.
    let json = report_json;
    for (name, text) in fixtures().into_iter().chain(samples()) {
        let want = json(&text);
        let variants = [
            ("no-break spaces", text.replace(' ', "\u{a0}")),
            ("narrow spaces", text.replace(' ', "\u{202f}")),
            ("ideographic spaces", text.replace(' ', "\u{3000}")),
            (
                "zero-width spaces",
                text.replace(": ", ":\u{200b} ").replace(", ", ",\u{200b} "),
            ),
            (
                "colour escapes",
                text.lines()
                    .map(|l| format!("\u{1b}[0;32m{l}\u{1b}[0m\n"))
                    .collect::<String>(),
            ),
            (
                "carriage returns alone",
                text.lines().map(|l| format!("{l}\r")).collect::<String>(),
            ),
        ];
        for (what, v) in variants {
            assert_eq!(json(&v), want, "{name} with {what}");
        }
        // Pasted into Markdown or a docstring: indented, quoted, fenced.
        let lines: Vec<&str> = text.lines().collect();
        let join = |v: Vec<String>| v.join("\n") + "\n";
        let quoted = |l: &&str| {
            if l.trim().is_empty() {
                ">".to_string()
            } else {
                format!("> {l}")
            }
        };
        for (what, v) in [
            (
                "four-space indent",
                join(lines.iter().map(|l| format!("    {l}")).collect()),
            ),
            (
                "tab indent",
                join(lines.iter().map(|l| format!("\t{l}")).collect()),
            ),
            ("a Markdown quote", join(lines.iter().map(quoted).collect())),
        ] {
            assert_eq!(json(&v), want, "{name} as {what}");
        }
        // Fences add lines: the same figures, refusals at lines one further.
        let figures = figures_without_lines;
        let fenced = |indent: &str| {
            let body: Vec<String> = lines.iter().map(|l| format!("{indent}{l}")).collect();
            format!("```text\n{}\n```\n", body.join("\n"))
        };
        for (what, v) in [
            ("fenced", fenced("")),
            ("fenced and indented", fenced("  ")),
        ] {
            assert_eq!(figures(&v), figures(&text), "{name} {what}");
        }
    }
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    fn fixtures() -> Vec<String> {
        let mut texts: Vec<String> = super::fixtures().into_iter().map(|(_, t)| t).collect();
        // Lines of the formats no shared fixture has.
        texts.extend(
            [
                "GPU: 0\n    MEM_USAGE:\n        TOTAL_VRAM: 196592 MB\n        USED_VRAM: 283 MB\n",
                "GPU  POWER  VRAM_USED  VRAM_TOTAL\n  0  152 W  150123 MB  196592 MB\n",
                "│ NVITOP 1.3.2       Driver Version: 550.54.15      CUDA Driver Version: 12.4 │\n\
                 │   0  GeForce RTX 4090    Off  │ 00000000:01:00.0 Off │                  N/A │\n\
                 │ 30%   57C    P2   322W / 450W │  18.64GiB / 23.99GiB │     97%      Default │\n",
                "<nvidia_smi_log>\n<gpu id=\"0\">\n<fb_memory_usage>\n<total>81920 MiB</total>\n<used>6 MiB</used>\n",
                "Max memory allocated: 12.34 GB, peak memory reserved (GiB): 14\nPeak GPU memory: 3 GiB\n",
                "OrderedDict([('allocated_bytes.all.peak', 20340752384), ('num_ooms', 2)])\n",
                "2024/06/01 11:27:05.177, NVIDIA A100-SXM4-40GB, 00000000:3B:00.0, 545.23.08, P0, 4, 4, 44, 0 %, 0 %, 40960 MiB, 40333 MiB, 4 MiB\n",
                "{'train_mem_gpu_alloc_delta': 726663168, 'train_mem_gpu_peaked_delta': 8247075328}\n",
                "GPU:0\nprocess       3187 uses    23456.000 MB GPU memory\nno processes are running\n",
                "[Rank 0] (after 2 iterations) memory (GB) | mem-max-allocated-gigabytes: 51.234 | mem-alloc-retires: 3\n",
                "{'loss': 1.93471, 'memory(GiB)': 17.83, 'global_step/max_steps': '5/100'}\n",
                "mmengine - INFO - Iter(train) [  10/1000]  lr: 2.0000e-04  time: 1.2345  memory: 15234  loss: 1.2345\n",
                "step:10 - perf/max_memory_allocated_gb:42.1234 - perf/max_memory_reserved_gb:55.5\n",
                "{\"current_steps\": 10, \"vram_allocated\": 15.23, \"vram_reserved\": -1}\npeak gpu memory 12.3G\n",
                "_runtime,_timestamp,system.gpu.0.memoryAllocated,system.gpu.0.memoryAllocatedBytes\n31.2,1718000031.2,51.2,42949672960\n",
                "\"Step\",\"a - system/gpu.1.memoryAllocatedBytes__MAX\"\n\"1\",\"2147483648\"\n",
                "DeviceStatsMonitor.on_train_batch_end/allocated_bytes.all.peak,step\n12884901888,49\n",
                ">>> torch.cuda.max_memory_allocated() / 2**30\n14.0\nIn [3]: round(torch.cuda.max_memory_reserved()/(1024*1024), 1)\nOut[3]: 1.5\n",
            ]
            .map(String::from),
        );
        texts
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_text_in_any_format(s in "(?s).{0,3000}", f in 0usize..=Format::ALL.len()) {
            let opts = ParseOptions { format: Format::ALL.get(f).copied(), ..Default::default() };
            let _ = trace::parse(&s, &opts);
        }

        #[test]
        fn fixtures_cut_spliced_and_forced_into_other_formats(
            a in 0usize..128, b in 0usize..128, cut in 0usize..20_000, junk in "(?s).{0,80}", f in 0usize..=Format::ALL.len(),
        ) {
            let fx = fixtures();
            let (x, y) = (&fx[a % fx.len()], &fx[b % fx.len()]);
            let mut cut = cut.min(x.len());
            while !x.is_char_boundary(cut) { cut -= 1; }
            let text = format!("{}{junk}{}", &x[..cut], y);
            let opts = ParseOptions { format: Format::ALL.get(f).copied(), ..Default::default() };
            if let Ok(t) = trace::parse(&text, &opts) {
                // Reports build for anything that parsed, with and without a plan.
                let _ = cost_model::trace::findings::report(&t, Some(&cost_model::Plan::default()));
            }
        }
    }
}

mod findings_and_verdicts {
    use super::*;
    use cost_model::trace::findings::{self, Status};

    fn csv(rows: impl Iterator<Item = (u32, f64)>) -> String {
        let mut s = String::from("timestamp, index, memory.used [MiB], memory.total [MiB]\n");
        for (i, (gpu, used)) in rows.enumerate() {
            let t = 1_700_000_000 + i as u64 / 2;
            s.push_str(&format!("{t}, {gpu}, {used:.0} MiB, 81559 MiB\n"));
        }
        s
    }

    fn kinds(f: &[findings::Finding]) -> Vec<&str> {
        f.iter().map(|x| x.kind.as_str()).collect()
    }

    #[test]
    fn growth_after_warm_up_is_a_leak_and_a_plateau_is_not() {
        let leak = csv((0..400).map(|i| (0, 30_000.0 + 20.0 * i as f64)));
        let t = trace::parse(&leak, &ParseOptions::default()).unwrap();
        let f = findings::findings(&t, None);
        assert_eq!(kinds(&f), vec!["leak"], "{f:?}");
        assert!(f[0].detail.contains("MiB per minute"), "{}", f[0].detail);
        // Ramp then plateau with noise: no leak.
        let flat = csv((0..400).map(|i| {
            (
                0,
                if i < 40 {
                    1000.0 * i as f64
                } else {
                    40_000.0 + (i % 7) as f64 * 30.0
                },
            )
        }));
        let t = trace::parse(&flat, &ParseOptions::default()).unwrap();
        assert!(findings::findings(&t, None).is_empty());
    }

    #[test]
    fn one_gpu_far_above_the_others_is_reported() {
        let rows = (0..4).map(|g| (g, if g == 0 { 60_000.0 } else { 30_000.0 }));
        let t = trace::parse(&csv(rows), &ParseOptions::default()).unwrap();
        let f = findings::findings(&t, None);
        assert_eq!(kinds(&f), vec!["imbalance"]);
        assert_eq!(f[0].gpu, Some(0));
        // Under a plan with no pipeline it still is; under a pipelined plan
        // the first stage is meant to be above the rest, and the verdict
        // compares each GPU with its own stage.
        let mut plan = cost_model::Plan::default();
        plan.parallel.num_gpus = 4;
        assert!(kinds(&findings::findings(&t, Some(&plan))).contains(&"imbalance"));
        plan.parallel.pp = 4;
        assert!(!kinds(&findings::findings(&t, Some(&plan))).contains(&"imbalance"));
        // An idle GPU next to a busy one is not imbalance (smi_csv_04: GPU 1 idle).
        assert!(findings::findings(&parse("smi_csv_04.txt"), None)
            .iter()
            .all(|x| x.kind != "imbalance"));
    }

    #[test]
    fn foreign_processes_and_fragmentation_are_reported_with_evidence() {
        let f = findings::findings(&parse("smi_table_03.txt"), None);
        let foreign: Vec<_> = f.iter().filter(|x| x.kind == "foreign-process").collect();
        assert!(
            foreign
                .iter()
                .any(|x| x.gpu == Some(0) && x.detail.contains("tritonserver")),
            "{f:?}"
        );
        let f = findings::findings(&parse("oom_11.txt"), None);
        assert!(
            f.iter()
                .any(|x| x.kind == "oom" && x.detail.contains("tried to allocate")),
            "{f:?}"
        );
        let summary = "|                  PyTorch CUDA memory summary, device ID 0                 |\n\
                       | Allocated memory      |    2048 MiB |    2048 MiB |  9000 MiB |  7000 MiB |\n\
                       | GPU reserved memory   |   10240 MiB |   10240 MiB | 10240 MiB |     0 B   |\n";
        let t = trace::parse(summary, &ParseOptions::default()).unwrap();
        let f = findings::findings(&t, None);
        assert_eq!(kinds(&f), vec!["fragmentation"]);
        assert!(f[0].detail.contains("expandable_segments"));
    }

    #[test]
    fn a_log_from_another_card_says_so() {
        // smi_table_07: eight A800 80GB PCIe, the name cut to "NVIDIA A800 80G...",
        // 81920 MiB each; the default plan is on an H100 80GB HBM3 (81559 MiB).
        let t = parse("smi_table_07.txt");
        let plan = cost_model::Plan::default();
        let f = findings::findings(&t, Some(&plan));
        let m: Vec<_> = f.iter().filter(|x| x.kind == "gpu-mismatch").collect();
        assert_eq!(m.len(), 1, "{f:?}");
        assert!(
            m[0].detail
                .contains("GPUs 0, 1, 2, 3, 4, 5, 6, 7 are NVIDIA A800 80G")
                && m[0].detail.contains("NVIDIA H100 80GB HBM3 with 81559 MiB"),
            "{}",
            m[0].detail
        );
        assert_eq!(m[0].gpu, None);
        // Its link opens the plan on the log's card, with the memory the log reports.
        let on_card = cost_model::query::decode_str(m[0].fix_query.as_deref().unwrap()).unwrap();
        assert_eq!(on_card.gpu.id, "a800-80gb");
        assert_eq!(on_card.gpu.capacity_mib, 81_920);
        assert_eq!(on_card.training, plan.training);
        // Without a plan there is nothing to compare with.
        assert!(findings::findings(&t, None)
            .iter()
            .all(|x| x.kind != "gpu-mismatch"));
        // On the A800's catalogue entry the log is the plan's card.
        let mut a800 = plan.clone();
        a800.gpu = cost_model::gpu::gpu("a800-80gb").unwrap();
        assert!(findings::findings(&t, Some(&a800))
            .iter()
            .all(|x| x.kind != "gpu-mismatch"));
        // The same chip in another form with the same memory is the plan's card
        // (an A100 80GB PCIe plan against SXM4 names); another capacity is not.
        let sxm = "timestamp, index, name, memory.used [MiB], memory.total [MiB]\n\
                   2024/01/01 00:00:00.000, 0, NVIDIA A100-SXM4-80GB, 60000 MiB, 81920 MiB\n\
                   2024/01/01 00:00:01.000, 1, NVIDIA A100-SXM4-80GB, 60000 MiB, 81920 MiB\n";
        let t = trace::parse(sxm, &ParseOptions::default()).unwrap();
        let mut a100 = plan.clone();
        a100.gpu = cost_model::gpu::gpu("a100-pcie-80gb").unwrap();
        assert!(findings::findings(&t, Some(&a100))
            .iter()
            .all(|x| x.kind != "gpu-mismatch"));
        a100.gpu = cost_model::gpu::gpu("a100-sxm4-40gb").unwrap();
        let f = findings::findings(&t, Some(&a100));
        let m: Vec<_> = f.iter().filter(|x| x.kind == "gpu-mismatch").collect();
        assert_eq!(m.len(), 1, "{f:?}");
        assert!(m[0].detail.contains("with 81920 MiB"), "{}", m[0].detail);
        let q = m[0].fix_query.as_deref().unwrap();
        assert_eq!(
            cost_model::query::decode_str(q).unwrap().gpu.id,
            "a100-sxm4-80gb",
            "{q}"
        );
        // A plan whose memory was set by hand (a card the list lacks) is
        // compared by capacity alone: a log without names, of that size, matches.
        let unnamed = trace::parse(
            &csv((0..2).map(|g| (g, 50_000.0))),
            &ParseOptions::default(),
        )
        .unwrap();
        let mut custom = plan.clone();
        custom.gpu.id = "custom".into();
        custom.gpu.name = "my card".into();
        custom.gpu.capacity_mib = 81_559;
        assert!(findings::findings(&unnamed, Some(&custom))
            .iter()
            .all(|x| x.kind != "gpu-mismatch"));
        custom.gpu.capacity_mib = 24_576;
        let f = findings::findings(&unnamed, Some(&custom));
        let m = f
            .iter()
            .find(|x| x.kind == "gpu-mismatch")
            .expect("a mismatch");
        assert!(m.detail.contains("a card with 81559 MiB"), "{f:?}");
        // Without a name: the plan with the log's memory.
        let q = m.fix_query.as_deref().unwrap();
        assert_eq!(
            cost_model::query::decode_str(q).unwrap().gpu.capacity_mib,
            81_559,
            "{q}"
        );
    }

    #[test]
    fn an_oom_with_a_plan_links_the_change_that_fits() {
        let mut plan = cost_model::Plan::default();
        plan.training.micro_batch = 16;
        let t = parse("oom_11.txt");
        let f = findings::findings(&t, Some(&plan));
        let oom = f.iter().find(|x| x.kind == "oom").unwrap();
        let q = oom.fix_query.as_deref().expect("a rung that fits");
        let fixed = cost_model::query::decode_str(q).unwrap();
        assert!(cost_model::estimate(&fixed).unwrap().fits);
    }

    #[test]
    fn verdicts_compare_like_with_like() {
        let plan = cost_model::Plan::default();
        let est = cost_model::estimate(&plan).unwrap();
        let pred = est.peak.device_used.as_f64() / 1048576.0;
        for (scale, want) in [
            (1.0, Status::Matches),
            (1.5, Status::UnderEstimated),
            (0.6, Status::OverEstimated),
        ] {
            let rows = (0..8).map(|g| (g, pred * scale));
            let t = trace::parse(&csv(rows), &ParseOptions::default()).unwrap();
            let v = findings::verdict(&t, &est).unwrap();
            assert_eq!(
                (v.counter.as_str(), v.overall, v.gpus.len()),
                ("device_used", want, 8),
                "{scale}: {}",
                v.summary
            );
        }
        // Allocator figures are compared with `reserved`, not nvidia-smi's counter.
        let t = parse("megatron_mem_01.txt");
        let v = findings::verdict(&t, &est).unwrap();
        assert_eq!(v.counter, "reserved");
        assert_eq!(v.gpus.len(), 4, "one per rank");
        // Idle GPUs are left out, and said so.
        let t = parse("smi_csv_04.txt");
        let v = findings::verdict(&t, &est).unwrap();
        assert_eq!(v.skipped_gpus, vec![1]);
    }

    #[test]
    fn a_pipelined_plan_compares_each_gpu_with_its_own_stage() {
        use cost_model::trace::findings::{report, verdict_staged, RankLayout};
        // Llama-3.1-8B in two pipeline stages of four ranks on one node: under
        // 1F1B the stages' peaks differ by GiB.
        let mut plan = cost_model::Plan::default();
        plan.parallel.pp = 2;
        plan.parallel.num_gpus = 8;
        plan.parallel.gpus_per_node = 8;
        plan.training.grad_accum = 8;
        let est = cost_model::estimate(&plan).unwrap();
        let stage = |s: usize| est.stages[s].peak.device_used.as_f64() / 1048576.0;
        assert!(
            (stage(0) - stage(1)).abs() > 1024.0,
            "{} vs {}",
            stage(0),
            stage(1)
        );
        // The run measured each stage's own peak.
        let rows = (0..8).map(|g| (g, stage(g as usize / 4)));
        let t = trace::parse(&csv(rows), &ParseOptions::default()).unwrap();
        let layout = RankLayout::of(&plan);
        let v = verdict_staged(&t, &est, layout).unwrap();
        assert_eq!(v.overall, Status::Matches, "{}", v.summary);
        for g in &v.gpus {
            let s = g.gpu.unwrap() / 4;
            assert_eq!(g.stage, Some(s));
            assert!((g.predicted_mib - stage(s as usize)).abs() < 1e-6);
        }
        // Against the worst stage alone the lighter stage reads over- (or
        // under-) estimated: what the layout fixes.
        assert_ne!(
            findings::verdict(&t, &est).unwrap().overall,
            Status::Matches
        );
        // `report` places the GPUs from the plan.
        let r = report(&t, Some(&plan)).verdict.unwrap();
        assert_eq!(r, v);
        // Ranks a log names are global: Megatron's "[Rank N]" places them on
        // any number of nodes.
        let mut nodes = plan.clone();
        nodes.parallel.num_gpus = 16;
        let est16 = cost_model::estimate(&nodes).unwrap();
        let l16 = RankLayout::of(&nodes).unwrap();
        assert_eq!((l16.stage(7, true), l16.stage(8, true)), (Some(0), Some(1)));
        assert_eq!(l16.stage(16, true), None, "no such rank");
        let t = parse("megatron_mem_01.txt");
        let v = verdict_staged(&t, &est16, Some(l16)).unwrap();
        assert!(v.gpus.iter().all(|g| g.stage == Some(0)), "ranks 0–3");
        // A GPU index on one node of several does not say which node: the
        // worst stage's peak, as without a layout.
        let rows = (0..8).map(|g| (g, 40_000.0));
        let t = trace::parse(&csv(rows), &ParseOptions::default()).unwrap();
        let v = verdict_staged(&t, &est16, Some(l16)).unwrap();
        assert!(v.gpus.iter().all(|g| g.stage.is_none()));
        assert_eq!(v, findings::verdict(&t, &est16).unwrap());
        // One stage: no layout.
        assert_eq!(RankLayout::of(&cost_model::Plan::default()), None);
    }

    #[test]
    fn a_log_in_runs_of_alike_gpus_is_read_as_pipeline_stages() {
        let plan = cost_model::Plan::default();
        // A Megatron-DeepSpeed run on 8 × A800: GPUs 0–3 near 72–79 GiB, 4–7 near 58.
        let t = parse("smi_table_07.txt");
        let f = findings::findings(&t, Some(&plan));
        let st: Vec<_> = f.iter().filter(|x| x.kind == "stages").collect();
        assert_eq!(st.len(), 1, "{f:?}");
        assert!(
            st[0]
                .detail
                .contains("2 runs of 4 (GPUs 0–3 at 72.25–78.52 GiB, GPUs 4–7 at 58.34–58.43 GiB)"),
            "{}",
            st[0].detail
        );
        // Its link is the plan in two stages, where each GPU meets its own.
        let q = st[0]
            .fix_query
            .as_deref()
            .expect("a valid plan in 2 stages");
        let staged = cost_model::query::decode_str(q).unwrap();
        assert_eq!(staged.parallel.pp, 2);
        assert!(findings::findings(&t, Some(&staged))
            .iter()
            .all(|x| x.kind != "stages"));
        // Alike GPUs, one GPU far above the rest, or runs not far apart: no stages.
        let mib = |v: &[f64]| {
            let rows = v.iter().enumerate().map(|(g, m)| (g as u32, *m));
            trace::parse(&csv(rows), &ParseOptions::default()).unwrap()
        };
        for v in [
            vec![60_000.0; 8],
            vec![79_000.0, 60_000.0, 60_100.0, 59_900.0, 60_000.0, 60_050.0],
            vec![61_000.0, 61_200.0, 60_000.0, 60_100.0],
            vec![70_000.0, 50_000.0, 70_000.0, 50_000.0],
        ] {
            let f = findings::findings(&mib(&v), Some(&plan));
            assert!(f.iter().all(|x| x.kind != "stages"), "{v:?}: {f:?}");
        }
        // Four stages of two, the last with the logits above the middle ones.
        let f = findings::findings(
            &mib(&[
                70_000.0, 70_500.0, 60_000.0, 60_200.0, 50_000.0, 50_100.0, 58_000.0, 58_300.0,
            ]),
            Some(&plan),
        );
        assert!(
            f.iter()
                .any(|x| x.kind == "stages" && x.detail.contains("4 runs of 2")),
            "{f:?}"
        );
    }

    #[test]
    fn data_parallels_gpu_0_and_its_replicas_are_each_compared_with_their_own_peak() {
        use cost_model::plan::Sharding;
        let plan = cost_model::query::decode_str(
            "?model=llama-3.2-1b&gpu=a100-sxm4-80gb&gpus=4&shard=data-parallel&mb=1&seq=512&prec=amp-bf16&ckpt=full",
        )
        .unwrap();
        assert_eq!(plan.parallel.sharding, Sharding::DataParallel);
        let est = cost_model::estimate(&plan).unwrap();
        let mib = |b: cost_model::Bytes| b.as_f64() / 1048576.0;
        let gpu0 = mib(est.peak.device_used);
        let replica = mib(est
            .replica_peak
            .expect("replicas under nn.DataParallel")
            .device_used);
        // A replica holds no optimizer states, gathered outputs or reduced
        // gradients: far below GPU 0 on an AdamW full fine-tune.
        assert!(replica < 0.8 * gpu0, "{replica} vs {gpu0}");
        // GPU 0's reduce-add holds the gradients twice at the end of
        // backward, which is the peak of this small checkpointed step.
        assert_eq!(est.peak_phase, cost_model::estimate::Phase::Backward);
        let grads = est.trainable_params as f64 * 4.0;
        assert_eq!(est.peak_breakdown.comm_buffers.as_f64(), grads);
        assert_eq!(est.peak_breakdown.gradients.as_f64(), grads);
        let mut ddp = plan.clone();
        ddp.parallel.sharding = Sharding::Ddp;
        assert!(cost_model::estimate(&ddp).unwrap().replica_peak.is_none());
        // Three times when `.grad` holds the earlier micro-batches' already.
        let mut accumulating = plan.clone();
        accumulating.training.grad_accum = 4;
        let acc = cost_model::estimate(&accumulating).unwrap();
        assert_eq!(acc.peak_phase, cost_model::estimate::Phase::Backward);
        assert_eq!(acc.peak_breakdown.comm_buffers.as_f64(), 2.0 * grads);
        assert_eq!(acc.replica_peak, est.replica_peak);
        // Under the Trainer each replica computes its own share's loss, and
        // GPU 0 gathers every replica's 16-bit logits at the forward's end:
        // 2 bytes a logit for each more GPU. A plain loop computes the loss
        // over all of them on GPU 0: its loss's tensors grow with the GPUs.
        let logits = |q: &str| {
            let e = cost_model::estimate(&cost_model::query::decode_str(q).unwrap()).unwrap();
            let fwd = e.stages[0].phases.iter();
            let fwd = fwd.filter(|p| p.phase == cost_model::estimate::Phase::Forward);
            fwd.map(|p| p.breakdown.logits.as_f64()).sum::<f64>()
        };
        let q = |fw: &str, n: u32| {
            format!("?model=llama-3.1-8b&fw={fw}&gpus={n}&shard=data-parallel&mb=1&seq=4096&prec=amp-bf16&ckpt=full")
        };
        let per_logit =
            |fw: &str| (logits(&q(fw, 8)) - logits(&q(fw, 4))) / (4.0 * 4096.0 * 128256.0);
        assert!(
            (per_logit("hf-trainer") - 2.0).abs() < 1e-9,
            "{}",
            per_logit("hf-trainer")
        );
        assert!(
            per_logit("plain-pytorch") > 8.0,
            "{}",
            per_logit("plain-pytorch")
        );
        // A log on GPUs 2–5 (CUDA_VISIBLE_DEVICES): its first busy GPU is
        // GPU 0 of the run, the others replicas; GPUs 0, 1 idle.
        let rows = [
            (0, 600.0),
            (1, 600.0),
            (2, gpu0),
            (3, replica),
            (4, replica * 1.02),
            (5, replica * 0.99),
        ];
        let t = trace::parse(&csv(rows.into_iter()), &ParseOptions::default()).unwrap();
        let r = findings::report(&t, Some(&plan));
        let v = r.verdict.expect("a verdict");
        assert_eq!(v.overall, Status::Matches, "{}", v.summary);
        assert_eq!(v.skipped_gpus, vec![0, 1]);
        let replicas: Vec<_> = v.gpus.iter().filter(|g| g.replica).map(|g| g.gpu).collect();
        assert_eq!(replicas, vec![Some(3), Some(4), Some(5)]);
        assert!(
            v.summary.contains("replicas against theirs"),
            "{}",
            v.summary
        );
        assert!(
            r.findings.iter().all(|f| f.kind != "imbalance"),
            "{:?}",
            r.findings
        );
        // Judged as one model (no replicas), the replicas are over-estimated
        // and GPU 0 stands out.
        let mut one = plan.clone();
        one.parallel.sharding = Sharding::Ddp;
        let r = findings::report(&t, Some(&one));
        let v = r.verdict.unwrap();
        assert!(v.gpus.iter().all(|g| !g.replica));
        assert!(
            r.findings.iter().any(|f| f.kind == "imbalance"),
            "{:?}",
            r.findings
        );
        // A replica that holds far more than predicted is named as one.
        let rows = [(0, gpu0), (1, replica * 1.5), (2, replica)];
        let t = trace::parse(&csv(rows.into_iter()), &ParseOptions::default()).unwrap();
        let v = findings::report(&t, Some(&plan)).verdict.unwrap();
        assert_eq!(v.overall, Status::UnderEstimated);
        assert!(
            v.summary.contains("GPU 1 (an nn.DataParallel replica)"),
            "{}",
            v.summary
        );
    }

    #[test]
    fn per_process_figures_alone_are_compared_per_gpu() {
        let plan = cost_model::Plan::default();
        let est = cost_model::estimate(&plan).unwrap();
        let pred = est.peak.device_used.as_f64() / 1048576.0;
        // `--query-compute-apps` with the bus id: one rank per GPU, and a
        // second process on the first GPU, which nvidia-smi counts there too.
        let apps = format!(
            "pid, process_name, gpu_bus_id, used_gpu_memory [MiB]\n\
             101, python, 00000000:07:00.0, {:.0} MiB\n\
             102, python, 00000000:0F:00.0, {:.0} MiB\n\
             103, Xorg, 00000000:07:00.0, {:.0} MiB\n",
            pred * 0.8,
            pred,
            pred * 0.7
        );
        let t = trace::parse(&apps, &ParseOptions::default()).unwrap();
        let v = findings::verdict(&t, &est).expect("a verdict from processes alone");
        assert_eq!(v.counter, "device_used");
        assert!(v.summary.contains("processes"), "{}", v.summary);
        let gpus: Vec<_> = v.gpus.iter().map(|g| (g.gpu, g.status)).collect();
        assert_eq!(
            gpus,
            vec![
                (Some(0), Status::UnderEstimated), // 1.5 × the prediction in all
                (Some(1), Status::Matches),
            ]
        );
        // Without a GPU column the processes' GPUs are unknown (`null`, not
        // GPU 0); each rank is compared alone and a small foreign process
        // is left out.
        let apps = format!(
            "pid, process_name, used_gpu_memory [MiB]\n\
             101, python, {:.0} MiB\n\
             102, python, {:.0} MiB\n\
             103, Xorg, 300 MiB\n",
            pred, pred
        );
        let t = trace::parse(&apps, &ParseOptions::default()).unwrap();
        assert!(
            t.processes.iter().all(|p| p.gpu.is_none()),
            "{:?}",
            t.processes
        );
        let v = findings::verdict(&t, &est).unwrap();
        assert_eq!(v.gpus.len(), 2, "{:?}", v.gpus);
        assert_eq!(v.overall, Status::Matches, "{}", v.summary);
        // An OOM's processes are the OOM's evidence, not a peak to judge.
        assert!(findings::verdict(&parse("oom_13.txt"), &est).is_none());
    }

    #[test]
    fn the_report_has_the_documented_shape() {
        let t = parse("oom_11.txt");
        let v = serde_json::to_value(findings::report(&t, None)).unwrap();
        for k in ["format", "gpus", "oom", "allocator", "findings", "verdict"] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert_eq!(v["format"], "pytorch-oom");
        for k in [
            "gpu",
            "tried_to_allocate_mib",
            "capacity_mib",
            "free_mib",
            "allocated_by_pytorch_mib",
            "reserved_by_pytorch_mib",
        ] {
            assert!(v["oom"][0].get(k).is_some(), "oom.{k}");
        }
        let v = serde_json::to_value(findings::report(&parse("smi_table_12.txt"), None)).unwrap();
        for k in ["index", "name", "total_mib", "peak_used_mib", "samples"] {
            assert!(v["gpus"][0].get(k).is_some(), "gpus.{k}");
        }
        assert_eq!(v["gpus"][0]["total_mib"], 81559.0);
    }
}

#[test]
fn variants_seen_in_the_wild() {
    // --query-compute-apps: memory per process.
    let apps = "pid, process_name, gpu_bus_id, used_gpu_memory [MiB]\n\
                12345, python, 00000000:07:00.0, 40211 MiB\n\
                12346, python, 00000000:0F:00.0, 39870 MiB\n";
    let t = trace::parse(apps, &ParseOptions::default()).unwrap();
    assert_eq!(t.format, Format::NvidiaSmiCsv);
    assert_eq!(t.processes.len(), 2);
    assert_eq!(
        (
            t.processes[1].gpu,
            t.processes[1].pid,
            t.processes[1].used_mib
        ),
        (Some(1), Some(12346), Some(39870.0))
    );
    // dmon with -o DT and the memory group.
    let dmon = "#Date       Time        gpu     fb   bar1   ccpm\n\
                #YYYYMMDD   HH:MM:SS    Idx     MB     MB     MB\n\
                 20240601   12:00:00      0  40000      5      0\n\
                 20240601   12:00:00      1  41000      5      0\n\
                 20240601   12:00:02      0  40500      5      0\n";
    let t = trace::parse(dmon, &ParseOptions::default()).unwrap();
    assert_eq!(t.format, Format::NvidiaSmiDmon);
    assert_eq!(t.gpus[0].peak_used_mib, Some(40500.0));
    assert_eq!(t.gpus[0].series.points[1].t, 2.0);
    // torch.cuda.memory_stats() printed as a dict.
    let stats = "{'active.all.allocated': 42, 'allocated_bytes.all.current': 1073741824, \
                 'allocated_bytes.all.peak': 2147483648, 'reserved_bytes.all.current': 3221225472, \
                 'reserved_bytes.all.peak': 3221225472}";
    let t = trace::parse(stats, &ParseOptions::default()).unwrap();
    let a = t.allocator.unwrap();
    assert_eq!(
        (a.peak_allocated_mib, a.peak_reserved_mib),
        (Some(2048.0), Some(3072.0))
    );
    // The OrderedDict older PyTorch returns, on one line, and pprint's one key
    // per line, with the allocator's failure and retry counts.
    let ordered = "OrderedDict([('active.all.allocated', 3421), ('allocated_bytes.all.current', 15213334528), \
                   ('allocated_bytes.all.peak', 20340752384), ('num_alloc_retries', 3), ('num_ooms', 0), \
                   ('reserved_bytes.all.current', 23068672000), ('reserved_bytes.all.peak', 23068672000)])";
    let t = trace::parse(ordered, &ParseOptions::default()).unwrap();
    let a = t.allocator.clone().unwrap();
    assert!(close(a.peak_allocated_mib, 19398.45), "{a:?}");
    assert!(close(a.peak_reserved_mib, 22000.0), "{a:?}");
    assert!(
        t.warnings.iter().any(|w| w.contains("retried 3 times")),
        "{:?}",
        t.warnings
    );
    assert!(!t.warnings.iter().any(|w| w.contains("num_ooms")));
    let pprint = "{'active.all.allocated': 3421,\n 'allocated_bytes.all.peak': 2147483648,\n \
                  'num_ooms': 2,\n 'reserved_bytes.all.peak': 3221225472}\n";
    let t = trace::parse(pprint, &ParseOptions::default()).unwrap();
    let a = t.allocator.clone().unwrap();
    assert_eq!(
        (a.peak_allocated_mib, a.peak_reserved_mib),
        (Some(2048.0), Some(3072.0))
    );
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("line 3") && w.contains("2 CUDA out-of-memory")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn an_oom_at_the_end_of_a_long_training_log_is_found() {
    let mut log = String::new();
    for i in 0..5000 {
        log.push_str(&format!("step {i}: loss 2.{i:04} lr 1e-4 | 1.2 it/s\n"));
    }
    log.push_str(&read("oom_13.txt"));
    let t = trace::parse(&log, &ParseOptions::default()).unwrap();
    assert_eq!(t.format, Format::PytorchOom);
    assert_eq!(t.oom[0].gpu, Some(5));
    assert!(t.oom[0].line > 5000);
    // DeepSpeed lines late in a log are found too.
    let mut log = "x\n".repeat(1000);
    log.push_str(&read("ds_see_memory_02.txt"));
    let t = trace::parse(&log, &ParseOptions::default()).unwrap();
    assert_eq!(t.format, Format::DeepspeedSeeMemoryUsage);
    // And a long log with nothing in it is still refused.
    let e = refusal(&"nothing here\n".repeat(1000));
    assert!(e.message.contains("known formats"), "{e}");
}

/// The outputs captured during this project's own H200 runs
/// (calibration/h200-2026-11-30, written by calibration/measure.py).
#[test]
fn own_h200_captures_parse_to_their_figures() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../calibration/h200-2026-11-30");
    let get = |name: &str| {
        let text = std::fs::read_to_string(dir.join(name)).expect(name);
        trace::parse(&text, &ParseOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    // nvidia-smi's table during Llama-3.1-8B bf16 + checkpointing.
    let t = get("nvidia-smi.txt");
    assert_eq!(t.gpus.len(), 1);
    assert!(close(t.gpus[0].peak_used_mib, 79059.0));
    assert!(close(t.gpus[0].total_mib, 143771.0));
    assert_eq!(t.processes.len(), 1);
    assert!(close(t.processes[0].used_mib, 79050.0));
    // The 200 ms CSV log of the first set: its peak is the OOM run's 143,145 MiB
    // (the largest memory.used value in the file).
    let t = get("smi-set1.csv");
    let text = std::fs::read_to_string(dir.join("smi-set1.csv")).unwrap();
    let want = largest_memory_used(&text);
    assert!(want > 100_000.0);
    assert!(
        close(t.gpus[0].peak_used_mib, want),
        "{:?}",
        t.gpus[0].peak_used_mib
    );
    assert!(t.gpus[0].samples > 200);
    // memory_summary() after Llama-3.2-1B amp-bf16: peak allocated 46897 MiB, reserved 49546.
    let a = get("memory_summary.txt").allocator.unwrap();
    assert!(close(a.peak_allocated_mib, 46897.0));
    assert!(close(a.peak_reserved_mib, 49546.0));
    // The out-of-memory tracebacks (two runs): the first tried 224 MiB.
    let t = get("oom.txt");
    assert_eq!(t.oom.len(), 2, "{:?}", t.oom);
    assert!(close(t.oom[0].tried_to_allocate_mib, 224.0));
    assert!(close(t.oom[0].capacity_mib, 139.80 * 1024.0));
    assert!(close(t.oom[0].free_mib, 113.12));
    assert!(close(t.oom[0].allocated_by_pytorch_mib, 134.73 * 1024.0));
    assert!(close(t.oom[1].tried_to_allocate_mib, 37.09 * 1024.0));

    // The ninth session's sets: memory_summary() and nvidia-smi's table after
    // QLoRA Llama-3.1-8B (set 5), the out-of-memory run alone (set 6).
    let a = get("memory_summary-qlora.txt").allocator.unwrap();
    assert!(close(a.peak_allocated_mib, 27243.0));
    assert!(close(a.peak_reserved_mib, 30346.0));
    let t = get("nvidia-smi-qlora.txt");
    assert!(close(t.gpus[0].peak_used_mib, 31157.0));
    assert!(close(t.processes[0].used_mib, 31104.0));
    let t = get("oom-set6.txt");
    assert_eq!(t.oom.len(), 1, "{:?}", t.oom);
    assert!(close(t.oom[0].tried_to_allocate_mib, 448.0));
    assert!(close(t.oom[0].free_mib, 391.12));
    // Set 5 ran each case in a process of its own, each appending its own
    // nvidia-smi log (header included) to one file: the peak of every sample.
    let name = "smi-set5.csv";
    let text = std::fs::read_to_string(dir.join(name)).unwrap();
    assert!(text.matches("timestamp, index").count() > 10);
    let want = largest_memory_used(&text);
    let t = get(name);
    assert!(
        close(t.gpus[0].peak_used_mib, want),
        "{:?} vs {want}",
        t.gpus[0].peak_used_mib
    );
}

/// The H200 runs' captures of 2026-12-04 (calibration/h200-2026-12-04, sets 7
/// and 8, and calibration/h200-2026-12-04-deepspeed, set 10 in two calls):
/// nvidia-smi's table of the idle card before the first call, and each set's
/// 200 ms CSV log (one header per process: its cases ran one per process),
/// whose peak is its largest sample.
#[test]
fn second_h200_run_captures_parse_to_their_figures() {
    for (folder, logs) in [
        (
            "h200-2026-12-04",
            &[("smi-set7.csv", 4), ("smi-set8.csv", 4)][..],
        ),
        (
            "h200-2026-12-04-deepspeed",
            &[("smi-set10.csv", 7), ("smi-set10b.csv", 3)][..],
        ),
    ] {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../calibration")
            .join(folder);
        let read = |name: &str| {
            std::fs::read_to_string(dir.join(name))
                .unwrap_or_else(|e| panic!("{folder}/{name}: {e}"))
        };
        let get = |name: &str| {
            trace::parse(&read(name), &ParseOptions::default())
                .unwrap_or_else(|e| panic!("{folder}/{name}: {e}"))
        };
        let t = get("nvidia-smi-start.txt");
        assert_eq!(t.gpus.len(), 1);
        assert!(close(t.gpus[0].peak_used_mib, 0.0));
        assert!(close(t.gpus[0].total_mib, 143771.0));
        assert!(t.processes.is_empty());
        for &(name, processes) in logs {
            let text = read(name);
            assert!(
                text.matches("timestamp, index").count() >= processes,
                "{folder}/{name}"
            );
            let want = largest_memory_used(&text);
            assert!(want > 30_000.0, "{folder}/{name}: {want}");
            let t = get(name);
            assert!(
                close(t.gpus[0].peak_used_mib, want),
                "{folder}/{name}: {:?} vs {want}",
                t.gpus[0].peak_used_mib
            );
        }
    }
}

/// The largest `memory.used` figure of an nvidia-smi CSV log (the fourth
/// column, `N MiB`), read independently of the parser under test.
fn largest_memory_used(text: &str) -> f64 {
    text.lines()
        .filter_map(|l| {
            l.split(", ")
                .nth(3)?
                .strip_suffix(" MiB")?
                .parse::<f64>()
                .ok()
        })
        .fold(0.0, f64::max)
}

/// (index, peak used, total) of each GPU.
fn peaks_and_totals(t: &Trace) -> Vec<(u32, Option<f64>, Option<f64>)> {
    t.gpus
        .iter()
        .map(|g| (g.index, g.peak_used_mib, g.total_mib))
        .collect()
}

/// Parses inline text (the frameworks' own format strings, filled in).
fn parse_text(text: &str) -> Trace {
    trace::parse(text, &ParseOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Each rank's peaks a log holds: (rank, allocated, reserved), MiB.
fn rank_peaks(text: &str) -> Vec<(u32, Option<f64>, Option<f64>)> {
    let a = parse_text(text).allocator.unwrap();
    a.ranks
        .iter()
        .map(|r| (r.rank, r.peak_allocated_mib, r.peak_reserved_mib))
        .collect()
}

#[test]
fn framework_training_logs_give_their_peaks() {
    // torchtitan `components/metrics.py`: each step line holds the interval's
    // max_memory_reserved in GiB (the peak is reset after each log), coloured.
    let titan = "[rank0]:[titan] 2026-01-01 10:00:00,000 - root - INFO - CUDA memory usage for model: 3.55GiB(4.49%)\n\
        [rank0]:[titan] 2026-01-01 10:00:09,000 - root - INFO - \u{1b}[31mstep:  1  \u{1b}[32mloss: 12.02500  \u{1b}[38;2;180;60;0mgrad_norm:  3.1406  \u{1b}[36mmemory: 41.87GiB(52.93%)  \u{1b}[34mtps: 1,215  \u{1b}[36mtflops: 70.38  \u{1b}[35mmfu: 7.12%\u{1b}[39m\n\
        [rank0]:[titan] 2026-01-01 10:00:19,000 - root - INFO - step: 10  loss:  9.10000  grad_norm:  2.0000  memory: 45.23GiB(57.12%)  tps: 6,500  tflops: 376.0  mfu: 38.0%\n";
    let t = parse_text(titan);
    assert_eq!(t.format, Format::TorchtitanMetrics);
    let a = t.allocator.unwrap();
    assert!(close(a.peak_reserved_mib, 45.23 * 1024.0), "{a:?}");
    assert!(
        a.peak_allocated_mib.is_none(),
        "torchtitan prints reserved only"
    );
    // Every rank's lines (torchrun without a rank filter): each rank's peak.
    let two = format!(
        "{titan}[rank1]:[titan] 2026-01-01 10:00:19,000 - root - INFO - step: 10  loss:  9.10000  memory: 47.00GiB(59.40%)  tps: 6,400\n"
    );
    assert_eq!(
        rank_peaks(&two),
        vec![
            (0, None, Some(45.23 * 1024.0)),
            (1, None, Some(47.0 * 1024.0))
        ]
    );

    // torchtune `training/memory.py` `log_memory_stats` and its metric logger
    // (`Step N | name:value …`, GiB).
    let tune = "INFO:torchtune.utils._logging:Memory stats after model init:\n\
        \tGPU peak memory allocation: 6.02 GiB\n\
        \tGPU peak memory reserved: 6.11 GiB\n\
        \tGPU peak memory active: 6.02 GiB\n\
        Step 1 | loss:1.2345 lr:2e-05 tokens_per_second_per_gpu:1234.5 peak_memory_active:17.51 peak_memory_alloc:17.48 peak_memory_reserved:19.94 \n";
    let t = parse_text(tune);
    assert_eq!(t.format, Format::TorchtuneMemoryStats);
    let a = t.allocator.unwrap();
    assert!(close(a.peak_allocated_mib, 17.48 * 1024.0), "{a:?}");
    assert!(close(a.peak_reserved_mib, 19.94 * 1024.0), "{a:?}");
    // torchtune 0.1–0.2 divided by 10^9 and printed GB: its stats and the
    // unlabelled step figures of the same log are decimal gigabytes.
    let tune_02 = "INFO:torchtune.utils.logging:Memory Stats after model init:\n\
        \tGPU peak memory allocation: 16.50 GB\n\
        \tGPU peak memory reserved: 16.64 GB\n\
        \tGPU peak memory active: 16.50 GB\n\
        1|10|Loss: 1.2345: 100%|| 10/10 [00:30<00:00, peak_memory_active:18.2 peak_memory_alloc:18.1 peak_memory_reserved:20.5\n";
    let t = parse_text(tune_02);
    assert_eq!(t.format, Format::TorchtuneMemoryStats);
    let a = t.allocator.unwrap();
    let gb = 1e9 / (1u64 << 20) as f64;
    assert!(close(a.peak_allocated_mib, 18.1 * gb), "{a:?}");
    assert!(close(a.peak_reserved_mib, 20.5 * gb), "{a:?}");

    // axolotl: the Trainer's log dict with its memory keys (GiB; peaks reset
    // at each log).
    let axo = "{'loss': 1.2345, 'grad_norm': 0.51, 'learning_rate': 2e-05, 'memory/max_active (GiB)': 17.51, 'memory/max_allocated (GiB)': 17.48, 'memory/device_reserved (GiB)': 19.94, 'epoch': 0.1}\n\
        {'loss': 1.1, 'grad_norm': 0.4, 'learning_rate': 2e-05, 'memory/max_active (GiB)': 16.0, 'memory/max_allocated (GiB)': 15.9, 'memory/device_reserved (GiB)': 18.0, 'epoch': 0.2}\n";
    let t = parse_text(axo);
    assert_eq!(t.format, Format::AxolotlMetrics);
    let a = t.allocator.unwrap();
    assert!(close(a.peak_allocated_mib, 17.48 * 1024.0), "{a:?}");
    assert!(close(a.peak_reserved_mib, 19.94 * 1024.0), "{a:?}");
    // … as axolotl 0.12 named the keys (peaks since the start).
    let axo_012 = "{'loss': 1.2345, 'grad_norm': 0.51, 'learning_rate': 2e-05, 'memory/max_mem_active(gib)': 17.51, 'memory/max_mem_allocated(gib)': 17.48, 'memory/device_mem_reserved(gib)': 19.94, 'epoch': 0.1}\n\
        {'loss': 1.1, 'grad_norm': 0.4, 'learning_rate': 2e-05, 'memory/max_mem_active(gib)': 17.51, 'memory/max_mem_allocated(gib)': 17.48, 'memory/device_mem_reserved(gib)': 19.94, 'epoch': 0.2}\n";
    let t = parse_text(axo_012);
    assert_eq!(t.format, Format::AxolotlMetrics);
    let a = t.allocator.unwrap();
    assert!(close(a.peak_allocated_mib, 17.48 * 1024.0), "{a:?}");
    assert!(close(a.peak_reserved_mib, 19.94 * 1024.0), "{a:?}");

    // axolotl's `log_gpu_memory_usage` up to 0.11: readings at a moment
    // (allocated; + reserved − allocated; + NVML used − reserved), GiB
    // labelled GB, "GPU" in old releases and the device type later; a zero
    // extra is left out. The reserved pool is the compared peak, allocated
    // is not compared, NVML's used memory is a note.
    let axo_old = "[2024-05-01 10:00:00,123] [INFO] [axolotl.utils.config.models.input.check:817] [PID:1234] [RANK:0] GPU memory usage baseline: 0.000GB (+0.306GB misc)\n\
        [2024-05-01 10:00:30,123] [INFO] [axolotl.load_model:794] [PID:1234] [RANK:0] GPU memory usage after model load: 3.843GB (+0.292GB cache, +0.498GB misc)\n\
        {'loss': 1.2345, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': 0.01}\n\
        [2024-05-01 10:05:00,123] [INFO] [axolotl.utils.callbacks.on_step_end:124] [PID:1234] [RANK:0] GPU memory usage while training: 15.472GB (+4.113GB cache, +0.602GB misc)\n";
    let t = parse_text(axo_old);
    assert_eq!(t.format, Format::AxolotlMetrics);
    let a = t.allocator.clone().unwrap();
    assert_eq!(
        a.peak_allocated_mib, None,
        "a reading at a moment is no peak: {a:?}"
    );
    assert!(
        close(a.peak_reserved_mib, (15.472 + 4.113) * 1024.0),
        "{a:?}"
    );
    assert!(close(a.current_allocated_mib, 15.472 * 1024.0), "{a:?}");
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("readings at a moment")),
        "{:?}",
        t.warnings
    );
    let used = |what: &str| {
        t.notes
            .iter()
            .find(|(l, _)| l == &format!("device memory used (NVML) {what}"))
            .map(|(_, v)| *v)
    };
    assert!(close(used("baseline"), 0.306 * 1024.0), "{:?}", t.notes);
    assert!(
        close(used("while training"), (15.472 + 4.113 + 0.602) * 1024.0),
        "{:?}",
        t.notes
    );
    // The report carries the notes (the CLI and the page show them).
    let rep = trace::findings::report(&t, None);
    assert_eq!(rep.notes.len(), t.notes.len());
    let t = parse_text("[INFO] [axolotl.utils.callbacks.on_step_end:127] cuda memory usage while training: 21.000GB (+2.500GB cache)\n");
    assert_eq!(t.format, Format::AxolotlMetrics);
    assert!(close(t.allocator.unwrap().peak_reserved_mib, 23.5 * 1024.0));
    assert!(t.notes.is_empty(), "no misc, no NVML figure: {:?}", t.notes);
    // From 0.12: the peaks since the previous line (`+` is a label).
    let axo_new = "[DEBUG] [axolotl.loaders.model:275] [PID:99] Memory usage after model load 14.210GB (+14.250GB allocated, +15.000GB reserved)\n\
        [DEBUG] [axolotl.loaders.model:608] [PID:99] after adapters 14.500GB (+14.520GB allocated, +16.000GB reserved)\n";
    let t = parse_text(axo_new);
    assert_eq!(t.format, Format::AxolotlMetrics);
    let a = t.allocator.unwrap();
    assert!(close(a.peak_allocated_mib, 14.52 * 1024.0), "{a:?}");
    assert!(close(a.peak_reserved_mib, 16.0 * 1024.0), "{a:?}");
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);

    // Unsloth's notebooks: GiB labelled GB; the "for training" line is a delta.
    let unsloth = "GPU = Tesla T4. Max memory = 14.741 GB.\n5.316 GB of memory reserved.\n\
        612.34 seconds used for training.\n10.21 minutes used for training.\n\
        Peak reserved memory = 9.123 GB.\nPeak reserved memory for training = 3.807 GB.\n\
        Peak reserved memory % of max memory = 61.889 %.\nPeak reserved memory for training % of max memory = 25.826 %.\n";
    let t = parse_text(unsloth);
    assert_eq!(t.format, Format::UnslothMemoryStats);
    let a = t.allocator.unwrap();
    assert!(close(a.peak_reserved_mib, 9.123 * 1024.0), "{a:?}");

    // LitGPT: `max_memory_allocated() / 1e9`, decimal GB (12.34e9 bytes = 11768 MiB).
    for lit in [
        "Epoch 1 | iter 100 step 50 | loss train: 1.234\nMemory used: 12.34 GB\n",
        "| Performance\n| - Total tokens  : 1,000,000\n| Memory Usage\n| - Memory Used   : 12.34 GB\n",
    ] {
        let t = parse_text(lit);
        assert_eq!(t.format, Format::LitgptMemoryUsed, "{lit}");
        let a = t.allocator.unwrap();
        assert!(close(a.peak_allocated_mib, 12.34e9 / 1048576.0), "{a:?}");
    }
}

#[test]
fn a_scripts_own_print_of_the_peak_counters_is_read() {
    // `print(f"Max memory allocated: {torch.cuda.max_memory_allocated() / 1024**3:.2f} GB")`.
    let t = parse_text(
        "Epoch 1 | step 100 | loss 2.345\nMax memory allocated: 12.34 GB\nMax memory reserved: 14.50 GB\n",
    );
    assert_eq!(t.format, Format::PytorchPeakCounters);
    let a = t.allocator.clone().unwrap();
    assert!(close(a.peak_allocated_mib, 12.34 * 1024.0), "{a:?}");
    assert!(close(a.peak_reserved_mib, 14.5 * 1024.0), "{a:?}");
    // GB is read as 2^30 (the 1024**3 habit) and the reader is told.
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("line 2") && w.contains("1e9")),
        "{:?}",
        t.warnings
    );
    // The counter's own name, a call with its argument, several per line, a
    // unit before the figure, bytes without a unit, the pre-1.4 `cached`.
    let cases: [(&str, Option<f64>, Option<f64>); 5] = [
        (
            "step 10: torch.cuda.max_memory_allocated(device=0) = 13245 MiB\n",
            Some(13245.0),
            None,
        ),
        (
            "Peak GPU memory allocated (GiB): 12.5 | peak memory reserved (GiB): 14.0\n",
            Some(12800.0),
            Some(14336.0),
        ),
        ("max_memory_allocated 2147483648\n", Some(2048.0), None),
        ("max memory cached: 900 MiB (45.6%)\n", None, Some(900.0)),
        ("max_memory_reserved: 15.5GiB\n", None, Some(15872.0)),
    ];
    for (text, alloc, reserved) in cases {
        let t = parse_text(text);
        assert_eq!(t.format, Format::PytorchPeakCounters, "{text}");
        let a = t.allocator.unwrap();
        assert_eq!(
            (a.peak_allocated_mib, a.peak_reserved_mib),
            (alloc, reserved),
            "{text}"
        );
        assert!(t.warnings.is_empty(), "{text}: {:?}", t.warnings);
    }
    // A GPU peak that does not name its counter is the reserved one, said so.
    let t = parse_text("Peak GPU memory: 20.5 GiB\n");
    assert_eq!(
        t.allocator.clone().unwrap().peak_reserved_mib,
        Some(20992.0)
    );
    assert!(t
        .warnings
        .iter()
        .any(|w| w.contains("does not name its counter")));
    // Colossal-AI's `Max CUDA memory usage: … MB`.
    let t = parse_text("Max CUDA memory usage: 12345.67 MB\n");
    assert_eq!(t.allocator.unwrap().peak_reserved_mib, Some(12345.67));
    // Not read: a peak that may be host memory, a capacity (the Unsloth
    // notebooks' "Max memory"), a current (not peak) figure, and a whole
    // number too small to be bytes.
    for text in [
        "Epoch 1 done. Peak memory: 12.3 GB\n",
        "GPU = Tesla T4. Max memory = 14.741 GB.\n",
        "memory allocated: 12.3 GiB\n",
        "max memory allocated: 512\n",
    ] {
        assert!(
            trace::parse(text, &ParseOptions::default()).is_err(),
            "{text}"
        );
    }
    // A later line of a long log still names the format.
    let mut long = "loss 1.0\n".repeat(1000);
    long.push_str("max_memory_allocated: 3.0 GiB\n");
    let t = parse_text(&long);
    assert_eq!(t.format, Format::PytorchPeakCounters);
}

/// Prints of `key: value` have the shape of pdsh's `host: ` prefix; three of
/// them made a head whose "host names" were stripped, leaving bare figures.
/// Host names are numbered and carry no underscore, and a head that reads as
/// nothing without the prefix is read as it came.
#[test]
fn key_value_prints_are_not_a_hosts_prefix() {
    let text = "torch.cuda.memory_allocated: 11.520GB\n\
                torch.cuda.memory_reserved: 13.875GB\n\
                torch.cuda.max_memory_reserved: 15.121GB\n";
    let t = parse_text(text);
    assert_eq!(t.format, Format::PytorchPeakCounters);
    assert!(close(
        t.allocator.unwrap().peak_reserved_mib,
        15.121 * 1024.0
    ));
    // Names of a host's shape (a hyphen): read as they came when the
    // stripped lines say nothing.
    let t = parse_text("peak-gpu-mem: 15.1 GiB\npeak-gpu-mem: 15.3 GiB\npeak-gpu-mem: 15.2 GiB\n");
    assert_eq!(t.format, Format::PytorchPeakCounters);
    assert!(close(t.allocator.unwrap().peak_reserved_mib, 15.3 * 1024.0));
    // A real host prefix is still taken off.
    let t = parse_text(
        "node-07: Max memory allocated: 12.00 GiB\nnode-07: Max memory reserved: 14.00 GiB\n\
         node-08: Max memory allocated: 12.50 GiB\n",
    );
    assert!(close(
        t.allocator.unwrap().peak_allocated_mib,
        12.5 * 1024.0
    ));
}

/// A line that named memory once speaks of it in its later segments.
#[test]
fn a_peak_after_the_word_memory_is_read() {
    let t = parse_text("step 10 | GPU memory | max allocated: 12.3 GiB | max reserved: 14.0 GiB\n");
    assert_eq!(t.format, Format::PytorchPeakCounters);
    let a = t.allocator.unwrap();
    assert_eq!(
        (a.peak_allocated_mib, a.peak_reserved_mib),
        (Some(12595.2), Some(14336.0))
    );
    // Without it, a counter's peak by name in a size unit is still one
    // (`counters_printed_by_name_and_vram_peaks`); a figure without a unit
    // is not.
    let t = parse_text("step 10 | max allocated: 12.3 GiB\n");
    assert_eq!(t.allocator.unwrap().peak_allocated_mib, Some(12595.2));
    assert!(trace::parse("step 10 | max allocated: 123\n", &ParseOptions::default()).is_err());
}

/// Outputs without a counter to compare: TensorBoard's scalar download and
/// TensorFlow's OOM are refused with what they are.
#[test]
fn tensorboard_downloads_and_tensorflow_ooms_are_named() {
    let tb = "Wall time,Step,Value\n1700000000.123,10,23456.7\n1700000010.456,20,23460.1\n";
    let tf = "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating \
              tensor with shape[32,1024,4096] and type float on /job:localhost/replica:0/task:0/device:GPU:0 \
              by allocator GPU_0_bfc\n";
    for (text, what) in [(tb, "TensorBoard"), (tf, "TensorFlow")] {
        let why = refusal(text).to_string();
        assert!(why.starts_with("line 1") && why.contains(what), "{why}");
    }
}

/// Prints of the current counters on a GPU are refused with what they are.
#[test]
fn current_counter_prints_are_refused_as_such() {
    for text in [
        "Epoch 1 step 50: loss=1.234 | GPU mem allocated: 12.31 GB, reserved: 14.06 GB\n",
        "torch.cuda.memory_allocated: 11.520GB\ntorch.cuda.memory_reserved: 13.875GB\n",
    ] {
        let why = refusal(text).to_string();
        assert!(
            why.starts_with("line 1")
                && why.contains("current counters")
                && why.contains("max_memory_allocated"),
            "{why}"
        );
    }
}

#[test]
fn a_bare_column_of_figures_asks_for_its_name_and_reads_with_it() {
    let text = "12345\n12400\n23000\n";
    let why = refusal(text).to_string();
    assert!(
        why.contains("line 1") && why.contains("--columns memory.used"),
        "{why}"
    );
    let opts = ParseOptions {
        csv_columns: Some(vec!["memory.used".into()]),
        ..Default::default()
    };
    for text in [text, "12345 MiB\n12400 MiB\n23000 MiB\n"] {
        let t = trace::parse(text, &opts).unwrap();
        assert_eq!(t.format, Format::NvidiaSmiCsv);
        assert_eq!(t.gpus[0].peak_used_mib, Some(23000.0), "{text}");
        assert_eq!(t.gpus[0].samples, 3);
    }
}

#[test]
fn windows_tables_deepspeed_timer_lines_and_cublas_allocation_failures() {
    // Windows: the driver model (WDDM / TCC) where Linux prints persistence mode,
    // and processes without per-process figures.
    let win = "+-----------------------------------------------------------------------------+\n\
| NVIDIA-SMI 456.71       Driver Version: 456.71       CUDA Version: 11.1     |\n\
|-------------------------------+----------------------+----------------------+\n\
| GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |\n\
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n\
|===============================+======================+======================|\n\
|   0  GeForce RTX 2080   WDDM  | 00000000:01:00.0  On |                  N/A |\n\
| 30%   45C    P8    20W / 225W |    654MiB /  8192MiB |      3%      Default |\n\
+-------------------------------+----------------------+----------------------+\n";
    let t = parse_text(win);
    assert_eq!(t.format, Format::NvidiaSmiTable);
    assert_eq!(
        (t.gpus[0].peak_used_mib, t.gpus[0].total_mib),
        (Some(654.0), Some(8192.0))
    );
    assert_eq!(t.gpus[0].name.as_deref(), Some("GeForce RTX 2080"));

    // DeepSpeed's step timer line alone is DeepSpeed's, not a script's print.
    let ds = "[2024-01-01 00:00:00,000] [INFO] [timer.py:260:stop] epoch=0/micro_step=10/global_step=10, \
              RunningAvgSamplesPerSec=12.3, CurrSamplesPerSec=12.5, MemAllocated=14.2GB, MaxMemAllocated=22.7GB\n";
    let t = parse_text(ds);
    assert_eq!(t.format, Format::DeepspeedSeeMemoryUsage);
    assert!(close(
        t.allocator.unwrap().peak_allocated_mib,
        22.7 * 1024.0
    ));

    // cuBLAS failing to allocate its handle: an out-of-memory event without figures.
    let cublas = "    return F.linear(input, self.weight, self.bias)\n\
                  RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n";
    let t = parse_text(cublas);
    assert_eq!(t.format, Format::PytorchOom);
    assert_eq!(t.oom.len(), 1);
    assert_eq!(t.oom[0].line, 2);
}

#[test]
fn amd_smi_metric_blocks_and_monitor_tables() {
    // `amd-smi metric` (ROCm 6): per-GPU blocks; the visible-VRAM and GTT
    // lines are not the device's used memory.
    let metric = "GPU: 0\n    USAGE:\n        GFX_ACTIVITY: 100 %\n    MEM_USAGE:\n\
        \x20       TOTAL_VRAM: 196592 MB\n        USED_VRAM: 150123 MB\n        FREE_VRAM: 46469 MB\n\
        \x20       TOTAL_VISIBLE_VRAM: 196592 MB\n        USED_VISIBLE_VRAM: 1 MB\n        USED_GTT: 20 MB\n\n\
        GPU: 1\n    MEM_USAGE:\n        TOTAL_VRAM: 196592 MB\n        USED_VRAM: 283 MB\n";
    let t = parse_text(metric);
    assert_eq!(t.format, Format::AmdSmi);
    assert!(t.format.is_device_level());
    let got = peaks_and_totals(&t);
    assert_eq!(
        got,
        vec![
            (0, Some(150123.0), Some(196592.0)),
            (1, Some(283.0), Some(196592.0))
        ]
    );
    // `amd-smi monitor`: sizes with a space before the unit, in header order.
    let monitor = "GPU  POWER  GPU_TEMP  MEM_TEMP  GFX_UTIL  GFX_CLOCK  MEM_UTIL  MEM_CLOCK  VRAM_USED  VRAM_TOTAL   PCIE_BW\n\
        \x20 0  152 W     45 °C     38 °C      98 %   2100 MHz      35 %   1300 MHz  150123 MB  196592 MB  12 Mb/s\n\
        \x20 1  140 W     44 °C     37 °C       0 %    133 MHz       0 %    900 MHz     283 MB  196592 MB   0 Mb/s\n\
        \x20 0  152 W     45 °C     38 °C      98 %   2100 MHz      35 %   1300 MHz  160000 MB  196592 MB  12 Mb/s\n";
    let t = parse_text(monitor);
    assert_eq!(t.format, Format::AmdSmi);
    let got: Vec<_> = t
        .gpus
        .iter()
        .map(|g| (g.index, g.peak_used_mib, g.samples))
        .collect();
    assert_eq!(got, vec![(0, Some(160000.0), 2), (1, Some(283.0), 1)]);
    assert_eq!(t.gpus[0].total_mib, Some(196592.0));
}

#[test]
fn every_format_serializes_as_the_name_format_takes() {
    for f in Format::ALL {
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(json, format!("\"{}\"", f.id()));
        assert_eq!(serde_json::from_str::<Format>(&json).unwrap(), f);
    }
    // What earlier builds wrote for axolotl still reads.
    assert_eq!(
        serde_json::from_str::<Format>("\"axolotl-metrics\"").unwrap(),
        Format::AxolotlMetrics
    );
}

#[test]
fn ms_swift_memory_in_its_log_dicts() {
    // ms-swift's Trainer log dict and its logging.jsonl (keys as ms-swift
    // 4.6.0 `add_train_message` writes them): 'memory(GiB)' is the largest
    // `max_memory_reserved` so far, GiB.
    let t = parse_text(
        "Train:   5%|▌         | 5/100 [00:21<06:32,  4.13s/it]\n\
         {'loss': 1.93471, 'grad_norm': 2.61279, 'learning_rate': 9.99e-05, 'memory(GiB)': 17.83, \
         'train_speed(iter/s)': 0.241, 'epoch': 0.05, 'global_step/max_steps': '5/100'}\n\
         {\"loss\": 1.5123, \"memory(GiB)\": 18.4, \"global_step/max_steps\": \"10/100\"}\n",
    );
    assert_eq!(t.format, Format::MsSwiftMemory);
    let a = t.allocator.unwrap();
    assert!(close(a.peak_reserved_mib, 18.4 * 1024.0), "{a:?}");
    assert_eq!(a.peak_allocated_mib, None);
    // Before 4.5 the figure of a device-map run was the sum over its GPUs:
    // said, since the log does not tell the release.
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("before 4.5") && w.contains("sum over the GPUs")),
        "{:?}",
        t.warnings
    );
    // Only for ms-swift's figures.
    let other = parse_text(
        "{'loss': 1.1, 'memory/max_allocated (GiB)': 15.9, 'memory/device_reserved (GiB)': 18.0}\n",
    );
    assert!(
        other.warnings.iter().all(|w| !w.contains("ms-swift")),
        "{:?}",
        other.warnings
    );
}

#[test]
fn llamafactory_vram_and_xtuners_peak_print() {
    // LLaMA-Factory's trainer_log.jsonl with RECORD_VRAM=1 (llamafactory 0.9.5
    // `LogCallback`): peak allocated and reserved, GiB.
    let t = parse_text(
        "{\"current_steps\": 10, \"total_steps\": 100, \"loss\": 1.2345, \"lr\": 0.0001, \
         \"epoch\": 0.1, \"vram_allocated\": 15.23, \"vram_reserved\": 17.5}\n\
         {\"current_steps\": 20, \"total_steps\": 100, \"loss\": 1.1, \"vram_allocated\": 15.4, \
         \"vram_reserved\": 17.5}\n",
    );
    assert_eq!(t.format, Format::LlamafactoryVram);
    let a = t.allocator.unwrap();
    assert!(
        close(a.peak_allocated_mib, 15.4 * 1024.0) && close(a.peak_reserved_mib, 17.5 * 1024.0)
    );
    // XTuner's `peak gpu memory {max_memory/1024**3:.1f}G`: G read as GiB,
    // with the label warning.
    let t = parse_text(
        "2026-11-30 10:00:00.123 | SUCCESS  | xtuner._lite - [Step 10] Elapsed time 12.34 seconds, \
         peak gpu memory 12.3G\n",
    );
    assert_eq!(t.format, Format::PytorchPeakCounters);
    let a = t.allocator.unwrap();
    assert!(close(a.peak_reserved_mib, 12.3 * 1024.0), "{a:?}");
    assert!(
        t.warnings.iter().any(|w| w.contains("G, M")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn one_print_with_both_counters() {
    // nanotron 0.4's `log_memory`: both peaks in one sentence-separated print.
    let t = parse_text(
        "11/30/2026 10:00:00 [INFO|DP=0|PP=0|TP=0]: [After train batch iter] Memory usage: \
         12345.67MiB. Peak allocated 23456.78MiB. Peak reserved: 34567.00MiB\n",
    );
    assert_eq!(t.format, Format::PytorchPeakCounters);
    let a = t.allocator.unwrap();
    assert!(
        close(a.peak_allocated_mib, 23456.78) && close(a.peak_reserved_mib, 34567.0),
        "{a:?}"
    );
    // A counter named without max/peak before it (the current one) is not a peak.
    let t = parse_text("max memory allocated 10.5 GiB. memory reserved 12.0 GiB\n");
    let a = t.allocator.unwrap();
    assert!(
        close(a.peak_allocated_mib, 10.5 * 1024.0) && a.peak_reserved_mib.is_none(),
        "{a:?}"
    );
}

/// A script's own print of the counters by name, without the word memory
/// (`peak allocated 14.2 GiB, peak reserved 16.0 GiB`, `Max allocated:
/// 12.4GB`), and "Peak VRAM" with its thousands grouped, are peaks; a count
/// without a size unit, or a current counter, is not.
#[test]
fn counters_printed_by_name_and_vram_peaks() {
    let t = parse_text("[rank0]: peak allocated 14.2 GiB, peak reserved 16.0 GiB\n");
    assert_eq!(t.format, Format::PytorchPeakCounters);
    let a = t.allocator.unwrap();
    assert!(
        close(a.peak_allocated_mib, 14.2 * 1024.0) && close(a.peak_reserved_mib, 16.0 * 1024.0),
        "{a:?}"
    );
    let t = parse_text(
        "Allocated: 10.2GiB, Max allocated: 12.4GiB, Reserved: 14.0GiB, Max reserved: 14.5GiB\n",
    );
    let a = t.allocator.unwrap();
    assert!(
        close(a.peak_allocated_mib, 12.4 * 1024.0) && close(a.peak_reserved_mib, 14.5 * 1024.0),
        "{a:?}"
    );
    let t = parse_text("Peak VRAM: 18,432 MiB\n");
    assert!(close(t.allocator.unwrap().peak_reserved_mib, 18432.0));
    // No size unit, no memory: not a print of the counters.
    assert!(trace::parse("max reserved slots: 4096\n", &ParseOptions::default()).is_err());
}

#[test]
fn verl_console_metrics() {
    // verl's `concat_dict_to_str` line (verl 0.9.1): peak counters in GiB among
    // the other metrics; the CPU figure is not the GPU's.
    let t = parse_text(
        "step:10 - global_seqlen/min:1234 - actor/entropy:0.512 - actor/pg_loss:0.01 - \
         perf/mfu/actor:0.35 - perf/max_memory_allocated_gb:42.1234 - \
         perf/max_memory_reserved_gb:55.5 - perf/cpu_memory_used_gb:120.3 - timing_s/step:45.6\n",
    );
    assert_eq!(t.format, Format::VerlMetrics);
    let a = t.allocator.unwrap();
    assert!(
        close(a.peak_allocated_mib, 42.1234 * 1024.0) && close(a.peak_reserved_mib, 55.5 * 1024.0)
    );
}

#[test]
fn verl_memory_lines_are_readings_at_a_moment() {
    // `log_gpu_memory_usage` / `GPUMemoryLogger` (verl 0.4.1 and 0.9.1, with
    // device memory used/total; 0.3.0 without, and unrounded), through Ray's
    // worker prefix: the largest reserved reading is the reserved peak (a
    // lower bound), allocated is the last reading, device used a note.
    let new = "(WorkerDict pid=4242) After FSDP wrapping, memory allocated (GB): 12.34, memory reserved (GB): 14.00, device memory used/total (GB): 20.10/79.25\n\
        (WorkerDict pid=4242) dp actor Before update_policy, memory allocated (GB): 30.50, memory reserved (GB): 41.00, device memory used/total (GB): 61.75/79.25\n\
        (WorkerDict pid=4242) dp actor After update_policy, memory allocated (GB): 18.25, memory reserved (GB): 52.50, device memory used/total (GB): 70.00/79.25\n\
        (WorkerDict pid=4242) After offload actor model during update_actor, memory allocated (GB): 1.50, memory reserved (GB): 2.00, device memory used/total (GB): 35.00/79.25\n";
    let t = parse_text(new);
    assert_eq!(t.format, Format::VerlMetrics);
    let a = t.allocator.clone().unwrap();
    assert!(close(a.peak_reserved_mib, 52.5 * 1024.0), "{a:?}");
    assert_eq!(a.peak_allocated_mib, None, "a reading is no peak: {a:?}");
    assert!(close(a.current_allocated_mib, 1.5 * 1024.0), "{a:?}");
    assert!(
        t.notes
            .iter()
            .any(|(label, mib)| label.contains("device memory used")
                && (mib - 70.0 * 1024.0).abs() < 0.5),
        "{:?}",
        t.notes
    );
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("readings at a moment") && w.contains("rollout")),
        "{:?}",
        t.warnings
    );
    let old = "After init from HF AutoModel, memory allocated (GB): 2.871234567, memory reserved (GB): 3.0\n\
        After actor FSDP init, memory allocated (GB): 7.5, memory reserved (GB): 9.25\n";
    let t = parse_text(old);
    assert_eq!(t.format, Format::VerlMetrics);
    assert!(close(t.allocator.unwrap().peak_reserved_mib, 9.25 * 1024.0));
}

#[test]
fn mmengine_runner_logs() {
    // XTuner / OpenMMLab logs (mmengine 0.10.7 `LogProcessor`): `memory` is
    // max_memory_allocated in MiB since the previous line.
    let t = parse_text(
        "11/30 10:11:12 - mmengine - INFO - Iter(train) [  10/1000]  lr: 2.0000e-04  eta: 1:23:45  \
         time: 1.2345  data_time: 0.0123  memory: 15234  loss: 1.2345  tflops: 45.6789\n\
         11/30 10:11:24 - mmengine - INFO - Epoch(train)   [1][ 20/270]  lr: 2.0000e-04  eta: 1:23:33  \
         time: 1.2210  data_time: 0.0101  memory: 15890  loss: 1.1001\n",
    );
    assert_eq!(t.format, Format::MmengineMemory);
    let a = t.allocator.unwrap();
    assert!(
        close(a.peak_allocated_mib, 15890.0) && a.peak_reserved_mib.is_none(),
        "{a:?}"
    );
}

#[test]
fn pytorch_list_gpu_processes() {
    // `torch.cuda.list_gpu_processes()` printed for two GPUs, then GPU 0 again
    // (lines as torch/cuda/memory.py formats them: `process {pid:>10d} uses
    // {mem:>12.3f} MB GPU memory`, MB = 2^20): each listing is a reading of
    // its GPU, the sum of its processes.
    let t = parse_text(
        "step 10\nGPU:0\nprocess       3187 uses    23456.000 MB GPU memory\n\
         process       3190 uses      512.000 MB GPU memory\nGPU:1\n\
         process       3188 uses    23000.500 MB GPU memory\nstep 20\nGPU:0\n\
         process       3187 uses    24000.000 MB GPU memory\n\
         process       3190 uses      512.000 MB GPU memory\n",
    );
    assert_eq!(t.format, Format::PytorchGpuProcesses);
    assert!(t.format.is_device_level());
    assert_eq!(
        peaks_and_totals(&t),
        vec![(0, Some(24512.0), None), (1, Some(23000.5), None)]
    );
    assert_eq!(t.gpus[0].samples, 2);
    // One entry per process, at its largest.
    assert_eq!(t.processes.len(), 3);
    assert_eq!(t.processes[0].used_mib, Some(24000.0));
    // Nothing running: nothing to compare, said so.
    let e = trace::parse(
        "GPU:0\nno processes are running\n",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert!(e.message.contains("listed no process"), "{e}");
}

#[test]
fn nvitop_one_shot_tables() {
    // `nvitop -1`: nvidia-smi's table drawn with box-drawing characters, sizes
    // in GiB, a utilisation column beside it and nvitop's own process columns
    // (layout as nvitop 1.x prints it; written for this test, not a capture).
    let text = r#"Wed Apr 10 17:39:33 2024
╒═════════════════════════════════════════════════════════════════════════════╕
│ NVITOP 1.3.2       Driver Version: 550.54.15      CUDA Driver Version: 12.4 │
├───────────────────────────────┬──────────────────────┬──────────────────────┤
│ GPU  Name        Persistence-M│ Bus-Id        Disp.A │ Volatile Uncorr. ECC │
│ Fan  Temp  Perf  Pwr:Usage/Cap│         Memory-Usage │ GPU-Util  Compute M. │
╞═══════════════════════════════╪══════════════════════╪══════════════════════╪════════════════════════════════════════════════╕
│   0  GeForce RTX 4090    Off  │ 00000000:01:00.0 Off │                  N/A │ MEM: ███████████████████████████▋ 77.7%       │
│ 30%   57C    P2   322W / 450W │  18.64GiB / 23.99GiB │     97%      Default │ UTL: ██████████████████████████████████ 97%   │
├───────────────────────────────┼──────────────────────┼──────────────────────┼────────────────────────────────────────────────┤
│   1  GeForce RTX 4090    Off  │ 00000000:02:00.0 Off │                  N/A │ MEM: ▏ 0.8%                                    │
│ 30%   37C    P8    22W / 450W │  203.0MiB / 23.99GiB │      0%      Default │ UTL: ▏ 0%                                      │
╘═══════════════════════════════╧══════════════════════╧══════════════════════╧════════════════════════════════════════════════╛
[ CPU: ████▊ 7.5%                                   ]  ( Load Average:  2.33  2.03  1.87 )
[ MEM: ████████████▍ 20.5%                          ]  [ SWP: ▏ 0.0%                    ]

╒══════════════════════════════════════════════════════════════════════════════════════════════════════════════════╕
│ Processes:                                                                                           user@host │
│ GPU     PID      USER  GPU-MEM %SM  %CPU  %MEM      TIME  COMMAND                                                 │
╞══════════════════════════════════════════════════════════════════════════════════════════════════════════════════╡
│   0   12345 C    user 18.44GiB  97 100.2   3.4   1:23:45  python train.py --batch-size 8                        │
╘══════════════════════════════════════════════════════════════════════════════════════════════════════════════════╛
"#;
    let t = parse_text(text);
    assert_eq!(t.format, Format::Nvitop);
    assert!(t.format.is_device_level());
    let got = peaks_and_totals(&t);
    assert!(
        close(got[0].1, 18.64 * 1024.0) && close(got[0].2, 23.99 * 1024.0),
        "{got:?}"
    );
    assert_eq!(got[1].1, Some(203.0));
    assert_eq!(t.gpus[0].name.as_deref(), Some("GeForce RTX 4090"));
    let p = &t.processes[0];
    assert_eq!(
        (p.gpu, p.pid, p.kind.as_deref()),
        (Some(0), Some(12345), Some("C"))
    );
    assert!(close(p.used_mib, 18.44 * 1024.0), "{p:?}");
    assert!(p.name.starts_with("python train.py"), "{p:?}");
}

#[test]
fn nvitop_process_rows_with_the_bandwidth_column() {
    // nvitop releases that show `%GMBW` beside `%SM`, and elapsed times in
    // days: the command is what follows the time, wherever that falls
    // (written for this test, not a capture).
    let text = r#"╒═════════════════════════════════════════════════════════════════════════════╕
│ NVITOP 1.4.1       Driver Version: 550.90.07      CUDA Driver Version: 12.4 │
├───────────────────────────────┬──────────────────────┬──────────────────────┤
│ GPU  Name        Persistence-M│ Bus-Id        Disp.A │ Volatile Uncorr. ECC │
│ Fan  Temp  Perf  Pwr:Usage/Cap│         Memory-Usage │ GPU-Util  Compute M. │
╞═══════════════════════════════╪══════════════════════╪══════════════════════╡
│   0  NVIDIA A100-SXM4-80GB On │ 00000000:07:00.0 Off │                    0 │
│ N/A   41C    P0   310W / 400W │  65.02GiB / 80.00GiB │     97%      Default │
╘═══════════════════════════════╧══════════════════════╧══════════════════════╛

╒══════════════════════════════════════════════════════════════════════════════════════╕
│ Processes:                                                           alice@gpu-node-3 │
│ GPU     PID      USER  GPU-MEM %SM %GMBW  %CPU  %MEM      TIME  COMMAND               │
╞══════════════════════════════════════════════════════════════════════════════════════╡
│   0   13420 C   alice 64.99GiB  98    45 101.3   2.1  1:02:03  python train.py --cfg │
│   0   13500 C   alice  512MiB    0     0   0.1   0.3   3 days  python serve.py       │
│   0   13600 C   alice  300MiB  N/A   N/A   0.0   0.1     N/A  python idle.py        │
╘══════════════════════════════════════════════════════════════════════════════════════╛
"#;
    let t = parse_text(text);
    assert_eq!(t.format, Format::Nvitop);
    let names: Vec<&str> = t.processes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["python train.py --cfg", "python serve.py", "python idle.py"]
    );
    assert!(close(t.processes[0].used_mib, 64.99 * 1024.0));
    assert_eq!(t.processes[1].used_mib, Some(512.0));
}

#[test]
fn jax_and_tensorflow_out_of_memory_lines_name_the_request() {
    let jax = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.\n";
    let t = parse_text(jax);
    assert_eq!(t.oom[0].tried_to_allocate_mib, Some(16384.0));
    let tf = "W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.53GiB (rounded to 1644167168)requested by op MatMul\n";
    let t = parse_text(tf);
    assert!(
        close(t.oom[0].tried_to_allocate_mib, 1.53 * 1024.0),
        "{:?}",
        t.oom
    );
}

#[test]
fn nvidia_smi_query_as_xml() {
    // `nvidia-smi -q -x`: the `-q` figures under tags (layout of the driver's
    // nvsmi_device DTD; written for this test, not a capture). BAR1 is not
    // the frame buffer.
    let text = r#"<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
	<timestamp>Mon Nov 30 12:00:00 2026</timestamp>
	<driver_version>535.104.05</driver_version>
	<cuda_version>12.2</cuda_version>
	<attached_gpus>2</attached_gpus>
	<gpu id="00000000:07:00.0">
		<product_name>NVIDIA A100-SXM4-80GB</product_name>
		<fb_memory_usage>
			<total>81920 MiB</total>
			<reserved>498 MiB</reserved>
			<used>60000 MiB</used>
			<free>21421 MiB</free>
		</fb_memory_usage>
		<bar1_memory_usage>
			<total>131072 MiB</total>
			<used>1 MiB</used>
			<free>131071 MiB</free>
		</bar1_memory_usage>
		<processes>
			<process_info>
				<gpu_instance_id>N/A</gpu_instance_id>
				<compute_instance_id>N/A</compute_instance_id>
				<pid>12345</pid>
				<type>C</type>
				<process_name>python</process_name>
				<used_memory>59000 MiB</used_memory>
			</process_info>
		</processes>
	</gpu>
	<gpu id="00000000:0F:00.0">
		<product_name>NVIDIA A100-SXM4-80GB</product_name>
		<fb_memory_usage>
			<total>81920 MiB</total>
			<reserved>498 MiB</reserved>
			<used>4 MiB</used>
			<free>81417 MiB</free>
		</fb_memory_usage>
		<processes>
		</processes>
	</gpu>
</nvidia_smi_log>
"#;
    let t = parse_text(text);
    assert_eq!(t.format, Format::NvidiaSmiQuery);
    let got = peaks_and_totals(&t);
    assert_eq!(
        got,
        vec![
            (0, Some(60000.0), Some(81920.0)),
            (1, Some(4.0), Some(81920.0))
        ]
    );
    assert_eq!(t.gpus[0].name.as_deref(), Some("NVIDIA A100-SXM4-80GB"));
    let p = &t.processes[0];
    assert_eq!(
        (p.gpu, p.pid, p.used_mib),
        (Some(0), Some(12345), Some(59000.0))
    );
    assert_eq!(p.name, "python");
}

#[test]
fn memory_estimators_are_refused_as_predictions() {
    let ds = "Estimated memory needed for params, optim states and gradients for a:\n\
              HW: Setup with 1 node, 8 GPUs per node.\n\
              SW: Model with 6738M total params, 131M largest layer params.\n\
              \x20 per CPU  |  per GPU |   Options\n\
              \x20 169.41GB |   0.49GB | offload_param=cpu , offload_optimizer=cpu , zero_init=1\n";
    let why = refusal(ds).to_string();
    assert!(
        why.contains("DeepSpeed's memory estimator") && why.contains("not a measurement"),
        "{why}"
    );
    let acc = "┌────────────────────────────────────────────────────────┐\n\
               │  Memory Usage for loading `bert-base-cased`            │\n\
               ├───────┬─────────────┬──────────┬───────────────────────┤\n\
               │ dtype │Largest Layer│Total Size│Training using Adam    │\n\
               ├───────┼─────────────┼──────────┼───────────────────────┤\n\
               │float32│  84.95 MB   │418.18 MB │        1.61 GB        │\n";
    let why = refusal(acc).to_string();
    assert!(why.contains("accelerate estimate-memory"), "{why}");
}

/// torch.profiler's operator table holds memory figures, but per operator
/// (allocated net of freed, summed over calls): refused with what it is,
/// with the device's columns (`CUDA Mem`) or only the CPU's.
#[test]
fn profiler_operator_tables_are_refused_as_flows() {
    let rule =
        "-------------------------------------------------------  ------------  ------------  \
                ------------  ------------  ------------  ------------  ------------\n";
    for device in ["      CUDA Mem  Self CUDA Mem  ", ""] {
        let table = format!(
            "{rule}                                                   Name    Self CPU %      \
             Self CPU   CPU total %     CPU total  CPU time avg       CPU Mem  Self CPU Mem\
             {device}  # of Calls  \n{rule}\
             \x20                                           aten::empty         1.11%     \
             226.000us         1.11%     226.000us       2.260us      94.79 Mb      94.79 Mb       \
             1.23 Gb       1.23 Gb           100  \n{rule}Self CPU time total: 20.371ms\n"
        );
        let why = refusal(&table).to_string();
        assert!(
            why.contains("torch.profiler") && why.contains("not what the GPU held"),
            "{why}"
        );
    }
}

#[test]
fn binary_uploads_are_named() {
    // A pickle is read as a memory snapshot (tests/snapshots.rs); one cut
    // short is refused at the byte where it ends.
    let pickle = [0x80u8, 0x04, 0x95, 0x10, 0x00, b'}', b'q'];
    let why = trace::parse_reader(&pickle[..], &ParseOptions::default())
        .unwrap_err()
        .to_string();
    assert!(why.contains("pickle at byte"), "{why}");
    let gz = [0x1Fu8, 0x8B, 0x08, 0x00];
    let why = trace::parse_reader(&gz[..], &ParseOptions::default())
        .unwrap_err()
        .to_string();
    assert!(why.contains("gzip"), "{why}");
}

#[test]
fn apple_mps_out_of_memory_gives_its_figures() {
    let mps = "RuntimeError: MPS backend out of memory (MPS allocated: 17.77 GB, other allocations: 1.30 GB, \
               max allowed: 18.13 GB). Tried to allocate 256.00 MB on private pool. Use \
               PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations (may cause system failure).\n";
    let t = parse_text(mps);
    let o = &t.oom[0];
    assert_eq!(o.tried_to_allocate_mib, Some(256.0));
    assert!(close(o.allocated_by_pytorch_mib, 17.77 * 1024.0), "{o:?}");
    assert!(close(o.capacity_mib, 18.13 * 1024.0), "{o:?}");
}

#[test]
fn rank_prefixed_peak_prints_are_kept_per_rank_and_judged_per_rank() {
    let text = "[rank0]: Max memory allocated: 30.00 GiB\n[rank0]: Max memory reserved: 34.00 GiB\n\
                [rank1]: Max memory allocated: 31.00 GiB\n[rank1]: Max memory reserved: 36.50 GiB\n";
    let t = parse_text(text);
    assert_eq!(t.format, Format::PytorchPeakCounters);
    let a = t.allocator.clone().unwrap();
    assert_eq!(a.peak_reserved_mib, Some(36.5 * 1024.0));
    let ranks: Vec<_> = a
        .ranks
        .iter()
        .map(|r| (r.rank, r.peak_allocated_mib, r.peak_reserved_mib))
        .collect();
    assert_eq!(
        ranks,
        vec![
            (0, Some(30.0 * 1024.0), Some(34.0 * 1024.0)),
            (1, Some(31.0 * 1024.0), Some(36.5 * 1024.0))
        ]
    );
    let est = cost_model::estimate::estimate(&cost_model::Plan::default()).unwrap();
    let v = cost_model::trace::findings::verdict(&t, &est).unwrap();
    assert_eq!(v.gpus.len(), 2, "{v:?}");
    // torchrun's `--tee` prefix names the local rank; a script's own
    // `Rank 1: …` the rank it printed.
    for v in [
        text.replace("[rank", "[default"),
        text.replace("[rank", "Rank ").replace("]:", ":"),
    ] {
        let ranks: Vec<_> = rank_peaks(&v)
            .into_iter()
            .map(|(r, _, res)| (r, res))
            .collect();
        assert_eq!(
            ranks,
            vec![(0, Some(34.0 * 1024.0)), (1, Some(36.5 * 1024.0))],
            "{v}"
        );
    }
    // Ranks that printed only the allocated peak: the log's reserved peak is judged.
    let t = parse_text("[rank0]: Max memory allocated: 30.00 GiB\nmax_memory_reserved: 34 GiB\n");
    let v = cost_model::trace::findings::verdict(&t, &est).unwrap();
    assert_eq!(v.gpus.len(), 1, "{v:?}");
}

#[test]
fn a_gpu_whose_memory_the_driver_gives_as_na_is_named() {
    // nvidia-smi prints `[N/A]` (or `[Not Supported]`) for memory.used on MIG
    // instances, unified-memory boards and some vGPUs.
    let some = "index, memory.used [MiB]\n0, 100 MiB\n1, [N/A]\n0, 200 MiB\n1, [Not Supported]\n";
    let t = trace::parse(some, &ParseOptions::default()).unwrap();
    assert_eq!(t.gpus.len(), 1);
    assert!(
        t.warnings
            .iter()
            .any(|w| w.starts_with("GPU 1: memory.used is [N/A] in all 2 row(s)")),
        "{:?}",
        t.warnings
    );
    let partly = "index, memory.used [MiB]\n0, 100 MiB\n0, [N/A]\n0, 300 MiB\n";
    let t = trace::parse(partly, &ParseOptions::default()).unwrap();
    assert_eq!(t.gpus[0].peak_used_mib, Some(300.0));
    assert!(t
        .warnings
        .iter()
        .any(|w| w == "GPU 0: 1 row(s) with memory.used [N/A] left out"));
    // Nothing but [N/A]: refused, saying so.
    let none = "index, memory.used [MiB]\n0, [N/A]\n1, [N/A]\n";
    let e = refusal(none).to_string();
    assert!(e.contains("memory.used is [N/A] in every row (2)"), "{e}");
}

#[test]
fn weights_and_biases_system_metrics_exports() {
    // The run history as the API gives it (pandas' CSV: sparse rows, the
    // system monitor's bytes and percentage of GPU 0 and 1, and the process's
    // copy of GPU 0), and a chart's export (value, bucket min and max).
    let history = "\
_runtime,_timestamp,system.gpu.0.memoryAllocated,system.gpu.0.memoryAllocatedBytes,system.gpu.1.memoryAllocatedBytes,system.gpu.process.0.memoryAllocatedBytes,system.cpu
31.2,1718000031.2,51.2,42949672960,41875931136,42949672960,12.5
45.0,1718000045.0,,,,,13.0
62.9,1718000062.9,84.6,70866960384,69793218560,70866960384,12.0
";
    let t = trace::parse(history, &ParseOptions::default()).unwrap();
    assert_eq!(t.format, Format::WandbSystemMetrics);
    assert!(t.format.is_device_level());
    assert_eq!(t.gpus.len(), 2);
    assert_eq!(t.gpus[0].peak_used_mib, Some(67584.0)); // 70866960384 B
    assert_eq!(t.gpus[1].peak_used_mib, Some(66560.0));
    assert_eq!(t.gpus[0].samples, 2); // the empty row is no reading
                                      // Seconds from the epoch column, from the first sample.
    let ts: Vec<f64> = t.gpus[0].series.points.iter().map(|p| p.t).collect();
    assert!((ts[1] - 31.7).abs() < 1e-6, "{ts:?}");
    assert!(t.warnings.iter().any(|w| w.contains("mean of its samples")));

    let chart = "\
\"Relative Time (Process)\",\"a - system/gpu.0.memoryAllocatedBytes\",\"a - system/gpu.0.memoryAllocatedBytes__MIN\",\"a - system/gpu.0.memoryAllocatedBytes__MAX\",\"b - system/gpu.0.memoryAllocatedBytes\"
\"30\",\"1073741824\",\"1073741824\",\"1073741824\",\"2147483648\"
\"60\",\"68719476736\",\"64424509440\",\"72477573120\",\"\"
";
    let t = trace::parse(chart, &ParseOptions::default()).unwrap();
    assert_eq!(t.format, Format::WandbSystemMetrics);
    // One reading a row, the bucket's max; the __MIN column is no peak.
    assert_eq!(t.gpus[0].samples, 2);
    assert_eq!(t.gpus[0].peak_used_mib, Some(69120.0));
    assert!(
        t.warnings.iter().any(|w| w.contains("2 runs (a, b)")),
        "{:?}",
        t.warnings
    );

    // A percentage alone cannot become bytes: refused, saying which column to export.
    let pct = "_runtime,system.gpu.0.memoryAllocated\n30,51.2\n";
    let e = refusal(pct);
    assert_eq!(e.line, Some(1));
    assert!(e.message.contains("memoryAllocatedBytes"), "{e}");
    // A header without a figure under it says so.
    let empty = "_runtime,system.gpu.0.memoryAllocatedBytes\n30,\n";
    let e = refusal(empty);
    assert!(e.message.contains("hold no figures"), "{e}");
    // nvidia-smi's own CSV is not taken for it.
    let smi = "memory.used [MiB], memory.total [MiB]\n40213 MiB, 81559 MiB\n";
    let t = trace::parse(smi, &ParseOptions::default()).unwrap();
    assert_eq!(t.format, Format::NvidiaSmiCsv);
}

#[test]
fn lightning_device_stats_monitor_csv() {
    // CSVLogger's metrics.csv with DeviceStatsMonitor on CUDA: memory_stats()
    // keys after the hook's name, bytes; other metrics' rows leave them empty.
    let csv = "\
DeviceStatsMonitor.on_train_batch_end/active_bytes.all.peak,DeviceStatsMonitor.on_train_batch_end/allocated_bytes.all.current,DeviceStatsMonitor.on_train_batch_end/allocated_bytes.all.peak,DeviceStatsMonitor.on_train_batch_end/reserved_bytes.all.current,DeviceStatsMonitor.on_train_batch_end/reserved_bytes.all.peak,DeviceStatsMonitor.on_train_batch_end/num_alloc_retries,epoch,step,train_loss
12884901888,4294967296,12884901888,16106127360,16106127360,0,0,49,
,,,,,,0,49,2.31
13958643712,5368709120,13958643712,17179869184,17179869184,2,0,99,
";
    let t = trace::parse(csv, &ParseOptions::default()).unwrap();
    assert_eq!(t.format, Format::LightningDeviceStats);
    assert!(!t.format.is_device_level());
    let a = t.allocator.unwrap();
    assert_eq!(a.peak_allocated_mib, Some(13312.0));
    assert_eq!(a.peak_reserved_mib, Some(16384.0));
    assert_eq!(a.current_allocated_mib, Some(5120.0));
    assert!(
        t.warnings.iter().any(|w| w.contains("retried 2 times")),
        "{:?}",
        t.warnings
    );
    // A printed memory_stats() dict is still read as one.
    let dict =
        "{'allocated_bytes.all.peak': 20340752384, 'reserved_bytes.all.peak': 21474836480}\n";
    assert_eq!(
        trace::parse(dict, &ParseOptions::default()).unwrap().format,
        Format::PytorchMemorySummary
    );
    // Columns without a figure under them say so.
    let empty = "DeviceStatsMonitor.on_train_batch_end/allocated_bytes.all.peak,step\n,9\n";
    let e = refusal(empty);
    assert!(e.message.contains("hold no figures"), "{e}");
}

#[test]
fn rocm_smi_and_amd_smi_as_json() {
    // `rocm-smi --showmeminfo vram --json` (bytes as strings, per card) and
    // `amd-smi metric --json` / `monitor --json` (per GPU, a value and its
    // unit, or one string); layouts of ROCm 6, written for this test.
    let rocm = r#"{"card0": {"VRAM Total Memory (B)": "205822885888", "VRAM Total Used Memory (B)": "10737418240"}, "card1": {"VRAM Total Memory (B)": "205822885888", "VRAM Total Used Memory (B)": "42949672960"}}"#;
    let t = trace::parse(rocm, &ParseOptions::default()).unwrap();
    assert_eq!(t.format, Format::RocmSmi);
    assert_eq!(
        peaks_and_totals(&t),
        vec![
            (0, Some(10240.0), Some(196288.0)),
            (1, Some(40960.0), Some(196288.0))
        ]
    );
    let amd = r#"[
    {
        "gpu": 0,
        "mem_usage": {
            "total_vram": {
                "value": 196592,
                "unit": "MB"
            },
            "used_vram": {
                "value": 150123,
                "unit": "MB"
            }
        }
    },
    {
        "gpu": 1,
        "vram_used": "283 MB",
        "vram_total": "196592 MB"
    }
]
"#;
    let t = trace::parse(amd, &ParseOptions::default()).unwrap();
    assert_eq!(t.format, Format::AmdSmi);
    assert_eq!(
        peaks_and_totals(&t),
        vec![
            (0, Some(150123.0), Some(196592.0)),
            (1, Some(283.0), Some(196592.0))
        ]
    );
}

#[test]
fn oom_messages_wrapped_at_any_width_give_the_same_figures() {
    // A message hard-wrapped at 60–120 columns (an e-mail, a terminal copy, an
    // issue's quote), the cut anywhere — inside "out of memory" or "Tried to
    // allocate", between a figure and its unit.
    fn wrap(text: &str, width: usize) -> String {
        let mut out = String::new();
        for line in text.lines() {
            let mut col = 0;
            for (i, word) in line.split(' ').enumerate() {
                if i > 0 {
                    if col + 1 + word.len() > width {
                        out.push('\n');
                        col = 0;
                    } else {
                        out.push(' ');
                        col += 1;
                    }
                }
                out.push_str(word);
                col += word.len();
            }
            out.push('\n');
        }
        out
    }
    let figures = |t: &Trace| {
        t.oom
            .iter()
            .map(|o| {
                (
                    o.gpu,
                    o.tried_to_allocate_mib,
                    o.capacity_mib,
                    o.free_mib,
                    o.allocated_by_pytorch_mib,
                    o.reserved_by_pytorch_mib,
                )
            })
            .collect::<Vec<_>>()
    };
    for (name, text) in fixtures() {
        if !name.starts_with("oom_") {
            continue;
        }
        let want = figures(&parse(&name));
        for width in [60, 72, 80, 100, 120] {
            let t = trace::parse(&wrap(&text, width), &ParseOptions::default())
                .unwrap_or_else(|e| panic!("{name} at {width}: {e}"));
            assert_eq!(figures(&t), want, "{name} wrapped at {width}");
        }
    }
}

#[test]
fn a_query_csv_resaved_by_a_spreadsheet_reads_the_same() {
    // Excel in a decimal-comma locale saves with semicolons and may quote
    // every field; a copy out of a spreadsheet is tab-separated.
    let figures = |text: &str| match trace::parse(text, &ParseOptions::default()) {
        Ok(t) => Some(peaks_and_totals(&t)),
        Err(_) => None,
    };
    let mut read_ones = 0;
    for (name, text) in fixtures() {
        if !name.starts_with("smi_csv_") {
            continue;
        }
        let want = figures(&text);
        read_ones += usize::from(want.is_some());
        let resaved = |sep: &str, quote: bool| -> String {
            text.lines()
                .map(|l| {
                    let f: Vec<String> = l
                        .split(',')
                        .map(|x| {
                            let x = x.trim();
                            if quote {
                                format!("\"{x}\"")
                            } else {
                                x.to_string()
                            }
                        })
                        .collect();
                    f.join(sep) + "\n"
                })
                .collect()
        };
        for (what, v) in [
            ("semicolons", resaved(";", false)),
            ("quoted semicolons", resaved(";", true)),
            ("tabs", resaved("\t", false)),
        ] {
            if want.is_some() && name != "smi_csv_07.txt" && name != "smi_csv_09.txt" {
                assert_eq!(figures(&v), want, "{name} with {what}");
            }
        }
    }
    assert!(read_ones >= 4, "{read_ones}");
}

/// DCGM's frame-buffer fields: the dcgm-exporter page (one block a scrape,
/// MiB, optional millisecond timestamps, MIG labels, one host at a time) and
/// `dcgmi dmon` (`#Entity` header, `GPU N` rows).
#[test]
fn dcgm_exporter_and_dmon() {
    let scrape = |used0: u32, used1: u32, ts: &str| {
        format!(
            "# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).\n\
             # TYPE DCGM_FI_DEV_FB_FREE gauge\n\
             DCGM_FI_DEV_FB_FREE{{gpu=\"0\",UUID=\"GPU-604a\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"node1\"}} {}{ts}\n\
             DCGM_FI_DEV_FB_FREE{{gpu=\"1\",UUID=\"GPU-704a\",device=\"nvidia1\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"node1\"}} {}{ts}\n\
             # HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n\
             # TYPE DCGM_FI_DEV_FB_USED gauge\n\
             DCGM_FI_DEV_FB_USED{{gpu=\"0\",UUID=\"GPU-604a\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"node1\"}} {used0}{ts}\n\
             DCGM_FI_DEV_FB_USED{{gpu=\"1\",UUID=\"GPU-704a\",device=\"nvidia1\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"node1\"}} {used1}{ts}\n",
            81081 - used0,
            81081 - used1,
        )
    };
    let page = scrape(1200, 31, "") + &scrape(59870, 31, "") + &scrape(41000, 31, "");
    let t = parse_text(&page);
    assert_eq!(t.format, Format::Dcgm);
    assert!(Format::Dcgm.is_device_level());
    assert_eq!(t.gpus.len(), 2);
    let g0 = &t.gpus[0];
    assert_eq!(g0.name.as_deref(), Some("NVIDIA A100-SXM4-80GB"));
    assert_eq!(g0.total_mib, Some(81081.0));
    assert_eq!(g0.peak_used_mib, Some(59870.0));
    assert_eq!(g0.samples, 3);
    assert_eq!(t.gpus[1].peak_used_mib, Some(31.0));
    // Timestamps (ms since the epoch) give the series its times.
    let timed = scrape(1200, 31, " 1733140800000") + &scrape(59870, 31, " 1733140815000");
    let t = parse_text(&timed);
    let pts = &t.gpus[0].series.points;
    assert_eq!(pts.len(), 2);
    assert!((pts[1].t - pts[0].t - 15.0).abs() < 1e-9, "{pts:?}");
    // A page gathered from two hosts keeps the first host's GPUs and says so.
    let two = scrape(1200, 31, "") + &scrape(50000, 7000, "").replace("node1", "node2");
    let t = parse_text(&two);
    assert_eq!(t.gpus[0].peak_used_mib, Some(1200.0));
    assert!(
        t.warnings.iter().any(|w| w.contains("more than one host")),
        "{:?}",
        t.warnings
    );
    // MIG instances are told apart by their profile and instance id.
    let mig = "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-1\",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\",modelName=\"NVIDIA A100-SXM4-80GB\"} 14366\n\
        DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-1\",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\",modelName=\"NVIDIA A100-SXM4-80GB\"} 9880\n";
    let t = parse_text(mig);
    assert_eq!(t.gpus.len(), 2);
    assert_eq!(t.gpus[0].mig.as_deref(), Some("3g.40gb #1"));
    assert_eq!(t.gpus[1].peak_used_mib, Some(9880.0));
    // Without the used frame buffer: refused, saying which field to collect.
    let e = refusal("DCGM_FI_DEV_FB_FREE{gpu=\"0\"} 80000\n");
    assert!(e.to_string().contains("DCGM_FI_DEV_FB_USED"), "{e}");
    // A metric line without its GPU: the line and what was expected.
    let e = refusal("DCGM_FI_DEV_FB_USED{UUID=\"GPU-1\"} 100\n");
    assert_eq!(e.line, Some(1), "{e}");
    assert!(e.to_string().contains("gpu=\"N\""), "{e}");

    // `dcgmi dmon -e 250,251,252`: the total stated, used sampled per row.
    let dmon = "#Entity   FBTTL      FBFRE      FBUSD\nID\n\
        GPU 0     81559      2233       78795\nGPU 1     81559      81020      0\n\
        GPU 0     81559      1033       79995\nGPU 1     81559      81020      0\n";
    let t = parse_text(dmon);
    assert_eq!(t.format, Format::Dcgm);
    assert_eq!(t.gpus.len(), 2);
    assert_eq!(t.gpus[0].total_mib, Some(81559.0));
    assert_eq!(t.gpus[0].peak_used_mib, Some(79995.0));
    assert_eq!(t.gpus[0].samples, 2);
    // Used and free alone give the total.
    let t = parse_text("# Entity  FBFRE  FBUSD\nGPU 3  1000  23000\n");
    assert_eq!(t.gpus[0].index, 3);
    assert_eq!(t.gpus[0].total_mib, Some(24000.0));
    let e = refusal("#Entity   FBTTL\nGPU 0     81559\n");
    assert!(e.to_string().contains("field 252"), "{e}");
}

/// What a trace states beside GPU samples and allocator peaks (the Trainer's
/// deltas, a report's starting point, Megatron's own prediction) reaches the
/// report that the CLI and the page show — it was parsed and then dropped.
#[test]
fn the_report_carries_the_traces_notes() {
    for (name, text) in fixtures() {
        let Ok(t) = trace::parse(&text, &ParseOptions::default()) else {
            continue;
        };
        let rep = trace::findings::report(&t, None);
        let got: Vec<(String, f64)> = rep.notes.iter().map(|n| (n.label.clone(), n.mib)).collect();
        assert_eq!(got, t.notes, "{name}");
    }
    let rep = trace::findings::report(&parse("hf_trainer_mem_01.txt"), None);
    let derived = rep
        .notes
        .iter()
        .find(|n| n.label.starts_with("train peak allocated"))
        .expect("the Trainer's summed deltas");
    assert_eq!(derived.mib, 230.0 + 693.0 + 7.0);
    let json = serde_json::to_value(&rep).unwrap();
    assert_eq!(json["notes"][0]["label"], "init_mem_cpu_alloc_delta");
    assert_eq!(json["notes"][0]["mib"], 1301.0);
}

/// The Transformers docs' `print_summary` (`Time`, `Samples/second`, then
/// `print_gpu_utilization`'s `GPU memory occupied: N MB.`, NVML's used memory
/// `// 1024**2`): GPU 0's used memory in MiB, compared with `device_used`.
#[test]
fn the_transformers_docs_gpu_utilization_print() {
    let text = "GPU memory occupied: 1343 MB.\n{'train_runtime': 57.8, 'train_samples_per_second': 8.86}\n\
        Time: 57.82\nSamples/second: 8.86\nGPU memory occupied: 14949 MB.\n";
    let t = parse_text(text);
    assert_eq!(t.format, Format::NvmlUsedPrint);
    assert!(Format::NvmlUsedPrint.is_device_level());
    assert_eq!(t.gpus.len(), 1);
    assert_eq!(t.gpus[0].index, 0);
    assert_eq!(t.gpus[0].peak_used_mib, Some(14949.0));
    assert_eq!(t.gpus[0].samples, 2);
    assert!(t.allocator.is_none());
    // With a plan, the verdict is on device_used.
    let plan = cost_model::Plan::default();
    let rep = trace::findings::report(&t, Some(&plan));
    let v = rep.verdict.expect("a verdict on GPU 0");
    assert!(v.summary.contains("device_used"), "{}", v.summary);
}

/// Composer's `MemoryMonitor` (MosaicML, llm-foundry) through its console
/// logger: `memory_stats()` bytes / 1e9, peaks never reset.
#[test]
fn composer_memory_monitor() {
    let text = "[batch=10/1000]:\n\t Train time/batch: 9\n\t Train memory/current_allocated_mem: 14.31\n\
        \t Train memory/current_reserved_mem: 40.647\n\t Train memory/peak_allocated_mem: 33.477\n\
        \t Train memory/peak_active_mem: 33.477\n\t Train memory/peak_reserved_mem: 40.647\n\
        \t Train memory/alloc_retries: 0\n\t Train loss/train/total: 7.1234\n\
        [batch=20/1000]:\n\t Train memory/peak_allocated_mem: 33.5\n\t Train memory/peak_reserved_mem: 40.647\n";
    let t = parse_text(text);
    assert_eq!(t.format, Format::ComposerMemoryMonitor);
    let a = t.allocator.unwrap();
    let gb = |g: f64| g * 1e9 / 1048576.0;
    assert!(close(a.peak_allocated_mib, gb(33.5)), "{a:?}");
    assert!(close(a.peak_reserved_mib, gb(40.647)), "{a:?}");
}

/// Each sample reads (the rewrite tests compare against its own report, which
/// would also agree on a refusal).
#[test]
fn every_sample_reads() {
    for (name, text) in samples() {
        let t =
            trace::parse(&text, &ParseOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            t.allocator.is_some() || t.gpus.iter().any(|g| g.peak_used_mib.is_some()),
            "{name}: {t:?}"
        );
    }
}

/// Ascend's `npu-smi info`: each NPU's HBM `used / total` (MB = MiB) from its
/// chip row, the process table's memory per process; compared with
/// `device_used`.
#[test]
fn ascend_npu_smi() {
    let t = parse_text(NPU_SMI);
    assert_eq!(t.format, Format::NpuSmi);
    assert!(Format::NpuSmi.is_device_level());
    assert_eq!(
        peaks_and_totals(&t),
        vec![
            (0, Some(3162.0), Some(65536.0)),
            (1, Some(58844.0), Some(65536.0))
        ]
    );
    assert_eq!(t.gpus[1].name.as_deref(), Some("910B3"));
    assert_eq!(t.processes.len(), 1);
    assert_eq!(t.processes[0].pid, Some(182365));
    assert_eq!(t.processes[0].gpu, Some(1));
    assert_eq!(t.processes[0].used_mib, Some(55629.0));
    // Two snapshots: a series per NPU.
    let t = parse_text(&format!("{NPU_SMI}{}", NPU_SMI.replace("58844/", "60000/")));
    assert_eq!(t.gpus[1].samples, 2);
    assert_eq!(t.gpus[1].peak_used_mib, Some(60000.0));
    // A chip without HBM (310 series): its DDR.
    let ddr = NPU_SMI.replace(
        "0    / 0          3162 / 65536",
        "2703 / 8192      0    / 0    ",
    );
    let t = parse_text(&ddr);
    assert_eq!(t.gpus[0].peak_used_mib, Some(2703.0));
    assert_eq!(t.gpus[0].total_mib, Some(8192.0));
    // The banner alone: refused, saying what is missing.
    let e = refusal("+----+\n| npu-smi 23.0.rc2                 Version: 23.0.rc2   |\n+----+\n");
    assert!(e.to_string().contains("npu-smi info"), "{e}");
}

/// A multi-byte character anywhere in the new readers' lines (a CJK label, a
/// no-break space left by a converter) neither panics nor hangs: each sample
/// with one inserted at every char boundary.
#[test]
fn the_samples_with_a_multibyte_character_anywhere() {
    for (name, text) in samples() {
        let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        for &i in &bounds {
            for ch in ["显", "\u{a0}", "é"] {
                let mut v = text.clone();
                v.insert_str(i, ch);
                let _ = trace::parse(&v, &ParseOptions::default());
            }
        }
        assert!(!bounds.is_empty(), "{name}");
    }
    // The case that panicked: a CJK character right before the figure.
    let t = parse_text("GPU memory usage 显存3.5GB (+1.0GB cache)\n");
    assert!(close(t.allocator.unwrap().peak_reserved_mib, 4.5 * 1024.0));
}

/// A file that holds no text — a screenshot, a PDF, an archive, a file
/// compressed otherwise than with gzip — is named for what it is, with what to
/// upload instead, where it was read as lines of binary before ("no GPU memory
/// figures in 685 lines" for a PNG screenshot of nvidia-smi).
#[test]
fn files_that_are_not_text_are_named_for_what_they_are() {
    let mut tar = vec![0u8; 512];
    tar[..8].copy_from_slice(b"smi.txt\0");
    tar[257..262].copy_from_slice(b"ustar");
    let cases: [(&[u8], &str); 9] = [
        (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "an image"),
        (b"\xFF\xD8\xFF\xE0\0\x10JFIF\0", "an image"),
        (b"GIF89a\x01\0\x01\0", "an image"),
        (b"RIFF\x24\0\0\0WEBPVP8 ", "an image"),
        (b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n", "a PDF document"),
        (b"PK\x03\x04\x14\0\0\0\x08\0", "a ZIP archive"),
        (b"7z\xBC\xAF\x27\x1C\0\x04", "a 7-Zip archive"),
        (b"\xFD7zXZ\0\0\x04", "xz, bzip2 or zstd"),
        (&tar, "a tar archive"),
    ];
    for (bytes, what) in cases {
        let e = trace::parse_reader(bytes, &ParseOptions::default()).unwrap_err();
        assert!(e.to_string().contains(what), "{what}: {e}");
    }
    for bytes in [&b"BZh91AY&SY"[..], &b"\x28\xB5\x2F\xFD\x04\x58"[..]] {
        let e = trace::parse_reader(bytes, &ParseOptions::default()).unwrap_err();
        assert!(e.to_string().contains("decompress it first"), "{e}");
    }
    // Text that merely starts alike is read as text.
    let t = trace::parse_reader(&b"PK: 1234MiB / 81920MiB\n"[..], &ParseOptions::default());
    assert!(t.is_err_and(|e| !e.to_string().contains("ZIP")));
}

/// nvidia-smi's process rows pasted alone — without the table above them or
/// the section's header — are read as its Processes section (the 450+ rows
/// with GI/CI columns, and the older ones without); other tables stay theirs.
#[test]
fn nvidia_smi_process_rows_pasted_alone_are_read() {
    let new = "|    0   N/A  N/A     12345      C   python                          70123MiB |\n\
               |    1   N/A  N/A     12346      C   /usr/bin/python3                68000MiB |\n";
    let old = "|    0      4242      C   python                                      30512MiB |\n";
    for (text, want) in [
        (
            new,
            vec![
                (0, 12345, "python", 70123.0),
                (1, 12346, "/usr/bin/python3", 68000.0),
            ],
        ),
        (old, vec![(0, 4242, "python", 30512.0)]),
    ] {
        let t = trace::parse(text, &ParseOptions::default()).unwrap();
        assert_eq!(t.format, Format::NvidiaSmiTable);
        let got: Vec<_> = t
            .processes
            .iter()
            .map(|p| {
                (
                    p.gpu.unwrap(),
                    p.pid.unwrap(),
                    p.name.as_str(),
                    p.used_mib.unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want);
    }
    // A Markdown table of the same figures is not one.
    let md = "| GPU | PID | Type | Name | Memory |\n| 0 | 12345 | C | python | 70123MiB |\n";
    assert!(trace::parse(md, &ParseOptions::default())
        .map_or(true, |t| t.format != Format::NvidiaSmiTable));
}

/// An inference engine's start-up memory profile (vLLM's, SGLang's and
/// llama.cpp's log lines, as their sources format them) is refused as what it
/// is, with the line it was seen on, not as a text without figures.
#[test]
fn an_inference_engines_memory_profile_is_refused_as_what_it_is() {
    let logs = [
        // vllm 0.6.6 `worker/worker.py` (one logger call, three lines).
        ("INFO 01-10 10:00:00 worker.py:241] Memory profiling takes 5.32 seconds\n\
          the current vLLM instance can use total_gpu_memory (79.22GiB) x gpu_memory_utilization (0.90) = 71.29GiB\n\
          model weights take 14.99GiB; non_torch_memory takes 0.30GiB; PyTorch activation peak memory takes 1.21GiB; the rest of the memory reserved for KV Cache is 54.79GiB.\n", 2),
        // vllm 0.6.6 `worker/model_runner.py`.
        ("INFO 01-10 10:00:00 model_runner.py:1099] Loading model weights took 14.9888 GB\n", 1),
        // vllm 0.10.1 `v1/worker/gpu_model_runner.py`, `gpu_worker.py`.
        ("(VllmWorker rank=0 pid=123) INFO 08-20 10:00:00 [default_loader.py:262] Loading weights took 4.10 seconds\n\
          (VllmWorker rank=0 pid=123) INFO 08-20 10:00:00 [gpu_model_runner.py:2007] Model loading took 14.9889 GiB and 5.182120 seconds\n\
          (VllmWorker rank=0 pid=123) INFO 08-20 10:00:09 [gpu_worker.py:276] Available KV cache memory: 54.79 GiB\n", 2),
        // sglang 0.4.6 `model_executor/model_runner.py`, `mem_cache/memory_pool.py`.
        ("[2025-05-01 10:00:00 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.45 GB, mem usage=14.99 GB.\n\
          [2025-05-01 10:00:01 TP0] KV Cache is allocated. #tokens: 413000, K size: 25.21 GB, V size: 25.21 GB\n", 1),
        // The llama.cpp llama-cpp-python 0.3.9 vendors (`llama-model.cpp`,
        // `llama-kv-cache.cpp`), and its older `llm_load_tensors` line.
        ("load_tensors: offloaded 33/33 layers to GPU\n\
          load_tensors:        CUDA0 model buffer size =  4155.99 MiB\n\
          llama_kv_cache_unified:      CUDA0 KV buffer size =  1024.00 MiB\n", 2),
        ("llm_load_tensors: offloading 32 repeating layers to GPU\n\
          llm_load_tensors:        CPU buffer size =   281.81 MiB\n", 2),
    ];
    for (log, line) in logs {
        let e = trace::parse(log, &ParseOptions::default()).unwrap_err();
        let why = e.to_string();
        assert!(
            why.contains("inference engine") && why.contains("not a training run"),
            "{why}"
        );
        assert!(why.contains(&format!("line {line}")), "{why}");
    }
}

/// `nvidia-smi -L` names the GPUs and no memory: refused as what it is.
#[test]
fn nvidia_smi_gpu_list_is_refused_as_what_it_is() {
    let list = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1d2c3b4a-5e6f-7081-92a3-b4c5d6e7f809)\n\
                GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-2d2c3b4a-5e6f-7081-92a3-b4c5d6e7f809)\n";
    let e = trace::parse(list, &ParseOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("nvidia-smi -L") && e.contains("--query-gpu"),
        "{e}"
    );
}
