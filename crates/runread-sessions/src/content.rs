//! Message content as agents write it (Claude Code's `message.content`, Codex's `content`): a
//! string, or a list of typed blocks. Anything else is tolerated and shows no text; a list element
//! that is not a block object is passed over.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};

#[derive(Deserialize)]
pub(crate) struct RawBlock<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(crate) kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) name: Option<Cow<'a, str>>,
    /// A `tool_result`'s content: a string or a list of blocks.
    #[serde(borrow, default)]
    pub(crate) content: Option<Content<'a>>,
}

/// A message's (or a tool result's) content: a string, a list of blocks, or anything else
/// (tolerated: it shows no text).
pub(crate) enum Content<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<RawBlock<'a>>),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("message content")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Content<'a>, E> {
                Ok(Content::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Content<'a>, E> {
                Ok(Content::Text(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Content<'a>, E> {
                Ok(Content::Text(Cow::Owned(s)))
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Content<'a>, S::Error> {
                let mut blocks = Vec::new();
                // A list element that is not a block object is tolerated and shows nothing.
                while let Some(b) = seq.next_element::<MaybeBlock<'a>>()? {
                    if let MaybeBlock::Block(b) = b {
                        blocks.push(b);
                    }
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_map<M: de::MapAccess<'de>>(self, map: M) -> Result<Content<'a>, M::Error> {
                IgnoredAny::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Content::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A list element: a block object, or anything else (kept out).
enum MaybeBlock<'a> {
    Block(RawBlock<'a>),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for MaybeBlock<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = MaybeBlock<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<M: de::MapAccess<'de>>(self, map: M) -> Result<MaybeBlock<'a>, M::Error> {
                RawBlock::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(MaybeBlock::Block)
            }
            fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<MaybeBlock<'a>, S::Error> {
                IgnoredAny::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(MaybeBlock::Other)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<MaybeBlock<'a>, E> {
                Ok(MaybeBlock::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<MaybeBlock<'a>, E> {
                Ok(MaybeBlock::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<MaybeBlock<'a>, E> {
                Ok(MaybeBlock::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<MaybeBlock<'a>, E> {
                Ok(MaybeBlock::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<MaybeBlock<'a>, E> {
                Ok(MaybeBlock::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<MaybeBlock<'a>, E> {
                Ok(MaybeBlock::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

pub(crate) fn kind_of<'s>(b: &'s RawBlock<'_>) -> Option<&'s str> {
    b.kind.as_deref()
}

/// The text blocks of `content` (blocks of type `text`) joined by `\n` (a string content is its
/// own text).
pub(crate) fn text_of(content: Option<&Content<'_>>) -> String {
    text_of_kinds(content, &["text"])
}

/// `text_of(content).len()` without building it.
pub(crate) fn text_len(content: Option<&Content<'_>>) -> usize {
    text_len_of_kinds(content, &["text"])
}

/// The blocks of `content` whose type is one of `kinds`, their texts joined by `\n`.
pub(crate) fn text_of_kinds(content: Option<&Content<'_>>, kinds: &[&str]) -> String {
    match content {
        Some(Content::Text(s)) => s.as_ref().to_owned(),
        Some(Content::Blocks(blocks)) => {
            let texts: Vec<&str> = texts_of(blocks, kinds).collect();
            texts.join("\n")
        }
        _ => String::new(),
    }
}

/// `text_of_kinds(content, kinds).len()` without building it.
pub(crate) fn text_len_of_kinds(content: Option<&Content<'_>>, kinds: &[&str]) -> usize {
    match content {
        Some(Content::Text(s)) => s.len(),
        Some(Content::Blocks(blocks)) => {
            let (n, bytes) = texts_of(blocks, kinds)
                .fold((0usize, 0usize), |(n, bytes), t| (n + 1, bytes + t.len()));
            bytes + n.saturating_sub(1)
        }
        _ => 0,
    }
}

fn texts_of<'b>(blocks: &'b [RawBlock<'_>], kinds: &'b [&str]) -> impl Iterator<Item = &'b str> {
    blocks
        .iter()
        .filter(move |b| kind_of(b).is_some_and(|k| kinds.contains(&k)))
        .filter_map(|b| b.text.as_deref())
}

pub(crate) fn blocks_of<'c, 'a>(content: Option<&'c Content<'a>>) -> &'c [RawBlock<'a>] {
    match content {
        Some(Content::Blocks(b)) => b,
        _ => &[],
    }
}
