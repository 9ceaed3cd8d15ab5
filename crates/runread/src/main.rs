//! The `runread` command: owner CLI, server, and demo. It parses arguments and prints; the work
//! is done by the library crates.
#![forbid(unsafe_code)]

/// mimalloc instead of the C library's allocator: a tool call allocates and frees a few hundred
/// small blocks across the async and blocking threads, and glibc's malloc spent a tenth of the
/// server's CPU in them (`_int_malloc`, `_int_free`, `malloc_consolidate`); see
/// bench/PROFILES.md, "Round three".
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `println!` for the CLI's output: a reader that went away (`runread runs | head`) ends the
/// program quietly, as a closed pipe ends any Unix filter, instead of a panic; any other write
/// error ends it with status 1.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout().lock(), $($arg)*) {
            std::process::exit(if e.kind() == std::io::ErrorKind::BrokenPipe { 0 } else { 1 });
        }
    }};
}

mod args;
mod artifactcmd;
mod consolecmd;
mod demo;
mod gatecmd;
mod grantcmd;
mod home;
mod ingestcmd;
mod keyscmd;
mod readcmd;
mod readercmd;
mod runscmd;
mod secretcmd;
mod servecmd;
mod storeopen;
mod supervisedcmd;
mod workspacecmd;

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use runread_core::Feature;
use runread_core::timefmt::{now_ms, rfc3339};
use runread_service::{Config, Service};
use runread_store::Store;

use args::*;
use grantcmd::*;
use ingestcmd::*;
mod showcmd;
mod snapshotcmd;
use readcmd::*;
use runscmd::*;
use secretcmd::*;
use servecmd::*;
use supervisedcmd::*;
use workspacecmd::*;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RUNREAD_LOG")
                .unwrap_or_else(|_| "warn,rmcp=off".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    if let Command::Run {
        workspace,
        quiet,
        share,
        command,
    } = cli.command
    {
        let run = supervisedcmd::RunArgs {
            workspace,
            quiet,
            share,
            command,
        };
        return match supervised_run(cli.home, cli.gate_keys, cli.store.as_deref(), run) {
            Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            Err(e) => {
                eprintln!("runread: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("runread: {e}");
            ExitCode::FAILURE
        }
    }
}

type Res = Result<(), String>;

fn open_store(home: Option<PathBuf>, spec: Option<&str>) -> Result<Arc<dyn Store>, String> {
    Ok(open_home(home, None, spec)?.1)
}

/// The resolved home (created if needed), using the `--gate-keys` file when one is named.
fn resolve_home(dir: Option<PathBuf>, gate_keys: Option<PathBuf>) -> Result<home::Home, String> {
    let dir = home::resolve(dir)?;
    home::ensure(&dir)?;
    Ok(home::Home::new(dir, gate_keys))
}

/// The resolved home and its store.
fn open_home(
    dir: Option<PathBuf>,
    gate_keys: Option<PathBuf>,
    spec: Option<&str>,
) -> Result<(home::Home, Arc<dyn Store>), String> {
    let home = resolve_home(dir, gate_keys)?;
    let store = storeopen::open(home.dir(), spec)?;
    Ok((home, store))
}

fn run(cli: Cli) -> Res {
    let spec = cli.store.as_deref();
    match cli.command {
        Command::Run { .. } => Err("unreachable: handled in main".into()),
        Command::Demo => demo::run(),
        Command::Workspace(cmd) => workspace(&*open_store(cli.home, spec)?, cmd),
        Command::Ingest { dirs } => {
            let (home, store) = open_home(cli.home, cli.gate_keys, spec)?;
            ingest(&*store, &dirs.resolve(true)?)?;
            keep_snapshots(&home, &*store)
        }
        Command::Watch(args) => {
            let (home, store) = open_home(cli.home, cli.gate_keys, spec)?;
            watch(&home, store, args)
        }
        // Generated from the definitions above: no home, no store.
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "runread", &mut std::io::stdout());
            Ok(())
        }
        Command::Man => clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
            .render(&mut std::io::stdout())
            .map_err(|e| e.to_string()),
        Command::Show(args) => {
            let (home, store) = open_home(cli.home, cli.gate_keys, spec)?;
            showcmd::show(&home, store, args)
        }
        Command::Snapshots { json } => {
            let (home, store) = open_home(cli.home, cli.gate_keys, spec)?;
            snapshotcmd::snapshots(&home, store, json)
        }
        Command::Runs(args) => {
            let (home, store) = open_home(cli.home, cli.gate_keys, spec)?;
            runs_command(&home, store, args)
        }
        Command::Grant(args) => {
            let (home, store) = open_home(cli.home, cli.gate_keys, spec)?;
            grant(&home, store, args)
        }
        Command::Reader(cmd) => {
            let (home, store) = open_home(cli.home, cli.gate_keys, spec)?;
            readercmd::reader(&home, store, cmd)
        }
        Command::Artifact(cmd) => {
            let (home, store) = open_home(cli.home, cli.gate_keys, spec)?;
            artifactcmd::artifact(&home, store, cmd)
        }
        Command::Secret(cmd) => {
            let (home, store) = open_home(cli.home, cli.gate_keys, spec)?;
            secret(&home, &*store, cmd)
        }
        Command::Serve(args) => {
            let (home, store) = open_home(cli.home, cli.gate_keys, spec)?;
            serve_command(&home, store, args)
        }
        Command::Console(args) => {
            let (home, store) = open_home(cli.home, cli.gate_keys, spec)?;
            consolecmd::console(&home, store, args)
        }
        Command::Audit(args) => {
            let (home, store) = open_home(cli.home, cli.gate_keys, spec)?;
            gatecmd::audit(&home, store, &args)
        }
        Command::Recover(RecoverCmd::Inspect { start_id, json }) => {
            gatecmd::inspect(&*open_store(cli.home, spec)?, &start_id, json)
        }
        // The keys are files of the home (or --gate-keys): no store is opened for them.
        Command::Keys(cmd) => keyscmd::keys(&resolve_home(cli.home, cli.gate_keys)?, cmd),
        Command::Read {
            url,
            key_file,
            what,
        } => read(&url, &key_file, what),
    }
}
