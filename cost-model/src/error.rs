//! Typed errors: each names the field at fault, in the plan JSON's dotted path.

use thiserror::Error;

#[derive(Clone, Debug, PartialEq, Error)]
pub enum PlanError {
    #[error("{field} must be at least 1 (got 0)")]
    Zero { field: &'static str },
    #[error("{field} ({value}) is larger than the supported maximum {max}")]
    TooLarge {
        field: &'static str,
        value: u64,
        max: u64,
    },
    #[error("{field} ({value}) is not divisible by {by_field} ({by})")]
    NotDivisible {
        field: &'static str,
        value: u64,
        by_field: &'static str,
        by: u64,
    },
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error(
        "version: plan schema version {found} is newer than this build understands ({supported})"
    )]
    UnsupportedVersion { found: u32, supported: u32 },
}

impl PlanError {
    /// The dotted path of the field at fault (e.g. `parallel.tp`).
    pub fn field(&self) -> &'static str {
        match self {
            PlanError::Zero { field }
            | PlanError::TooLarge { field, .. }
            | PlanError::NotDivisible { field, .. }
            | PlanError::Invalid { field, .. } => field,
            PlanError::UnsupportedVersion { .. } => "version",
        }
    }
}
