//! The command line: every command, flag and default, as clap reads them. What each command does
//! is in its own module.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use clap::builder::TypedValueParser;
use runread_core::Agent;

/// Events of one `show --history` page unless `--limit` says otherwise.
pub(crate) const SHOW_HISTORY_DEFAULT: u64 = 20;

/// Default listen address of `runread serve`.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:7077";

#[derive(Parser)]
#[command(
    name = "runread",
    version,
    about = "Let an AI assistant read the results of a local coding-agent run over MCP — only what you grant."
)]
pub(crate) struct Cli {
    /// runread's home (store, keys). Default: $XDG_DATA_HOME/runread or ~/.local/share/runread.
    #[arg(long, global = true, env = "RUNREAD_HOME")]
    pub(crate) home: Option<PathBuf>,
    /// The store: a postgres:// URL shared by several runread processes and hosts (see
    /// docs/deployment.md). Default: SQLite in the home.
    #[arg(long, global = true, env = "RUNREAD_STORE", hide_env_values = true)]
    pub(crate) store: Option<String>,
    /// The sealing keys: this file (a mounted secret, say; it must exist and be readable by its
    /// owner only) instead of `gate-keys` in the home. Every gateway, and wherever grants and
    /// secrets are made, needs the same keys (see `runread keys export`/`import`).
    #[arg(
        long,
        global = true,
        env = "RUNREAD_GATE_KEYS_FILE",
        value_name = "FILE"
    )]
    pub(crate) gate_keys: Option<PathBuf>,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run the whole job on a bundled sample Pi session, in a temporary home.
    Demo,
    /// Check runread: whether it serves, each agent's session folders (found or not, what the
    /// store holds of them), the readers and their last reads, the shared runs an agent will
    /// delete on its own within a week (Claude Code's `cleanupPeriodDays`) and how many of its
    /// runs going then are not kept, the kept runs against their bound, and the store.
    Status(StatusArgs),
    /// Register or list workspace roots. Only sessions inside one are ever readable.
    #[command(subcommand)]
    Workspace(WorkspaceCmd),
    /// Read agents' session files into the store (incremental: unchanged files cost nothing).
    /// Without a directory flag: every agent's default place that exists.
    Ingest {
        #[command(flatten)]
        dirs: DirArgs,
        /// Print the pass's counts as one JSON object (sizes in bytes) instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Follow the agents' session directories continuously: runs appear, grow and settle as the
    /// agents write.
    Watch(WatchArgs),
    /// Run a coding agent under supervision — Pi (`runread run -- pi -p "…"`), Claude Code
    /// (`runread run -- claude -p "…"`), Codex (`runread run -- codex exec "…"`, also
    /// `codex exec resume …` and `codex exec fork …`), Gemini CLI (`runread run -- gemini -p
    /// "…"`), Copilot CLI (`runread run -- copilot -p "…"`) or OpenCode (`runread run -- opencode
    /// run "…"`), told apart by its `--version`: its final
    /// answer gets supervised evidence (verified against the session file, journaled) and its
    /// work state is live.
    Run {
        /// The workspace the run belongs to (registered if it is not). Default: the registered
        /// workspace that contains the current directory, else the current directory.
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Register the current directory even when it is the home directory or `/` (a
        /// workspace that wide makes every session under it listable).
        #[arg(long)]
        workspace_here: bool,
        /// Do not render the agent's output on the terminal.
        #[arg(long)]
        quiet: bool,
        /// Share each run with a reader as soon as its exact target is pinned:
        /// `READER:FEATURES:DURATION`, e.g. `claude-code:final_answer,history:2h` (repeatable).
        /// The reader must exist (`runread reader add`).
        #[arg(long, value_name = "READER:FEATURES:DURATION")]
        share: Vec<String>,
        /// What to call the runs `--share` shares, for their readers: `list_granted_targets`
        /// shows it, and a reader can wait for it (`wait_for_run` with `label`) before the run
        /// is shared. One line, at most 128 bytes. Each shared run's exact target is also
        /// printed on stdout as one JSON line.
        #[arg(long, value_name = "TEXT", requires = "share")]
        label: Option<String>,
        /// The agent's command line, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// List runs with their exact target and state.
    Runs(RunsArgs),
    /// Readers: the clients you share runs with, each configured once with its own key (add,
    /// list, rotate, remove).
    #[command(subcommand)]
    Reader(ReaderCmd),
    /// Share one run with a reader (`--to NAME`; a new name becomes a reader, its key printed
    /// once), or list / revoke grants.
    Grant(GrantArgs),
    /// The access requests readers filed (`request_access`) that wait for your decision: who asks,
    /// what, why (the reader's own words, quoted) and the runs it matches; `approve` grants them,
    /// `deny` refuses.
    Requests(RequestsArgs),
    /// Serve MCP (2026-07-28, stateless) over Streamable HTTP at /mcp.
    Serve(ServeArgs),
    /// The owner's console in the browser: see runs, grant, revoke, read the audit, manage
    /// secrets and artifacts (loopback only; log in with the one-time link it prints).
    Console(ConsoleArgs),
    /// Register a file the agent produced as an artifact of a run (the trusted producer's act).
    #[command(subcommand)]
    Artifact(ArtifactCmd),
    /// Known secrets to mask in everything that leaves (exact match; read keys are added automatically).
    #[command(subcommand)]
    Secret(SecretCmd),
    /// Show the calls' start records and receipts, newest first, a page at a time: who, tool,
    /// target, outcome, time (never inputs). `audit retention`, `audit prune`, `audit verify`:
    /// how long the log is kept, its maintenance now, and the check that it is whole.
    Audit(AuditArgs),
    /// Print the completion script for a shell (`runread completions bash > …`; see the README).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `runread man > runread.1`, or `runread man | man -l -`.
    Man,
    /// Show one run as the console's run page does: its status, its answer (state, evidence,
    /// sha256 and text, masked), tokens, work state, grants and whether it is kept; `--history`
    /// pages its timeline. The owner reading their own records: no key.
    Show(ShowArgs),
    /// List the snapshots of shared runs the store holds sealed for sharing (a copy of each shared
    /// run's evidence, destroyed when its last grant ends): run, size, the grants holding it, until
    /// when. The runs you kept (`runread keep`) are in `runread keep list`.
    Snapshots {
        /// One JSON array instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Keep runs past the agent's own cleanup: `keep RUN` seals that run's whole evidence into the
    /// store (read when its session file is gone, until you drop it); `keep --workspace NAME`
    /// keeps every run of a workspace as it settles. `keep list`, `keep drop`, `keep limit`.
    /// Nothing is kept unless you ask.
    Keep(KeepArgs),
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
        /// Which of the key's granted runs: its run id or a prefix of it (needed when the key
        /// holds several grants of the feature).
        #[arg(long)]
        run: Option<String>,
        #[command(subcommand)]
        what: ReadCmd,
    },
}

#[derive(Subcommand)]
pub(crate) enum ArtifactCmd {
    /// Register PATH (relative to the run's workspace root, or absolute inside it).
    Add {
        /// The run: its id, or any prefix of it that names one run (as `runread runs` shows it).
        #[arg(long)]
        run: String,
        /// Its session (id or prefix), when the run id names runs of several sessions.
        #[arg(long)]
        session: Option<String>,
        /// The file: relative to the run's workspace root, or absolute inside it.
        path: String,
        /// The name a reader sees (default: the file's name).
        #[arg(long)]
        name: Option<String>,
        /// Its media type (default: guessed from its name).
        #[arg(long)]
        mime: Option<String>,
        /// generated (the agent wrote it) or attached (given to the run).
        #[arg(long, default_value = "generated")]
        kind: String,
    },
}

#[derive(Subcommand)]
pub(crate) enum SecretCmd {
    /// Add (or replace) a known secret; its value is read from standard input and stored sealed.
    Add {
        /// The secret's name (shown in listings; its value never is).
        #[arg(long)]
        name: String,
    },
    /// List known secrets by name (values are never shown).
    List,
}

#[derive(Subcommand)]
pub(crate) enum RecoverCmd {
    /// Classify START_ID without reading its sealed input, resolving a key or calling an adapter.
    Inspect {
        /// The start record's id, as `runread audit` shows it.
        start_id: String,
        /// Print JSON (times in RFC 3339) instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum KeysCmd {
    /// Add a new sealing key and make it current; older keys stay readable.
    Rotate,
    /// List the key ids (never the keys), oldest first; the last is current.
    List,
    /// Write every sealing key to FILE (a new 0600 file) for `keys import` elsewhere; lists the
    /// ids written.
    Export {
        /// The file to write (it must not exist).
        file: PathBuf,
    },
    /// Add the keys of FILE (made by `keys export`, 0600) to this home's key file (or
    /// `--gate-keys`), making its current key current here; lists the ids added.
    Import {
        /// The file `keys export` wrote.
        file: PathBuf,
    },
}

#[derive(Subcommand)]
pub(crate) enum ReadCmd {
    /// The whole history of the key's granted target, page by page, upserted by sequence.
    History {
        /// Write the events (JSON) to this file instead of standard output.
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
        /// Write the artifact's bytes to this file.
        #[arg(long)]
        out: PathBuf,
    },
    /// The final answer of the key's granted run (`--run` picks one of several).
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
pub(crate) enum WorkspaceCmd {
    /// Register PATH (canonicalized): sessions whose directory is inside it become listable and
    /// shareable. Registering it again changes nothing (its grants keep working); with another
    /// --name it is renamed. A removed workspace registered again starts a new revision: the
    /// grants it had stay ended.
    Add {
        /// The directory to register.
        path: PathBuf,
        /// Its name in listings (default: the directory's name).
        #[arg(long)]
        name: Option<String>,
        /// Print JSON instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
    /// List the registered workspaces: name, root, id, runs, and live and stale grants.
    List {
        /// Print JSON (times in RFC 3339) instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
    /// Remove a workspace: nothing of it is indexed or read any more, every grant in it is
    /// revoked (listed by id), and snapshots no other grant holds are destroyed.
    Remove {
        /// The workspace: its name, its root or its id (see `runread workspace list`).
        workspace: String,
        /// Print JSON instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
}

/// What `runread grant` shares when `--features` is not given: as the console's form.
pub(crate) const GRANT_FEATURES_DEFAULT: [&str; 2] = ["final_answer", "status"];

/// How long a grant lasts when `--expires` is not given: as the console's form.
pub(crate) const GRANT_EXPIRES_DEFAULT: &str = "1h";

/// Every feature's name, with what it exposes, for `--features`' help and completions.
fn feature_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        runread_core::Feature::ALL
            .map(|f| clap::builder::PossibleValue::new(f.as_str()).help(f.exposes())),
    )
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct GrantArgs {
    #[command(subcommand)]
    pub(crate) action: Option<GrantCmd>,
    /// Run id (the entry id of the run's first user message), or any prefix of it that names
    /// one run, as `runread runs` shows it.
    #[arg(long)]
    pub(crate) run: Option<String>,
    /// Session id or a prefix of it, when the run id names runs of several sessions.
    #[arg(long)]
    pub(crate) session: Option<String>,
    /// What the reader may read, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = feature_names(),
        default_values = GRANT_FEATURES_DEFAULT,
        value_name = "FEATURES"
    )]
    pub(crate) features: Vec<String>,
    /// Until when: a duration (90s, 15m, 2h, 7d) or an RFC 3339 time.
    #[arg(long, default_value = GRANT_EXPIRES_DEFAULT)]
    pub(crate) expires: String,
    /// The reader to share the run with (`runread reader list`): its client's next call sees
    /// the run, with no new key. A name that is no reader yet becomes one holding this grant,
    /// and its key is printed once — unless it is close to a reader's name (a typo), which is
    /// refused with the close names.
    #[arg(long, value_name = "READER")]
    pub(crate) to: Option<String>,
    /// Make the reader `--to` names even though its name is close to an existing reader's.
    #[arg(long)]
    pub(crate) new_reader: bool,
    /// What to call the run for the reader (`list_granted_targets` shows it; `wait_for_run`
    /// finds it by it). One line, at most 128 bytes.
    #[arg(long, value_name = "TEXT")]
    pub(crate) label: Option<String>,
    /// The URL to print in the client config.
    #[arg(long, default_value = "http://127.0.0.1:7077/mcp")]
    pub(crate) url: String,
    /// When the grant makes a new reader: write its key to this file (created new, mode 0600;
    /// never over an existing file; its directory must exist) instead of showing it.
    #[arg(long, value_name = "PATH")]
    pub(crate) key_file: Option<PathBuf>,
    /// Print JSON (times in RFC 3339) instead of lines for a person.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Subcommand)]
pub(crate) enum ReaderCmd {
    /// Add a reader: its key is printed once, with every ready-to-paste client configuration.
    Add {
        /// What you call the client (`claude-code`, `ci`, `chatgpt`).
        name: String,
        /// The URL to print in the client configs.
        #[arg(long, default_value = "http://127.0.0.1:7077/mcp")]
        url: String,
        /// Write the new key to this file (created new, mode 0600; never over an existing file;
        /// its directory must exist) instead of showing it: it passes through no terminal.
        #[arg(long, value_name = "PATH")]
        key_file: Option<PathBuf>,
        /// Print JSON (times in RFC 3339) instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
    /// List the readers (never keys): each one's live grants and last read.
    List {
        /// Print JSON (times in RFC 3339) instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
    /// Give a reader a new key (printed once): the old one is refused from its next call; its
    /// grants are kept.
    Rotate {
        /// The reader's name, as `runread reader list` shows it.
        name: String,
        /// The URL to print in the client configs.
        #[arg(long, default_value = "http://127.0.0.1:7077/mcp")]
        url: String,
        /// Write the new key to this file (created new, mode 0600; never over an existing file;
        /// its directory must exist) instead of showing it: it passes through no terminal.
        #[arg(long, value_name = "PATH")]
        key_file: Option<PathBuf>,
        /// Print JSON (times in RFC 3339) instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
    /// Remove a reader: its key is refused from its next call and every grant of it revoked.
    Remove {
        /// The reader's name, as `runread reader list` shows it.
        name: String,
        /// Print JSON instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum GrantCmd {
    /// List grants (never keys).
    List {
        /// Print JSON (times in RFC 3339) instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a grant: its run is refused to its reader from the next call on (the reader's
    /// other grants stay).
    Revoke {
        /// The grant's id, as `runread grant list` shows it.
        id: String,
        /// Print JSON instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct RequestsArgs {
    #[command(subcommand)]
    pub(crate) action: Option<RequestsCmd>,
    /// Print JSON (times in RFC 3339) instead of lines for a person.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Subcommand)]
pub(crate) enum RequestsCmd {
    /// Approve a request: one exact grant per run to the reader that asked (by default the runs
    /// `runread requests` lists as matching, with the features and the time it asked for).
    Approve {
        /// The request's id (`q-…`), as `runread requests` shows it.
        id: String,
        /// A run to grant instead of the matching ones: its id, or any prefix of it that names
        /// one run (as `runread requests` or `runread runs` show it). Repeatable, up to as many
        /// runs as the request asked for.
        #[arg(long = "run", value_name = "RUN")]
        runs: Vec<String>,
        /// Fewer features than it asked for, comma-separated (never more).
        #[arg(long, value_delimiter = ',', value_parser = feature_names(), value_name = "FEATURES")]
        features: Vec<String>,
        /// Sooner than it asked: a duration (90s, 15m, 2h, 7d) or an RFC 3339 time (never later).
        #[arg(long)]
        expires: Option<String>,
        /// Print JSON (times in RFC 3339) instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
    /// Deny a request: the reader's `wait_for_access` answers `denied`, nothing is granted.
    Deny {
        /// The request's id (`q-…`), as `runread requests` shows it.
        id: String,
        /// Print JSON instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
}

/// An agent named on the command line (`--agent`), one of those runread reads.
fn agent_value() -> impl clap::builder::TypedValueParser<Value = Agent> {
    clap::builder::PossibleValuesParser::new(Agent::ALL.map(Agent::as_str))
        .try_map(|name| Agent::parse(&name).ok_or("an agent runread reads"))
}

// `runread keep`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct KeepArgs {
    #[command(subcommand)]
    pub(crate) action: Option<KeepCmd>,
    /// The run to keep: its id, or any prefix of it that names one run (as `runread runs` shows
    /// it).
    #[arg(conflicts_with = "workspace")]
    pub(crate) run: Option<String>,
    /// Its session (id or prefix), when the run id names runs of several sessions.
    #[arg(long, requires = "run")]
    pub(crate) session: Option<String>,
    /// Keep every run of this workspace (its name, path or id) as it settles, from its settled
    /// runs now on.
    #[arg(long, value_name = "NAME|PATH|ID")]
    pub(crate) workspace: Option<String>,
    /// With --workspace: only this agent's runs.
    #[arg(long, requires = "workspace", value_parser = agent_value())]
    pub(crate) agent: Option<Agent>,
}

#[derive(Subcommand)]
pub(crate) enum KeepCmd {
    /// The keep rules, then every kept run: its size, since when, why (`run` or `workspace`) and
    /// whether its copy holds the run as indexed now; the total against the bound.
    List {
        /// Print JSON (times in RFC 3339, sizes in bytes) instead of lines for a person.
        #[arg(long)]
        json: bool,
    },
    /// Drop a run's kept copy (its data key destroyed, then its rows), or a workspace's keep rules
    /// and kept runs. A live share's own snapshot of a run stays until that share ends.
    Drop {
        /// The run: its id, or any prefix of it that names one run.
        #[arg(conflicts_with = "workspace")]
        run: Option<String>,
        /// Its session (id or prefix), when the run id names runs of several sessions.
        #[arg(long, requires = "run")]
        session: Option<String>,
        /// The workspace (its name, path or id) whose keep rules and kept runs go.
        #[arg(long, value_name = "NAME|PATH|ID")]
        workspace: Option<String>,
        /// With --workspace: only this agent's rule and kept runs.
        #[arg(long, requires = "workspace", value_parser = agent_value())]
        agent: Option<Agent>,
    },
    /// Show the bound on every kept run together, or set it (`2GiB`, `500MiB`, `1073741824`). A
    /// keep beyond it is refused; nothing kept is ever dropped to make room.
    Limit {
        /// The new bound: bytes, or a whole number of KiB, MiB, GiB or TiB.
        size: Option<String>,
    },
}

/// The session directories a command reads: one `--<agent> DIR` flag per agent, made from each
/// agent's profile (`runread_sessions::profile`), so that a new agent brings its flag along.
#[derive(Debug, Default)]
pub(crate) struct DirArgs {
    /// The directories named, each with its agent, in the registry's order.
    pub(crate) named: Vec<runread_ingest::AgentDir>,
}

impl clap::FromArgMatches for DirArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut dirs = DirArgs::default();
        dirs.update_from_arg_matches(matches)?;
        Ok(dirs)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        for agent in Agent::ALL {
            let flag = runread_sessions::profile(agent).dir_flag();
            if let Some(dir) = matches.get_one::<PathBuf>(flag) {
                self.named.retain(|d| d.agent != agent);
                self.named
                    .push(runread_ingest::AgentDir::new(agent, dir.clone()));
            }
        }
        Ok(())
    }
}

impl clap::Args for DirArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        Agent::ALL.into_iter().fold(cmd, |cmd, agent| {
            let profile = runread_sessions::profile(agent);
            cmd.arg(
                clap::Arg::new(profile.dir_flag())
                    .long(profile.dir_flag())
                    .value_name("DIR")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(profile.dir_help()),
            )
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl DirArgs {
    /// The directories named, or, when none is, every agent's default place and the folders
    /// `remembered` from earlier `ingest`s (those that exist, when `existing_only`; a watcher
    /// also takes one that will exist later).
    pub(crate) fn resolve(
        self,
        existing_only: bool,
        remembered: Vec<runread_ingest::AgentDir>,
    ) -> Result<Vec<runread_ingest::AgentDir>, String> {
        use runread_ingest::AgentDir;

        if !self.named.is_empty() {
            if let Some(d) = self.named.iter().find(|d| !d.dir.is_dir()) {
                return Err(format!("{} is not a directory", d.dir.display()));
            }
            return Ok(self.named);
        }
        let defaults: Vec<AgentDir> = Agent::ALL
            .into_iter()
            .filter_map(AgentDir::default_for)
            .collect();
        let defaults: Vec<AgentDir> = crate::folders::with_remembered(defaults, remembered)
            .into_iter()
            .filter(|d| !existing_only || d.dir.is_dir())
            .collect();
        if defaults.is_empty() {
            return Err(no_agent_directory());
        }
        Ok(defaults)
    }
}

/// Why there is nothing to read: no agent's default place exists. Names each place and flag.
fn no_agent_directory() -> String {
    let (places, flags): (Vec<String>, Vec<String>) = Agent::ALL
        .into_iter()
        .map(|agent| {
            let profile = runread_sessions::profile(agent);
            let place = profile.default_place();
            let mut home = std::path::PathBuf::from("~");
            home.extend(place.under_home);
            (
                home.display().to_string(),
                format!("--{} DIR", profile.dir_flag()),
            )
        })
        .unzip();
    let flags = match flags.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => flags.join(""),
    };
    format!(
        "no agent's session directory found ({}); pass {flags}",
        places.join(", ")
    )
}

/// Runs one page of `runread runs` shows unless told otherwise.
pub(crate) const RUNS_PAGE_DEFAULT: u32 = 100;

/// Calls one page of `runread audit` shows unless told otherwise.
pub(crate) const AUDIT_PAGE_DEFAULT: u32 = 100;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct AuditArgs {
    #[command(subcommand)]
    pub(crate) cmd: Option<AuditCmd>,
    /// Only calls since this time: a duration back from now (15m, 2h, 7d) or an RFC 3339 time.
    #[arg(long)]
    pub(crate) since: Option<String>,
    /// Calls per page, newest first.
    #[arg(long, default_value_t = AUDIT_PAGE_DEFAULT, value_parser = clap::value_parser!(u32).range(1..=i64::from(runread_store::AUDIT_PAGE_MAX)))]
    pub(crate) limit: u32,
    /// Only calls older than this one: the start id of the previous page's last row (its last
    /// line names it).
    #[arg(long, value_name = "START_ID")]
    pub(crate) before: Option<String>,
    /// Only calls under this grant (its id, as `grant list` shows it).
    #[arg(long, value_name = "GRANT_ID")]
    pub(crate) grant: Option<String>,
    /// Only calls of this reader (its name, as `reader list` shows it).
    #[arg(long, value_name = "READER")]
    pub(crate) reader: Option<String>,
    /// Only calls that named this run (its whole id, as the audit shows it).
    #[arg(long, value_name = "RUN_ID")]
    pub(crate) run: Option<String>,
    /// Only calls of this tool (its name, as the audit shows it: `read_final_answer`, …).
    #[arg(long, value_name = "TOOL")]
    pub(crate) tool: Option<String>,
    /// Only calls with a receipt of this outcome (`refused`: any refusal, and the calls refused
    /// before the gate, with the counts of calls with no valid credential; `interrupted`: no
    /// receipt at all).
    #[arg(long, value_parser = runread_store::AuditOutcome::NAMES)]
    pub(crate) outcome: Option<String>,
    /// The page as JSON: `rows`, `more` (calls left after it) and `nextBefore` (for `--before`);
    /// `refusedBeforeGate` (`rows`, `more`) and `unadmitted` (calls with no valid credential, per
    /// code).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `runread audit`'s subcommands: the log over time.
#[derive(Subcommand)]
pub(crate) enum AuditCmd {
    /// Show how long calls are kept, or set it: calls older than `--days`, and beyond `--calls`
    /// the oldest whatever their age, are removed by the next maintenance pass (`serve` runs one
    /// every ten minutes; `audit prune` now), each removal checkpointed so `audit verify` still
    /// checks what remains.
    Retention {
        /// Days calls are kept.
        #[arg(long, value_parser = clap::value_parser!(u32).range(
            i64::from(runread_core::limits::AUDIT_RETENTION_DAYS_MIN)..=i64::from(runread_core::limits::AUDIT_RETENTION_DAYS_MAX)))]
        days: Option<u32>,
        /// Most calls kept, whatever their age.
        #[arg(long, value_parser = clap::value_parser!(u64).range(
            runread_core::limits::AUDIT_RETENTION_CALLS_MIN..=runread_core::limits::AUDIT_RETENTION_CALLS_MAX))]
        calls: Option<u64>,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a maintenance pass of the log now: seal what is old enough, remove what the retention
    /// says is over.
    Prune {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check that the log that remains is whole: every checkpoint follows from the one before,
    /// every sealed range still matches its seal, and nothing was cut out of its middle. Exits
    /// 1 when something does not hold.
    Verify {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `serve --protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ProtocolChoice {
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

// `runread serve`.
#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Where MCP is served (loopback unless --allow-host).
    #[arg(long, default_value = DEFAULT_LISTEN)]
    pub(crate) listen: SocketAddr,
    /// How long a session file must be quiet before a passive run counts as settled.
    #[arg(long, default_value_t = runread_core::limits::SETTLE_QUIET_DEFAULT_MS)]
    pub(crate) settle_ms: u64,
    /// How long a reader's access request (`request_access`) waits for your decision.
    #[arg(long, value_name = "SECONDS",
          default_value_t = runread_core::limits::ACCESS_REQUEST_TTL_MS.unsigned_abs() / 1_000,
          value_parser = clap::value_parser!(u64).range(
              runread_core::limits::ACCESS_REQUEST_TTL_MIN_SECONDS
                  ..=runread_core::limits::ACCESS_REQUEST_TTL_MAX_SECONDS))]
    pub(crate) request_expiry_seconds: u64,
    /// A file of known secrets to mask, one per line (blank lines and lines starting with # skipped).
    #[arg(long)]
    pub(crate) secrets_file: Option<PathBuf>,
    /// Names of environment variables whose values are known secrets (comma-separated).
    #[arg(long, env = "RUNREAD_SECRET_ENV", value_delimiter = ',')]
    pub(crate) secret_env: Vec<String>,
    /// Also answer this Host (and listen beyond loopback). Repeatable. Only for a deployment
    /// behind your own network controls: a non-loopback door is reachable by other machines.
    #[arg(long)]
    pub(crate) allow_host: Vec<String>,
    /// Also accept requests carrying this Origin (a browser-based client). Repeatable.
    #[arg(long)]
    pub(crate) allow_origin: Vec<String>,
    /// The https origin your tunnel or reverse proxy presents (`https://NAME.example`): chat
    /// assistants' connectors reach runread there with OAuth, the owner approving each on the
    /// console. Its MCP endpoint is this URL + /mcp.
    #[arg(long, value_name = "URL")]
    pub(crate) public_url: Option<String>,
    /// A host whose Client ID Metadata Documents runread may fetch from a loopback or private
    /// address (by default only global addresses are fetched). Repeatable.
    #[arg(long, value_name = "HOST", requires = "public_url")]
    pub(crate) cimd_allow_host: Vec<String>,
    /// With --public-url: answer a browser-based client on this exact origin
    /// (`https://app.example`, `http://localhost:5173`) with CORS, for the OAuth metadata,
    /// /register, /token and /mcp. Repeatable; none by default, `*` refused.
    #[arg(long, value_name = "ORIGIN", requires = "public_url")]
    pub(crate) cors_origin: Vec<String>,
    /// Also watch the agents' session directories in this process (see `runread watch`).
    #[arg(long)]
    pub(crate) watch: bool,
    /// With --watch: the directories to watch (default: every agent's default place).
    #[command(flatten)]
    pub(crate) dirs: DirArgs,
    /// Serve MCP on standard input/output instead of HTTP (for clients that launch runread).
    #[arg(long, requires = "key_file")]
    pub(crate) stdio: bool,
    /// With --stdio: the file holding the read key (it stands in for the x-runread-key header).
    #[arg(long)]
    pub(crate) key_file: Option<PathBuf>,
    /// Protocol versions to speak: `all` (2026-07-28 and the dated 2025-11-25, 2025-06-18,
    /// 2025-03-26, every request admitted on its own key) or `modern` (2026-07-28 only).
    #[arg(long, value_enum, default_value_t = ProtocolChoice::All)]
    pub(crate) protocol: ProtocolChoice,
    /// Also serve the owner's console (see `runread console`), on its own listener.
    #[arg(long, conflicts_with = "stdio")]
    pub(crate) console: bool,
    /// With --console: where the console listens (loopback only).
    #[arg(long, default_value = runread_console::DEFAULT_LISTEN, requires = "console")]
    pub(crate) console_listen: SocketAddr,
    /// With --console: open its login link in the browser.
    #[arg(long, requires = "console")]
    pub(crate) open: bool,
    /// Calls one reader may make per minute (as many at once); one more is refused `busy`.
    /// Every call is recorded (a start record and a receipt): this bounds how fast one key grows
    /// the store.
    #[arg(long, value_name = "N", default_value_t = runread_core::limits::READER_CALLS_PER_MINUTE_MAX,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub(crate) calls_per_minute: u32,
    /// Show a desktop notification when a reader asks for access (`request_access`), naming the
    /// reader only (`notify-send` on Linux, `osascript` on macOS); decide with `runread requests`
    /// or on the console.
    #[arg(long)]
    pub(crate) notify: bool,
}

// `runread console`.
#[derive(Args)]
pub(crate) struct ConsoleArgs {
    /// Where the console listens (loopback only).
    #[arg(long, default_value = runread_console::DEFAULT_LISTEN)]
    pub(crate) listen: SocketAddr,
    /// The MCP endpoint the shown client configs name (where `runread serve` answers).
    #[arg(long, default_value = "http://127.0.0.1:7077/mcp")]
    pub(crate) mcp_url: String,
    /// Open the login link in the browser.
    #[arg(long)]
    pub(crate) open: bool,
    /// As for `serve`: known secrets to mask in what the console shows.
    #[arg(long)]
    pub(crate) secrets_file: Option<PathBuf>,
    /// As for `serve`: names of environment variables whose values are known secrets.
    #[arg(long, env = "RUNREAD_SECRET_ENV", value_delimiter = ',')]
    pub(crate) secret_env: Vec<String>,
    /// How long a session file must be quiet before a passive run counts as settled.
    #[arg(long, default_value_t = runread_core::limits::SETTLE_QUIET_DEFAULT_MS)]
    pub(crate) settle_ms: u64,
}

// `runread status`.
#[derive(Args)]
pub(crate) struct StatusArgs {
    /// The address `runread serve` listens on, probed to tell whether it serves.
    #[arg(long, default_value = DEFAULT_LISTEN)]
    pub(crate) listen: SocketAddr,
    /// One JSON object instead of lines (times in RFC 3339, sizes in bytes).
    #[arg(long)]
    pub(crate) json: bool,
}

// `runread watch`.
#[derive(Args)]
pub(crate) struct WatchArgs {
    #[command(flatten)]
    pub(crate) dirs: DirArgs,
    /// Safety-net rescan period, in seconds, besides file notifications.
    #[arg(long, default_value_t = 5)]
    pub(crate) rescan_secs: u64,
}

// `runread runs`.
#[derive(Args)]
pub(crate) struct RunsArgs {
    /// Print JSON (times in RFC 3339) instead of lines for a person.
    #[arg(long)]
    pub(crate) json: bool,
    /// Runs per page, newest first.
    #[arg(long, default_value_t = RUNS_PAGE_DEFAULT, value_parser = clap::value_parser!(u32).range(1..=i64::from(runread_store::RUNS_PAGE_MAX)))]
    pub(crate) limit: u32,
    /// Runs to skip (the next page starts at the previous offset plus its limit).
    #[arg(long, default_value_t = 0)]
    pub(crate) offset: u64,
    /// Only this agent's runs.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(Agent::ALL.map(Agent::as_str))
        .try_map(|name| Agent::parse(&name).ok_or("an agent runread reads")))]
    pub(crate) agent: Option<Agent>,
    /// Only runs in this workspace (its name or path).
    #[arg(long)]
    pub(crate) workspace: Option<String>,
    /// Only runs with this status.
    #[arg(long, value_parser = ["completed", "failed", "cancelled", "running", "unknown"])]
    pub(crate) status: Option<String>,
    /// Only runs whose prompt or answer holds every one of these words (read from the session
    /// files and masked; at most 8 words; every run searched, newest first, up to 50 results).
    #[arg(long)]
    pub(crate) search: Option<String>,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ShowArgs {
    /// The run's id, or any prefix of it that names one run (as `runread runs` shows it).
    pub run: String,
    /// The session (its id or a prefix of it), when the run id names runs of several.
    #[arg(long)]
    pub session: Option<String>,
    /// One page of the run's timeline instead (`--cursor` for the next).
    #[arg(long)]
    pub history: bool,
    /// Where the page starts: the `next page` cursor of the last.
    #[arg(long, requires = "history")]
    pub cursor: Option<String>,
    /// Events on the page (1–100).
    #[arg(long, default_value_t = SHOW_HISTORY_DEFAULT, value_parser = clap::value_parser!(u64).range(1..=runread_core::limits::HISTORY_PAGE_MAX as u64), requires = "history")]
    pub limit: u64,
    /// JSON instead of lines.
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Every flag and argument of every command, as `path: --flag`, that has no help text.
    fn without_help(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let builtin = matches!(arg.get_id().as_str(), "help" | "version");
            if !builtin && arg.get_help().is_none() && arg.get_long_help().is_none() {
                out.push(format!("{path}: {}", arg.get_id()));
            }
        }
        for sub in cmd.get_subcommands() {
            if sub.get_about().is_none() && sub.get_name() != "help" {
                out.push(format!("{path} {}: (the command)", sub.get_name()));
            }
            without_help(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_command_flag_and_argument_has_help_text() {
        let mut missing = Vec::new();
        without_help(&Cli::command(), "runread", &mut missing);
        assert!(missing.is_empty(), "without help text: {missing:#?}");
    }
}
