//! PyTorch's peak counters read in an interactive session: Python's prompt
//! (`>>> torch.cuda.max_memory_allocated()` and the value on the next line)
//! or IPython/Jupyter's (`In [3]: torch.cuda.max_memory_reserved() / 2**30`,
//! `Out[3]: 14.0`). The expression says the counter and the unit: a whole
//! number of bytes as the counter returns it, or that number divided
//! (`/ 2**30`, `/ 1024**3`, `/ 1e9`, `>> 20`, inside `round(…, 2)` or
//! `print(…)`) — the divisor is worked out from the expression, so decimal
//! and binary units are told apart.

use super::logs::PrintedCounter;

/// The code of a prompt's line: after `>>> ` or `In [n]: `.
pub fn input(line: &str) -> Option<&str> {
    let t = line.trim_start();
    // Every line of a log passes here: one byte test first.
    if !matches!(t.as_bytes().first(), Some(b'>' | b'I')) {
        return None;
    }
    if let Some(code) = t.strip_prefix(">>>") {
        return Some(code.trim());
    }
    let rest = t.strip_prefix("In [")?;
    let close = rest.find("]:")?;
    rest[..close]
        .bytes()
        .all(|c| c.is_ascii_digit())
        .then(|| rest[close + 2..].trim())
}

/// The figure an output line shows: `Out[n]: 14.0`, or a bare number on
/// the line after Python's prompt.
pub fn output(line: &str) -> Option<f64> {
    let t = line.trim();
    let v = match t.strip_prefix("Out[") {
        Some(rest) => {
            let close = rest.find("]:")?;
            rest[close + 2..].trim()
        }
        None => t,
    };
    v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0)
}

/// The counters a session may print, by the call (or `memory_stats()` key)
/// that reads them.
const CALLS: [(&str, PrintedCounter); 6] = [
    ("max_memory_allocated(", PrintedCounter::Allocated),
    ("max_memory_reserved(", PrintedCounter::Reserved),
    ("max_memory_cached(", PrintedCounter::Reserved),
    ("[\"allocated_bytes.all.peak\"]", PrintedCounter::Allocated),
    ("[\"reserved_bytes.all.peak\"]", PrintedCounter::Reserved),
    ("[\"active_bytes.all.peak\"]", PrintedCounter::Allocated),
];

/// The counter an input line reads and the bytes one printed unit stands
/// for (1 for the bare counter, 2^30 for `… / 2**30`); `None` when the code
/// reads no peak counter or does more to it than divide (or shift) it by
/// constants.
pub fn peak_call(code: &str) -> Option<(PrintedCounter, f64)> {
    let mut s = code.trim().trim_end_matches(';').trim().replace('\'', "\"");
    // Wrappers that keep the value: `print(…)`, `float(…)`, `round(…, 2)`.
    while let Some(open) = ["print(", "float(", "int(", "round("]
        .into_iter()
        .find(|w| s.starts_with(w))
    {
        if !s.ends_with(')') || matching(&s, open.len() - 1) != Some(s.len() - 1) {
            break;
        }
        let mut inner = s[open.len()..s.len() - 1].to_string();
        if open == "round(" {
            // Its digits argument, after the last comma at depth 0.
            if let Some(comma) = top_level_comma(&inner) {
                inner.truncate(comma);
            }
        }
        s = inner.trim().to_string();
    }
    let (at, end, counter) = CALLS.iter().find_map(|(name, c)| {
        let at = s.find(name)?;
        let end = if name.ends_with('(') {
            matching(&s, at + name.len() - 1)? + 1
        } else {
            at + name.len()
        };
        Some((at, end, *c))
    })?;
    // What reads the counter: `torch.cuda.`, `torch.cuda.memory_stats()`,
    // `torch.cuda.memory_stats(0)` — a dotted path, no arithmetic.
    let head = &s[..at];
    let head = match head.find("memory_stats(") {
        Some(i) => {
            let close = matching(&s, i + "memory_stats(".len() - 1)?;
            if close + 1 != at {
                return None;
            }
            &s[..i]
        }
        None => head,
    };
    if !head
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
    {
        return None;
    }
    let per_unit = divisor(&s[end..])?;
    (per_unit.is_finite() && per_unit > 0.0).then_some((counter, per_unit))
}

