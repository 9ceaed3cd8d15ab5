//! Canonical JSON: object keys sorted bytewise at every depth, compact, serde_json's number and
//! string forms. What runread hashes is always this form, never a map's own order: maps keep
//! insertion order (so a result can put its trust label first), and a digest must not depend on
//! the order a client or an agent wrote keys in.

use std::io;

use serde_json::Value;

/// Writes `value` in canonical form to `out`.
pub fn write(value: &Value, out: &mut impl io::Write) -> io::Result<()> {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.write_all(b"{")?;
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                serde_json::to_writer(&mut *out, k)?;
                out.write_all(b":")?;
                if let Some(v) = map.get(k) {
                    write(v, out)?;
                }
            }
            out.write_all(b"}")
        }
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write(v, out)?;
            }
            out.write_all(b"]")
        }
        scalar => serde_json::to_writer(&mut *out, scalar).map_err(io::Error::other),
    }
}

/// `value` in canonical form.
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail, and a `Value` always serializes.
    let _ = write(value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keys_are_sorted_at_every_depth_whatever_the_insertion_order() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"d":[{"z":1,"y":2}],"c":"é<"},"A":null}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"A":null,"a":{"c":"é<","d":[{"y":2,"z":1}]},"b":1}"#).unwrap();
        let want = r#"{"A":null,"a":{"c":"é<","d":[{"y":2,"z":1}]},"b":1}"#;
        assert_eq!(String::from_utf8(to_vec(&a)).unwrap(), want);
        assert_eq!(to_vec(&a), to_vec(&b));
    }

    proptest! {
        /// The canonical form is JSON that decodes to the same value.
        #[test]
        fn canonical_form_decodes_to_the_same_value(
            pairs in proptest::collection::vec(("[a-c]{1,3}", any::<i64>(), ".{0,8}"), 0..8)
        ) {
            let mut m = serde_json::Map::new();
            for (k, n, s) in pairs {
                m.insert(k, serde_json::json!({"n": n, "s": s, "l": [n, s]}));
            }
            let v = Value::Object(m);
            let back: Value = serde_json::from_slice(&to_vec(&v)).unwrap();
            prop_assert_eq!(back, v);
        }
    }
}
