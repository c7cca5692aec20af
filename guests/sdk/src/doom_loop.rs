//! Doom-loop detection inside a guest: the same tool with the same arguments several times in
//! a row (across turns; identical calls within one turn count once).
//!
//! A call is remembered as a 64-bit fingerprint of its tool's name and its arguments' JSON
//! value, computed by a serde visitor while parsing: no copy of the call and no parsed tree
//! is kept or built. Calls compare as JSON values, as in the native loop's detector (which
//! hashes the canonical JSON with SHA-256): spacing, key order, escapes and number spelling
//! (`1.0`, `1.00`) do not matter; `1` and `1.0` differ, as they do for `serde_json::Value`.
//! One difference: an object that repeats a key counts every copy, where a parsed value
//! keeps the last.

use std::hash::{BuildHasher, Hash, Hasher};

use foldhash::quality::{FixedState, FoldHasher};

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::ToolCall;

/// Counts consecutive identical calls.
#[derive(Debug, Default)]
pub struct DoomLoop {
    last: Option<u64>,
    count: usize,
}

impl DoomLoop {
    /// Observes a turn's calls; returns the first call that reached `threshold` repeats, with
    /// its count.
    pub fn observe(&mut self, calls: &[ToolCall], threshold: usize) -> Option<(String, usize)> {
        for (i, call) in calls.iter().enumerate() {
            // A call written exactly like an earlier one of this turn is the same request.
            let earlier = &calls[..i];
            if earlier
                .iter()
                .any(|c| c.name == call.name && c.arguments == call.arguments)
            {
                continue;
            }
            let signature = signature(&call.name, &call.arguments);
            if self.last == Some(signature) {
                self.count += 1;
            } else {
                self.last = Some(signature);
                self.count = 1;
            }
            if self.count >= threshold {
                return Some((call.name.clone(), self.count));
            }
        }
        None
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

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c".to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        }
    }

    #[test]
    fn repeats_count_across_turns_whatever_the_spacing_and_key_order() {
        let mut doom = DoomLoop::default();
        assert_eq!(doom.observe(&[call("read", r#"{"a":1,"b":2}"#)], 3), None);
        assert_eq!(
            doom.observe(&[call("read", r#"{ "b": 2, "a": 1 }"#)], 3),
            None
        );
        assert_eq!(
            doom.observe(&[call("read", r#"{"a":1,"b":2}"#)], 3),
            Some(("read".to_owned(), 3))
        );
    }

    #[test]
    fn another_tool_or_other_arguments_start_a_new_streak() {
        let mut doom = DoomLoop::default();
        doom.observe(&[call("read", r#"{"a":1}"#)], 3);
        doom.observe(&[call("read", r#"{"a":1}"#)], 3);
        assert_eq!(doom.observe(&[call("grep", r#"{"a":1}"#)], 3), None);
        assert_eq!(doom.observe(&[call("grep", r#"{"a":2}"#)], 3), None);
        assert_eq!(doom.observe(&[call("grep", r#"{"a":2}"#)], 3), None);
        assert_eq!(
            doom.observe(&[call("grep", r#"{"a":2}"#)], 3),
            Some(("grep".to_owned(), 3))
        );
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
        assert_ne!(signature("t", "{}"), signature("u", "{}"));
    }

    #[test]
    fn identical_calls_of_one_turn_count_once_and_text_that_is_not_json_compares_as_text() {
        let mut doom = DoomLoop::default();
        let same = call("bash", "not json");
        assert_eq!(
            doom.observe(&[same.clone(), same.clone(), same.clone()], 3),
            None
        );
        assert_eq!(doom.observe(&[call("bash", "not json!")], 3), None);
        assert_eq!(doom.observe(&[call("bash", "not json!")], 3), None);
    }
}
