//! A connector's access token admitted like its reader's key.

use runread_core::{ErrorCode, oauth};
use runread_store::{Store, TokenKind};

use crate::admission::KeyContext;
use crate::oauth::{Connector, scope_features};

/// Admission of a bearer token (the connector's credential, in place of the key): a live access
/// token for exactly this resource, of a live reader. Its reader's live grants are capped to the
/// features the owner allowed the client.
pub fn admit_bearer(
    store: &dyn Store,
    connector: &Connector,
    presented: &str,
    now_ms: i64,
) -> Result<KeyContext, ErrorCode> {
    if !oauth::is_well_formed(oauth::ACCESS_TOKEN_PREFIX, presented) {
        return Err(ErrorCode::InvalidKey);
    }
    let unavailable = |e: runread_store::StoreError| {
        tracing::warn!(error = %e, "store unavailable (bearer)");
        ErrorCode::Unavailable
    };
    let token = store
        .oauth_token(&oauth::hash(presented))
        .map_err(unavailable)?
        .filter(|t| {
            t.kind == TokenKind::Access
                && t.revoked_at_ms.is_none()
                && t.expires_at_ms > now_ms
                && t.resource == connector.resource
        })
        .ok_or(ErrorCode::InvalidKey)?;
    let (reader, grants) = store
        .reader_of_id(&token.reader_id, now_ms)
        .map_err(unavailable)?
        .ok_or(ErrorCode::InvalidKey)?;
    let cap = scope_features(Some(&token.scope)).map_err(|_| ErrorCode::InvalidKey)?;
    let live_grants = grants
        .into_iter()
        .filter_map(|mut g| {
            g.features.retain(|f| cap.contains(f));
            (!g.features.is_empty()).then_some(g)
        })
        .collect();
    Ok(KeyContext {
        key_hash: reader.key_hash.clone(),
        reader,
        live_grants,
        feature_cap: Some(cap),
    })
}
