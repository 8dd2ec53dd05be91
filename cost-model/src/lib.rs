//! memplan's cost model: how much memory each GPU holds while training a
//! transformer, per component and phase. Pure Rust: no I/O, no printing, no
//! globals; the same code runs natively and in the browser (wasm32).

// The coefficients' doc comments name the private functions that use them
// (read with `cargo doc --document-private-items`, as CI builds them).
#![allow(rustdoc::private_intra_doc_links)]

pub mod gpu;
pub mod model;
pub mod presets;
pub mod units;

pub use units::Bytes;
pub mod error;
pub mod estimate;
pub mod framework;
pub mod plan;

pub use error::PlanError;
pub use estimate::{estimate, Estimate};
pub use plan::Plan;
pub mod calibrate;
pub mod csv;
pub mod hf_config;
pub mod layouts;
pub mod query;
pub mod report;
pub mod schema;
pub mod search;
pub mod trace;
pub mod validate;
