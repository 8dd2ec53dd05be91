pub mod breakdown;
pub mod charts;
pub mod config_paste;
pub mod controls;
pub mod ladder;
pub mod options;
pub mod plan_form;
pub mod verdict;
