//! `runread artifact add`: the owner registers a file of a run.

use crate::Res;
use crate::context::Context;
use runread_core::timefmt::now_ms;

use crate::args::ArtifactCmd;

pub(crate) fn artifact(ctx: &Context, cmd: ArtifactCmd) -> Res {
    let ArtifactCmd::Add {
        run,
        session,
        path,
        name,
        mime,
        kind,
    } = cmd;
    let artifact = runread_service::owner::NewArtifact {
        run_id: &run,
        session_id: session.as_deref(),
        path: &path,
        name: name.as_deref(),
        mime: mime.as_deref(),
        kind: &kind,
    };
    let (id, v) = ctx
        .owner()?
        .add_artifact(&artifact, now_ms())
        .map_err(|e| e.to_string())?;
    outln!(
        "artifact {id}: {} ({} bytes, sha256 {})",
        v.rel_path,
        v.size,
        v.sha256
    );
    Ok(())
}
