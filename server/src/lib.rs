//! memplan's server crate: the axum app (SSR, assets) and the CLI.
//! A library so integration tests can build the router and call it with
//! `oneshot`, no socket.

#![recursion_limit = "256"] // the planner view's types nest deeply

pub mod api;
pub mod cli;
pub mod serve;
pub mod store;
