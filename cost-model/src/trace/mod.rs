//! Parsers for what training runs print about GPU memory (issue 6 builds the
//! rest here). Pure: they read text and return figures in MiB (2^20 bytes);
//! a figure the input does not state is `None`, never a guess.

pub mod oom;

/// Parses a size such as `96.00 MiB`, `5.81 GiB`, `0 bytes`, `982.50 KiB` into MiB.
pub fn parse_size_mib(num: &str, unit: &str) -> Option<f64> {
    let v: f64 = num.trim().replace(',', "").parse().ok()?;
    let unit = unit.trim().trim_end_matches(['.', ',', ';', ')']);
    let f = match unit {
        "bytes" | "byte" | "B" => 1.0 / (1024.0 * 1024.0),
        "KiB" | "KB" | "kB" => 1.0 / 1024.0,
        "MiB" | "MB" => 1.0,
        "GiB" | "GB" => 1024.0,
        "TiB" | "TB" => 1024.0 * 1024.0,
        _ => return None,
    };
    (v.is_finite() && v >= 0.0).then_some(v * f)
}

/// The first `<number> <unit>` in `s`.
pub fn first_size_mib(s: &str) -> Option<f64> {
    let toks: Vec<&str> = s.split_whitespace().collect();
    toks.windows(2).find_map(|w| parse_size_mib(w[0], w[1]))
}

/// The last `<number> <unit>` in `s`.
pub fn last_size_mib(s: &str) -> Option<f64> {
    let toks: Vec<&str> = s.split_whitespace().collect();
    toks.windows(2)
        .rev()
        .find_map(|w| parse_size_mib(w[0], w[1]))
}
