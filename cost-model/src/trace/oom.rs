//! PyTorch CUDA/HIP out-of-memory messages, every generation:
//! - `cuda runtime error (2) : out of memory` / `CUDA error: out of memory` (no figures);
//! - `Tried to allocate X (GPU n; Y total capacity; Z already allocated; F free; R reserved in total by PyTorch)`
//!   (PyTorch 1.x; older ones print `C cached` instead of the reserved total);
//! - `Tried to allocate X. GPU n has a total capacity of Y of which F is free. [Process p has M memory in use.]
//!   Including non-PyTorch memory, this process has M memory in use. Of the allocated memory A is allocated
//!   by PyTorch, and U is reserved by PyTorch but unallocated.` (PyTorch ≥ 2.1, also `capacty`, HIP).
//!
//! - `Allocation was preemptively rejected because it would exceed per_process_memory_fraction limit.
//!   Requested size: X. …` (PyTorch 2.15's `raw_alloc` under a memory fraction).
//!
//! - `MPS backend out of memory (MPS allocated: A, other allocations: O, max allowed: M). Tried to
//!   allocate X on private pool.` (Apple silicon).
//!
//! Lines may carry `[rankN]:` prefixes and the message may wrap over lines.

use super::{first_size_mib, last_size_mib};
use serde::{Deserialize, Serialize};

/// One out-of-memory report (the JSON shape `memplan verify` prints).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OomEvent {
    /// 1-based line where the message starts.
    pub line: u64,
    pub gpu: Option<u32>,
    pub tried_to_allocate_mib: Option<f64>,
    pub capacity_mib: Option<f64>,
    pub free_mib: Option<f64>,
    pub allocated_by_pytorch_mib: Option<f64>,
    /// Everything the caching allocator holds: allocated plus reserved-but-unallocated
    /// (or "cached" in the oldest messages).
    pub reserved_by_pytorch_mib: Option<f64>,
}

/// Strips a `[rank3]: ` style prefix.
fn strip_rank(line: &str) -> &str {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix("[rank") {
        if let Some(i) = rest.find("]:") {
            return rest[i + 2..].trim_start();
        }
    }
    t
}

/// A line reporting a failed device allocation: PyTorch's / HIP's / NCCL's
/// "out of memory", or cuBLAS failing to allocate its handle's workspace
/// (`CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)`, PyTorch's
/// report when the GPU is full before the first matmul).
pub fn is_oom_line(l: &str) -> bool {
    l.to_ascii_lowercase().contains("out of memory") || l.contains("CUBLAS_STATUS_ALLOC_FAILED")
}

/// Lines within which a second figureless OOM message is the same failure
/// told again (THC's check, then its RuntimeError, the traceback between).
pub const RETOLD_WITHIN: u64 = 40;

/// Lines a wrapped message may run over after its first.
const OOM_WRAPPED_LINES: usize = 8;

/// The message names the request: `Tried to allocate X`, or PyTorch 2.15's
/// `Requested size: X` when a memory fraction rejects an allocation before it
/// is tried.
fn names_request(buf: &str) -> bool {
    buf.contains("Tried to allocate") || buf.contains("Requested size:")
}

/// The message is complete once it names its allocator figures or its fix.
fn complete(buf: &str) -> bool {
    buf.contains("reserved in total by PyTorch")
        || buf.contains("but unallocated")
        || buf.contains("cached)")
        || !names_request(buf)
}

