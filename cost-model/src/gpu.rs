//! GPU catalogue: capacity as nvidia-smi reports it (`memory.total`, MiB),
//! memory bandwidth and dense (non-sparse) tensor throughput.
//!
//! Capacities are the `memory.total` values nvidia-smi prints for each board
//! (see `../shared/fixtures/traces/` for several: 81559 MiB H100 80GB HBM3,
//! 81920 MiB A100-SXM4-80GB, 40960 MiB A100-SXM4-40GB, 24576 MiB RTX 3090,
//! 32607 MiB RTX 5090, 16384 MiB V100-SXM2-16GB, 143771 MiB H200, 49140 MiB RTX A6000,
//! 16384 MiB Tesla P100-PCIE-16GB in gpustat_01).
//! Bandwidth and TFLOP/s are the vendors' data-sheet figures (dense, no sparsity).

use crate::units::{Bytes, MIB};
use serde::{Deserialize, Serialize};

/// One GPU model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuSpec {
    /// Stable id used in URLs and plan files, e.g. `h100-sxm-80gb`.
    pub id: String,
    /// Name as nvidia-smi prints it (may be truncated there).
    pub name: String,
    /// `memory.total` as nvidia-smi reports it, in MiB (2^20 bytes).
    pub capacity_mib: u64,
    /// Peak memory bandwidth, GB/s (10^9 bytes/s).
    pub bandwidth_gbps: f64,
    /// Dense bf16 tensor TFLOP/s (0 where the chip has no bf16 tensor cores).
    pub bf16_tflops: f64,
    /// Dense fp16 tensor TFLOP/s.
    pub fp16_tflops: f64,
    /// Dense fp8 tensor TFLOP/s (0 where unsupported).
    pub fp8_tflops: f64,
}

impl GpuSpec {
    pub fn capacity(&self) -> Bytes {
        Bytes(self.capacity_mib.saturating_mul(MIB))
    }

    /// Whether the chip is a Hopper (compute capability 9.0: H100, H200, H800,
    /// H20, GH200), read off its nvidia-smi name.
    /// One pass over the name's bytes, no allocation: it runs in every estimate.
    pub fn is_hopper(&self) -> bool {
        let n = self.name.as_bytes();
        (0..n.len()).any(|i| {
            let rest = &n[i + 1..];
            n[i].eq_ignore_ascii_case(&b'h')
                && (rest.starts_with(b"100")
                    || rest.starts_with(b"200")
                    || rest.starts_with(b"800")
                    || rest.starts_with(b"20 ")
                    || rest == b"20")
        })
    }
}

macro_rules! gpu {
    ($id:expr, $name:expr, $mib:expr, $bw:expr, $bf16:expr, $fp16:expr, $fp8:expr) => {
        ($id, $name, $mib, $bw, $bf16, $fp16, $fp8)
    };
}

type Row = (&'static str, &'static str, u64, f64, f64, f64, f64);

