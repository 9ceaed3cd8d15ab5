//! What every command that works on a home shares: the home (its directory and its sealing key
//! file), its store, and from them the sealing keys, the owner's handle and the service. Commands
//! take a [`Context`]; none reaches into another command for these.

use std::path::PathBuf;
use std::sync::Arc;

use runread_keys::FileKeys;
use runread_service::{Config, Owner, Service};
use runread_store::Store;

use crate::home::{self, Home};

pub(crate) struct Context {
    pub(crate) home: Home,
    pub(crate) store: Arc<dyn Store>,
    /// Where the store is, as the owner is shown it.
    pub(crate) store_location: crate::storeopen::Location,
}

impl Context {
    /// The home `dir` resolves to (created if needed), using the `--gate-keys` file when one is
    /// named, and the store `spec` names (default: SQLite in the home).
    pub(crate) fn open(
        dir: Option<PathBuf>,
        gate_keys: Option<PathBuf>,
        spec: Option<&str>,
    ) -> Result<Context, String> {
        let home = resolve_home(dir, gate_keys)?;
        let store = crate::storeopen::open(home.dir(), spec)?;
        let store_location = crate::storeopen::location(home.dir(), spec);
        Ok(Context {
            home,
            store,
            store_location,
        })
    }

    /// The sealing keys of the home (made on first use), or the `--gate-keys` file; every command
    /// that seals or unseals opens them here.
    pub(crate) fn keys(&self) -> Result<Arc<FileKeys>, String> {
        home_keys(&self.home).map(Arc::new)
    }

    /// `<home>/journal`: where supervised proofs are journaled.
    pub(crate) fn journal_root(&self) -> PathBuf {
        runread_supervise::journal_root(self.home.dir())
    }

    /// `config` with this home's journal: every reading of the home checks supervised proofs in
    /// it.
    fn with_journal(&self, mut config: Config) -> Config {
        config.journal_root = Some(self.journal_root());
        config
    }

    /// The owner's handle over this home.
    pub(crate) fn owner(&self) -> Result<Owner, String> {
        self.owner_with(Config::default(), Vec::new())
    }

    /// The owner's handle with `config`, masking also the `extra` known secrets.
    pub(crate) fn owner_with(&self, config: Config, extra: Vec<String>) -> Result<Owner, String> {
        Ok(Owner::new(
            self.store.clone(),
            self.keys()?,
            self.with_journal(config),
            extra,
        ))
    }

    /// The service a serving process answers readers with, masking also the `extra` known
    /// secrets; refused when a compiled-in tool's definition drifted from its pinned digest.
    pub(crate) fn service(
        &self,
        config: Config,
        extra: Vec<String>,
    ) -> Result<Arc<Service>, String> {
        let service = Service::with_extra_secrets(
            self.store.clone(),
            self.keys()?,
            self.with_journal(config),
            extra,
        )
        .map_err(|e| format!("refusing to start: {e}"))?;
        Ok(Arc::new(service))
    }
}

/// The resolved home (created if needed), using the `--gate-keys` file when one is named.
pub(crate) fn resolve_home(
    dir: Option<PathBuf>,
    gate_keys: Option<PathBuf>,
) -> Result<Home, String> {
    let dir = home::resolve(dir)?;
    home::ensure(&dir)?;
    Ok(Home::new(dir, gate_keys))
}

/// The sealing keys of `home` (made on first use), or its `--gate-keys` file.
pub(crate) fn home_keys(home: &Home) -> Result<FileKeys, String> {
    let file = &home.keys;
    file.open()
        .map_err(|e| format!("gate keys {}: {e}", file.path().display()))
}