/// Finds every OOM message in `text`.
pub fn parse(text: &str) -> Vec<OomEvent> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = strip_rank(lines[i]);
        if !is_oom_line(l) {
            i += 1;
            continue;
        }
        let start = i;
        let mut buf = l.to_string();
        // Join wrapped continuation lines: a message cut at 60–120 columns
        // (a terminal, an e-mail, an issue's quote) runs over up to eight,
        // and the cut may fall inside "Tried to allocate" itself.
        let mut j = i + 1;
        while j < lines.len() && j <= i + OOM_WRAPPED_LINES {
            let next = strip_rank(lines[j]);
            let next_t = next.trim();
            if next_t.is_empty()
                || next_t.starts_with("Traceback")
                || next_t.starts_with("File ")
                || is_oom_line(next)
            {
                break;
            }
            let more = if names_request(&buf) {
                !complete(&buf)
            } else {
                // "… out of memory. Tried to" / "allocate 2.00 MiB. …"
                names_request(&format!("{} {}", buf.trim_end(), next_t))
            };
            if !more {
                break;
            }
            buf.push(' ');
            buf.push_str(next_t);
            j += 1;
        }
        out.push(event(&buf, start as u64 + 1));
        i = j.max(i + 1);
    }
    // An old THC message is followed by "RuntimeError: cuda runtime error (2) : out of
    // memory" for the same failure: keep one event per failure without figures.
    out.dedup_by(|b, a| {
        a.tried_to_allocate_mib.is_none()
            && b.tried_to_allocate_mib.is_none()
            && b.line <= a.line + RETOLD_WITHIN
    });
    out
}

fn after<'a>(s: &'a str, marker: &str) -> Option<&'a str> {
    s.find(marker).map(|i| &s[i + marker.len()..])
}

fn before<'a>(s: &'a str, marker: &str) -> Option<&'a str> {
    s.find(marker).map(|i| &s[..i])
}

/// The segment of the message between `;`/`.` separators that contains `marker`.
fn segment_before(s: &str, marker: &str) -> Option<f64> {
    let head = before(s, marker)?;
    let cut = head
        .rfind([';', '('])
        .map(|i| &head[i + 1..])
        .unwrap_or(head);
    last_size_mib(cut)
}

