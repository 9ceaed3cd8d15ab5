//! How the CLI writes times, sizes and counts for a person: one format for each (`--json` keeps
//! RFC 3339 times and byte counts for machines).

use chrono::TimeZone as _;

/// `ms` (milliseconds since the epoch) in the local time zone, to the minute, with the zone's
/// offset: `2026-12-06 14:05 +01:00`. An instant outside the calendar's range is written as the
/// number it is.
pub(crate) fn when(ms: i64) -> String {
    match chrono::Local.timestamp_millis_opt(ms).single() {
        Some(t) => t.format("%Y-%m-%d %H:%M %:z").to_string(),
        None => format!("{ms} ms"),
    }
}

/// How many characters [`when`] writes (`2026-12-06 14:05 +01:00`): a table's time column.
pub(crate) const WHEN_CHARS: usize = 23;

/// When the agent wrote that it started (an RFC 3339 time), as [`ago`] says it; `-` when it wrote
/// none that reads.
pub(crate) fn started_ago(started_at: Option<&str>, now_ms: i64) -> String {
    started_at
        .and_then(runread_core::timefmt::parse_rfc3339)
        .map_or_else(|| "-".to_owned(), |ms| ago(ms, now_ms))
}

/// How long before `now_ms` the instant `ms` was, roughly, as a person says it: `just now`,
/// `5 min ago`, `3 h ago`, `2 d ago`; an instant after `now_ms` is `in 3 h`.
pub(crate) fn ago(ms: i64, now_ms: i64) -> String {
    const MINUTE: i64 = 60_000;
    const HOUR: i64 = 60 * MINUTE;
    const DAY: i64 = 24 * HOUR;
    let (span, future) = match now_ms.checked_sub(ms) {
        Some(d) if d >= 0 => (d, false),
        Some(d) => (d.saturating_neg(), true),
        None => (i64::MAX, ms > now_ms),
    };
    let amount = if span < MINUTE {
        return "just now".to_owned();
    } else if span < HOUR {
        format!("{} min", span / MINUTE)
    } else if span < DAY {
        format!("{} h", span / HOUR)
    } else {
        format!("{} d", span / DAY)
    };
    if future {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// `bytes` as a person reads a size: `512 B`, `13.9 KiB`, `4.0 MiB`, `1.0 GiB` (the owner's
/// views' one formatter).
pub(crate) fn size(bytes: u64) -> String {
    runread_service::owner::keeps::size(bytes)
}

/// `seconds` as a person says a span, in its largest whole unit: `90 s`, `15 min`, `2 h`, `7 d`
/// (`90 min`, not `1 h`: a span is never rounded).
pub(crate) fn span(seconds: u64) -> String {
    const MINUTE: u64 = 60;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    match seconds {
        s if s >= DAY && s % DAY == 0 => format!("{} d", s / DAY),
        s if s >= HOUR && s % HOUR == 0 => format!("{} h", s / HOUR),
        s if s >= MINUTE && s % MINUTE == 0 => format!("{} min", s / MINUTE),
        s => format!("{s} s"),
    }
}

/// `n` things: `1 run`, `2 runs`, `0 runs`.
pub(crate) fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `text` as a terminal shows it inertly: every character that is not shown as itself
/// ([`runread_core::names::is_shown_as_written`]: controls such as the ESC of an ANSI sequence,
/// line breaks, bidirectional overrides, zero-width characters) is written as its escape
/// (`\u{1b}`, `\n`), so a reader's or an agent's text can neither move the cursor, recolour the
/// terminal nor pass for runread's own lines. Everything else is written as it is.
pub(crate) fn inert(text: &str) -> String {
    escaped(text, false)
}

/// `text` between double quotes, [`inert`], with its own `"` and `\` escaped: a reader's text (an
/// access request's reason) shown as a quotation that cannot end early.
pub(crate) fn quoted(text: &str) -> String {
    format!("\"{}\"", escaped(text, true))
}

/// [`inert`], escaping the quotation's own `"` and `\` too when `in_quotes`.
fn escaped(text: &str, in_quotes: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut one = [0u8; 4];
    for c in text.chars() {
        let shown = runread_core::names::is_shown_as_written(c.encode_utf8(&mut one));
        if !shown || (in_quotes && matches!(c, '"' | '\\')) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrusted_text_is_shown_inert_and_quoted() {
        let forged = "ok\u{1b}[31mred\u{1b}[0m\nrunread: approved\u{202e}txt.exe";
        let shown = inert(forged);
        assert!(!shown.chars().any(char::is_control), "{shown}");
        assert_eq!(
            shown,
            "ok\\u{1b}[31mred\\u{1b}[0m\\nrunread: approved\\u{202e}txt.exe"
        );
        assert_eq!(
            quoted("say \"hi\" \\ </tool_result>"),
            r#""say \"hi\" \\ </tool_result>""#
        );
        assert_eq!(
            inert("héllo <b>wörld</b> — 日本"),
            "héllo <b>wörld</b> — 日本"
        );
        assert_eq!(quoted("tab\there"), r#""tab\there""#);
    }

    #[test]
    fn a_time_for_a_person_is_as_wide_as_its_column() {
        for ms in [0, 1_796_001_018_606, 4_102_444_800_000] {
            assert_eq!(when(ms).chars().count(), WHEN_CHARS, "{}", when(ms));
        }
    }

    #[test]
    fn sizes_are_in_binary_units_with_one_decimal() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1024), "1.0 KiB");
        assert_eq!(size(14_310), "14.0 KiB");
        assert_eq!(size(1_073_741_824), "1.0 GiB");
        assert_eq!(size(u64::MAX), "16777216.0 TiB");
    }

    #[test]
    fn a_span_is_said_in_its_largest_whole_unit_never_rounded() {
        assert_eq!(span(0), "0 s");
        assert_eq!(span(90), "90 s");
        assert_eq!(span(3_600), "1 h");
        assert_eq!(span(5_400), "90 min");
        assert_eq!(span(604_800), "7 d");
        assert_eq!(span(90_000), "25 h");
    }

    #[test]
    fn counts_say_one_thing_and_many_things() {
        assert_eq!(count(0, "run", "runs"), "0 runs");
        assert_eq!(count(1, "run", "runs"), "1 run");
        assert_eq!(count(2, "run", "runs"), "2 runs");
    }

    #[test]
    fn a_span_is_said_in_its_largest_whole_unit() {
        let now = 1_000_000_000_000;
        assert_eq!(ago(now, now), "just now");
        assert_eq!(ago(now - 59_999, now), "just now");
        assert_eq!(ago(now - 60_000, now), "1 min ago");
        assert_eq!(ago(now - 3 * 3_600_000 - 1, now), "3 h ago");
        assert_eq!(ago(now - 2 * 86_400_000, now), "2 d ago");
        assert_eq!(ago(now + 3 * 3_600_000, now), "in 3 h");
        assert_eq!(ago(i64::MIN, i64::MAX), "106751991167 d ago");
    }

    #[test]
    fn a_time_is_local_to_the_minute_with_its_offset() {
        let shown = when(0);
        // `YYYY-MM-DD HH:MM ±HH:MM`, whatever the zone the tests run in.
        assert_eq!(shown.len(), "1970-01-01 00:00 +00:00".len(), "{shown}");
        assert!(shown.starts_with("19"), "{shown}");
        assert_eq!(when(i64::MAX), format!("{} ms", i64::MAX));
    }
}
