//! Helpers shared by the integration tests.

use cost_model::estimate::{Breakdown, Estimate, Phase};

/// The largest breakdown of a phase on the first stage.
pub fn phase(e: &Estimate, ph: Phase) -> Breakdown {
    e.stages[0]
        .phases
        .iter()
        .filter(|p| p.phase == ph)
        .map(|p| p.breakdown)
        .max_by_key(|b| b.allocated())
        .unwrap()
}