fn gpu_index(s: &str) -> Option<u32> {
    let rest = after(s, "(GPU ").or_else(|| after(s, ". GPU "))?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

fn event(buf: &str, line: u64) -> OomEvent {
    // JAX/XLA (`Out of memory while trying to allocate 17179869184 bytes.`)
    // and TensorFlow's BFC allocator (`ran out of memory trying to allocate
    // 1.53GiB`) name the request too.
    let tried = after(buf, "Tried to allocate ")
        .or_else(|| after(buf, "trying to allocate "))
        .or_else(|| after(buf, "Requested size: "))
        .and_then(|r| {
            first_size_mib(r).or_else(|| {
                r.split_whitespace()
                    .next()
                    .and_then(super::parse_joined_mib)
            })
        });
    let gpu = gpu_index(buf);
    let capacity = after(buf, "total capacity of ")
        .or_else(|| after(buf, "total capacty of "))
        .and_then(first_size_mib)
        .or_else(|| segment_before(buf, " total capacity"))
        // Apple's MPS backend: `(MPS allocated: 17.77 GB, other allocations:
        // 1.30 GB, max allowed: 18.13 GB)`, binary units as PyTorch's
        // `format_size` prints them.
        .or_else(|| after(buf, "max allowed: ").and_then(first_size_mib));
    let free = after(buf, " of which ")
        .and_then(|r| before(r, " is free").map(last_size_mib))
        .flatten()
        .or_else(|| segment_before(buf, " free;").or_else(|| segment_before(buf, " free)")));
    let allocated = after(buf, "Of the allocated memory ")
        .and_then(|r| before(r, " is allocated by PyTorch").map(last_size_mib))
        .flatten()
        .or_else(|| segment_before(buf, " already allocated"))
        .or_else(|| after(buf, "MPS allocated: ").and_then(first_size_mib));
    let reserved = segment_before(buf, " reserved in total by PyTorch").or_else(|| {
        let unalloc = before(buf, " is reserved by PyTorch but unallocated")
            .and_then(last_size_mib)
            .or_else(|| segment_before(buf, " cached"));
        match (allocated, unalloc) {
            (Some(a), Some(u)) => Some(a + u),
            _ => None,
        }
    });
    OomEvent {
        line,
        gpu,
        tried_to_allocate_mib: tried,
        capacity_mib: capacity,
        free_mib: free,
        allocated_by_pytorch_mib: allocated,
        reserved_by_pytorch_mib: reserved,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_form_with_reserved_total() {
        let e = &parse("RuntimeError: CUDA out of memory. Tried to allocate 96.00 MiB (GPU 0; 5.81 GiB total capacity; 4.66 GiB already allocated; 77.50 MiB free; 4.68 GiB reserved in total by PyTorch)")[0];
        assert_eq!(e.gpu, Some(0));
        assert_eq!(e.tried_to_allocate_mib, Some(96.0));
        assert!((e.capacity_mib.unwrap() - 5.81 * 1024.0).abs() < 1e-6);
        assert_eq!(e.free_mib, Some(77.5));
        assert!((e.allocated_by_pytorch_mib.unwrap() - 4.66 * 1024.0).abs() < 1e-6);
        assert!((e.reserved_by_pytorch_mib.unwrap() - 4.68 * 1024.0).abs() < 1e-6);
    }

    #[test]
    fn oldest_form_with_cached() {
        let e = &parse("RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; 8.57 GiB already allocated; 9.38 MiB free; 1.34 GiB cached)")[0];
        assert!((e.reserved_by_pytorch_mib.unwrap() - (8.57 + 1.34) * 1024.0).abs() < 1e-6);
    }

    #[test]
    fn wrapped_and_rank_prefixed() {
        let text = "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total\n[rank1]: capacity of 79.33 GiB of which 1.5 GiB is free. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 3.00 GiB is reserved by PyTorch but unallocated.";
        let e = &parse(text)[0];
        assert_eq!(e.gpu, Some(1));
        assert_eq!(e.tried_to_allocate_mib, Some(2048.0));
        assert_eq!(e.reserved_by_pytorch_mib, Some(73.0 * 1024.0));
    }

    #[test]
    fn a_request_a_memory_fraction_rejects_and_private_pools() {
        // PyTorch 2.15 (libc10_cuda.so's message pieces): a request the
        // per-process memory fraction rejects before trying it, wrapped.
        let text = "torch.OutOfMemoryError: CUDA out of memory. Allocation was preemptively rejected because it would exceed\nper_process_memory_fraction limit. Requested size: 4.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which\n30.02 GiB is free. Of the allocated memory 45.00 GiB is allocated by PyTorch, and 3.50 GiB is reserved by PyTorch but unallocated.";
        let e = &parse(text)[0];
        assert_eq!(e.tried_to_allocate_mib, Some(4096.0));
        assert_eq!(e.free_mib, Some(30.02 * 1024.0));
        assert_eq!(e.reserved_by_pytorch_mib, Some(48.5 * 1024.0));
        // Private pools (CUDA Graphs) are inside the allocated figure.
        let graphs = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.21 GiB is free. Process 3123 has 77.97 GiB memory in use. Of the allocated memory 70.00 GiB is allocated by PyTorch, with 2.50 GiB allocated in private pools (e.g., CUDA Graphs), and 5.00 GiB is reserved by PyTorch but unallocated.";
        let e = &parse(graphs)[0];
        assert_eq!(e.allocated_by_pytorch_mib, Some(70.0 * 1024.0));
        assert_eq!(e.reserved_by_pytorch_mib, Some(75.0 * 1024.0));
        // Free memory as seen by one stream's reserve class.
        let stream = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 1.25 GiB is free for this stream. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 5.00 GiB is reserved by PyTorch but unallocated.";
        let e = &parse(stream)[0];
        assert_eq!(e.free_mib, Some(1.25 * 1024.0));
        assert_eq!(e.tried_to_allocate_mib, Some(512.0));
    }

    #[test]
    fn no_oom_no_events() {
        assert!(parse("step 10 loss 2.3\nall good").is_empty());
        assert!(parse("").is_empty());
    }
}
