//! What `runread run` knows of one agent ([`SupervisedAgent`]) and the machine that follows one
//! invocation of it ([`Machine`]): implemented in each agent's folder, registered in
//! [`crate::agents`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use runread_core::Agent;
use runread_sessions::{EntrySummary, FileIdentity};
use runread_store::{Foreground, Phase, Proof};

use crate::proof::{Pinned, Refusal, Verified};
use crate::stream::Step;
use crate::terminal::Terminal;

/// How an agent answers `<command> --version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionAnswer {
    /// A bare `X.Y.Z` (a `v` prefix tolerated): an answer any program could give, so the agent
    /// is told by its npm package where there is one, else by its program's name
    /// ([`SupervisedAgent::program_names`]).
    Bare,
    /// `<prefix>X.Y.Z`.
    Prefixed(&'static str),
    /// `X.Y.Z<suffix>`.
    Suffixed(&'static str),
    /// `<prefix>X.Y.Z<suffix>` on the answer's first line (later lines are the agent's notes).
    FirstLine(&'static str, &'static str),
}

impl VersionAnswer {
    /// The version in `answer` when `answer` is this form, unchecked (the caller checks it is a
    /// version).
    pub fn version_in(self, answer: &str) -> Option<&str> {
        match self {
            VersionAnswer::Bare => Some(answer.strip_prefix('v').unwrap_or(answer)),
            VersionAnswer::Prefixed(p) => answer.strip_prefix(p),
            VersionAnswer::Suffixed(s) => answer.strip_suffix(s),
            VersionAnswer::FirstLine(p, s) => answer
                .lines()
                .next()?
                .trim_end()
                .strip_prefix(p)?
                .strip_suffix(s),
        }
    }

    /// How the agent writes `version`.
    pub fn written(self, version: &str) -> String {
        match self {
            VersionAnswer::Bare => version.to_owned(),
            VersionAnswer::Prefixed(p) => format!("{p}{version}"),
            VersionAnswer::Suffixed(s) => format!("{version}{s}"),
            VersionAnswer::FirstLine(p, s) => format!("{p}{version}{s}"),
        }
    }
}

/// Everything `runread run` knows of one agent before it starts it: how it is recognised, how
/// its command line is made to stream events, and the [`Machine`] that follows one invocation.
pub trait SupervisedAgent: Sync {
    /// The agent this describes.
    fn agent(&self) -> Agent;
    /// The npm packages that install it (a package renamed keeps its old name here: users still
    /// have it installed).
    fn npm_packages(&self) -> &'static [&'static str];
    /// The file names its program goes by, for an agent answering a bare version: without its
    /// package (a shim, a standalone install) that name is what tells it from any other
    /// program. None by default.
    fn program_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// How it answers `--version`.
    fn version_answer(&self) -> VersionAnswer;
    /// What may follow the version in the version of a package holding its native binary
    /// (`-linux-x64`); none by default.
    fn platform_suffixes(&self) -> &'static [&'static str] {
        &[]
    }
    /// How a user supervises it: `runread run -- pi -p "…"`.
    fn usage(&self) -> &'static str;
    /// Its arguments made to stream the events runread reads; a refusal says why and what to do
    /// instead.
    fn with_event_stream(&self, args: &[OsString]) -> Result<Vec<OsString>, String>;
    /// The machine that follows one invocation started in `cwd` with `args` (as streamed).
    fn machine(&self, args: &[OsString], cwd: &Path) -> Box<dyn Machine>;

    /// Whether a package of version `pkg_version` is the agent that said `version`: the same
    /// version, or that version with a platform after it.
    fn package_says(&self, pkg_version: &str, version: &str) -> bool {
        pkg_version == version
            || pkg_version
                .strip_prefix(version)
                .is_some_and(|platform| self.platform_suffixes().contains(&platform))
    }
}

/// One invocation of an agent followed: its event stream read into its state machine, its
/// session file found, pinned and read for proofs, and how it ended. Made by
/// [`SupervisedAgent::machine`]; the driver holds one and never looks inside.
pub trait Machine: Send {
    /// Runs of this invocation so far, in stream order.
    fn run_count(&self) -> usize;
    /// Events of a type runread does not know seen so far (each leaves the run it falls in
    /// without an answer).
    fn unknown_events(&self) -> u64;
    /// A line that is not an event: it taints the run it falls in.
    fn fault(&mut self);
    /// Parses `line` as an event, shows it on `terminal` (before applying it: a failed tool's
    /// name is still known) and applies it. Returns the step, and whether the event is one the
    /// session file holds or is about to (worth a look at the file); `None` for a line that is
    /// not an event.
    fn apply_line(&mut self, line: &[u8], terminal: &mut Terminal) -> Option<(Step, bool)>;
    /// The live phase of the last run.
    fn phase(&self) -> Option<Phase>;
    /// The session id the stream announced, and its cwd when the stream names it.
    fn session(&self) -> Option<(String, Option<String>)>;
    /// The session file of `session_id` in `cwd`, where the agent keeps it.
    fn find_session_file(&self, session_id: &str, cwd: &str) -> Option<PathBuf>;
    /// Pins the session file at the start of supervision: its identity and the point a run of
    /// this invocation must follow (the active leaf, the newest entry; `None` while there is
    /// none).
    fn pin(&self, path: &Path, pinned: &Pinned) -> Result<(FileIdentity, Option<String>), Refusal>;
    /// The run id of each tracked run in the session's index `entries` (`None`: not there yet),
    /// with `leaf` the point pinned at start.
    fn run_starts(&self, entries: &[EntrySummary], leaf: Option<&str>) -> Vec<Option<String>>;
    /// Verifies run `n` against the session file at `path`, as `pinned`; and whether the answer
    /// was cut off. `NotOnBranch` while the stream has no answer for it.
    fn verify(&self, n: usize, path: &Path, pinned: &Pinned) -> Result<(Verified, bool), Refusal>;
    /// Whether a run is known only once its proof found it in the file (the stream never names
    /// its prompt): then the verified run is the one recorded.
    fn located_by_proof(&self) -> bool;
    /// How run `n`, which never settled, ended; `interrupted`: runread passed an interrupt on.
    fn closing_proof(&self, n: usize, interrupted: bool) -> Option<Proof>;
    /// The agent's exit read with what its stream reported: its foreground, its exit as
    /// recorded (`exit:N`, `signal:N`) and the code runread passes on.
    fn foreground(&self, status: ExitStatus, interrupted: bool) -> (Foreground, String, i32);
}
