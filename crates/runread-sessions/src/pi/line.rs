//! One entry line read without building a `serde_json::Value` tree.
//!
//! Most of a session file's bytes are tool output and thinking that runread never keeps; a
//! `Value` tree allocated every string and map of them only to drop it. These types keep the few
//! fields an [`EntrySummary`](super::EntrySummary) is made of (strings borrowed from the line
//! when they need no unescaping) and only visit the rest.
//!
//! Acceptance is exactly `Value`'s: every value goes through serde_json's `deserialize_any`, as
//! `Value`'s own `Deserialize` does, so strings are unescaped and checked (UTF-8, surrogates),
//! numbers are parsed (out-of-range floats refused), and the nesting limit is the same. Nothing
//! uses `deserialize_ignored_any`, which skips values without those checks. A key given twice
//! keeps its last value, as `Value`'s map does. The tests compare with a `Value`-based reader.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value as far as runread looks into it: objects read into `O`, arrays into `Vec<A>`,
/// strings kept, other scalars reduced to what the summary asks of them.
#[derive(Debug)]
pub(super) enum Json<'a, O, A> {
    Null,
    Bool(bool),
    /// A number: its value when it is a non-negative integer (a count).
    Number(Option<u64>),
    Str(Cow<'a, str>),
    Array(Vec<A>),
    Object(O),
}

/// A value whose inner structure runread never reads (checked, then dropped).
pub(super) type Leaf<'a> = Json<'a, Skipped, Skipped>;

impl<'a, O, A> Json<'a, O, A> {
    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    pub(super) fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// A non-negative integer, like `Value::as_u64`.
    pub(super) fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => *n,
            _ => None,
        }
    }

    pub(super) fn as_object(&self) -> Option<&O> {
        match self {
            Json::Object(o) => Some(o),
            _ => None,
        }
    }

    pub(super) fn as_array(&self) -> Option<&[A]> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// `.as_str()` of an optional field, like `Value::get(..).and_then(Value::as_str)`.
pub(super) fn str_of<'s, O, A>(v: &'s Option<Json<'_, O, A>>) -> Option<&'s str> {
    v.as_ref().and_then(Json::as_str)
}

/// The fields of an object that runread reads; every other key's value is visited and dropped.
pub(super) trait Fields<'de>: Default {
    /// Reads the value of `key` from `map` (a later duplicate replaces an earlier one).
    fn field<M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<(), M::Error>;
}

/// An object, array or scalar whose contents are not kept.
#[derive(Debug, Default)]
pub(super) struct Skipped;

impl<'de> Fields<'de> for Skipped {
    fn field<M: MapAccess<'de>>(&mut self, _key: &str, map: &mut M) -> Result<(), M::Error> {
        map.next_value::<Skipped>().map(drop)
    }
}

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

/// Visits a value as `Value` would parse it and keeps nothing (no string is copied).
struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skipped;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_none<E: de::Error>(self) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Skipped, D::Error> {
        Deserialize::deserialize(d)
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Skipped, S::Error> {
        while seq.next_element::<Skipped>()?.is_some() {}
        Ok(Skipped)
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Skipped, M::Error> {
        while map.next_entry::<Skipped, Skipped>()?.is_some() {}
        Ok(Skipped)
    }
}

impl<'de, O: Fields<'de>, A: Deserialize<'de>> Deserialize<'de> for Json<'de, O, A> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor::<O, A>(PhantomData))
    }
}

struct JsonVisitor<O, A>(PhantomData<(O, A)>);

impl<'de, O: Fields<'de>, A: Deserialize<'de>> Visitor<'de> for JsonVisitor<O, A> {
    type Value = Json<'de, O, A>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
        Ok(Json::Number(u64::try_from(n).ok()))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
        Ok(Json::Number(Some(n)))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Json::Number(None))
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Owned(s.to_owned())))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Owned(s)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        Deserialize::deserialize(d)
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<A>()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut fields = O::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            fields.field(&key, &mut map)?;
        }
        Ok(Json::Object(fields))
    }
}

/// An object key, borrowed from the line unless it had escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // The same entry point `Value`'s key classifier reaches: a string, parsed and checked.
        match d.deserialize_any(JsonVisitor::<Skipped, Skipped>(PhantomData))? {
            Json::Str(s) => Ok(Key(s)),
            _ => Err(de::Error::custom("object key is not a string")),
        }
    }
}

/// An entry line's top-level fields.
#[derive(Debug, Default)]
pub(super) struct Entry<'a> {
    pub kind: Option<Leaf<'a>>,
    pub id: Option<Leaf<'a>>,
    pub parent_id: Option<Leaf<'a>>,
    pub timestamp: Option<Leaf<'a>>,
    pub message: Option<Json<'a, Message<'a>, Skipped>>,
    /// `session_info.name`.
    pub name: Option<Leaf<'a>>,
    /// `model_change.provider`.
    pub provider: Option<Leaf<'a>>,
    /// `model_change.modelId`.
    pub model_id: Option<Leaf<'a>>,
}

impl<'de> Fields<'de> for Entry<'de> {
    fn field<M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<(), M::Error> {
        match key {
            "type" => self.kind = Some(map.next_value()?),
            "id" => self.id = Some(map.next_value()?),
            "parentId" => self.parent_id = Some(map.next_value()?),
            "timestamp" => self.timestamp = Some(map.next_value()?),
            "message" => self.message = Some(map.next_value()?),
            "name" => self.name = Some(map.next_value()?),
            "provider" => self.provider = Some(map.next_value()?),
            "modelId" => self.model_id = Some(map.next_value()?),
            _ => map.next_value::<Skipped>().map(drop)?,
        }
        Ok(())
    }
}

