//! Questions a guest asks the user (`ui.request-input`, `ui.request-confirmation`). The
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
}
