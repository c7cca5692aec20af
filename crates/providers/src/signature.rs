//! Whose reasoning a thinking part's signature holds. `Part::Thinking` (shared with guests
//! through the WIT world) has one opaque `signature`; Anthropic's go in as they come, and the
//! other APIs' are marked with a prefix so each request builder sends back only its own API's
//! reasoning: a server refuses, or cannot read, another's.

/// An API whose reasoning is kept under a mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marked {
    /// OpenAI's Responses API: a reasoning item's `encrypted_content`.
    Responses,
    /// Gemini: a part's `thoughtSignature`.
    Gemini,
}

impl Marked {
    fn prefix(self) -> &'static str {
        match self {
            Marked::Responses => "openai-responses:",
            Marked::Gemini => "gemini:",
        }
    }

    /// The signature that stands for this API's `raw` reasoning.
    pub fn mark(self, raw: &str) -> String {
        format!("{}{raw}", self.prefix())
    }

    /// This API's reasoning a signature stands for, when it is this API's.
    pub fn unmark(self, signature: &str) -> Option<&str> {
        signature.strip_prefix(self.prefix())
    }
}

/// True for a signature another API marked: never Anthropic's own.
pub fn is_marked(signature: &str) -> bool {
    [Marked::Responses, Marked::Gemini]
        .into_iter()
        .any(|api| api.unmark(signature).is_some())
}
