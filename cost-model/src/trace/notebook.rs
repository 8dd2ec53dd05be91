//! A Jupyter notebook (`.ipynb`, nbformat 4) uploaded as it is: what its
//! code cells printed is the log — `!nvidia-smi`'s table, a training loop's
//! prints, the Trainer's metrics, an out-of-memory error — read by the
//! readers of those outputs. A cell's value (`execute_result`) is given as
//! the prompt would show it, `In [n]:` with the cell's last line and
//! `Out[n]:` with the value, so a counter evaluated in a cell
//! (`torch.cuda.max_memory_reserved() / 2**30`) reads as at a prompt
//! ([`super::repl`]).

use serde_json::Value;

/// The head of a notebook's JSON: an object whose first keys Jupyter writes
/// are `"cells"` (nbformat 4 sorts its keys) — or `"nbformat"` where another
/// tool wrote them in another order.
pub fn looks_like(head: &[String]) -> bool {
    let mut lines = head.iter().map(|l| l.trim()).filter(|l| !l.is_empty());
    if !lines.next().is_some_and(|l| l.starts_with('{')) {
        return false;
    }
    head.iter().any(|l| {
        let t = l.trim_start();
        t.starts_with("\"cells\":")
            || t.starts_with("\"nbformat\":")
            || t.starts_with("{\"cells\":")
    })
}

/// A notebook's text: one string, or a list of lines (nbformat's multiline
/// strings).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// What the code cells printed, in order, and how many code cells there
/// are; an error names what is not a notebook.
pub fn outputs(json: &str) -> Result<(String, usize), String> {
    let root: Value = serde_json::from_str(json).map_err(|e| {
        format!(
            "this looks like a Jupyter notebook but its JSON does not parse (line {}, column {}): {e}",
            e.line(),
            e.column()
        )
    })?;
    let cells = root
        .get("cells")
        .and_then(Value::as_array)
        .ok_or("this JSON has no \"cells\" list: not a Jupyter notebook (nbformat 4)")?;
    let mut out = String::new();
    let push = |out: &mut String, s: &str| {
        out.push_str(s);
        if !s.ends_with('\n') {
            out.push('\n');
        }
    };
    let mut code_cells = 0;
    for cell in cells {
        if cell.get("cell_type").and_then(Value::as_str) != Some("code") {
            continue;
        }
        code_cells += 1;
        let source = cell.get("source").map(text).unwrap_or_default();
        let Some(outputs) = cell.get("outputs").and_then(Value::as_array) else {
            continue;
        };
        for o in outputs {
            match o.get("output_type").and_then(Value::as_str) {
                Some("stream") => push(&mut out, &o.get("text").map(text).unwrap_or_default()),
                Some("execute_result") => {
                    let value = o
                        .get("data")
                        .and_then(|d| d.get("text/plain"))
                        .map(text)
                        .unwrap_or_default();
                    let last = source.lines().rev().find(|l| !l.trim().is_empty());
                    let n = o
                        .get("execution_count")
                        .and_then(Value::as_u64)
                        .map(|n| n.to_string())
                        .unwrap_or_default();
                    match last {
                        Some(code) if !value.trim().contains('\n') => {
                            push(&mut out, &format!("In [{n}]: {}", code.trim()));
                            push(&mut out, &format!("Out[{n}]: {}", value.trim()));
                        }
                        _ => push(&mut out, &value),
                    }
                }
                Some("display_data") => {
                    if let Some(v) = o.get("data").and_then(|d| d.get("text/plain")) {
                        push(&mut out, &text(v));
                    }
                }
                Some("error") => {
                    for line in o
                        .get("traceback")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                    {
                        push(&mut out, line);
                    }
                    let name = o.get("ename").and_then(Value::as_str).unwrap_or("");
                    let value = o.get("evalue").and_then(Value::as_str).unwrap_or("");
                    push(&mut out, &format!("{name}: {value}"));
                }
                _ => {}
            }
        }
    }
    Ok((out, code_cells))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cells_value_reads_as_its_prompt() {
        let nb = r##"{"cells": [
          {"cell_type": "markdown", "source": ["# run"]},
          {"cell_type": "code", "execution_count": 4, "source": ["import torch\n", "torch.cuda.max_memory_reserved() / 2**30"],
           "outputs": [{"output_type": "execute_result", "execution_count": 4, "data": {"text/plain": ["15.5"]}}]},
          {"cell_type": "code", "execution_count": 5, "source": "print('x')",
           "outputs": [{"output_type": "stream", "name": "stdout", "text": ["a\n", "b"]}]}
        ], "nbformat": 4}"##;
        let (text, cells) = outputs(nb).unwrap();
        assert_eq!(cells, 2);
        assert_eq!(
            text,
            "In [4]: torch.cuda.max_memory_reserved() / 2**30\nOut[4]: 15.5\na\nb\n"
        );
        assert!(outputs("{\"cells\": 3}")
            .unwrap_err()
            .contains("no \"cells\""));
        assert!(outputs("{\"cells\": [").unwrap_err().contains("line 1"));
    }
}
