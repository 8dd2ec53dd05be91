//! Everything the planner says about one plan, in one serialisable value:
//! what `memplan estimate --json` prints and `POST /api/v1/estimate` returns.

use crate::error::PlanError;
use crate::estimate::{estimate, Estimate};
use crate::search::{fix_ladder, max_micro_batch, max_seq_len};
use crate::units::Bytes;
use crate::Plan;
use serde::{Deserialize, Serialize};

/// One rung of the fix ladder, without the full plan (its `query` applies it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RungReport {
    pub id: String,
    pub query: String,
    pub device_used: Bytes,
    pub saving: Bytes,
    pub fits: bool,
    pub speed_cost_pct: i32,
}

/// The estimate, the searches and the fix ladder of one plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub estimate: Estimate,
    /// Largest micro-batch that fits (`null`: not even 1).
    pub max_micro_batch: Option<u32>,
    /// Longest sequence that fits (`null`: not even the shortest tried).
    pub max_seq_len: Option<u32>,
    /// Empty when the plan fits.
    pub fix_ladder: Vec<RungReport>,
}

/// Computes the [`Report`] of a plan.
pub fn report(plan: &Plan) -> Result<Report, PlanError> {
    let est = estimate(plan)?;
    Ok(Report {
        max_micro_batch: max_micro_batch(plan)?,
        max_seq_len: max_seq_len(plan)?,
        fix_ladder: fix_ladder(plan)?
            .into_iter()
            .map(|r| RungReport {
                id: r.id,
                query: r.query,
                device_used: r.device_used,
                saving: r.saving,
                fits: r.fits,
                speed_cost_pct: r.speed_cost_pct,
            })
            .collect(),
        estimate: est,
    })
}
