//! A PyTorch memory snapshot as `torch.cuda.memory._dump_snapshot()` writes
//! it: a Python pickle of `torch.cuda.memory._snapshot()` — the caching
//! allocator's segments when it was taken and, when
//! `torch.cuda.memory._record_memory_history()` was on, every allocator
//! action before that (`device_traces`, a ring of the last `max_entries`
//! per device). The same file pytorch.org/memory_viz opens.
//!
//! The pickle is read by a small stack machine over protocols 2–5 that
//! builds plain data only (dicts, lists, tuples, numbers, strings): it runs
//! no Python, and a class a pickle names (`GLOBAL`, `REDUCE`) becomes an
//! opaque value. Strings longer than [`KEPT_STR_BYTES`] (file names of stack
//! frames) are not kept, and shared objects (the snapshot's frames are
//! shared between entries) are built once.
//!
//! The peaks come from replaying the history backwards from the segments,
//! with the counters moving as torch 2.15's `torch/cuda/memory.py` documents
//! the snapshot: a segment's `allocated_size` is the memory "in use" and its
//! `active_size` adds the blocks "in active_awaiting_free state", so the
//! allocated counter rises at `alloc` and falls at `free_requested` (the
//! tensor freed; `free_completed` only ends the wait on other streams);
//! reserved memory is the segments' `total_size`, so it rises at
//! `segment_alloc` (`cudaMalloc`) and falls at `segment_free`, and with
//! expandable segments at `segment_map` / `segment_unmap` (action names not
//! in the docstring; the strings of torch 2.15's `libc10_cuda.so`, beside
//! `free_requested`). The snapshot's segments are where the history ends
//! (`allocated_size` and `total_size` summed per device).
//! Walking the entries back from there gives both counters at every entry,
//! so `max_memory_allocated` / `max_memory_reserved` over the recorded
//! window, and what was already allocated when the window opened.

use super::{AllocatorStats, Format, OomEvent, Trace, TraceError};

/// Strings kept whole (dict keys, `action`, `state`, `segment_type`); longer
/// ones (frame file names, metadata) are read past.
const KEPT_STR_BYTES: usize = 64;

/// The most values one pickle may build (32 bytes each): a bound on memory
/// for garbage or hostile input: 16.7 million, 0.5 GiB. An entry builds
/// about eight (its dict, its numbers, its list of frames) and a frame dict
/// the pickle shares between entries (memoized) is built once, so a
/// snapshot of 100,000 entries builds about a million plus its distinct
/// frames.
const MAX_NODES: usize = 1 << 24;

const MIB: f64 = 1048576.0;

/// A value the pickle built. Containers hold indices into the arena.
#[derive(Debug, Clone)]
enum Node {
    None,
    Bool(bool),
    Int(i64),
    /// An integer beyond 64 bits, or a float: as f64.
    Float(f64),
    Str(Box<str>),
    /// A string or bytes not kept ([`KEPT_STR_BYTES`]).
    Long,
    List(Vec<u32>),
    Dict(Vec<(u32, u32)>),
    /// An instance of a class the pickle names: not built.
    Object,
}

struct Machine<'a> {
    b: &'a [u8],
    pos: usize,
    arena: Vec<Node>,
    stack: Vec<u32>,
    marks: Vec<usize>,
    memo: Vec<u32>,
}

fn err(pos: usize, what: impl std::fmt::Display) -> TraceError {
    TraceError::whole(format!("the pickle at byte {pos}: {what}"))
}