/// (id, nvidia-smi name, memory.total MiB, GB/s, bf16, fp16, fp8 dense TFLOP/s).
const CATALOGUE: &[Row] = &[
    gpu!(
        "h200-sxm-141gb",
        "NVIDIA H200",
        143_771,
        4800.0,
        989.0,
        989.0,
        1979.0
    ),
    gpu!(
        "h100-sxm-80gb",
        "NVIDIA H100 80GB HBM3",
        81_559,
        3350.0,
        989.0,
        989.0,
        1979.0
    ),
    gpu!(
        "h100-pcie-80gb",
        "NVIDIA H100 PCIe",
        81_559,
        2000.0,
        756.0,
        756.0,
        1513.0
    ),
    gpu!(
        "h800-80gb",
        "NVIDIA H800",
        81_559,
        3350.0,
        989.0,
        989.0,
        1979.0
    ),
    gpu!(
        "gh200-96gb",
        "NVIDIA GH200 96GB HBM3",
        97_871,
        4000.0,
        989.0,
        989.0,
        1979.0
    ),
    gpu!(
        "b200-180gb",
        "NVIDIA B200",
        183_359,
        8000.0,
        2250.0,
        2250.0,
        4500.0
    ),
    gpu!(
        "a100-sxm4-80gb",
        "NVIDIA A100-SXM4-80GB",
        81_920,
        2039.0,
        312.0,
        312.0,
        0.0
    ),
    gpu!(
        "a100-pcie-80gb",
        "NVIDIA A100 80GB PCIe",
        81_920,
        1935.0,
        312.0,
        312.0,
        0.0
    ),
    gpu!(
        "a100-sxm4-40gb",
        "NVIDIA A100-SXM4-40GB",
        40_960,
        1555.0,
        312.0,
        312.0,
        0.0
    ),
    gpu!(
        "a100-pcie-40gb",
        "NVIDIA A100-PCIE-40GB",
        40_960,
        1555.0,
        312.0,
        312.0,
        0.0
    ),
    gpu!(
        "a800-80gb",
        "NVIDIA A800 80GB PCIe",
        81_920,
        1935.0,
        312.0,
        312.0,
        0.0
    ),
    gpu!(
        "l40s-48gb",
        "NVIDIA L40S",
        46_068,
        864.0,
        362.0,
        362.0,
        733.0
    ),
    // The L40 and the China-market L20 and H20: 48 GB GDDR6 with ECC as the
    // L40S; the H20's 96 GB HBM3 as the GH200's. Dense tensor rates from
    // NVIDIA's data sheets (L40: 181 bf16, 362 fp8; L20: 119.5 / 239; H20:
    // 148 / 296).
    gpu!("l40-48gb", "NVIDIA L40", 46_068, 864.0, 181.0, 181.0, 362.0),
    gpu!("l20-48gb", "NVIDIA L20", 46_068, 864.0, 119.5, 119.5, 239.0),
    gpu!(
        "h20-96gb",
        "NVIDIA H20",
        97_871,
        4000.0,
        148.0,
        148.0,
        296.0
    ),
    gpu!("l4-24gb", "NVIDIA L4", 23_034, 300.0, 121.0, 121.0, 242.0),
    gpu!("a10g-24gb", "NVIDIA A10G", 23_028, 600.0, 70.0, 70.0, 0.0),
    // The A10 (data centre PCIe card) has the A10G's 24 GB GDDR6 and
    // bandwidth and its data sheet's 125 dense bf16/fp16 tensor TFLOP/s.
    gpu!("a10-24gb", "NVIDIA A10", 23_028, 600.0, 125.0, 125.0, 0.0),
    gpu!(
        "a6000-48gb",
        "NVIDIA RTX A6000",
        49_140,
        768.0,
        155.0,
        155.0,
        0.0
    ),
    // 48 GB GDDR6 with ECC on, as the L40S.
    gpu!("a40-48gb", "NVIDIA A40", 46_068, 696.0, 149.7, 149.7, 0.0),
    gpu!(
        "rtx-a5000-24gb",
        "NVIDIA RTX A5000",
        24_564,
        768.0,
        111.1,
        111.1,
        0.0
    ),
    gpu!(
        "rtx6000-ada-48gb",
        "NVIDIA RTX 6000 Ada Generation",
        49_140,
        960.0,
        364.0,
        364.0,
        728.0
    ),
    gpu!(
        "v100-sxm2-32gb",
        "Tesla V100-SXM2-32GB",
        32_768,
        900.0,
        0.0,
        125.0,
        0.0
    ),
    gpu!(
        "v100-sxm2-16gb",
        "Tesla V100-SXM2-16GB",
        16_384,
        900.0,
        0.0,
        125.0,
        0.0
    ),
    gpu!("t4-16gb", "Tesla T4", 15_360, 320.0, 0.0, 65.0, 0.0),
    // Turing: fp16 tensor cores, no bf16; rates with fp32 accumulation, as
    // mixed precision runs (the GeForce card at half rate, the TITAN at full).
    gpu!(
        "rtx2080ti-11gb",
        "NVIDIA GeForce RTX 2080 Ti",
        11_264,
        616.0,
        0.0,
        53.8,
        0.0
    ),
    gpu!(
        "titan-rtx-24gb",
        "NVIDIA TITAN RTX",
        24_576,
        672.0,
        0.0,
        130.5,
        0.0
    ),
    gpu!(
        "rtx-a4000-16gb",
        "NVIDIA RTX A4000",
        16_376,
        448.0,
        76.7,
        76.7,
        0.0
    ),
    // Pascal: no tensor cores; fp16 is the data sheet's half-precision rate.
    gpu!(
        "p100-pcie-16gb",
        "Tesla P100-PCIE-16GB",
        16_384,
        732.0,
        0.0,
        18.7,
        0.0
    ),
    gpu!(
        "rtx5090-32gb",
        "NVIDIA GeForce RTX 5090",
        32_607,
        1792.0,
        209.0,
        209.0,
        419.0
    ),
    gpu!(
        "rtx4090-24gb",
        "NVIDIA GeForce RTX 4090",
        24_564,
        1008.0,
        165.0,
        165.0,
        330.0
    ),
    gpu!(
        "rtx3090-24gb",
        "NVIDIA GeForce RTX 3090",
        24_576,
        936.0,
        71.0,
        71.0,
        0.0
    ),
    gpu!(
        "rtx4080-16gb",
        "NVIDIA GeForce RTX 4080",
        16_376,
        717.0,
        97.0,
        97.0,
        195.0
    ),
    gpu!(
        "rtx3060-12gb",
        "NVIDIA GeForce RTX 3060",
        12_288,
        360.0,
        25.0,
        25.0,
        0.0
    ),
    gpu!(
        "mi300x-192gb",
        "AMD Instinct MI300X",
        196_592,
        5300.0,
        1307.0,
        1307.0,
        2615.0
    ),
    // 256 GB HBM3E; the MI300X's compute.
    gpu!(
        "mi325x-256gb",
        "AMD Instinct MI325X",
        262_144,
        6000.0,
        1307.0,
        1307.0,
        2615.0
    ),
    gpu!(
        "mi250x-128gb",
        "AMD Instinct MI250X",
        131_072,
        3277.0,
        383.0,
        383.0,
        0.0
    ),
];

