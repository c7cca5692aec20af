//! Names placed in an endpoint's path (a model id), encoded so that each stays the one path
//! segment it is meant to be, whatever characters it holds.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, PercentEncode, utf8_percent_encode};

/// What a segment keeps unencoded: RFC 3986's unreserved characters, as the AWS SDKs keep
/// them in a model id.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `name` as one path segment: everything but the unreserved characters percent-encoded,
/// `/`, `:`, `?` and `#` included.
pub(crate) fn path_segment(name: &str) -> PercentEncode<'_> {
    utf8_percent_encode(name, UNRESERVED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unreserved_characters_stay_as_they_are() {
        assert_eq!(
            path_segment("anthropic.claude-v2:1/x?y#z é~_").to_string(),
            "anthropic.claude-v2%3A1%2Fx%3Fy%23z%20%C3%A9~_"
        );
    }
}
