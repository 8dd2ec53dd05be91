pub mod layouts;
pub mod not_found;
pub mod planner;
pub mod plans;
pub mod saved;
