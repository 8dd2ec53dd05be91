//! The GPU a case row names: its catalogue entry, board size and count, from the words people write.

use super::*;

/// A number written with a decimal comma (`6,74`), as a spreadsheet in such a
/// locale writes it (with `;` between fields, [`crate::csv::parse`]): one
/// comma between digits, no point.
pub(super) fn decimal_comma(v: &str) -> Option<f64> {
    let (a, b) = v.split_once(',')?;
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
    (digits(a) && digits(b))
        .then(|| format!("{a}.{b}").parse().ok())
        .flatten()
}

/// Lower-case alphanumeric tokens of a GPU name, without the vendor and
/// product-line words ("NVIDIA GeForce RTX 4090" → `rtx`, `4090`), plus each
/// pair of neighbours joined (`rtx4090`, as catalogue ids spell it).
pub(super) fn gpu_tokens(s: &str) -> Vec<String> {
    let words = gpu_words(s);
    let mut out = words.clone();
    out.extend(words.windows(2).map(|w| format!("{}{}", w[0], w[1])));
    out
}

/// Lower-case alphanumeric words of a GPU name, the vendor and product-line
/// words dropped — they come and go by tool and driver ("Tesla V100",
/// "NVIDIA GeForce RTX 4090", "A100-SXM4-80GB").
pub(crate) fn gpu_words(s: &str) -> Vec<String> {
    const NOISE: [&str; 6] = ["nvidia", "tesla", "geforce", "amd", "instinct", "quadro"];
    s.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty() && !NOISE.contains(w))
        .map(String::from)
        .collect()
}

/// A token that names the chip ("h100", "a6000", "4090", "t4"), not its
/// memory ("80gb"), form factor ("sxm5", "pcie", "hbm3"), or a count ("8x").
pub(super) fn is_model_token(t: &str) -> bool {
    const FORM: [&str; 10] = [
        "sxm", "sxm2", "sxm3", "sxm4", "sxm5", "pcie", "hbm2", "hbm2e", "hbm3", "hbm3e",
    ];
    let digits = t.chars().filter(|c| c.is_ascii_digit()).count();
    let tail = t.trim_start_matches(|c: char| c.is_ascii_digit());
    // A bare number is a chip only when it has four digits ("4090", "6000");
    // "8" in "8 x A100" and "x8" in "A100 x8" are counts.
    let count = (tail.is_empty() && digits < 4)
        || t.strip_prefix('x')
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    digits > 0 && !count && !FORM.contains(&t) && !matches!(tail, "gb" | "g" | "x" | "gib")
}

/// The memory a GPU's name states, as boards are sold ("80GB", "24G",
/// "11 GB", "96GiB": binary, as nvidia-smi's `memory.total` of an "80GB" A100
/// is 81920 MiB), in GiB.
pub(super) fn stated_board_gib(gpu: &str) -> Option<f64> {
    let words = gpu_words(gpu);
    words.iter().enumerate().find_map(|(i, w)| {
        let digits = w.len() - w.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let (n, unit) = w.split_at(digits);
        // "11 GB": the number and its unit in two words.
        let unit = if unit.is_empty() {
            words.get(i + 1).map_or("", |u| u.as_str())
        } else {
            unit
        };
        let n: f64 = n.parse().ok()?;
        (matches!(unit, "gb" | "g" | "gib") && n > 0.0).then_some(n)
    })
}

/// The GPU count a free-text GPU column states: "8x H100", "8 × A100",
/// "4*A100", "A100-80GB x8".
pub(super) fn stated_gpu_count(gpu: &str) -> Option<u32> {
    const TIMES: [char; 4] = ['x', 'X', '×', '*'];
    let t = gpu.trim();
    // Leading: "8x H100".
    let lead = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let trail = t.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let count = if lead > 0 && t[lead..].trim_start().starts_with(TIMES) {
        &t[..lead]
    } else if trail < t.len()
        // Trailing: "A100 x8" — the sign after a space or a dash, not the
        // "X" of a model name ("RTX 4090").
        && t[..trail]
            .trim_end()
            .strip_suffix(TIMES)
            .is_some_and(|s| s.ends_with([' ', '-', '_']))
    {
        &t[trail..]
    } else {
        return None;
    };
    count.parse().ok().filter(|n| *n > 0)
}

/// Why a device the `gpu` column names is not one the model describes: a
/// TPU, Gaudi (HPU), Trainium/Inferentia, Graphcore IPU, Apple silicon (MPS)
/// or the CPU. PyTorch reaches them through XLA, Habana's and Neuron's
/// bridges, MPS or plain host memory, none through the caching allocator
/// (CUDA's, or ROCm's port of it) whose segments and reserve the model
/// counts; Ascend NPUs (torch_npu ports the CUDA allocator) and AMD GPUs are
/// read as GPUs.
pub(super) fn not_a_gpu(name: &str) -> Option<String> {
    let words = gpu_words(name);
    // `gpu_words` splits at every other character: a prefix names the word.
    let named = |prefixes: &[&str]| {
        words
            .iter()
            .any(|w| prefixes.iter().any(|p| w.starts_with(p)))
    };
    let what = if named(&["tpu"]) {
        "a TPU (XLA's memory)"
    } else if named(&["gaudi", "hpu"]) {
        "a Gaudi HPU (Habana's allocator)"
    } else if named(&["trainium", "inferentia", "trn1", "trn2", "inf2"]) {
        "an AWS Neuron device"
    } else if words.iter().any(|w| w == "ipu") {
        "a Graphcore IPU"
    } else if words.iter().any(|w| matches!(w.as_str(), "apple" | "mps")) {
        "Apple silicon (MPS: unified memory)"
    } else if words.iter().any(|w| w == "cpu")
        && !words.iter().any(|w| w != "cpu" && is_model_token(w))
    {
        "the CPU"
    } else {
        return None;
    };
    Some(format!(
        "gpu `{}` is {what}, not a GPU under PyTorch's CUDA (or ROCm) caching allocator, which the \
         model describes",
        name.trim()
    ))
}

