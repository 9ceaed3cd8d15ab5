//! The one enum of refusal codes. Every refusal a reader can see carries exactly one of these
//! codes and its fixed message: never a path, an OS error, a stack trace or any content.

use serde::Serialize;

/// Why runread refused a request. The message of each code is fixed text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No `x-runread-key` header was sent.
    #[error("missing_key")]
    MissingKey,
    /// More than one `x-runread-key` header was sent.
    #[error("duplicate_key")]
    DuplicateKey,
    /// The key is malformed or belongs to no grant.
    #[error("invalid_key")]
    InvalidKey,
    /// The arguments do not match the tool's input schema exactly.
    #[error("invalid_arguments")]
    InvalidArguments,
    /// The cursor was tampered with, or was issued for another target, purpose or answer version.
    #[error("invalid_cursor")]
    InvalidCursor,
    /// No live grant of this key names this exact target. A missing target gives the same code.
    #[error("not_granted")]
    NotGranted,
    /// The key's grant for this target does not include the tool's feature.
    #[error("feature_not_granted")]
    FeatureNotGranted,
    /// The key's grant for this target has expired.
    #[error("grant_expired")]
    GrantExpired,
    /// The key's grant for this target was revoked by the owner.
    #[error("grant_revoked")]
    GrantRevoked,
    /// The target no longer is current: the store, workspace registration or session file moved
    /// on (new instance, revision or generation) since the grant was made.
    #[error("target_stale")]
    TargetStale,
    /// The target changed while the call was being served; nothing was returned.
    #[error("target_changed")]
    TargetChanged,
    /// A task handle tampered with, issued to another reader, or past its time.
    #[error("invalid_task")]
    InvalidTask,
    /// The tool name is not one runread serves.
    #[error("unknown_tool")]
    UnknownTool,
    /// The connection, `Host` or `Origin` is not one this server answers (DNS-rebinding and
    /// cross-site protection).
    #[error("forbidden_origin")]
    ForbiddenOrigin,
    /// A header runread never accepts (credentials, cookies, proxy forwarding).
    #[error("forbidden_header")]
    ForbiddenHeader,
    /// An `Authorization` header on the keyed door (a client sending the key as a bearer token,
    /// the usual habit): its own code, so the message can say where the key goes.
    #[error("authorization_header")]
    AuthorizationHeader,
    /// The request body is larger than the limit.
    #[error("body_too_large")]
    BodyTooLarge,
    /// The request body did not arrive within the deadline.
    #[error("body_timeout")]
    BodyTimeout,
    /// The body is not one JSON-RPC request: not JSON, a batch, a notification or a response.
    #[error("invalid_request")]
    InvalidRequest,
    /// Too many requests in flight; retry after the indicated time.
    #[error("busy")]
    Busy,
    /// No artifact with this id and version is registered for this target.
    #[error("no_such_artifact")]
    NoSuchArtifact,
    /// The artifact's file changed, moved, became a link or disappeared since it was registered.
    #[error("artifact_changed")]
    ArtifactChanged,
    /// The artifact contains a known secret: it is refused, not masked.
    #[error("artifact_contains_secret")]
    ArtifactContainsSecret,
    /// The adapter did not answer within its deadline; its late result is discarded.
    #[error("timeout")]
    Timeout,
    /// runread could not serve the call right now (store unreachable, internal failure).
    #[error("unavailable")]
    Unavailable,
    /// The reader, or every reader together, has as many access requests waiting for the owner
    /// as it may.
    #[error("requests_pending")]
    RequestsPending,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 26] = [
        ErrorCode::MissingKey,
        ErrorCode::DuplicateKey,
        ErrorCode::InvalidKey,
        ErrorCode::InvalidArguments,
        ErrorCode::InvalidCursor,
        ErrorCode::NotGranted,
        ErrorCode::FeatureNotGranted,
        ErrorCode::GrantExpired,
        ErrorCode::GrantRevoked,
        ErrorCode::TargetStale,
        ErrorCode::TargetChanged,
        ErrorCode::InvalidTask,
        ErrorCode::UnknownTool,
        ErrorCode::ForbiddenOrigin,
        ErrorCode::ForbiddenHeader,
        ErrorCode::AuthorizationHeader,
        ErrorCode::BodyTooLarge,
        ErrorCode::BodyTimeout,
        ErrorCode::InvalidRequest,
        ErrorCode::Busy,
        ErrorCode::NoSuchArtifact,
        ErrorCode::ArtifactChanged,
        ErrorCode::ArtifactContainsSecret,
        ErrorCode::Timeout,
        ErrorCode::Unavailable,
        ErrorCode::RequestsPending,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::MissingKey => "missing_key",
            ErrorCode::DuplicateKey => "duplicate_key",
            ErrorCode::InvalidKey => "invalid_key",
            ErrorCode::InvalidArguments => "invalid_arguments",
            ErrorCode::InvalidCursor => "invalid_cursor",
            ErrorCode::NotGranted => "not_granted",
            ErrorCode::FeatureNotGranted => "feature_not_granted",
            ErrorCode::GrantExpired => "grant_expired",
            ErrorCode::GrantRevoked => "grant_revoked",
            ErrorCode::TargetStale => "target_stale",
            ErrorCode::TargetChanged => "target_changed",
            ErrorCode::InvalidTask => "invalid_task",
            ErrorCode::UnknownTool => "unknown_tool",
            ErrorCode::ForbiddenOrigin => "forbidden_origin",
            ErrorCode::ForbiddenHeader => "forbidden_header",
            ErrorCode::AuthorizationHeader => "authorization_header",
            ErrorCode::BodyTooLarge => "body_too_large",
            ErrorCode::BodyTimeout => "body_timeout",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::Busy => "busy",
            ErrorCode::NoSuchArtifact => "no_such_artifact",
            ErrorCode::ArtifactChanged => "artifact_changed",
            ErrorCode::ArtifactContainsSecret => "artifact_contains_secret",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::RequestsPending => "requests_pending",
        }
    }

    /// The fixed, content-free message of this code.
    pub fn message(self) -> &'static str {
        match self {
            ErrorCode::MissingKey => "an x-runread-key header is required",
            ErrorCode::DuplicateKey => "exactly one x-runread-key header is allowed",
            ErrorCode::InvalidKey => "the read key is not valid",
            ErrorCode::InvalidArguments => "the arguments do not match the tool's input schema",
            ErrorCode::InvalidCursor => "the cursor is not valid for this target and tool",
            ErrorCode::NotGranted => "this target is not granted to this key",
            ErrorCode::FeatureNotGranted => "this tool's feature is not granted for this target",
            ErrorCode::GrantExpired => "the grant for this target has expired",
            ErrorCode::GrantRevoked => "the grant for this target was revoked",
            ErrorCode::TargetStale => {
                "the target is no longer current; ask the owner for a new grant"
            }
            ErrorCode::TargetChanged => "the target changed while being read; nothing was returned",
            ErrorCode::InvalidTask => {
                "the task is not valid for this key, or its time is up; call the tool again"
            }
            ErrorCode::UnknownTool => "no such tool",
            ErrorCode::ForbiddenOrigin => "this connection, host or origin is not allowed",
            ErrorCode::ForbiddenHeader => "a header runread never accepts was sent",
            ErrorCode::AuthorizationHeader => {
                "runread does not accept an Authorization header here; send the read key as the \
                 x-runread-key header"
            }
            ErrorCode::BodyTooLarge => "the request body is too large",
            ErrorCode::BodyTimeout => "the request body did not arrive in time",
            ErrorCode::InvalidRequest => {
                "the body must be one JSON-RPC request (no batches, notifications or responses)"
            }
            ErrorCode::Busy => "too many requests in flight; retry later",
            ErrorCode::NoSuchArtifact => {
                "no artifact with this id and version is registered for this target"
            }
            ErrorCode::ArtifactChanged => {
                "the artifact changed since it was registered; nothing was returned"
            }
            ErrorCode::ArtifactContainsSecret => {
                "the artifact contains a known secret and is refused"
            }
            ErrorCode::Timeout => "the read did not finish within its deadline",
            ErrorCode::Unavailable => "runread cannot serve this call right now",
            ErrorCode::RequestsPending => {
                "too many access requests are waiting for the owner; wait for a decision or for \
                 one to expire"
            }
        }
    }

    /// The body every transport uses for this refusal: `{"code": ..., "message": ...}`.
    pub fn to_json(self) -> serde_json::Value {
        serde_json::json!({ "code": self.as_str(), "message": self.message() })
    }

    /// HTTP status when the refusal happens before MCP dispatch (transport admission).
    pub fn http_status(self) -> u16 {
        match self {
            // 403, not 401: a 401 makes some clients start an OAuth flow runread does not offer.
            ErrorCode::MissingKey | ErrorCode::InvalidKey | ErrorCode::ForbiddenOrigin => 403,
            ErrorCode::DuplicateKey
            | ErrorCode::InvalidArguments
            | ErrorCode::ForbiddenHeader
            | ErrorCode::AuthorizationHeader
            | ErrorCode::InvalidRequest
            | ErrorCode::InvalidCursor
            | ErrorCode::InvalidTask => 400,
            ErrorCode::BodyTooLarge => 413,
            ErrorCode::BodyTimeout => 408,
            ErrorCode::Busy | ErrorCode::Unavailable | ErrorCode::Timeout => 503,
            ErrorCode::RequestsPending => 429,
            // Refusals that happen after transport admission travel as tool results; this status
            // is used only if one is ever raised at the transport.
            ErrorCode::NotGranted
            | ErrorCode::FeatureNotGranted
            | ErrorCode::GrantExpired
            | ErrorCode::GrantRevoked
            | ErrorCode::TargetStale
            | ErrorCode::TargetChanged
            | ErrorCode::NoSuchArtifact
            | ErrorCode::ArtifactChanged
            | ErrorCode::ArtifactContainsSecret => 403,
            ErrorCode::UnknownTool => 404,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_to_their_names_and_messages_are_content_free() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::String(code.as_str().into()));
            assert_eq!(code.to_string(), code.as_str());
            let msg = code.message();
            assert!(!msg.contains('/') && !msg.contains('{'), "{msg}");
        }
    }
}
