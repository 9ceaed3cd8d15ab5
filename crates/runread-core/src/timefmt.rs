//! Time as runread writes it: milliseconds since the Unix epoch inside, RFC 3339 (UTC) outside.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// RFC 3339 in UTC with exactly three fractional digits, e.g. `2026-11-30T01:02:03.450Z`.
pub fn rfc3339(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    let format =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| "invalid-time".into())
}

/// Parses RFC 3339 into milliseconds since the epoch.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let t = OffsetDateTime::parse(s, &Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// An instant written exactly as [`rfc3339`] writes it (UTC, three fractional digits): what a
/// reader passes back of a time runread gave it. Any other form, even of a valid instant, is
/// `None`, so one instant has one spelling.
pub fn parse_exact(s: &str) -> Option<i64> {
    parse_rfc3339(s).filter(|ms| rfc3339(*ms) == s)
}

/// An agent's RFC 3339 timestamp as runread shows it: re-rendered by runread (UTC, milliseconds),
/// or `None` when it is absent or not a timestamp. What the agent wrote is never shown as it is:
/// only the instant it names, so a "time" cannot carry text.
pub fn agent_time(agent_written: Option<&str>) -> Option<String> {
    agent_written.and_then(parse_rfc3339).map(rfc3339)
}

/// Parses a duration such as `90s`, `15m`, `2h` or `7d` into milliseconds.
pub fn parse_duration_ms(s: &str) -> Option<i64> {
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: i64 = num.parse().ok()?;
    let mult = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(mult).filter(|v| *v > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips_to_the_millisecond() {
        let ms = 1_796_000_763_384;
        assert_eq!(parse_rfc3339(&rfc3339(ms)), Some(ms));
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_796_000_763_380), "2026-11-30T01:06:03.380Z");
    }

    #[test]
    fn only_runreads_own_spelling_of_an_instant_is_exact() {
        assert_eq!(
            parse_exact("2026-11-30T01:06:03.380Z"),
            Some(1_796_000_763_380)
        );
        for other in [
            "2026-11-30T01:06:03.38Z",
            "2026-11-30T01:06:03Z",
            "2026-11-30T02:06:03.380+01:00",
            "2026-11-30t01:06:03.380z",
            "2026-11-30T01:06:03.380Z ",
            "yesterday",
        ] {
            assert_eq!(parse_exact(other), None, "{other}");
        }
    }

    #[test]
    fn durations_parse_with_units_and_refuse_the_rest() {
        assert_eq!(parse_duration_ms("15m"), Some(900_000));
        assert_eq!(parse_duration_ms("60s"), Some(60_000));
        assert_eq!(parse_duration_ms("2h"), Some(7_200_000));
        assert_eq!(parse_duration_ms("0s"), None);
        assert_eq!(parse_duration_ms("15"), None);
        assert_eq!(parse_duration_ms("m"), None);
        assert_eq!(parse_duration_ms("-5m"), None);
    }
}