impl<'a> Machine<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], TraceError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| err(self.pos, "the file ends inside a value (truncated?)"))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, TraceError> {
        Ok(self.take(1)?[0])
    }

    fn le(&mut self, n: usize) -> Result<u64, TraceError> {
        let s = self.take(n)?;
        Ok(s.iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    fn len(&mut self, n: usize) -> Result<usize, TraceError> {
        let at = self.pos;
        let l = self.le(n)?;
        usize::try_from(l)
            .ok()
            .filter(|&l| l <= self.b.len())
            .ok_or_else(|| err(at, format!("a length of {l} bytes, beyond the file")))
    }

    fn push(&mut self, n: Node) -> Result<(), TraceError> {
        if self.arena.len() >= MAX_NODES {
            return Err(err(
                self.pos,
                "more values than a memory snapshot holds — take it with fewer `max_entries`",
            ));
        }
        self.stack.push(self.arena.len() as u32);
        self.arena.push(n);
        Ok(())
    }

    fn pop(&mut self) -> Result<u32, TraceError> {
        self.stack
            .pop()
            .ok_or_else(|| err(self.pos, "a value taken from an empty stack"))
    }

    /// The values above the last mark, and the mark removed.
    fn pop_mark(&mut self) -> Result<Vec<u32>, TraceError> {
        let m = self
            .marks
            .pop()
            .ok_or_else(|| err(self.pos, "a mark expected"))?;
        if m > self.stack.len() {
            return Err(err(self.pos, "a mark above the stack"));
        }
        Ok(self.stack.split_off(m))
    }

    fn top(&self) -> Result<u32, TraceError> {
        self.stack
            .last()
            .copied()
            .ok_or_else(|| err(self.pos, "an empty stack"))
    }

    fn text(&mut self, n: usize) -> Result<Node, TraceError> {
        let s = self.take(n)?;
        Ok(if n <= KEPT_STR_BYTES {
            Node::Str(String::from_utf8_lossy(s).into())
        } else {
            Node::Long
        })
    }

    fn memo_put(&mut self, i: usize) -> Result<(), TraceError> {
        if i > self.arena.len() + 1 {
            return Err(err(self.pos, format!("memo slot {i} out of range")));
        }
        let v = self.top()?;
        if self.memo.len() <= i {
            self.memo.resize(i + 1, u32::MAX);
        }
        self.memo[i] = v;
        Ok(())
    }

    fn memo_get(&mut self, i: usize) -> Result<(), TraceError> {
        let v = self
            .memo
            .get(i)
            .copied()
            .filter(|&v| v != u32::MAX)
            .ok_or_else(|| {
                err(
                    self.pos,
                    format!("memo slot {i} read before it was written"),
                )
            })?;
        self.stack.push(v);
        Ok(())
    }

    fn append(&mut self, items: &[u32]) -> Result<(), TraceError> {
        let at = self.pos;
        let target = self.top()?;
        match &mut self.arena[target as usize] {
            Node::List(l) => l.extend_from_slice(items),
            Node::Object => {}
            _ => return Err(err(at, "items appended to something not a list")),
        }
        Ok(())
    }

    fn set_items(&mut self, items: &[u32]) -> Result<(), TraceError> {
        let at = self.pos;
        if !items.len().is_multiple_of(2) {
            return Err(err(at, "a key without its value"));
        }
        let target = self.top()?;
        match &mut self.arena[target as usize] {
            Node::Dict(d) => d.extend(items.chunks(2).map(|c| (c[0], c[1]))),
            Node::Object => {}
            _ => return Err(err(at, "items set on something not a dict")),
        }
        Ok(())
    }

    /// Runs the pickle to its STOP; the arena and the root value.
    fn run(mut self) -> Result<(Vec<Node>, u32), TraceError> {
        loop {
            let at = self.pos;
            let op = self.u8()?;
            match op {
                0x80 => {
                    let v = self.u8()?;
                    if !(2..=5).contains(&v) {
                        return Err(err(at, format!("pickle protocol {v} is not read")));
                    }
                }
                0x95 => {
                    self.take(8)?;
                }
                b'.' => {
                    let root = self.pop()?;
                    return Ok((self.arena, root));
                }
                b'(' => self.marks.push(self.stack.len()),
                b'}' => self.push(Node::Dict(Vec::new()))?,
                b']' => self.push(Node::List(Vec::new()))?,
                b')' => self.push(Node::List(Vec::new()))?,
                0x8f => self.push(Node::List(Vec::new()))?,
                b'N' => self.push(Node::None)?,
                0x88 => self.push(Node::Bool(true))?,
                0x89 => self.push(Node::Bool(false))?,
                b'J' => {
                    let v = self.le(4)? as u32 as i32;
                    self.push(Node::Int(i64::from(v)))?;
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push(Node::Int(i64::from(v)))?;
                }
                b'M' => {
                    let v = self.le(2)?;
                    self.push(Node::Int(v as i64))?;
                }
                0x8a | 0x8b => {
                    let n = if op == 0x8a {
                        usize::from(self.u8()?)
                    } else {
                        self.len(4)?
                    };
                    let s = self.take(n)?;
                    let node = if n <= 8 {
                        // Two's complement, little-endian, sign-extended.
                        let mut v: i64 = if s.last().is_some_and(|&x| x & 0x80 != 0) {
                            -1
                        } else {
                            0
                        };
                        for &x in s.iter().rev() {
                            v = (v << 8) | i64::from(x);
                        }
                        Node::Int(v)
                    } else {
                        let neg = s.last().is_some_and(|&x| x & 0x80 != 0);
                        let mag = s
                            .iter()
                            .rev()
                            .fold(0f64, |acc, &x| acc * 256.0 + f64::from(x));
                        Node::Float(if neg {
                            mag - 256f64.powi(n as i32)
                        } else {
                            mag
                        })
                    };
                    self.push(node)?;
                }
                b'G' => {
                    let s = self.take(8)?;
                    let mut a = [0u8; 8];
                    a.copy_from_slice(s);
                    self.push(Node::Float(f64::from_be_bytes(a)))?;
                }
                // Strings and bytes, by the width of their length.
                0x8c | b'C' | b'U' | b'X' | b'B' | b'T' | 0x8d | 0x8e | 0x96 => {
                    let n = match op {
                        0x8c | b'C' | b'U' => usize::from(self.u8()?),
                        b'X' | b'B' | b'T' => self.len(4)?,
                        _ => self.len(8)?,
                    };
                    let v = self.text(n)?;
                    self.push(v)?;
                }
                0x94 => self.memo_put(self.memo.len())?,
                // The memo by a one- or four-byte index.
                b'q' | b'r' | b'h' | b'j' => {
                    let i = if matches!(op, b'q' | b'h') {
                        usize::from(self.u8()?)
                    } else {
                        self.len(4)?
                    };
                    if matches!(op, b'q' | b'r') {
                        self.memo_put(i)?;
                    } else {
                        self.memo_get(i)?;
                    }
                }
                b'a' => {
                    let v = self.pop()?;
                    self.append(&[v])?;
                }
                b'e' | 0x90 => {
                    let items = self.pop_mark()?;
                    self.append(&items)?;
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    self.set_items(&[k, v])?;
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    self.set_items(&items)?;
                }
                b't' | b'l' | 0x91 => {
                    let items = self.pop_mark()?;
                    self.push(Node::List(items))?;
                }
                b'd' => {
                    let items = self.pop_mark()?;
                    if !items.len().is_multiple_of(2) {
                        return Err(err(at, "a key without its value"));
                    }
                    self.push(Node::Dict(items.chunks(2).map(|c| (c[0], c[1])).collect()))?;
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    if self.stack.len() < n {
                        return Err(err(at, "a tuple of more values than the stack holds"));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    self.push(Node::List(items))?;
                }
                b'0' => {
                    self.pop()?;
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let v = self.top()?;
                    self.stack.push(v);
                }
                // A class named by module and name: not imported, an
                // opaque value.
                b'c' => {
                    for _ in 0..2 {
                        let end = self.b[self.pos..]
                            .iter()
                            .position(|&x| x == b'\n')
                            .ok_or_else(|| err(at, "a class name without its line end"))?;
                        self.pos += end + 1;
                    }
                    self.push(Node::Object)?;
                }
                0x93 => {
                    self.pop()?;
                    self.pop()?;
                    self.push(Node::Object)?;
                }
                // Calls and instances: the arguments dropped, an opaque value.
                b'R' | 0x81 => {
                    self.pop()?;
                    self.pop()?;
                    self.push(Node::Object)?;
                }
                0x92 => {
                    for _ in 0..3 {
                        self.pop()?;
                    }
                    self.push(Node::Object)?;
                }
                b'b' => {
                    self.pop()?;
                }
                0x82 => {
                    self.take(1)?;
                    self.push(Node::Object)?;
                }
                0x83 => {
                    self.take(2)?;
                    self.push(Node::Object)?;
                }
                0x84 => {
                    self.take(4)?;
                    self.push(Node::Object)?;
                }
                b'Q' => {
                    self.pop()?;
                    self.push(Node::Object)?;
                }
                _ => {
                    return Err(err(
                        at,
                        format!(
                            "opcode 0x{op:02x} is not one a memory snapshot's pickle uses \
                             (protocol 2–5 data only)"
                        ),
                    ))
                }
            }
        }
    }
}

/// Reads a pickle into plain values.
fn unpickle(b: &[u8]) -> Result<(Vec<Node>, u32), TraceError> {
    Machine {
        b,
        pos: 0,
        arena: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Vec::new(),
    }
    .run()
}

struct View<'a> {
    arena: &'a [Node],
}

impl<'a> View<'a> {
    fn node(&self, i: u32) -> &'a Node {
        &self.arena[i as usize]
    }

    fn get(&self, dict: u32, key: &str) -> Option<u32> {
        match self.node(dict) {
            Node::Dict(d) => d
                .iter()
                .find(|(k, _)| matches!(self.node(*k), Node::Str(s) if &**s == key))
                .map(|(_, v)| *v),
            _ => None,
        }
    }

    fn list(&self, i: Option<u32>) -> &'a [u32] {
        match i.map(|i| self.node(i)) {
            Some(Node::List(l)) => l,
            _ => &[],
        }
    }

    fn num(&self, dict: u32, key: &str) -> Option<f64> {
        match self.get(dict, key).map(|i| self.node(i)) {
            Some(Node::Int(v)) => Some(*v as f64),
            Some(Node::Float(v)) => Some(*v),
            Some(Node::Bool(v)) => Some(f64::from(u8::from(*v))),
            _ => None,
        }
    }

    fn str(&self, dict: u32, key: &str) -> Option<&'a str> {
        match self.get(dict, key).map(|i| self.node(i)) {
            Some(Node::Str(s)) => Some(s),
            _ => None,
        }
    }
}

