pub mod plan_form;
pub mod verdict;
