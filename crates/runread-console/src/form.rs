//! How the console reads what a browser sends it: the url-encoded body of a state-changing
//! request ([`Fields::parse`]) and the query string of a page ([`parse_query`]). Both parse as
//! axum's `Form` and `Query` would (serde_urlencoded over `form_urlencoded`); they are public so
//! that the fuzz targets (`crates/runread-fuzz-targets`: `console_form`, `console_query`) call
//! the very functions the routes call.

use axum::extract::FromRequestParts;
use http::request::Parts;
use serde::de::DeserializeOwned;

use crate::{FORM_MAX_BYTES, Refusal};

/// A url-encoded form as its pairs, in the order sent, read once. A field given more than once
/// is, for [`Fields::one`] and what is built on it, not given: the console never picks one of
/// two values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields(Vec<(String, String)>);

impl Fields {
    /// Parses a form body. Refused `invalid_request`: a body over [`FORM_MAX_BYTES`] (the
    /// router's body limit stops it first; this holds whoever calls), or one serde_urlencoded
    /// refuses. Invalid UTF-8 after percent-decoding becomes U+FFFD, as in any browser's form.
    pub fn parse(body: &[u8]) -> Result<Fields, Refusal> {
        if body.len() > FORM_MAX_BYTES {
            return Err(Refusal::InvalidRequest);
        }
        serde_urlencoded::from_bytes(body)
            .map(Fields)
            .map_err(|_| Refusal::InvalidRequest)
    }

    /// The field's value when it is given exactly once.
    pub fn one(&self, name: &str) -> Option<&str> {
        let mut it = self.all(name);
        let first = it.next()?;
        it.next().is_none().then_some(first)
    }

    /// [`Fields::one`], or refused `invalid_request`.
    pub fn required(&self, name: &str) -> Result<&str, Refusal> {
        self.one(name).ok_or(Refusal::InvalidRequest)
    }

    /// [`Fields::one`] when it is not empty: an empty input of a form is a field not filled.
    pub fn optional(&self, name: &str) -> Option<&str> {
        self.one(name).filter(|v| !v.is_empty())
    }

    /// Every value of the field, in the order sent.
    pub fn all(&self, name: &str) -> impl Iterator<Item = &str> {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses a query string (without its `?`) into a page's query type, refused `invalid_request`
/// when it does not fit: a field of the type given twice, a required one missing, a number that
/// is not one. Unknown fields are ignored.
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, Refusal> {
    serde_urlencoded::from_str(query).map_err(|_| Refusal::InvalidRequest)
}

/// The extractor of a page's query: [`parse_query`] over the request's query string (none is
/// the empty one); a query that does not fit refuses the request before its handler runs.
pub(crate) struct PageQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for PageQuery<T> {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Refusal> {
        parse_query(parts.uri.query().unwrap_or_default()).map(PageQuery)
    }
}
