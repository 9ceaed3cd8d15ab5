//! A final answer's Markdown, rendered for the owner's eyes — never trusted: the answer is an
//! agent's text, so nothing in it may act. Raw HTML (blocks and inline) is shown as text, images
//! are shown as their alt text and address (never fetched), links are kept only to `http`,
//! `https` and `mailto` addresses and carry `rel="noopener noreferrer nofollow"` and no referrer;
//! any other link is its text alone. The exact masked text stays one click away on the page.

use maud::{Markup, PreEscaped};
use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, html};

/// The options of GitHub-flavoured answers runread renders: tables, strikethrough, task lists.
fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Whether a link to `dest` may be followed from the console (opened by the owner's click only).
fn followable(dest: &str) -> bool {
    let lower = dest.trim_start().to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://") || lower.starts_with("mailto:")
}

/// `text` as HTML-escaped text, safe inside a double-quoted attribute too (maud's escaping).
fn escaped(text: &str) -> String {
    maud::html!((text)).into_string()
}

/// The answer rendered: only the HTML this module writes, every text of the answer escaped.
pub(crate) fn render(text: &str) -> Markup {
    // A link's end is written as the link's start was (an anchor, or nothing for an inert one).
    let mut open_links: Vec<bool> = Vec::new();
    let events = Parser::new_ext(text, options()).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Image { dest_url, .. }) => {
            Event::Html(CowStr::from(format!("<span class=\"image\" title=\"{}\">[image: ", escaped(&dest_url))))
        }
        Event::End(TagEnd::Image) => Event::Html(CowStr::from("]</span>")),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            ..
        }) => {
            let anchor = link_type != LinkType::Email && followable(&dest_url)
                || link_type == LinkType::Email;
            open_links.push(anchor);
            if anchor {
                let href = if link_type == LinkType::Email && !dest_url.starts_with("mailto:") {
                    format!("mailto:{dest_url}")
                } else {
                    dest_url.to_string()
                };
                Event::Html(CowStr::from(format!(
                    "<a href=\"{}\" rel=\"noopener noreferrer nofollow\" referrerpolicy=\"no-referrer\">",
                    escaped(&href)
                )))
            } else {
                Event::Html(CowStr::from("<span class=\"inert-link\">"))
            }
        }
        Event::End(TagEnd::Link) => Event::Html(CowStr::from(if open_links.pop().unwrap_or(false) {
            "</a>"
        } else {
            "</span>"
        })),
        other => other,
    });
    let mut out = String::with_capacity(text.len() * 3 / 2);
    html::push_html(&mut out, events);
    PreEscaped(out)
}

#[cfg(test)]
mod tests {
    use super::render;

    fn html(text: &str) -> String {
        render(text).into_string()
    }

    #[test]
    fn markdown_is_rendered() {
        let out = html(
            "# Title\n\nSome **bold** and `code`.\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        for want in [
            "<h1>Title</h1>",
            "<strong>bold</strong>",
            "<code>code</code>",
            "<li>one</li>",
            "<table>",
        ] {
            assert!(out.contains(want), "{want} in {out}");
        }
    }

    #[test]
    fn raw_html_is_shown_as_text_never_rendered() {
        let out = html("<script>alert(1)</script>\n\nHi <img src=x onerror=alert(1)> <b>b</b>\n");
        assert!(!out.contains("<script"), "{out}");
        assert!(!out.contains("<img"), "{out}");
        assert!(!out.contains("<b>"), "{out}");
        assert!(out.contains("&lt;script&gt;"), "{out}");
    }

    #[test]
    fn images_are_never_fetched() {
        let out = html("![a cat](https://example.com/cat.png \"t\")");
        assert!(!out.contains("<img"), "{out}");
        assert!(out.contains("[image: a cat]"), "{out}");
        assert!(
            out.contains("title=\"https://example.com/cat.png\""),
            "{out}"
        );
    }

    #[test]
    fn links_carry_no_referrer_and_other_schemes_are_inert() {
        let out = html(
            "[docs](https://example.com/a?b=\"c\") [x](javascript:alert(1)) [d](data:text/html,hi) <me@example.com>",
        );
        assert!(
            out.contains("<a href=\"https://example.com/a?b=&quot;c&quot;\" rel=\"noopener noreferrer nofollow\" referrerpolicy=\"no-referrer\">docs</a>"),
            "{out}"
        );
        assert!(!out.contains("javascript:"), "{out}");
        assert!(!out.contains("href=\"data:"), "{out}");
        assert!(out.contains("<span class=\"inert-link\">x</span>"), "{out}");
        assert!(out.contains("href=\"mailto:me@example.com\""), "{out}");
    }
}
