//! `memplan`: the web server (default) and the command-line tool.

#![recursion_limit = "256"] // the planner view's types nest deeply

use clap::Parser;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use server::{cli, serve};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    match cli.command.unwrap_or(cli::Command::Serve(cli.serve)) {
        cli::Command::Serve(args) => match serve::run(args).await {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("memplan serve: {e:#}");
                std::process::ExitCode::FAILURE
            }
        },
        other => cli::run_offline(other),
    }
}