/// One device: its counters as the snapshot leaves them, and over its
/// recorded history.
#[derive(Default)]
struct Device {
    allocated_now: f64,
    reserved_now: f64,
    segments: u64,
    largest_segment: f64,
    /// Entries of its recorded history.
    entries: usize,
    peak_allocated: f64,
    peak_reserved: f64,
    /// Allocated when the history begins.
    start_allocated: f64,
}

/// A memory snapshot, read ([module docs](self)).
pub fn read(bytes: &[u8]) -> Result<Trace, TraceError> {
    let (arena, root) = unpickle(bytes)?;
    let v = View { arena: &arena };
    // `_snapshot()`'s dict, or the list of segments that
    // `torch.cuda.memory_snapshot()` returns (and older releases pickled).
    let (segments, traces) = match v.node(root) {
        Node::Dict(_) if v.get(root, "segments").is_some() => (
            v.list(v.get(root, "segments")),
            v.list(v.get(root, "device_traces")),
        ),
        Node::List(l) if l.iter().all(|&s| v.get(s, "total_size").is_some()) => (&l[..], &[][..]),
        _ => {
            return Err(TraceError::whole(
                "a Python pickle, but not a PyTorch memory snapshot: it holds no `segments` \
                 (write one with torch.cuda.memory._dump_snapshot())",
            ))
        }
    };
    let mut devices: Vec<Device> = Vec::new();
    let dev = |devices: &mut Vec<Device>, d: usize| -> usize {
        let d = d.min(1023);
        if devices.len() <= d {
            devices.resize_with(d + 1, Device::default);
        }
        d
    };
    for &s in segments {
        if !matches!(v.node(s), Node::Dict(_)) {
            continue;
        }
        let d = v.num(s, "device").unwrap_or(0.0).max(0.0) as usize;
        let d = dev(&mut devices, d);
        let total = v.num(s, "total_size").unwrap_or(0.0).max(0.0);
        // `allocated_size`, else the blocks a tensor holds.
        let allocated = v.num(s, "allocated_size").unwrap_or_else(|| {
            v.list(v.get(s, "blocks"))
                .iter()
                .filter(|&&b| v.str(b, "state") == Some("active_allocated"))
                .filter_map(|&b| v.num(b, "size"))
                .sum()
        });
        let g = &mut devices[d];
        g.reserved_now += total;
        g.allocated_now += allocated.max(0.0);
        g.segments += 1;
        g.largest_segment = g.largest_segment.max(total);
    }
    let mut t = Trace {
        format: Format::PytorchMemorySnapshot,
        lines: 0,
        gpus: Vec::new(),
        processes: Vec::new(),
        oom: Vec::new(),
        allocator: None,
        notes: Vec::new(),
        warnings: Vec::new(),
    };
    // Each device's history walked back from its segments: the counters
    // after entry i are (a, r); before it, less what the entry changed.
    for (d, &list) in traces.iter().enumerate() {
        let list = v.list(Some(list));
        if list.is_empty() {
            continue;
        }
        let d = dev(&mut devices, d);
        let g = &mut devices[d];
        let (mut a, mut r) = (g.allocated_now, g.reserved_now);
        let (mut peak_a, mut peak_r) = (a, r);
        let mut ooms = Vec::new();
        for (i, &e) in list.iter().enumerate().rev() {
            let size = v.num(e, "size").unwrap_or(0.0).max(0.0);
            match v.str(e, "action") {
                Some("alloc") => a -= size,
                Some("free_requested") => a += size,
                Some("segment_alloc" | "segment_map") => r -= size,
                Some("segment_free" | "segment_unmap") => r += size,
                Some("oom") => ooms.push(OomEvent {
                    line: i as u64 + 1,
                    gpu: Some(d as u32),
                    tried_to_allocate_mib: Some(size / MIB),
                    capacity_mib: None,
                    free_mib: v.num(e, "device_free").map(|f| f / MIB),
                    allocated_by_pytorch_mib: Some(a / MIB),
                    reserved_by_pytorch_mib: Some(r / MIB),
                }),
                _ => {}
            }
            peak_a = peak_a.max(a);
            peak_r = peak_r.max(r);
        }
        if a < -MIB || r < -MIB {
            t.warnings.push(format!(
                "device {d}: the history does not end where the segments do (it frees {:.0} MiB more \
                 than it allocates); the peaks may be off — was the snapshot taken from another \
                 process or after torch.cuda.memory._record_memory_history(enabled=None)?",
                (-a).max(-r) / MIB
            ));
        }
        ooms.reverse();
        t.oom.extend(ooms);
        t.lines += list.len() as u64;
        g.entries = list.len();
        (g.peak_allocated, g.peak_reserved) = (peak_a, peak_r);
        g.start_allocated = a.max(0.0);
    }
    // A device without a history peaks where it stands.
    for g in devices.iter_mut().filter(|g| g.entries == 0) {
        (g.peak_allocated, g.peak_reserved) = (g.allocated_now, g.reserved_now);
    }
    let mut seen: Vec<(usize, &Device)> = devices
        .iter()
        .enumerate()
        .filter(|(_, g)| g.segments > 0 || g.entries > 0)
        .collect();
    if seen.is_empty() {
        return Err(TraceError::whole(
            "a PyTorch memory snapshot with no segments and no recorded history: nothing was \
             allocated on the GPU when it was taken",
        ));
    }
    // The device whose allocator reserved the most is the one compared (a
    // training process has one); the others are noted.
    seen.sort_by(|(i, x), (j, y)| y.peak_reserved.total_cmp(&x.peak_reserved).then(i.cmp(j)));
    let (d, g) = seen[0];
    let mut stats = AllocatorStats {
        current_allocated_mib: Some(g.allocated_now / MIB),
        current_reserved_mib: Some(g.reserved_now / MIB),
        ..AllocatorStats::default()
    };
    if g.entries > 0 {
        stats.peak_allocated_mib = Some(g.peak_allocated / MIB);
        stats.peak_reserved_mib = Some(g.peak_reserved / MIB);
        t.notes.push((
            format!(
                "device {d}: allocated when the recorded history ({} entries) begins",
                g.entries
            ),
            g.start_allocated / MIB,
        ));
    }
    t.allocator = Some(stats);
    t.notes.push((
        format!(
            "device {d}: reserved at the snapshot ({} segments; the largest below)",
            g.segments
        ),
        g.reserved_now / MIB,
    ));
    t.notes.push((
        format!("device {d}: largest segment"),
        g.largest_segment / MIB,
    ));
    if t.lines == 0 {
        t.warnings.push(
            "no allocation history in the snapshot (torch.cuda.memory._record_memory_history() was \
             not on): its figures are the allocator's state when it was taken, not the run's peaks"
                .into(),
        );
    } else if g.start_allocated > MIB {
        t.warnings.push(format!(
            "the recorded history begins with {:.0} MiB already allocated on device {d}: recording \
             started late or its ring (`max_entries`) dropped older entries, so the peaks are \
             those of the recorded window",
            g.start_allocated / MIB
        ));
    }
    for &(d, g) in &seen[1..] {
        t.notes.push((
            format!("device {d}: peak allocated in its history"),
            g.peak_allocated / MIB,
        ));
        t.notes.push((
            format!("device {d}: peak reserved in its history"),
            g.peak_reserved / MIB,
        ));
    }
    t.warnings.insert(
        0,
        "a PyTorch memory snapshot (pickle): peaks replayed from its allocator history; the \
         line numbers of out-of-memory events count its history entries"
            .into(),
    );
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Protocol-4 pickle of `{'a': [1, -2, 300, 70000, 2**40, 1.5, 'x', None, True]}`
    /// as CPython 3.11's `pickle.dumps` writes it.
    const SMALL: &[u8] = b"\x80\x04\x952\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01a\x94]\x94(K\x01J\xfe\xff\xff\xffM,\x01Jp\x11\x01\x00\x8a\x06\x00\x00\x00\x00\x00\x01G?\xf8\x00\x00\x00\x00\x00\x00\x8c\x01x\x94N\x88es.";

    #[test]
    fn the_machine_reads_plain_data() {
        let (arena, root) = unpickle(SMALL).unwrap();
        let v = View { arena: &arena };
        let items: Vec<&Node> = v
            .list(v.get(root, "a"))
            .iter()
            .map(|&i| v.node(i))
            .collect();
        assert!(matches!(items[0], Node::Int(1)));
        assert!(matches!(items[1], Node::Int(-2)));
        assert!(matches!(items[2], Node::Int(300)));
        assert!(matches!(items[3], Node::Int(70000)));
        assert!(matches!(items[4], Node::Int(v) if *v == 1 << 40));
        assert!(matches!(items[5], Node::Float(f) if *f == 1.5));
        assert!(matches!(items[6], Node::Str(s) if &**s == "x"));
        assert!(matches!(items[7], Node::None));
        assert!(matches!(items[8], Node::Bool(true)));
    }

    #[test]
    fn broken_pickles_are_refused_with_the_byte() {
        // Cut inside the list.
        let e = unpickle(&SMALL[..40]).unwrap_err();
        assert!(e.message.contains("byte"), "{e}");
        // An opcode of protocol 0 text pickles.
        let e = unpickle(b"\x80\x02I12\n.").unwrap_err();
        assert!(e.message.contains("opcode 0x49"), "{e}");
        // A memo read before any write.
        let e = unpickle(b"\x80\x04h\x05.").unwrap_err();
        assert!(e.message.contains("memo slot 5"), "{e}");
        // Not a snapshot.
        let e = read(SMALL).unwrap_err();
        assert!(e.message.contains("not a PyTorch memory snapshot"), "{e}");
    }
}
