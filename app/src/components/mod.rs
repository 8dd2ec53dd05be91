pub mod breakdown;
pub mod controls;
pub mod ladder;
pub mod options;
pub mod plan_form;
pub mod verdict;
