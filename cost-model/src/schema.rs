//! Plan JSON across schema versions: parse it, migrate an older version to
//! the current one ([`PLAN_VERSION`]), and name the line, column and field at
//! fault when it cannot be read. Saved plans keep opening after the schema
//! changes because every load goes through here.

use crate::plan::{Plan, PLAN_VERSION};
use serde_json::Value;
use std::fmt;

/// Why a plan JSON could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanLoadError {
    /// 1-based line and column in the text, when the text was parsed here.
    pub line: Option<u64>,
    pub column: Option<u64>,
    /// Dotted path of the field at fault (`training.micro_batch`), if any.
    pub field: Option<String>,
    pub message: String,
    /// The text is not JSON at all (rather than JSON of the wrong shape).
    pub syntax: bool,
}

impl fmt::Display for PlanLoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("plan JSON")?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ", line {l} column {c}")?;
        }
        if let Some(p) = &self.field {
            write!(f, ", field `{p}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for PlanLoadError {}

impl PlanLoadError {
    fn at(field: &str, message: impl Into<String>) -> Self {
        PlanLoadError {
            line: None,
            column: None,
            field: Some(field.to_string()),
            message: message.into(),
            syntax: false,
        }
    }
}

/// One migration: turns a plan of schema version `from` into `from + 1`.
type Migration = fn(Value) -> Result<Value, PlanLoadError>;

/// `MIGRATIONS[i]` migrates version `i + 1` to `i + 2`.
const MIGRATIONS: [Migration; (PLAN_VERSION - 1) as usize] = [v1_to_v2];

/// Version 2 split `parallel.offload` (`none` | `optimizer` |
/// `params-optimizer`, always to host memory) into a device per state:
/// `{"optimizer": "none"|"cpu"|"nvme", "params": "none"|"cpu"|"nvme"}`.
fn v1_to_v2(mut v: Value) -> Result<Value, PlanLoadError> {
    if let Some(par) = v.get_mut("parallel").and_then(Value::as_object_mut) {
        if let Some(old) = par.get("offload") {
            let (optimizer, params) = match old.as_str() {
                Some("none") => ("none", "none"),
                Some("optimizer") => ("cpu", "none"),
                Some("params-optimizer") => ("cpu", "cpu"),
                _ => {
                    return Err(PlanLoadError::at(
                        "parallel.offload",
                        format!(
                            "unknown version-1 value {old} (none, optimizer, params-optimizer)"
                        ),
                    ))
                }
            };
            par.insert(
                "offload".into(),
                serde_json::json!({ "optimizer": optimizer, "params": params }),
            );
        }
    }
    set_version(&mut v, 2);
    Ok(v)
}

fn set_version(v: &mut Value, to: u32) {
    if let Some(o) = v.as_object_mut() {
        o.insert("version".into(), Value::from(to));
    }
}

/// The schema version a plan JSON object declares.
fn version_of(v: &Value) -> Result<u32, PlanLoadError> {
    let Some(obj) = v.as_object() else {
        return Err(PlanLoadError {
            line: None,
            column: None,
            field: None,
            message: "expected a JSON object".into(),
            syntax: false,
        });
    };
    let Some(ver) = obj.get("version") else {
        return Err(PlanLoadError::at("version", "missing field `version`"));
    };
    match ver.as_u64() {
        Some(n) if (1..=PLAN_VERSION as u64).contains(&n) => Ok(n as u32),
        Some(n) if n > PLAN_VERSION as u64 => Err(PlanLoadError::at(
            "version",
            format!(
                "plan schema version {n} is newer than this build understands ({PLAN_VERSION})"
            ),
        )),
        _ => Err(PlanLoadError::at(
            "version",
            format!("expected a schema version 1..={PLAN_VERSION}, got {ver}"),
        )),
    }
}

/// Migrates a plan JSON value of any known version to the current one.
pub fn migrate(mut v: Value) -> Result<Value, PlanLoadError> {
    let from = version_of(&v)?;
    for m in &MIGRATIONS[(from - 1) as usize..] {
        v = m(v)?;
    }
    Ok(v)
}

/// Parses plan JSON text of any known schema version. A UTF-8 byte-order
/// mark (Windows editors save one) is skipped.
pub fn load_plan(s: &str) -> Result<Plan, PlanLoadError> {
    let s = s.strip_prefix('\u{feff}').unwrap_or(s);
    let value: Value = serde_json::from_str(s).map_err(|e| PlanLoadError {
        line: Some(e.line() as u64),
        column: Some(e.column() as u64),
        field: None,
        message: strip_position(&e),
        syntax: e.is_syntax() || e.is_eof(),
    })?;
    if version_of(&value)? == PLAN_VERSION {
        // Current version: read the text itself, so errors keep line and column.
        let de = &mut serde_json::Deserializer::from_str(s);
        let plan = serde_path_to_error::deserialize(de).map_err(|e| {
            let (line, column) = (e.inner().line() as u64, e.inner().column() as u64);
            PlanLoadError {
                line: Some(line),
                column: Some(column),
                field: field_of(e.path()),
                message: strip_position(e.inner()),
                syntax: false,
            }
        })?;
        return Ok(seed_unstated(plan, &value));
    }
    load_plan_value(value)
}

/// Settings a plan file may leave out whose default depends on the rest of
/// the plan, seeded as the planner seeds them: block dropout, from the model
/// and the framework (`Plan::default_dropout`; a hand-written GPT-2 plan
/// drops out as the planner's does). A stated value stays.
fn seed_unstated(mut plan: Plan, v: &Value) -> Plan {
    if v.get("training").and_then(|t| t.get("dropout")).is_none() {
        plan.training.dropout = plan.default_dropout();
    }
    plan
}

/// Reads a plan from an already parsed JSON value of any known schema version
/// (the API's request bodies and the stored plans).
pub fn load_plan_value(v: Value) -> Result<Plan, PlanLoadError> {
    let v = migrate(v)?;
    let plan = serde_path_to_error::deserialize(&v).map_err(|e| PlanLoadError {
        line: None,
        column: None,
        field: field_of(e.path()),
        message: e.inner().to_string(),
        syntax: false,
    })?;
    Ok(seed_unstated(plan, &v))
}

fn field_of(p: &serde_path_to_error::Path) -> Option<String> {
    let s = p.to_string();
    (s != ".").then_some(s)
}

/// serde_json's message without its own " at line L column C" suffix (the
/// callers report line and column themselves).
pub fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_plan_round_trips() {
        let p = Plan::default();
        let s = serde_json::to_string(&p).unwrap();
        assert_eq!(load_plan(&s).unwrap(), p);
    }

    /// A plan file that leaves block dropout out gets the planner's seed for
    /// its model and framework; a stated value stays, and a saved plan states it.
    #[test]
    fn unstated_block_dropout_is_seeded_like_the_planners() {
        let mut gpt2 = Plan::default();
        gpt2.set_model(crate::presets::preset("gpt2").unwrap().spec(), None);
        assert!(gpt2.training.dropout);
        let mut v = serde_json::to_value(&gpt2).unwrap();
        assert_eq!(load_plan(&v.to_string()).unwrap(), gpt2);
        v["training"].as_object_mut().unwrap().remove("dropout");
        assert!(load_plan(&v.to_string()).unwrap().training.dropout);
        assert!(load_plan_value(v.clone()).unwrap().training.dropout);
        v["training"]["dropout"] = Value::Bool(false);
        assert!(!load_plan(&v.to_string()).unwrap().training.dropout);
        // Llama's config ships no dropout.
        let mut v = serde_json::to_value(Plan::default()).unwrap();
        v["training"].as_object_mut().unwrap().remove("dropout");
        assert!(!load_plan(&v.to_string()).unwrap().training.dropout);
    }

    #[test]
    fn errors_name_line_column_and_field() {
        let mut v = serde_json::to_value(Plan::default()).unwrap();
        v["training"]["micro_batch"] = Value::from("four");
        let s = serde_json::to_string_pretty(&v).unwrap();
        let e = load_plan(&s).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("training.micro_batch"));
        assert!(e.line.unwrap() > 1, "{e}");
        assert!(
            e.to_string().contains("field `training.micro_batch`"),
            "{e}"
        );

        let e = load_plan("{\n  \"version\": 2,\n  oops").unwrap_err();
        assert_eq!((e.line, e.field.clone()), (Some(3), None), "{e}");

        let e = load_plan("{\"version\": 99}").unwrap_err();
        assert!(e.to_string().contains("newer than this build"), "{e}");
        let e = load_plan("{\"version\": 0}").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("version"));
        let e = load_plan("[1, 2]").unwrap_err();
        assert!(e.message.contains("object"), "{e}");
    }

    #[test]
    fn unknown_fields_are_rejected_with_their_path() {
        let mut v = serde_json::to_value(Plan::default()).unwrap();
        v["parallel"]["bogus"] = Value::from(1);
        let e = load_plan_value(v).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("parallel.bogus"), "{e}");
        assert!(e.message.contains("unknown field `bogus`"), "{e}");
    }
}
