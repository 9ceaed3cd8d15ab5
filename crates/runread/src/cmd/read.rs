//! `runread read`: a granted result read as a reader would, with runread's own MCP client.

use crate::Res;
use crate::args::ReadCmd;
use crate::inputs::read_key_file;
use runread_core::Feature;
use runread_mcp::client::{Client, ClientError};
use std::path::PathBuf;

pub(crate) fn read(url: &str, key_file: &std::path::Path, run: Option<&str>, what: ReadCmd) -> Res {
    let key = read_key_file(key_file, false)?;
    let rt = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let client = match Client::connect(url, &key).await {
            Ok(c) => c,
            Err(e) => return Err(in_words(e, url, &key).await),
        };
        let result = match what {
            ReadCmd::History { out, limit } => read_history(&client, run, out, limit).await,
            ReadCmd::Artifact { id, out } => read_artifact(&client, run, id, out).await,
            ReadCmd::FinalAnswer { out, limit } => {
                read_final_answer(&client, run, out, limit).await
            }
        };
        client.close().await;
        match result {
            Err(Failed::Client(e)) => Err(in_words(e, url, &key).await),
            Err(Failed::Said(m)) => Err(m),
            Ok(()) => Ok(()),
        }
    })
}

/// Why a read failed: the client's error (said in words once the URL and key are at hand), or
/// words already.
enum Failed {
    Client(ClientError),
    Said(String),
}

impl From<String> for Failed {
    fn from(m: String) -> Failed {
        Failed::Said(m)
    }
}

impl From<ClientError> for Failed {
    fn from(e: ClientError) -> Failed {
        Failed::Client(e)
    }
}

/// A client's error in words: a transport failure is diagnosed with one plain request (rmcp's
/// own text is a type dump), a refusal is its fixed code.
async fn in_words(e: ClientError, url: &str, key: &str) -> String {
    match e {
        ClientError::Transport(_) => runread_mcp::reach::diagnose(url, key).await.describe(url),
        ClientError::Refused { code, .. } => format!("the server refused the read ({code})"),
        ClientError::Verification(m) => format!("the answer did not verify: {m}"),
    }
}

/// `runread read history`: every event of the key's run granted history (`--run` picks one of
/// several), as JSON.
async fn read_history(
    client: &Client,
    run: Option<&str>,
    out: Option<PathBuf>,
    limit: Option<u64>,
) -> Result<(), Failed> {
    let target = granted_target(client, Feature::History, run).await?;
    let events = client.read_history(&target, limit).await?;
    let text = serde_json::to_string_pretty(&events).map_err(|e| e.to_string())?;
    eprintln!("read {} events", events.len());
    match out {
        Some(p) => Ok(std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?),
        None => {
            outln!("{text}");
            Ok(())
        }
    }
}

/// `runread read artifact`: one artifact of the key's run granted artifacts, verified.
async fn read_artifact(
    client: &Client,
    run: Option<&str>,
    id: Option<String>,
    out: PathBuf,
) -> Result<(), Failed> {
    let target = granted_target(client, Feature::Artifacts, run).await?;
    let (meta, bytes) = client.read_artifact(&target, id.as_deref()).await?;
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

/// `runread read final-answer`: the whole answer of the key's run granted it, verified.
async fn read_final_answer(
    client: &Client,
    run: Option<&str>,
    out: Option<PathBuf>,
    limit: Option<u64>,
) -> Result<(), Failed> {
    let target = granted_target(client, Feature::FinalAnswer, run).await?;
    let answer = client.read_final_answer(&target, limit, |_| {}).await?;
    let Some(text) = answer.text else {
        return Err(format!("answer not readable: state {}", answer.state).into());
    };
    eprintln!(
        "read {} bytes in {} chunks, sha256 {} verified",
        text.len(),
        answer.chunks,
        answer.sha256.unwrap_or_default()
    );
    match out {
        Some(p) => {
            Ok(std::fs::write(&p, text.as_bytes()).map_err(|e| format!("{}: {e}", p.display()))?)
        }
        None => {
            outln!("{text}");
            Ok(())
        }
    }
}

/// The one live target of the key whose grant includes `feature` and whose run id is or starts
/// with `run`: when the key holds several and `run` does not pick one, they are listed with the
/// prefix that picks each.
async fn granted_target(
    client: &Client,
    feature: Feature,
    run: Option<&str>,
) -> Result<serde_json::Value, Failed> {
    let granted: Vec<_> = client
        .targets()
        .await?
        .into_iter()
        .filter(|t| t.features.contains(&feature))
        .map(|t| t.target)
        .collect();
    let exact = run.is_some_and(|r| granted.iter().any(|t| t.run_id == r));
    let mut picked: Vec<_> = granted
        .iter()
        .filter(|t| match run {
            Some(r) if exact => t.run_id == r,
            Some(r) => t.run_id.starts_with(r),
            None => true,
        })
        .collect();
    // The same run granted twice (two grants, or one id in two sessions): the newest is read.
    let mut seen = std::collections::HashSet::new();
    picked.retain(|t| seen.insert(t.run_id.clone()));
    let feature = feature.as_str();
    match (picked.as_slice(), run) {
        ([one], _) => Ok(serde_json::to_value(one).map_err(|e| e.to_string())?),
        ([], None) => Err(format!("this key has no live {feature} grant").into()),
        ([], Some(r)) => Err(format!(
            "this key has no live {feature} grant of a run {r:?}{}",
            listed(&granted)
        )
        .into()),
        (several, _) => Err(format!(
            "this key holds {} runs granted {feature}; pick one with --run{}",
            several.len(),
            listed(&granted)
        )
        .into()),
    }
}

/// The granted runs, one a line, each with the prefix of its id that `--run` takes.
fn listed(granted: &[runread_core::Target]) -> String {
    let mut ids: Vec<&str> = granted.iter().map(|t| t.run_id.as_str()).collect();
    let mut seen = std::collections::HashSet::new();
    ids.retain(|id| seen.insert(*id));
    if ids.is_empty() {
        return String::new();
    }
    let prefixes = runread_service::owner::run_ids::distinct_prefixes(
        &ids,
        runread_service::owner::RUN_PREFIX_MIN_CHARS,
    );
    let lines: Vec<String> = ids
        .iter()
        .zip(prefixes)
        .map(|(id, p)| format!("\n  --run {p}    (run {id})"))
        .collect();
    format!("; its runs:{}", lines.concat())
}
