//! memplan's server crate: the axum app (SSR, assets) and the CLI.
//! A library so integration tests can build the router and call it with
//! `oneshot`, no socket.

pub mod cli;
pub mod serve;