/// The index of the `)` that closes the `(` at `open`.
fn matching(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.bytes().enumerate().skip(open) {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn top_level_comma(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    let mut last = None;
    for (i, c) in s.bytes().enumerate() {
        match c {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b',' if depth == 0 => last = Some(i),
            _ => {}
        }
    }
    last
}

/// What the counter is divided by in `tail` (`/ 2**30`, `/1024/1024`,
/// `>> 20`, `// (1024 * 1024)`, `* 1e-9`): the product of the divisors;
/// empty is 1.
fn divisor(tail: &str) -> Option<f64> {
    let mut p = Arith {
        s: tail.as_bytes(),
        i: 0,
    };
    let mut d = 1.0;
    loop {
        p.space();
        if p.i == p.s.len() {
            return Some(d);
        }
        if p.eat(b">>") {
            d *= 2f64.powf(p.power()?);
        } else if p.eat(b"//") || p.eat(b"/") {
            d *= p.power()?;
        } else if p.eat(b"*") {
            d /= p.power()?;
        } else {
            return None;
        }
    }
}

/// A constant expression of numbers, `**`, `*`, `/` and brackets.
struct Arith<'a> {
    s: &'a [u8],
    i: usize,
}

impl Arith<'_> {
    fn space(&mut self) {
        while self.s.get(self.i) == Some(&b' ') {
            self.i += 1;
        }
    }

    fn eat(&mut self, t: &[u8]) -> bool {
        self.space();
        let ok = self.s[self.i..].starts_with(t);
        if ok {
            self.i += t.len();
        }
        ok
    }

    /// `a ** b` (right-associative) or a single atom.
    fn power(&mut self) -> Option<f64> {
        let base = self.atom()?;
        if self.eat(b"**") {
            let e = self.power()?;
            return Some(base.powf(e)).filter(|x| x.is_finite());
        }
        Some(base)
    }

    fn atom(&mut self) -> Option<f64> {
        self.space();
        if self.eat(b"(") {
            let mut v = self.power()?;
            loop {
                if self.eat(b"*") {
                    v *= self.power()?;
                } else if self.eat(b"/") {
                    v /= self.power()?;
                } else {
                    break;
                }
            }
            return self.eat(b")").then_some(v);
        }
        let start = self.i;
        while let Some(&c) = self.s.get(self.i) {
            let exponent_sign = matches!(c, b'-' | b'+')
                && self.i > start
                && matches!(self.s[self.i - 1], b'e' | b'E');
            if c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'_') || exponent_sign {
                self.i += 1;
            } else {
                break;
            }
        }
        let num: String = std::str::from_utf8(&self.s[start..self.i])
            .ok()?
            .replace('_', "");
        num.parse::<f64>().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_divisor_says_the_unit() {
        let per = |code: &str| peak_call(code).map(|(_, p)| p);
        let gib = 1024f64.powi(3);
        assert_eq!(per("torch.cuda.max_memory_allocated()"), Some(1.0));
        for code in [
            "torch.cuda.max_memory_allocated() / 2**30",
            "torch.cuda.max_memory_allocated()/1024**3",
            "torch.cuda.max_memory_allocated(0) / 1024 / 1024 / 1024",
            "torch.cuda.max_memory_allocated(device) // (1024 * 1024 * 1024)",
            "torch.cuda.max_memory_allocated() >> 30",
            "round(torch.cuda.max_memory_allocated() / 2 ** 30, 2)",
            "print(torch.cuda.max_memory_allocated() / (1 << 0) / 2**30)",
        ] {
            // `(1 << 0)` is not arithmetic this reader does: refused, not guessed.
            if code.contains("<<") {
                assert_eq!(per(code), None, "{code}");
            } else {
                assert_eq!(per(code), Some(gib), "{code}");
            }
        }
        assert_eq!(per("torch.cuda.max_memory_reserved() / 1e9"), Some(1e9));
        assert_eq!(per("torch.cuda.max_memory_reserved() * 1e-6"), Some(1e6));
        assert_eq!(
            peak_call("torch.cuda.memory_stats()['reserved_bytes.all.peak'] / 2**20"),
            Some((PrintedCounter::Reserved, 1024.0 * 1024.0))
        );
        // Not the counter alone: a sum, a difference, another call.
        for code in [
            "torch.cuda.max_memory_allocated() - torch.cuda.memory_allocated()",
            "x + torch.cuda.max_memory_allocated()",
            "torch.cuda.memory_allocated()",
            "len(torch.cuda.max_memory_allocated())",
        ] {
            assert_eq!(peak_call(code), None, "{code}");
        }
    }

    #[test]
    fn prompts_and_outputs() {
        assert_eq!(
            input(">>> torch.cuda.max_memory_allocated()"),
            Some("torch.cuda.max_memory_allocated()")
        );
        assert_eq!(input("In [12]: x"), Some("x"));
        assert_eq!(input("In [a]: x"), None);
        assert_eq!(output("Out[12]: 14.25"), Some(14.25));
        assert_eq!(output("15032385536"), Some(15032385536.0));
        assert_eq!(output("tensor(3.)"), None);
    }
}
