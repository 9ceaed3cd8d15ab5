//! `runread read`: a granted result read as a reader would, with runread's own MCP client.

use crate::Res;
use crate::args::ReadCmd;
use crate::inputs::read_key_file;
use runread_core::Feature;
use runread_mcp::client::Client;
use std::path::PathBuf;

pub(crate) fn read(url: &str, key_file: &std::path::Path, what: ReadCmd) -> Res {
    let key = read_key_file(key_file, false)?;
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let client = Client::connect(url, &key)
            .await
            .map_err(|e| e.to_string())?;
        let result = match what {
            ReadCmd::History { out, limit } => read_history(&client, out, limit).await,
            ReadCmd::Artifact { id, out } => read_artifact(&client, id, out).await,
            ReadCmd::FinalAnswer { out, limit } => read_final_answer(&client, out, limit).await,
        };
        client.close().await;
        result
    })
}

/// `runread read history`: every event of the first target granted history, as JSON.
async fn read_history(client: &Client, out: Option<PathBuf>, limit: Option<u64>) -> Res {
    let target = first_target(client, Feature::History).await?;
    let events = client
        .read_history(&target, limit)
        .await
        .map_err(|e| e.to_string())?;
    let text = serde_json::to_string_pretty(&events).map_err(|e| e.to_string())?;
    eprintln!("read {} events", events.len());
    match out {
        Some(p) => std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display())),
        None => {
            outln!("{text}");
            Ok(())
        }
    }
}

/// `runread read artifact`: one artifact of the first target granted artifacts, verified.
async fn read_artifact(client: &Client, id: Option<String>, out: PathBuf) -> Res {
    let target = first_target(client, Feature::Artifacts).await?;
    let (meta, bytes) = client
        .read_artifact(&target, id.as_deref())
        .await
        .map_err(|e| e.to_string())?;
    std::fs::write(&out, &bytes).map_err(|e| format!("{}: {e}", out.display()))?;
    let meta: runread_service::outputs::ListedArtifact =
        serde_json::from_value(meta).map_err(|e| e.to_string())?;
    eprintln!(
        "{} ({} bytes) written to {}, sha256 {} verified",
        meta.name,
        bytes.len(),
        out.display(),
        meta.sha256
    );
    Ok(())
}

/// `runread read final-answer`: the whole answer of the first target granted it, verified.
async fn read_final_answer(client: &Client, out: Option<PathBuf>, limit: Option<u64>) -> Res {
    let target = first_target(client, Feature::FinalAnswer).await?;
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
        Some(p) => std::fs::write(&p, text.as_bytes()).map_err(|e| format!("{}: {e}", p.display())),
        None => {
            outln!("{text}");
            Ok(())
        }
    }
}

/// The key's first live target whose grant includes `feature`.
pub(crate) async fn first_target(
    client: &Client,
    feature: Feature,
) -> Result<serde_json::Value, String> {
    let targets = client.targets().await.map_err(|e| e.to_string())?;
    let found = targets
        .into_iter()
        .find(|t| t.features.contains(&feature))
        .ok_or_else(|| format!("this key has no live {} grant", feature.as_str()))?;
    serde_json::to_value(&found.target).map_err(|e| e.to_string())
}
