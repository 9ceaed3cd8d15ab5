//! `runread artifact add`: the owner registers a file of a run.

use super::*;

pub(crate) fn artifact(home: &crate::home::Home, store: Arc<dyn Store>, cmd: ArtifactCmd) -> Res {
    let ArtifactCmd::Add {
        run,
        session,
        path,
        name,
        mime,
        kind,
    } = cmd;
    let keys = Arc::new(crate::servecmd::gate_keys(home)?);
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