/// The whole catalogue, in display order.
pub fn catalogue() -> Vec<GpuSpec> {
    CATALOGUE.iter().map(to_spec).collect()
}

/// Looks a GPU up by its id.
pub fn gpu(id: &str) -> Option<GpuSpec> {
    CATALOGUE.iter().find(|r| r.0 == id).map(to_spec)
}

/// All ids, in display order (cheap: no allocation per entry).
pub fn ids() -> impl Iterator<Item = (&'static str, &'static str)> {
    CATALOGUE.iter().map(|r| (r.0, r.1))
}

fn to_spec(r: &Row) -> GpuSpec {
    GpuSpec {
        id: r.0.to_string(),
        name: r.1.to_string(),
        capacity_mib: r.2,
        bandwidth_gbps: r.3,
        bf16_tflops: r.4,
        fp16_tflops: r.5,
        fp8_tflops: r.6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_has_twenty_gpus_with_unique_ids() {
        let c = catalogue();
        assert!(c.len() >= 20);
        let mut ids: Vec<_> = c.iter().map(|g| g.id.clone()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), c.len());
    }

    #[test]
    fn capacities_match_nvidia_smi() {
        // DESIGN.md §2 and the fixtures in shared/fixtures/traces.
        assert_eq!(gpu("h100-sxm-80gb").unwrap().capacity_mib, 81_559);
        assert_eq!(gpu("a100-sxm4-80gb").unwrap().capacity_mib, 81_920);
        assert_eq!(gpu("a100-sxm4-40gb").unwrap().capacity_mib, 40_960);
        assert_eq!(gpu("rtx3090-24gb").unwrap().capacity_mib, 24_576);
        assert_eq!(gpu("h200-sxm-141gb").unwrap().capacity_mib, 143_771);
        assert_eq!(gpu("p100-pcie-16gb").unwrap().capacity_mib, 16_384);
        assert_eq!(
            gpu("h200-sxm-141gb").unwrap().capacity(),
            Bytes::from_mib(143_771)
        );
    }
}
