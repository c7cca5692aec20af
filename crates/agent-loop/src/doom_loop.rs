//! Doom-loop detection: the same tool with the same arguments several times in a row means
//! the model is stuck (3 times by default: `LoopConfig::doom_loop_threshold`). Both loops
//! check every stored response through here (`Run::check_repetition`).
//!
//! A call is remembered as a 64-bit fingerprint of its tool's name and its arguments' JSON
//! value, computed by a serde visitor while parsing: no copy of the call and no parsed tree
//! is kept or built. Spacing, key order, escapes and number spelling (`1.0`, `1.00`) do not
//! matter; `1` and `1.0` differ, as they do for `serde_json::Value`, and `-0` equals `0.0`.
//! An object that repeats a key counts every copy (a parsed value would keep the last).

use std::hash::{BuildHasher, Hash, Hasher};

use foldhash::quality::{FixedState, FoldHasher};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// Counts consecutive identical tool calls.
#[derive(Debug, Clone, Default)]
pub struct DoomLoopDetector {
    last: Option<u64>,
    count: usize,
}

impl DoomLoopDetector {
    /// Records a call and returns how many times in a row it has now been seen.
    pub fn observe(&mut self, name: &str, arguments: &str) -> usize {
        let signature = signature(name, arguments);
        if self.last == Some(signature) {
            self.count += 1;
        } else {
            self.last = Some(signature);
            self.count = 1;
        }
        self.count
    }

    /// Forgets the streak (after the user allowed it to go on).
    pub fn reset(&mut self) {
        self.last = None;
        self.count = 0;
    }
}

/// A call's fingerprint: its tool's name and its arguments' JSON value, or their text when
/// they are not JSON.
fn signature(name: &str, arguments: &str) -> u64 {
    match serde_json::from_str::<Fingerprint>(arguments) {
        Ok(Fingerprint(value)) => mix(Tag::Call, (name, value)),
        Err(_) => mix(Tag::Text, (name, arguments)),
    }
}

/// What a hashed value was, so that values of different kinds never share a fingerprint.
#[derive(Hash, Clone, Copy)]
enum Tag {
    Bool,
    Unsigned,
    Negative,
    Float,
    Str,
    Null,
    Array,
    Object,
    Entry,
    Call,
    Text,
}

/// A hasher with a fixed seed: the same value hashes the same in every run. foldhash's
/// `quality` variant, because object entries are summed and need well-mixed hashes.
fn hasher(tag: Tag) -> FoldHasher<'static> {
    let mut hasher = FixedState::default().build_hasher();
    tag.hash(&mut hasher);
    hasher
}

fn mix(tag: Tag, value: impl Hash) -> u64 {
    let mut hasher = hasher(tag);
    value.hash(&mut hasher);
    hasher.finish()
}

/// The fingerprint of a JSON value, built by a visitor as the parser reads it.
struct Fingerprint(u64);

impl<'de> Deserialize<'de> for Fingerprint {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(FingerprintVisitor)
    }
}

struct FingerprintVisitor;

impl<'de> Visitor<'de> for FingerprintVisitor {
    type Value = Fingerprint;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Fingerprint, E> {
        Ok(Fingerprint(mix(Tag::Bool, v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Fingerprint, E> {
        Ok(Fingerprint(mix(Tag::Unsigned, v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Fingerprint, E> {
        // As in `serde_json::Number`, a non-negative integer is the same number however read.
        Ok(Fingerprint(match u64::try_from(v) {
            Ok(unsigned) => mix(Tag::Unsigned, unsigned),
            Err(_) => mix(Tag::Negative, v),
        }))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Fingerprint, E> {
        // -0.0 == 0.0, as floats compare.
        let v = if v == 0.0 { 0.0f64 } else { v };
        Ok(Fingerprint(mix(Tag::Float, v.to_bits())))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Fingerprint, E> {
        Ok(Fingerprint(mix(Tag::Str, v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Fingerprint, E> {
        Ok(Fingerprint(mix(Tag::Null, ())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Fingerprint, A::Error> {
        let mut hasher = hasher(Tag::Array);
        while let Some(Fingerprint(item)) = seq.next_element()? {
            item.hash(&mut hasher);
        }
        Ok(Fingerprint(hasher.finish()))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fingerprint, A::Error> {
        // Entries are summed, so their order does not matter.
        let (mut sum, mut entries) = (0u64, 0usize);
        while let Some((Fingerprint(key), Fingerprint(value))) = map.next_entry()? {
            sum = sum.wrapping_add(mix(Tag::Entry, (key, value)));
            entries += 1;
        }
        Ok(Fingerprint(mix(Tag::Object, (sum, entries))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_identical_consecutive_calls() {
        let mut d = DoomLoopDetector::default();
        assert_eq!(d.observe("read", r#"{"path":"a"}"#), 1);
        assert_eq!(d.observe("read", r#"{ "path": "a" }"#), 2);
        assert_eq!(d.observe("read", r#"{"path":"a"}"#), 3);
        assert_eq!(d.observe("read", r#"{"path":"b"}"#), 1);
        assert_eq!(d.observe("grep", r#"{"path":"b"}"#), 1);
        d.reset();
        assert_eq!(d.observe("grep", r#"{"path":"b"}"#), 1);
    }

    #[test]
    fn arguments_compare_as_json_values() {
        let same = |a: &str, b: &str| signature("t", a) == signature("t", b);
        assert!(same(
            r#"{"a":[1,"x"],"b":{"c":null}}"#,
            r#"{ "b": {"c": null}, "a": [1, "x"] }"#
        ));
        assert!(same(r#"{"a":"\u0041"}"#, r#"{"a":"A"}"#));
        assert!(same(r#"{"a":1.0}"#, r#"{"a":1.00}"#));
        assert!(same(r#"{"a":-0}"#, r#"{"a":0.0}"#));
        assert!(!same(r#"{"a":1}"#, r#"{"a":1.0}"#));
        assert!(!same(r#"{"a":[1,2]}"#, r#"{"a":[2,1]}"#));
        assert!(!same(r#"{"a":"1"}"#, r#"{"a":1}"#));
        assert!(!same(r#"{"a":1}"#, r#"{"a":1,"b":1}"#));
        assert!(!same(r#"{"a":{}}"#, r#"{"a":[]}"#));
        assert!(!same(r#"{"a":1}"#, r#"{"a":1} x"#));
        assert!(same("not json", "not json"));
        assert!(!same("not json", "not  json"));
        assert_ne!(signature("t", "{}"), signature("u", "{}"));
    }
}
