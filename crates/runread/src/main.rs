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
mod cmd;
mod context;
mod folders;
mod home;
mod human;
mod inputs;
mod keyfile;
mod notify;
mod platform;
mod probe;
mod stop;
mod storeopen;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command, RecoverCmd};
use context::Context;

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
        workspace_here,
        quiet,
        share,
        label,
        command,
    } = cli.command
    {
        let run = cmd::run::RunArgs {
            workspace,
            workspace_here,
            quiet,
            share,
            label,
            command,
        };
        return match cmd::run::supervised_run(cli.home, cli.gate_keys, cli.store.as_deref(), run) {
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

/// Writes `bytes` to standard output as `outln!` does: a reader that went away ends the program
/// quietly (a generator's own `write!` would panic on a closed pipe).
fn write_out(bytes: &[u8]) -> Res {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(format!("standard output: {e}")),
    }
}

/// Runs the commands that need no home, and hands every other one its [`Context`].
fn run(cli: Cli) -> Res {
    match cli.command {
        Command::Run { .. } => Err("unreachable: handled in main".into()),
        Command::Demo => cmd::demo::run(),
        // Generated from the definitions: no home, no store.
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "runread", &mut script);
            write_out(&script)
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
                .render(&mut page)
                .map_err(|e| e.to_string())?;
            write_out(&page)
        }
        // The keys are files of the home (or --gate-keys): no store is opened for them.
        Command::Keys(c) => cmd::keys::keys(&context::resolve_home(cli.home, cli.gate_keys)?, c),
        Command::Read {
            url,
            key_file,
            run,
            what,
        } => cmd::read::read(&url, &key_file, run.as_deref(), what),
        command => {
            let ctx = Context::open(cli.home, cli.gate_keys, cli.store.as_deref())?;
            run_in(&ctx, command)
        }
    }
}

/// The commands that work on a home.
fn run_in(ctx: &Context, command: Command) -> Res {
    match command {
        Command::Workspace(c) => cmd::workspace::workspace(ctx, c),
        Command::Ingest { dirs, json } => cmd::ingest::ingest_command(ctx, dirs, json),
        Command::Watch(args) => cmd::ingest::watch(ctx, args),
        Command::Show(args) => cmd::show::show(ctx, args),
        Command::Status(args) => cmd::status::status(ctx, args),
        Command::Snapshots { json } => cmd::snapshots::snapshots(ctx, json),
        Command::Keep(args) => cmd::keep::keep(ctx, args),
        Command::Runs(args) => cmd::runs::runs_command(ctx, args),
        Command::Grant(args) => cmd::grant::grant(ctx, args),
        Command::Requests(args) => cmd::requests::requests(ctx, args),
        Command::Reader(c) => cmd::reader::reader(ctx, c),
        Command::Artifact(c) => cmd::artifact::artifact(ctx, c),
        Command::Secret(c) => cmd::secret::secret(ctx, c),
        Command::Serve(args) => cmd::serve::serve_command(ctx, args),
        Command::Console(args) => cmd::console::console(ctx, args),
        Command::Audit(args) => cmd::audit::audit(ctx, &args),
        Command::Recover(RecoverCmd::Inspect { start_id, json }) => {
            cmd::audit::inspect(&*ctx.store, &start_id, json)
        }
        Command::Run { .. }
        | Command::Demo
        | Command::Completions { .. }
        | Command::Man
        | Command::Keys(_)
        | Command::Read { .. } => Err("unreachable: handled without a home".into()),
    }
}
