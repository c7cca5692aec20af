//! Questions a guest asks the user (`ui.request-input`, `ui.request-confirmation`,
//! `ui.request-form`). The
//! embedder decides how they are asked (the CLI asks on the terminal); without a prompter,
//! or when nobody is at the terminal, the guest hears that nobody answered.

use async_trait::async_trait;

/// Asks the user on a guest's behalf.
#[async_trait]
pub trait GuestPrompter: Send + Sync {
    /// Asks for a line of text; `None` when the user gave none (end of input, no terminal).
    async fn input(&self, guest: &str, prompt: &str) -> Option<String>;

    /// Asks a yes/no question; anything but an explicit yes is no.
    async fn confirm(&self, guest: &str, message: &str) -> bool;

    /// Asks for a form: `schema` is a JSON Schema object, `fields` its properties in the
    /// guest's order. The values, fields left out filled with their defaults; `None` when
    /// the user declined or cancelled, or nobody can answer (the default).
    async fn form(
        &self,
        _guest: &str,
        _message: &str,
        _schema: &serde_json::Map<String, serde_json::Value>,
        _fields: &[String],
    ) -> Option<serde_json::Map<String, serde_json::Value>> {
        None
    }
}
