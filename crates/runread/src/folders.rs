//! The session folders `ingest --<agent> DIR` was given, remembered in the home, so that `watch`,
//! `serve --watch`, a bare `ingest` and `status` follow them too, not only each agent's default
//! place. A file of the home (`ingest-folders`), not a store setting: the folders are this
//! machine's, and a PostgreSQL store is shared by several.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use runread_core::Agent;
use runread_ingest::AgentDir;

/// The file in the home: one folder a line, `AGENT<TAB>PATH`.
pub(crate) const FOLDERS_FILE: &str = "ingest-folders";
/// Most folders remembered: naming one more forgets the one named longest ago.
pub(crate) const REMEMBERED_FOLDERS_MAX: usize = 32;
/// Longest the file may be (a path is at most `PATH_MAX`, 4 KiB, on Linux): a longer one is not
/// runread's, and is not read.
pub(crate) const FOLDERS_FILE_MAX_BYTES: u64 = (REMEMBERED_FOLDERS_MAX as u64) * 4_200;

/// The folders remembered in `home`, oldest first, at most [`REMEMBERED_FOLDERS_MAX`]. A file
/// that is missing is none; one that cannot be read is none, said once on stderr.
pub(crate) fn remembered(home: &Path) -> Vec<AgentDir> {
    match read(home) {
        Ok(dirs) => dirs,
        Err(why) => {
            eprintln!("runread: the remembered session folders are not used: {why}");
            Vec::new()
        }
    }
}

fn read(home: &Path) -> Result<Vec<AgentDir>, &'static str> {
    let file = match std::fs::File::open(home.join(FOLDERS_FILE)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(_) => return Err("its file cannot be opened"),
    };
    let mut text = String::new();
    file.take(FOLDERS_FILE_MAX_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|_| "its file is not text")?;
    if text.len() as u64 > FOLDERS_FILE_MAX_BYTES {
        return Err("its file is longer than runread writes it");
    }
    Ok(parse(&text))
}

/// The lines that name an agent and an absolute path; the newest [`REMEMBERED_FOLDERS_MAX`].
fn parse(text: &str) -> Vec<AgentDir> {
    let dirs: Vec<AgentDir> = text
        .lines()
        .filter_map(|line| {
            let (agent, path) = line.split_once('\t')?;
            let path = PathBuf::from(path);
            let agent = Agent::parse(agent)?;
            path.is_absolute().then(|| AgentDir::new(agent, path))
        })
        .collect();
    let extra = dirs.len().saturating_sub(REMEMBERED_FOLDERS_MAX);
    dirs.into_iter().skip(extra).collect()
}

/// Remembers `named` (made absolute) in `home` after those already remembered, each once, the
/// newest [`REMEMBERED_FOLDERS_MAX`] kept. A folder whose path is not UTF-8 or holds a line break
/// cannot be written as a line and is not remembered.
pub(crate) fn remember(home: &Path, named: &[AgentDir]) -> Result<(), String> {
    let mut dirs = read(home).unwrap_or_default();
    for d in named {
        let Ok(path) = std::fs::canonicalize(&d.dir) else {
            continue;
        };
        dirs.retain(|old| !(old.agent == d.agent && old.dir == path));
        dirs.push(AgentDir::new(d.agent, path));
    }
    let extra = dirs.len().saturating_sub(REMEMBERED_FOLDERS_MAX);
    let text: String = dirs
        .iter()
        .skip(extra)
        .filter_map(|d| {
            let path = d.dir.to_str().filter(|p| !p.contains(['\n', '\r']))?;
            Some(format!("{}\t{path}\n", d.agent.as_str()))
        })
        .collect();
    let mut file = tempfile::NamedTempFile::new_in(home)
        .map_err(|_| "cannot remember the session folders: the home is not writable".to_owned())?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .and_then(|()| file.as_file().sync_all())
        .map_err(|_| "cannot remember the session folders: writing failed".to_owned())?;
    file.persist(home.join(FOLDERS_FILE))
        .map(|_| ())
        .map_err(|_| "cannot remember the session folders: writing failed".to_owned())
}

/// `dirs` followed by the remembered folders not among them (same agent, same folder).
pub(crate) fn with_remembered(mut dirs: Vec<AgentDir>, remembered: Vec<AgentDir>) -> Vec<AgentDir> {
    for r in remembered {
        let same = |d: &AgentDir| {
            d.agent == r.agent
                && (d.dir == r.dir || std::fs::canonicalize(&d.dir).is_ok_and(|c| c == r.dir))
        };
        if !dirs.iter().any(same) {
            dirs.push(r);
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folders(home: &Path, n: usize) -> Vec<AgentDir> {
        (0..n)
            .map(|i| {
                let dir = home.join(format!("f{i}"));
                std::fs::create_dir_all(&dir).unwrap();
                AgentDir::new(Agent::ALL[i % Agent::ALL.len()], dir)
            })
            .collect()
    }

    #[test]
    fn at_most_the_newest_max_folders_are_remembered() {
        let home = tempfile::tempdir().unwrap();
        let named = folders(home.path(), REMEMBERED_FOLDERS_MAX);
        remember(home.path(), &named).unwrap();
        let kept = remembered(home.path());
        assert_eq!(kept.len(), REMEMBERED_FOLDERS_MAX);
        let one_more = folders(home.path(), REMEMBERED_FOLDERS_MAX + 1);
        remember(home.path(), &one_more[REMEMBERED_FOLDERS_MAX..]).unwrap();
        let kept = remembered(home.path());
        assert_eq!(kept.len(), REMEMBERED_FOLDERS_MAX);
        assert!(
            kept.iter().all(|d| !d.dir.ends_with("f0")),
            "oldest forgotten"
        );
        assert!(
            kept.last()
                .unwrap()
                .dir
                .ends_with(format!("f{REMEMBERED_FOLDERS_MAX}"))
        );
        // Naming a folder again does not remember it twice.
        remember(home.path(), &one_more[1..2]).unwrap();
        assert_eq!(remembered(home.path()).len(), REMEMBERED_FOLDERS_MAX);
    }

    #[test]
    fn a_file_at_its_bound_is_read_and_one_byte_over_is_not() {
        let home = tempfile::tempdir().unwrap();
        let line = "pi\t/x\n";
        let mut text = line.repeat(2);
        text.push_str(&"#".repeat(FOLDERS_FILE_MAX_BYTES as usize - text.len()));
        std::fs::write(home.path().join(FOLDERS_FILE), &text).unwrap();
        assert_eq!(read(home.path()).unwrap().len(), 2);
        text.push('#');
        std::fs::write(home.path().join(FOLDERS_FILE), &text).unwrap();
        assert!(read(home.path()).is_err());
        assert!(remembered(home.path()).is_empty());
    }

    #[test]
    fn lines_that_are_not_an_agent_and_an_absolute_path_are_skipped() {
        let dirs = parse("pi\t/a\nnobody\t/b\npi\trelative\nno tab\n\npi\t/c");
        let paths: Vec<_> = dirs.iter().map(|d| d.dir.clone()).collect();
        assert_eq!(paths, [PathBuf::from("/a"), PathBuf::from("/c")]);
    }
}
