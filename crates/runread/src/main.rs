//! The `runread` command: owner CLI, server, and demo. It parses arguments and prints; the work
//! is done by the library crates.
#![forbid(unsafe_code)]

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

mod consolecmd;
mod demo;
mod gatecmd;
mod home;
mod storeopen;

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

/// An ingest still running after this long shows a progress bar on a terminal (a quick pass
/// prints only its summary).
const PROGRESS_BAR_AFTER: std::time::Duration = std::time::Duration::from_secs(1);
/// Default listen address of `runread serve`.
const DEFAULT_LISTEN: &str = "127.0.0.1:7077";

#[derive(Parser)]
#[command(
    name = "runread",
    version,
    about = "Let an AI assistant read the results of a local coding-agent run over MCP — only what you grant."
)]
struct Cli {
    /// runread's home (store, keys). Default: $XDG_DATA_HOME/runread or ~/.local/share/runread.
    #[arg(long, global = true, env = "RUNREAD_HOME")]
    home: Option<PathBuf>,
    /// The store: a postgres:// URL shared by several runread processes and hosts (see
    /// docs/postgres.md). Default: SQLite in the home.
    #[arg(long, global = true, env = "RUNREAD_STORE", hide_env_values = true)]
    store: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the whole job on a bundled sample Pi session, in a temporary home.
    Demo,
    /// Register or list workspace roots. Only sessions inside one are ever readable.
    #[command(subcommand)]
    Workspace(WorkspaceCmd),
    /// Read agents' session files into the store (incremental: unchanged files cost nothing).
    /// Without a directory flag: every agent's default place that exists.
    Ingest {
        #[command(flatten)]
        dirs: DirArgs,
    },
    /// Follow the agents' session directories continuously: runs appear, grow and settle as the
    /// agents write.
    Watch {
        #[command(flatten)]
        dirs: DirArgs,
        /// Safety-net rescan period, in seconds, besides file notifications.
        #[arg(long, default_value_t = 5)]
        rescan_secs: u64,
    },
    /// Run a coding agent under supervision — Pi (`runread run -- pi -p "…"`), Claude Code
    /// (`runread run -- claude -p "…"`) or Codex (`runread run -- codex exec "…"`, also
    /// `codex exec resume …` and `codex exec fork …`), told apart by its `--version`: its final
    /// answer gets supervised evidence (verified against the session file, journaled) and its
    /// work state is live.
    Run {
        /// The workspace the run belongs to (registered if it is not). Default: the registered
        /// workspace that contains the current directory, else the current directory.
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Do not render the agent's output on the terminal.
        #[arg(long)]
        quiet: bool,
        /// The agent's command line, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// List runs with their exact target and state.
    Runs {
        #[arg(long)]
        json: bool,
        /// Runs per page, newest first.
        #[arg(long, default_value_t = RUNS_PAGE_DEFAULT, value_parser = clap::value_parser!(u32).range(1..=i64::from(runread_store::RUNS_PAGE_MAX)))]
        limit: u32,
        /// Runs to skip (the next page starts at the previous offset plus its limit).
        #[arg(long, default_value_t = 0)]
        offset: u64,
        /// Only this agent's runs.
        #[arg(long, value_parser = ["pi", "claude", "codex"])]
        agent: Option<String>,
        /// Only runs in this workspace (its name or path).
        #[arg(long)]
        workspace: Option<String>,
        /// Only runs with this status.
        #[arg(long, value_parser = ["completed", "failed", "cancelled", "running", "unknown"])]
        status: Option<String>,
    },
    /// Grant one run to a fresh read key (printed once), or list / revoke grants.
    Grant(GrantArgs),
    /// Serve MCP (2026-07-28, stateless) over Streamable HTTP at /mcp.
    Serve {
        #[arg(long, default_value = DEFAULT_LISTEN)]
        listen: SocketAddr,
        /// How long a session file must be quiet before a passive run counts as settled.
        #[arg(long, default_value_t = runread_core::limits::SETTLE_QUIET_DEFAULT_MS)]
        settle_ms: u64,
        /// A file of known secrets to mask, one per line (blank lines and lines starting with # skipped).
        #[arg(long)]
        secrets_file: Option<PathBuf>,
        /// Names of environment variables whose values are known secrets (comma-separated).
        #[arg(long, env = "RUNREAD_SECRET_ENV", value_delimiter = ',')]
        secret_env: Vec<String>,
        /// Also answer this Host (and listen beyond loopback). Repeatable. Only for a deployment
        /// behind your own network controls: a non-loopback door is reachable by other machines.
        #[arg(long)]
        allow_host: Vec<String>,
        /// Also accept requests carrying this Origin (a browser-based client). Repeatable.
        #[arg(long)]
        allow_origin: Vec<String>,
        /// Also watch the agents' session directories in this process (see `runread watch`).
        #[arg(long)]
        watch: bool,
        /// With --watch: the directories to watch (default: every agent's default place).
        #[command(flatten)]
        dirs: DirArgs,
        /// Serve MCP on standard input/output instead of HTTP (for clients that launch runread).
        #[arg(long, requires = "key_file")]
        stdio: bool,
        /// With --stdio: the file holding the read key (it stands in for the x-runread-key header).
        #[arg(long)]
        key_file: Option<PathBuf>,
        /// Protocol versions to speak: `all` (2026-07-28 and the dated 2025-11-25, 2025-06-18,
        /// 2025-03-26, every request admitted on its own key) or `modern` (2026-07-28 only).
        #[arg(long, value_enum, default_value_t = ProtocolChoice::All)]
        protocol: ProtocolChoice,
        /// Also serve the owner's console (see `runread console`), on its own listener.
        #[arg(long, conflicts_with = "stdio")]
        console: bool,
        /// With --console: where the console listens (loopback only).
        #[arg(long, default_value = runread_console::DEFAULT_LISTEN, requires = "console")]
        console_listen: SocketAddr,
        /// With --console: open its login link in the browser.
        #[arg(long, requires = "console")]
        open: bool,
    },
    /// The owner's console in the browser: see runs, grant, revoke, read the audit, manage
    /// secrets and artifacts (loopback only; log in with the one-time link it prints).
    Console {
        #[arg(long, default_value = runread_console::DEFAULT_LISTEN)]
        listen: SocketAddr,
        /// The MCP endpoint the shown client configs name (where `runread serve` answers).
        #[arg(long, default_value = "http://127.0.0.1:7077/mcp")]
        mcp_url: String,
        /// Open the login link in the browser.
        #[arg(long)]
        open: bool,
        /// As for `serve`: known secrets to mask in what the console shows.
        #[arg(long)]
        secrets_file: Option<PathBuf>,
        #[arg(long, env = "RUNREAD_SECRET_ENV", value_delimiter = ',')]
        secret_env: Vec<String>,
        /// How long a session file must be quiet before a passive run counts as settled.
        #[arg(long, default_value_t = runread_core::limits::SETTLE_QUIET_DEFAULT_MS)]
        settle_ms: u64,
    },
    /// Register a file the agent produced as an artifact of a run (the trusted producer's act).
    #[command(subcommand)]
    Artifact(ArtifactCmd),
    /// Known secrets to mask in everything that leaves (exact match; read keys are added automatically).
    #[command(subcommand)]
    Secret(SecretCmd),
    /// Show every call's start record and receipts: who, tool, target, outcome, time (never inputs).
    Audit {
        /// Only calls since this time: a duration back from now (15m, 2h, 7d) or an RFC 3339 time.
        #[arg(long)]
        since: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Judge an interrupted call from its start record and binding alone.
    #[command(subcommand)]
    Recover(RecoverCmd),
    /// Manage the keys that seal call inputs.
    #[command(subcommand)]
    Keys(KeysCmd),
    /// Read a granted final answer as a reader would, verifying every chunk and the sha256.
    Read {
        /// MCP endpoint, e.g. http://127.0.0.1:7077/mcp
        #[arg(long)]
        url: String,
        /// File holding the read key.
        #[arg(long)]
        key_file: PathBuf,
        #[command(subcommand)]
        what: ReadCmd,
    },
}

#[derive(Subcommand)]
enum ArtifactCmd {
    /// Register PATH (relative to the run's workspace root, or absolute inside it).
    Add {
        #[arg(long)]
        run: String,
        #[arg(long)]
        session: Option<String>,
        path: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        mime: Option<String>,
        /// generated (the agent wrote it) or attached (given to the run).
        #[arg(long, default_value = "generated")]
        kind: String,
    },
}

#[derive(Subcommand)]
enum SecretCmd {
    /// Add (or replace) a known secret; its value is read from standard input and stored sealed.
    Add {
        #[arg(long)]
        name: String,
    },
    /// List known secrets by name (values are never shown).
    List,
}

#[derive(Subcommand)]
enum RecoverCmd {
    /// Classify START_ID without reading its sealed input, resolving a key or calling an adapter.
    Inspect {
        start_id: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum KeysCmd {
    /// Add a new sealing key and make it current; older keys stay readable.
    Rotate,
}

#[derive(Subcommand)]
enum ReadCmd {
    /// The whole history of the key's granted target, page by page, upserted by sequence.
    History {
        #[arg(long)]
        out: Option<PathBuf>,
        /// Events per page.
        #[arg(long)]
        limit: Option<u64>,
    },
    /// One artifact, reassembled from its chunks with every sha256 verified.
    Artifact {
        /// Artifact id (default: the only artifact of the target).
        #[arg(long)]
        id: Option<String>,
        #[arg(long)]
        out: PathBuf,
    },
    /// The final answer of the key's (first) granted target.
    FinalAnswer {
        /// Write the answer to this file instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Bytes per chunk.
        #[arg(long)]
        limit: Option<u64>,
    },
}

#[derive(Subcommand)]
enum WorkspaceCmd {
    /// Register PATH (canonicalized). Re-adding bumps its revision and invalidates its grants.
    Add {
        path: PathBuf,
        #[arg(long)]
        name: Option<String>,
    },
    /// List registered workspaces.
    List {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
struct GrantArgs {
    #[command(subcommand)]
    action: Option<GrantCmd>,
    /// Run id (the entry id of the run's first user message), as `runread runs` shows it.
    #[arg(long)]
    run: Option<String>,
    /// Session id, when the run id alone is ambiguous.
    #[arg(long)]
    session: Option<String>,
    /// Comma-separated features, e.g. final_answer
    #[arg(long)]
    features: Option<String>,
    /// A duration (90s, 15m, 2h, 7d) or an RFC 3339 time.
    #[arg(long)]
    expires: Option<String>,
    /// Who the key is for (a label for your records).
    #[arg(long)]
    to: Option<String>,
    /// The URL to print in the client config.
    #[arg(long, default_value = "http://127.0.0.1:7077/mcp")]
    url: String,
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum GrantCmd {
    /// List grants (never keys).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a grant: its key is refused from the next call on.
    Revoke { id: String },
}

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
        command,
    } = cli.command
    {
        return match supervised_run(cli.home, cli.store.as_deref(), workspace, quiet, command) {
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
    Ok(open_home(home, spec)?.1)
}

/// The resolved home (created if needed) and its store.
fn open_home(
    home: Option<PathBuf>,
    spec: Option<&str>,
) -> Result<(PathBuf, Arc<dyn Store>), String> {
    let home = home::resolve(home)?;
    home::ensure(&home)?;
    let store = storeopen::open(&home, spec)?;
    Ok((home, store))
}

/// The service over `store`, with the sealing keys of `home` and its frozen binding registry.
pub(crate) fn service(
    home: &std::path::Path,
    store: Arc<dyn Store>,
    mut config: Config,
) -> Result<Arc<Service>, String> {
    // Supervised proofs live in this home's journal: every service of the home checks them.
    config.journal_root = Some(runread_supervise::journal_root(home));
    let keys = runread_gate::keys::FileKeys::open(home)
        .map_err(|e| format!("gate keys in {}: {e:?}", home.display()))?;
    Service::new(store, Arc::new(keys), config)
        .map(Arc::new)
        .map_err(|e| format!("refusing to start: {e}"))
}

/// The service a serving process answers with (MCP, the console), masking also the `extra`
/// known secrets, and the sealing keys it was built with.
fn serving_service(
    home: &std::path::Path,
    store: Arc<dyn Store>,
    mut config: Config,
    extra: Vec<String>,
) -> Result<(Arc<Service>, Arc<dyn runread_gate::keys::KeyProvider>), String> {
    config.journal_root = Some(runread_supervise::journal_root(home));
    let keys: Arc<dyn runread_gate::keys::KeyProvider> = Arc::new(
        runread_gate::keys::FileKeys::open(home)
            .map_err(|e| format!("gate keys in {}: {e:?}", home.display()))?,
    );
    let service = Service::new(store, keys.clone(), config)
        .map_err(|e| format!("refusing to start: {e}"))?
        .with_extra_secrets(keys.clone(), extra);
    Ok((Arc::new(service), keys))
}

/// `runread run`: supervises the agent; returns its exit code.
fn supervised_run(
    home: Option<PathBuf>,
    spec: Option<&str>,
    workspace: Option<PathBuf>,
    quiet: bool,
    command: Vec<std::ffi::OsString>,
) -> Result<i32, String> {
    let (home, store) = open_home(home, spec)?;
    let cwd = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| format!("current directory: {e}"))?;
    let cwd_s = cwd.to_str().ok_or("the current directory is not UTF-8")?;
    let mut workspaces = store.workspaces().map_err(|e| e.to_string())?;
    let ws = match workspace {
        Some(w) => {
            let canon = std::fs::canonicalize(&w).map_err(|e| format!("{}: {e}", w.display()))?;
            let canon_s = canon
                .to_str()
                .ok_or("the workspace path is not UTF-8")?
                .to_owned();
            match workspaces.iter().find(|x| x.path == canon_s) {
                Some(x) => x.clone(),
                None => register_workspace(&*store, &canon)?,
            }
        }
        None => match runread_ingest::workspace_for(&workspaces, cwd_s) {
            Some(x) => x.clone(),
            None => register_workspace(&*store, &cwd)?,
        },
    };
    if !ws.contains(cwd_s) {
        return Err(format!(
            "the current directory is not inside the workspace {}; cd into it or pass --workspace",
            ws.path
        ));
    }
    if !workspaces.iter().any(|x| x.id == ws.id) {
        workspaces.push(ws.clone());
    }
    let opts = runread_supervise::Options {
        command,
        cwd,
        workspaces,
        journal_root: runread_supervise::journal_root(&home),
        echo: !quiet,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let store: Arc<dyn Store> = store;
    let outcome = rt
        .block_on(runread_supervise::supervise(store, opts))
        .map_err(|e| e.to_string())?;
    for r in &outcome.runs {
        let id = r.run_id.as_deref().unwrap_or("(not in the session file)");
        match &r.proof {
            runread_store::Proof::Journaled { .. } => {
                let done = outcome.foreground == runread_store::Foreground::Completed;
                eprintln!(
                    "runread: run {id}: answer verified against the session file and journaled{}",
                    if done {
                        " (supervised evidence)"
                    } else {
                        ", but the agent did not complete: not readable"
                    }
                );
                if done {
                    eprintln!(
                        "         grant it: runread grant --run {id} --features final_answer,aggregate --expires 1h --to NAME"
                    );
                }
            }
            runread_store::Proof::NoAnswer { reason } => {
                eprintln!("runread: run {id}: no answer: {reason}")
            }
            runread_store::Proof::Refused { reason } => {
                eprintln!("runread: run {id}: not verified: {reason}")
            }
            runread_store::Proof::Pending => eprintln!("runread: run {id}: not verified"),
        }
    }
    if outcome.background_left > 0 {
        eprintln!(
            "runread: stopped watching {} process(es) the agent left running; the run's work state is no longer live",
            outcome.background_left
        );
    }
    Ok(outcome.exit_code)
}

fn register_workspace(
    store: &dyn Store,
    path: &std::path::Path,
) -> Result<runread_store::Workspace, String> {
    let p = path.to_str().ok_or("the workspace path is not UTF-8")?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.to_owned());
    let ws = store
        .add_workspace(p, &name, now_ms())
        .map_err(|e| e.to_string())?;
    eprintln!("runread: registered workspace {} ({})", ws.name, ws.path);
    Ok(ws)
}

fn run(cli: Cli) -> Res {
    let spec = cli.store.as_deref();
    match cli.command {
        Command::Run { .. } => Err("unreachable: handled in main".into()),
        Command::Demo => demo::run(),
        Command::Workspace(cmd) => {
            let store = open_store(cli.home, spec)?;
            workspace(&*store, cmd)
        }
        Command::Ingest { dirs } => {
            let store = open_store(cli.home, spec)?;
            ingest(&*store, &dirs.resolve(true)?)
        }
        Command::Watch { dirs, rescan_secs } => {
            let store = open_store(cli.home, spec)?;
            let dirs = dirs.resolve(false)?;
            for d in &dirs {
                eprintln!("watching {} ({})", d.dir.display(), d.agent.as_str());
            }
            eprintln!("(Ctrl-C to stop)");
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            runread_ingest::watch::watch(
                store,
                &dirs,
                Duration::from_secs(rescan_secs.max(1)),
                stop,
                |r| {
                    if r.new_generations + r.appended > 0 {
                        outln!(
                            "{} new or re-read, {} appended, {} bytes, {} runs",
                            r.new_generations,
                            r.appended,
                            r.bytes_read,
                            r.runs
                        );
                    }
                },
            )
            .map_err(|e| e.to_string())
        }
        Command::Runs {
            json,
            limit,
            offset,
            agent,
            workspace,
            status,
        } => {
            let (home, store) = open_home(cli.home, spec)?;
            let filter = run_filter(&*store, agent, workspace, status)?;
            runs(&home, store, json, &filter, limit, offset)
        }
        Command::Grant(args) => {
            let (home, store) = open_home(cli.home, spec)?;
            grant(&home, &*store, args)
        }
        Command::Artifact(ArtifactCmd::Add {
            run,
            session,
            path,
            name,
            mime,
            kind,
        }) => {
            let (home, store) = open_home(cli.home, spec)?;
            let keys = Arc::new(
                runread_gate::keys::FileKeys::open(&home)
                    .map_err(|e| format!("gate keys: {e:?}"))?,
            );
            let secrets = runread_service::secrets::KnownSecrets::new(store.clone(), keys, vec![]);
            let (id, v) = runread_service::owner::add_artifact(
                &*store,
                &secrets,
                &run,
                session.as_deref(),
                &path,
                name.as_deref(),
                mime.as_deref(),
                &kind,
                now_ms(),
            )
            .map_err(|e| e.to_string())?;
            outln!(
                "artifact {id}: {} ({} bytes, sha256 {})",
                v.rel_path,
                v.size,
                v.sha256
            );
            Ok(())
        }
        Command::Secret(cmd) => {
            let (home, store) = open_home(cli.home, spec)?;
            secret(&home, &*store, cmd)
        }
        Command::Serve {
            listen,
            settle_ms,
            secrets_file,
            secret_env,
            stdio,
            key_file,
            allow_host,
            allow_origin,
            watch,
            dirs,
            protocol,
            console,
            console_listen,
            open,
        } => {
            let (home, store) = open_home(cli.home, spec)?;
            if watch {
                spawn_watcher(store.clone(), dirs.resolve(false)?)?;
            }
            let extra = extra_secrets(secrets_file.as_deref(), &secret_env)?;
            match (stdio, key_file) {
                (true, Some(kf)) => serve_stdio(
                    &home,
                    store,
                    &kf,
                    Duration::from_millis(settle_ms),
                    extra,
                    protocol.into(),
                ),
                _ => serve(
                    &home,
                    store,
                    listen,
                    Duration::from_millis(settle_ms),
                    extra,
                    runread_mcp::guards::Allowed {
                        hosts: allow_host,
                        origins: allow_origin,
                        protocols: protocol.into(),
                    },
                    console.then_some((console_listen, open)),
                ),
            }
        }
        Command::Console {
            listen,
            mcp_url,
            open,
            secrets_file,
            secret_env,
            settle_ms,
        } => {
            let (home, store) = open_home(cli.home, spec)?;
            let extra = extra_secrets(secrets_file.as_deref(), &secret_env)?;
            let config = Config {
                settle_quiet: Duration::from_millis(settle_ms),
                ..Config::default()
            };
            let (service, keys) = serving_service(&home, store.clone(), config, extra)?;
            let console = runread_console::Console::new(service, store, keys, mcp_url);
            let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
            rt.block_on(consolecmd::serve_console(console, listen, open, async {
                let _ = tokio::signal::ctrl_c().await;
            }))
        }
        Command::Audit { since, json } => {
            let store = open_store(cli.home, spec)?;
            gatecmd::audit(&*store, since.as_deref(), json)
        }
        Command::Recover(RecoverCmd::Inspect { start_id, json }) => {
            let store = open_store(cli.home, spec)?;
            gatecmd::inspect(&*store, &start_id, json)
        }
        Command::Keys(KeysCmd::Rotate) => {
            let (home, _) = open_home(cli.home, spec)?;
            gatecmd::rotate(&home)
        }
        Command::Read {
            url,
            key_file,
            what,
        } => read(&url, &key_file, what),
    }
}

fn workspace(store: &dyn Store, cmd: WorkspaceCmd) -> Res {
    match cmd {
        WorkspaceCmd::Add { path, name } => {
            let canonical =
                std::fs::canonicalize(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            if !canonical.is_dir() {
                return Err(format!("{} is not a directory", canonical.display()));
            }
            let canonical = canonical
                .to_str()
                .ok_or("workspace path is not UTF-8")?
                .to_owned();
            let name = name.unwrap_or_else(|| {
                std::path::Path::new(&canonical)
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("workspace")
                    .to_owned()
            });
            let ws = store
                .add_workspace(&canonical, &name, now_ms())
                .map_err(|e| e.to_string())?;
            outln!(
                "workspace {} ({}) at {} — revision {}",
                ws.id,
                ws.name,
                ws.path,
                ws.revision
            );
            if ws.revision > 1 {
                outln!(
                    "note: re-registering bumped the revision; grants made under revision {} no longer work",
                    ws.revision - 1
                );
            }
            Ok(())
        }
        WorkspaceCmd::List { json } => {
            let list = store.workspaces().map_err(|e| e.to_string())?;
            if json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&list).map_err(|e| e.to_string())?
                );
            } else if list.is_empty() {
                outln!("no workspace registered; add one with `runread workspace add PATH`");
            } else {
                for w in list {
                    outln!("{}  rev {}  {}  {}", w.id, w.revision, w.name, w.path);
                }
            }
            Ok(())
        }
    }
}

/// The session directories a command reads (`--pi DIR`, `--claude DIR`).
#[derive(Debug, clap::Args)]
struct DirArgs {
    /// Pi's sessions directory. Default: $PI_CODING_AGENT_DIR/sessions or ~/.pi/agent/sessions.
    #[arg(long)]
    pi: Option<PathBuf>,
    /// Claude Code's projects directory (the one holding the escaped-cwd folders). Default:
    /// $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects.
    #[arg(long)]
    claude: Option<PathBuf>,
    /// Codex's sessions directory (the one holding the YYYY/MM/DD folders). Default:
    /// $CODEX_HOME/sessions or ~/.codex/sessions.
    #[arg(long)]
    codex: Option<PathBuf>,
}

impl DirArgs {
    /// The directories named, or, when none is, every agent's default place (those that exist,
    /// when `existing_only`; a watcher also takes one that will exist later).
    fn resolve(self, existing_only: bool) -> Result<Vec<runread_ingest::AgentDir>, String> {
        use runread_ingest::AgentDir;
        use runread_sessions::Agent;
        let named: Vec<AgentDir> = [
            (Agent::Pi, self.pi),
            (Agent::Claude, self.claude),
            (Agent::Codex, self.codex),
        ]
        .into_iter()
        .filter_map(|(agent, dir)| dir.map(|dir| AgentDir { agent, dir }))
        .collect();
        if !named.is_empty() {
            if let Some(d) = named.iter().find(|d| !d.dir.is_dir()) {
                return Err(format!("{} is not a directory", d.dir.display()));
            }
            return Ok(named);
        }
        let defaults: Vec<AgentDir> = Agent::ALL
            .into_iter()
            .filter_map(AgentDir::default_for)
            .filter(|d| !existing_only || d.dir.is_dir())
            .collect();
        if defaults.is_empty() {
            return Err(
                "no agent's session directory found (~/.pi/agent/sessions, ~/.claude/projects, ~/.codex/sessions); pass --pi DIR, --claude DIR or --codex DIR"
                    .into(),
            );
        }
        Ok(defaults)
    }
}

fn ingest(store: &dyn Store, dirs: &[runread_ingest::AgentDir]) -> Res {
    if store.workspaces().map_err(|e| e.to_string())?.is_empty() {
        eprintln!(
            "note: no workspace is registered, so every session will be skipped; run `runread workspace add PATH` first"
        );
    }
    let terminal = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let mut report = runread_ingest::Report::default();
    let mut outcomes = Vec::new();
    for dir in dirs {
        let mut bar: Option<indicatif::ProgressBar> = None;
        let (r, o) = runread_ingest::ingest_dir(store, dir, now_ms(), |p| {
            if terminal && (bar.is_some() || started.elapsed() >= PROGRESS_BAR_AFTER) {
                let b = bar.get_or_insert_with(|| {
                    let b =
                        indicatif::ProgressBar::new(p.files_total).with_message(dir.agent.as_str());
                    match indicatif::ProgressStyle::with_template(
                        "{msg:7} {wide_bar} {pos}/{len} files",
                    ) {
                        Ok(style) => b.with_style(style),
                        Err(_) => b,
                    }
                });
                b.set_position(p.files_done);
            }
        })
        .map_err(|e| e.to_string())?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        report.add(&r);
        outcomes.extend(o);
    }
    for (path, outcome) in &outcomes {
        use runread_ingest::FileOutcome as F;
        match outcome {
            F::NewGeneration {
                generation,
                bytes,
                reason,
            } => {
                outln!(
                    "read     {} (generation {generation}, {bytes} bytes, {reason})",
                    path.display()
                )
            }
            F::Appended { bytes } => outln!("appended {} (+{bytes} bytes)", path.display()),
            F::Unreadable(e) => outln!("skipped  {} (unreadable: {e:?})", path.display()),
            F::DuplicateSessionId => outln!(
                "skipped  {} (session id already ingested from another file)",
                path.display()
            ),
            F::Unchanged | F::OutsideWorkspaces | F::NotASession => {}
        }
    }
    outln!(
        "{} files: {} new or re-read, {} appended, {} unchanged, {} outside registered workspaces, {} not sessions, {} unreadable; \
         {} bytes read; {} malformed lines; {} files end in an unfinished line; {} runs",
        report.files,
        report.new_generations,
        report.appended,
        report.unchanged,
        report.outside_workspaces,
        report.not_sessions,
        report.unreadable + report.duplicates,
        report.bytes_read,
        report.malformed_lines,
        report.torn_files,
        report.runs
    );
    Ok(())
}

/// Runs one page of `runread runs` shows unless told otherwise.
const RUNS_PAGE_DEFAULT: u32 = 100;

/// The listing's filter: an agent, and a workspace named by its name or path.
fn run_filter(
    store: &dyn Store,
    agent: Option<String>,
    workspace: Option<String>,
    status: Option<String>,
) -> Result<runread_store::RunFilter, String> {
    let workspace_id = match workspace {
        None => None,
        Some(w) => {
            let all = store.workspaces().map_err(|e| e.to_string())?;
            let canonical = std::fs::canonicalize(&w)
                .ok()
                .map(|p| p.to_string_lossy().into_owned());
            let found = all
                .iter()
                .find(|x| x.name == w || Some(&x.path) == canonical.as_ref() || x.path == w)
                .ok_or_else(|| format!("no registered workspace is named {w:?} or lies at that path (see `runread workspace list`)"))?;
            Some(found.id.clone())
        }
    };
    Ok(runread_store::RunFilter {
        agent,
        workspace_id,
        status,
    })
}

fn runs(
    home: &std::path::Path,
    store: Arc<dyn Store>,
    as_json: bool,
    filter: &runread_store::RunFilter,
    limit: u32,
    offset: u64,
) -> Res {
    let service = service(home, store.clone(), Config::default())?;
    let list = store
        .runs_page(filter, limit, offset)
        .map_err(|e| e.to_string())?;
    let now = now_ms();
    if as_json {
        let out: Vec<_> = list
            .iter()
            .map(|r| {
                json!({
                    "target": r.target,
                    "agent": r.agent,
                    "status": r.run.status.as_str(),
                    "answerState": service.answer_state(r, now),
                    "unknownReason": r.run.unknown_reason,
                    "finalBytes": r.run.final_bytes,
                    "prompt": r.run.preview,
                    "startedAt": r.run.started_at,
                    "workspace": r.workspace_name,
                })
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    let total = store.runs_count(filter).map_err(|e| e.to_string())?;
    if list.is_empty() {
        if total == 0 && *filter == runread_store::RunFilter::default() {
            outln!("no runs; register a workspace and run `runread ingest`");
        } else {
            outln!("no runs on this page ({total} in all)");
        }
        return Ok(());
    }
    // Claude Code's and Codex's run ids are whole uuids (Codex's are time-ordered: turns minutes
    // apart share their first 8 characters): the listing shows the shortest prefix that tells
    // each apart from every other run listed, which `grant --run` takes as it is.
    let ids: Vec<&str> = list.iter().map(|r| r.target.run_id.as_str()).collect();
    let shown = distinct_prefixes(&ids, RUN_PREFIX_MIN_CHARS);
    let width = shown
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0)
        .max(10);
    outln!(
        "{:<width$} {:<7} {:<10} {:<10} {:<38} PROMPT",
        "RUN",
        "AGENT",
        "STATUS",
        "ANSWER",
        "SESSION (generation)"
    );
    for (r, shown) in list.iter().zip(&shown) {
        outln!(
            "{:<width$} {:<7} {:<10} {:<10} {:<38} {}",
            shown,
            r.agent,
            r.run.status.as_str(),
            service.answer_state(r, now),
            format!("{} ({})", r.target.session_id, r.target.generation),
            r.run.preview.as_deref().unwrap_or("")
        );
    }
    let shown_to = offset + list.len() as u64;
    if offset > 0 || shown_to < total {
        outln!(
            "runs {}–{shown_to} of {total}, newest first{}",
            offset + 1,
            if shown_to < total {
                format!("; next page: --offset {shown_to}")
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

fn grant(home: &std::path::Path, store: &dyn Store, args: GrantArgs) -> Res {
    match args.action {
        Some(GrantCmd::List { json }) => {
            let now = now_ms();
            let grants = store.grants().map_err(|e| e.to_string())?;
            let rows: Vec<_> = grants
                .iter()
                .map(|g| {
                    json!({"grantId": g.id, "to": g.label, "target": g.target, "features": g.features,
                           "expiresAt": rfc3339(g.expires_at_ms), "state": g.state(now).as_str()})
                })
                .collect();
            if json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?
                );
            } else if rows.is_empty() {
                outln!("no grants");
            } else {
                for r in rows {
                    outln!(
                        "{}  {:<8} {}  run {}  expires {}  to {}",
                        r["grantId"].as_str().unwrap_or(""),
                        r["state"].as_str().unwrap_or(""),
                        r["features"],
                        r["target"]["runId"].as_str().unwrap_or(""),
                        r["expiresAt"].as_str().unwrap_or(""),
                        r["to"].as_str().unwrap_or("")
                    );
                }
            }
            Ok(())
        }
        Some(GrantCmd::Revoke { id }) => {
            if store
                .revoke_grant(&id, now_ms())
                .map_err(|e| e.to_string())?
            {
                outln!("revoked {id}");
                Ok(())
            } else {
                Err(format!("no live grant {id:?}"))
            }
        }
        None => {
            let run = args
                .run
                .ok_or("--run RUN_ID is required (see `runread runs`)")?;
            let features = Feature::parse_list(
                args.features
                    .as_deref()
                    .ok_or("--features is required, e.g. final_answer")?,
            )?;
            let expires = args.expires.ok_or("--expires is required, e.g. 15m")?;
            let to = args
                .to
                .ok_or("--to LABEL is required (who the key is for)")?;
            let now = now_ms();
            let at = runread_service::owner::expiry(&expires, now).map_err(|e| e.to_string())?;
            let keys = runread_gate::keys::FileKeys::open(home)
                .map_err(|e| format!("gate keys: {e:?}"))?;
            let g = runread_service::owner::grant(
                store,
                &keys,
                runread_service::owner::GrantRequest {
                    run_id: &run,
                    session_id: args.session.as_deref(),
                    features,
                    expires_at_ms: at,
                    label: &to,
                },
                now,
            )
            .map_err(|e| e.to_string())?;
            print_grant(&g, &args.url, args.json)
        }
    }
}

fn print_grant(g: &runread_service::owner::NewGrant, url: &str, as_json: bool) -> Res {
    let configs = runread_mcp::configs::for_key(url, &g.key);
    let out = json!({
        "grantId": g.grant.id,
        "key": g.key,
        "target": g.grant.target,
        "features": g.grant.features,
        "url": url,
        "expiresAt": rfc3339(g.grant.expires_at_ms),
        "to": g.grant.label,
        "clientConfig": configs.mcp_servers,
        "claudeCommand": configs.claude_command,
        "codexToml": configs.codex_toml,
    });
    if as_json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    outln!(
        "grant {} for {:?}, until {}",
        g.grant.id,
        g.grant.label,
        rfc3339(g.grant.expires_at_ms)
    );
    outln!(
        "run      {} — {}",
        g.run.target.run_id,
        g.run.run.preview.as_deref().unwrap_or("")
    );
    outln!(
        "features {}",
        g.grant
            .features
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join(",")
    );
    outln!(
        "target   {}",
        serde_json::to_string(&g.grant.target).map_err(|e| e.to_string())?
    );
    outln!("url      {url}");
    outln!();
    outln!("read key (shown once; only its hash is stored):");
    outln!("{}", g.key);
    outln!();
    outln!("client config (mcpServers JSON: Claude Code --mcp-config, Cursor, Claude Desktop):");
    outln!(
        "{}",
        serde_json::to_string_pretty(&configs.mcp_servers).map_err(|e| e.to_string())?
    );
    outln!();
    outln!("Claude Code:");
    outln!("{}", configs.claude_command);
    outln!();
    outln!("Codex (~/.codex/config.toml):");
    outln!("{}", configs.codex_toml.trim_end_matches('\n'));
    outln!("# {}", runread_mcp::configs::CODEX_MODERN_NOTE);
    Ok(())
}

/// The fewest characters of a run id `runread runs` shows (Pi's ids are 8 characters whole).
const RUN_PREFIX_MIN_CHARS: usize = 8;

/// For each id, its shortest prefix of at least `min` characters that no other, different id
/// starts with (the same id in two sessions — a Claude Code fork — cannot be told apart by any
/// prefix: `grant` asks for `--session` there).
fn distinct_prefixes(ids: &[&str], min: usize) -> Vec<String> {
    ids.iter()
        .map(|id| {
            let chars: Vec<char> = id.chars().collect();
            let shared = ids
                .iter()
                .filter(|other| *other != id)
                .map(|other| {
                    other
                        .chars()
                        .zip(chars.iter())
                        .take_while(|(a, b)| a == *b)
                        .count()
                })
                .max()
                .unwrap_or(0);
            let take = (shared + 1).max(min).min(chars.len());
            chars.iter().take(take).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::distinct_prefixes;

    #[test]
    fn each_run_is_shown_by_the_shortest_prefix_that_tells_it_apart() {
        let ids = [
            "01a23217-07b3-7e00-a115-247c921b5416",
            "01a23217-0b35-7e53-b1a5-d667ec759219",
            "8783a1c2-aaaa",
            "b7e2c1d0",
            "01a23217-07b3-7e00-a115-247c921b5416",
        ];
        let shown = distinct_prefixes(&ids, 8);
        assert_eq!(
            shown,
            [
                // The same id twice (two sessions): told apart from the others only.
                "01a23217-07",
                "01a23217-0b",
                "8783a1c2",
                "b7e2c1d0",
                "01a23217-07",
            ]
        );
        // Every shown prefix is a prefix of its own id and of no other, different id.
        for (i, s) in shown.iter().enumerate() {
            for (j, id) in ids.iter().enumerate() {
                if ids[i] != *id {
                    assert!(!id.starts_with(s.as_str()), "{s} also starts {id} ({j})");
                }
            }
        }
        assert_eq!(distinct_prefixes(&["abc"], 8), ["abc"]);
    }
}

fn serve(
    home: &std::path::Path,
    store: Arc<dyn Store>,
    listen: SocketAddr,
    settle_quiet: Duration,
    extra: Vec<String>,
    allowed: runread_mcp::guards::Allowed,
    console: Option<(SocketAddr, bool)>,
) -> Res {
    if !listen.ip().is_loopback() && allowed.hosts.is_empty() {
        return Err(format!(
            "refusing to listen on {listen}: runread serves loopback only unless --allow-host names this host"
        ));
    }
    let config = Config {
        settle_quiet,
        ..Config::default()
    };
    let (service, keys) = serving_service(home, store.clone(), config, extra)?;
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    // The console names the MCP endpoint as bound (the port may have been 0).
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel::<SocketAddr>();
    if let Some((console_listen, open)) = console {
        let service = service.clone();
        rt.spawn(async move {
            let Ok(mcp) = bound_rx.await else { return };
            let url = format!("http://{mcp}{}", runread_mcp::MCP_PATH);
            let console = runread_console::Console::new(service, store, keys, url);
            let served = consolecmd::serve_console(console, console_listen, open, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await;
            if let Err(e) = served {
                eprintln!("{e}");
            }
        });
    }
    let versions = match allowed.protocols {
        runread_mcp::guards::Protocols::All => runread_mcp::server::ALL_VERSIONS,
        runread_mcp::guards::Protocols::Modern => runread_mcp::server::MODERN_VERSIONS,
    }
    .iter()
    .map(|v| v.as_str())
    .collect::<Vec<_>>()
    .join(", ");
    rt.block_on(async move {
        runread_mcp::server::serve_with(
            service,
            listen,
            allowed,
            |addr| {
                eprintln!(
                    "runread serving MCP ({versions}) at http://{addr}{} (Ctrl-C to stop)",
                    runread_mcp::MCP_PATH
                );
                let _ = bound_tx.send(addr);
            },
            async {
                let _ = tokio::signal::ctrl_c().await;
            },
        )
        .await
        .map_err(|e| format!("serve {listen}: {e}"))
    })
}

fn read(url: &str, key_file: &std::path::Path, what: ReadCmd) -> Res {
    let key =
        std::fs::read_to_string(key_file).map_err(|e| format!("{}: {e}", key_file.display()))?;
    let key = key.trim().to_owned();
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let client = runread_mcp::client::Client::connect(url, &key)
            .await
            .map_err(|e| e.to_string())?;
        let result = async {
            match what {
                ReadCmd::History { out, limit } => {
                    let target = first_target(&client, "history").await?;
                    let events = client
                        .read_history(&target, limit)
                        .await
                        .map_err(|e| e.to_string())?;
                    let text = serde_json::to_string_pretty(&events).map_err(|e| e.to_string())?;
                    eprintln!("read {} events", events.len());
                    match out {
                        Some(p) => {
                            std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
                        }
                        None => {
                            outln!("{text}");
                            Ok(())
                        }
                    }
                }
                ReadCmd::Artifact { id, out } => {
                    let target = first_target(&client, "artifacts").await?;
                    let (meta, bytes) = client
                        .read_artifact(&target, id.as_deref())
                        .await
                        .map_err(|e| e.to_string())?;
                    std::fs::write(&out, &bytes).map_err(|e| format!("{}: {e}", out.display()))?;
                    eprintln!(
                        "{} ({} bytes) written to {}, sha256 {} verified",
                        meta["name"].as_str().unwrap_or(""),
                        bytes.len(),
                        out.display(),
                        meta["sha256"].as_str().unwrap_or("")
                    );
                    Ok(())
                }
                ReadCmd::FinalAnswer { out, limit } => {
                    let targets = client.granted_targets().await.map_err(|e| e.to_string())?;
                    let target = targets
                        .iter()
                        .find(|t| {
                            t["features"]
                                .as_array()
                                .is_some_and(|f| f.contains(&json!("final_answer")))
                        })
                        .map(|t| t["target"].clone())
                        .ok_or("this key has no live final_answer grant")?;
                    let answer = client
                        .read_final_answer(&target, limit, |_| {})
                        .await
                        .map_err(|e| e.to_string())?;
                    let Some(text) = answer.text else {
                        return Err(format!("answer not readable: state {}", answer.state));
                    };
                    eprintln!(
                        "read {} bytes in {} chunks, sha256 {} verified",
                        text.len(),
                        answer.chunks,
                        answer.sha256.unwrap_or_default()
                    );
                    match out {
                        Some(p) => std::fs::write(&p, text.as_bytes())
                            .map_err(|e| format!("{}: {e}", p.display())),
                        None => {
                            outln!("{text}");
                            Ok(())
                        }
                    }
                }
            }
        }
        .await;
        client.close().await;
        result
    })
}

/// Most lines read from a secrets file.
const SECRETS_FILE_MAX_BYTES: u64 = 1024 * 1024;

fn extra_secrets(
    file: Option<&std::path::Path>,
    env_names: &[String],
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    if let Some(f) = file {
        let meta = std::fs::metadata(f).map_err(|e| format!("{}: {e}", f.display()))?;
        if meta.len() > SECRETS_FILE_MAX_BYTES {
            return Err(format!(
                "{} is larger than {SECRETS_FILE_MAX_BYTES} bytes",
                f.display()
            ));
        }
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        out.extend(
            text.lines()
                .map(str::trim_end)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_owned),
        );
    }
    for name in env_names.iter().filter(|n| !n.is_empty()) {
        match std::env::var(name) {
            Ok(v) if !v.is_empty() => out.push(v),
            _ => {
                eprintln!("warning: environment variable {name} is not set; nothing to mask for it")
            }
        }
    }
    for s in &out {
        if !(runread_core::redact::SECRET_MIN_BYTES..=runread_core::redact::SECRET_MAX_BYTES)
            .contains(&s.len())
        {
            return Err(format!(
                "every known secret must be {}..={} bytes long",
                runread_core::redact::SECRET_MIN_BYTES,
                runread_core::redact::SECRET_MAX_BYTES
            ));
        }
    }
    Ok(out)
}

fn secret(home: &std::path::Path, store: &dyn Store, cmd: SecretCmd) -> Res {
    match cmd {
        SecretCmd::Add { name } => {
            use std::io::Read;
            let mut value = String::new();
            std::io::stdin()
                .take(runread_core::redact::SECRET_MAX_BYTES as u64 + 2)
                .read_to_string(&mut value)
                .map_err(|e| format!("stdin: {e}"))?;
            let value = value.strip_suffix('\n').unwrap_or(&value);
            let value = value.strip_suffix('\r').unwrap_or(value);
            let keys = runread_gate::keys::FileKeys::open(home)
                .map_err(|e| format!("gate keys: {e:?}"))?;
            runread_service::owner::add_secret(store, &keys, &name, value, now_ms())
                .map_err(|e| e.to_string())?;
            outln!(
                "known secret {name:?} stored sealed; it is masked in everything runread returns"
            );
            Ok(())
        }
        SecretCmd::List => {
            for n in runread_service::owner::secret_names(store).map_err(|e| e.to_string())? {
                outln!("{n}");
            }
            Ok(())
        }
    }
}

/// The key's first live target whose grant includes `feature`.
async fn first_target(
    client: &runread_mcp::client::Client,
    feature: &str,
) -> Result<serde_json::Value, String> {
    let targets = client.granted_targets().await.map_err(|e| e.to_string())?;
    targets
        .iter()
        .find(|t| {
            t["features"]
                .as_array()
                .is_some_and(|f| f.contains(&json!(feature)))
        })
        .map(|t| t["target"].clone())
        .ok_or_else(|| format!("this key has no live {feature} grant"))
}

/// `serve --protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ProtocolChoice {
    All,
    Modern,
}

impl From<ProtocolChoice> for runread_mcp::guards::Protocols {
    fn from(c: ProtocolChoice) -> Self {
        match c {
            ProtocolChoice::All => runread_mcp::guards::Protocols::All,
            ProtocolChoice::Modern => runread_mcp::guards::Protocols::Modern,
        }
    }
}

fn serve_stdio(
    home: &std::path::Path,
    store: Arc<dyn Store>,
    key_file: &std::path::Path,
    settle_quiet: Duration,
    extra: Vec<String>,
    protocols: runread_mcp::guards::Protocols,
) -> Res {
    {
        use std::os::unix::fs::PermissionsExt;
        let meta =
            std::fs::metadata(key_file).map_err(|e| format!("{}: {e}", key_file.display()))?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "{} is readable by other users; chmod 600 it",
                key_file.display()
            ));
        }
    }
    let key =
        std::fs::read_to_string(key_file).map_err(|e| format!("{}: {e}", key_file.display()))?;
    let key = key.trim().to_owned();
    let config = Config {
        settle_quiet,
        ..Config::default()
    };
    let (service, _) = serving_service(home, store, config, extra)?;
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    rt.block_on(runread_mcp::server::serve_stdio(service, key, protocols))
}

/// Runs a watcher on `dirs` in a background thread for the life of the process.
fn spawn_watcher(store: Arc<dyn Store>, dirs: Vec<runread_ingest::AgentDir>) -> Res {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    std::thread::Builder::new()
        .name("runread-watch".into())
        .spawn(move || {
            if let Err(e) = runread_ingest::watch::watch(
                store,
                &dirs,
                runread_ingest::watch::RESCAN_DEFAULT,
                stop,
                |_| {},
            ) {
                eprintln!("runread: watcher stopped: {e}");
            }
        })
        .map(|_| ())
        .map_err(|e| e.to_string())
}