/// A content block: an object with these fields, or anything else (no type).
pub(super) type Block<'a> = Json<'a, BlockFields<'a>, Skipped>;

/// `message.content`: a string, an array of blocks, or another value.
pub(super) type Content<'a> = Json<'a, Skipped, Block<'a>>;

#[derive(Debug, Default)]
pub(super) struct BlockFields<'a> {
    pub kind: Option<Leaf<'a>>,
    pub text: Option<Leaf<'a>>,
    pub name: Option<Leaf<'a>>,
}

impl<'de> Fields<'de> for BlockFields<'de> {
    fn field<M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<(), M::Error> {
        match key {
            "type" => self.kind = Some(map.next_value()?),
            "text" => self.text = Some(map.next_value()?),
            "name" => self.name = Some(map.next_value()?),
            _ => map.next_value::<Skipped>().map(drop)?,
        }
        Ok(())
    }
}

/// `block.type` of a block, like `Value::get("type").and_then(Value::as_str)`.
pub(super) fn block_kind<'s>(b: &'s Block<'_>) -> Option<&'s str> {
    b.as_object().and_then(|f| str_of(&f.kind))
}

/// The fields of `message` an entry summary reads.
#[derive(Debug, Default)]
pub(super) struct Message<'a> {
    pub role: Option<Leaf<'a>>,
    pub stop_reason: Option<Leaf<'a>>,
    pub provider: Option<Leaf<'a>>,
    pub model: Option<Leaf<'a>>,
    pub content: Option<Content<'a>>,
    /// `bashExecution.output`.
    pub output: Option<Leaf<'a>>,
    pub tool_name: Option<Leaf<'a>>,
    pub truncated: Option<Leaf<'a>>,
    pub details: Option<Json<'a, Details<'a>, Skipped>>,
    pub usage: Option<Json<'a, Usage<'a>, Skipped>>,
}

/// The counts of `message.usage` (`crate::usage::PI_NAMES`).
#[derive(Debug, Default)]
pub(super) struct Usage<'a> {
    pub input: Option<Leaf<'a>>,
    pub output: Option<Leaf<'a>>,
    pub cache_read: Option<Leaf<'a>>,
    pub cache_write: Option<Leaf<'a>>,
    /// Pi 1.x: reasoning tokens, within `output`.
    pub reasoning: Option<Leaf<'a>>,
}

impl<'de> Fields<'de> for Usage<'de> {
    fn field<M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<(), M::Error> {
        match key {
            "input" => self.input = Some(map.next_value()?),
            "output" => self.output = Some(map.next_value()?),
            "cacheRead" => self.cache_read = Some(map.next_value()?),
            "cacheWrite" => self.cache_write = Some(map.next_value()?),
            "reasoning" => self.reasoning = Some(map.next_value()?),
            _ => map.next_value::<Skipped>().map(drop)?,
        }
        Ok(())
    }
}

impl Usage<'_> {
    /// The counts, as `Tokens::from_json` reads them from a `Value` (absent or not a count: 0).
    pub(super) fn tokens(&self) -> crate::model::Tokens {
        let n = |v: &Option<Leaf<'_>>| v.as_ref().and_then(Json::as_u64).unwrap_or(0);
        crate::model::Tokens {
            input: n(&self.input),
            output: n(&self.output),
            cache_read: n(&self.cache_read),
            cache_write: n(&self.cache_write),
            reasoning: n(&self.reasoning),
        }
    }
}

impl<'de> Fields<'de> for Message<'de> {
    fn field<M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<(), M::Error> {
        match key {
            "role" => self.role = Some(map.next_value()?),
            "stopReason" => self.stop_reason = Some(map.next_value()?),
            "provider" => self.provider = Some(map.next_value()?),
            "model" => self.model = Some(map.next_value()?),
            "content" => self.content = Some(map.next_value()?),
            "output" => self.output = Some(map.next_value()?),
            "toolName" => self.tool_name = Some(map.next_value()?),
            "truncated" => self.truncated = Some(map.next_value()?),
            "details" => self.details = Some(map.next_value()?),
            "usage" => self.usage = Some(map.next_value()?),
            _ => map.next_value::<Skipped>().map(drop)?,
        }
        Ok(())
    }
}

impl Message<'_> {
    /// `details.truncation.truncated`, like `Value::pointer("/details/truncation/truncated")`
    /// read as a bool (a pointer into an array needs a numeric token, so only objects count).
    pub(super) fn details_truncated(&self) -> Option<bool> {
        self.details
            .as_ref()?
            .as_object()?
            .truncation
            .as_ref()?
            .as_object()?
            .truncated
            .as_ref()?
            .as_bool()
    }
}

#[derive(Debug, Default)]
pub(super) struct Details<'a> {
    pub truncation: Option<Json<'a, Truncation<'a>, Skipped>>,
}

impl<'de> Fields<'de> for Details<'de> {
    fn field<M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<(), M::Error> {
        match key {
            "truncation" => self.truncation = Some(map.next_value()?),
            _ => map.next_value::<Skipped>().map(drop)?,
        }
        Ok(())
    }
}

#[derive(Debug, Default)]
pub(super) struct Truncation<'a> {
    pub truncated: Option<Leaf<'a>>,
}

impl<'de> Fields<'de> for Truncation<'de> {
    fn field<M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<(), M::Error> {
        match key {
            "truncated" => self.truncated = Some(map.next_value()?),
            _ => map.next_value::<Skipped>().map(drop)?,
        }
        Ok(())
    }
}