/// Finds the catalogue GPU a free-text name means; else one with the stated capacity.
/// Every chip token of the name must be one of the GPU's (so "H20" is not a
/// GH200); among those, the one sharing most tokens wins (catalogue order on
/// ties); a stated capacity must agree within 10 %.
pub(crate) fn gpu_for(name: &str, mem_gib: Option<f64>) -> GpuSpec {
    let want = gpu_tokens(name);
    let words = gpu_words(name);
    let mut chips: Vec<String> = words
        .iter()
        .filter(|t| is_model_token(t))
        .cloned()
        .collect();
    // The one chip named without a digit: a TITAN, with the word after it
    // (TITAN RTX, TITAN V, TITAN Xp are different boards).
    if let Some(i) = words.iter().position(|w| w == "titan") {
        chips.extend(words[i..].iter().take(2).cloned());
    }
    let cap_mib = mem_gib.map(|g| (g * 1024.0).round() as u64);
    let mut best: Option<(usize, GpuSpec)> = None;
    if !chips.is_empty() {
        for g in gpu::catalogue() {
            let mut have = gpu_tokens(&g.name);
            have.extend(gpu_tokens(&g.id));
            if !chips.iter().all(|c| have.contains(c)) {
                continue;
            }
            // A stated capacity must agree within 10 % (48 GB board ≈ 46068 MiB).
            let cap_ok = cap_mib
                .map(|c| (g.capacity_mib as f64 - c as f64).abs() / (c as f64) < 0.1)
                .unwrap_or(true);
            if !cap_ok {
                continue;
            }
            let score = want.iter().filter(|t| have.contains(t)).count();
            if best.as_ref().is_none_or(|(s, _)| score > *s) {
                best = Some((score, g));
            }
        }
    }
    let best = best.map(|(_, g)| g);
    // Words in brackets are prose around the board's name ("A10G (AWS g5)",
    // "H100 (SXM5, 80 GB)"): when they name no catalogue entry, the name
    // without them may.
    if best.is_none() && name.contains('(') {
        let bare = without_brackets(name);
        if !bare.trim().is_empty() && bare != name {
            let g = gpu_for(&bare, mem_gib);
            if g.id != "custom" {
                return g;
            }
        }
    }
    best.unwrap_or_else(|| GpuSpec {
        id: "custom".into(),
        name: if name.is_empty() {
            "GPU (not stated)".into()
        } else {
            name.into()
        },
        capacity_mib: cap_mib.unwrap_or(80 * 1024),
        bandwidth_gbps: 0.0,
        bf16_tflops: 0.0,
        fp16_tflops: 0.0,
        fp8_tflops: 0.0,
    })
}

/// The text with every bracketed part (and the brackets) left out.
pub(super) fn without_brackets(text: &str) -> String {
    let mut depth = 0u32;
    text.chars()
        .filter(|c| match c {
            '(' => {
                depth += 1;
                false
            }
            ')' => {
                depth = depth.saturating_sub(1);
                false
            }
            _ => depth == 0,
        })
        .collect()
}

/// The `measured_gib` column: GiB, or a figure with its unit as a source
/// printed it — `GiB`/`MiB`/`KiB`/`TiB` (powers of 2) or `GB`/`MB`/`TB`
/// (powers of 10, as DESIGN's units say; nvidia-smi's `MiB`) — in any case.
/// A board's capacity as written: GiB, or with its unit — where "80GB" is
/// the A100 80GB's 80 GiB (boards are sold in binary sizes), and MiB is what
/// nvidia-smi prints ("81920 MiB").
pub(super) fn gpu_mem_gib(v: &str) -> Result<Option<f64>, String> {
    let v = v.trim();
    if v.is_empty() {
        return Ok(None);
    }
    let (x, unit) = number_and_unit(v);
    let per_gib = match unit.to_ascii_lowercase().as_str() {
        "" | "gib" | "gb" | "g" => Some(1.0),
        "mib" | "mb" => Some(1.0 / 1024.0),
        "tib" | "tb" => Some(1024.0),
        _ => None,
    };
    match (x, per_gib) {
        (Some(x), Some(k)) => Ok(Some(x * k)),
        _ => Err(format!("gpu_mem_gib: `{v}` is not a number")),
    }
}

/// A figure and the unit written after it ("81920 MiB", "4.82GB", "18,2"):
/// the number (decimal comma read), and the unit as written (empty if none).
pub(super) fn number_and_unit(v: &str) -> (Option<f64>, &str) {
    let split = v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len());
    let (num, unit) = (v[..split].trim(), v[split..].trim());
    (num.parse().ok().or_else(|| decimal_comma(num)), unit)
}
