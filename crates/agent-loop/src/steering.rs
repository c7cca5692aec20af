//! Text the person sends into a turn that is running ("steering", as Codex calls it): a
//! front-end puts it in the session's [`Steering`] inbox, and the turn's run takes it just
//! before its next model request, where it becomes a user message after the last tool
//! results. Both loops take it in the same place ([`crate::Run::ready_for_response`]), so a
//! guest that asks through `providers.run-turn` is steered as the native loop is; a loop
//! that builds its own requests never is, and what it leaves stays in the inbox for the
//! front-end to send as the next prompt.
//!
//! Only the root context is steered: the person speaks to the agent they prompted, not to a
//! specialist it delegated to (which has none of the conversation), so child contexts get
//! an inbox nobody fills.

use std::sync::Arc;

use parking_lot::Mutex;

/// The inbox of one session's steering texts, shared by the front-end that fills it and the
/// run that empties it (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct Steering(Arc<Mutex<Vec<String>>>);

impl Steering {
    /// Sends `text` into the running turn: its run takes it before its next request.
    pub fn send(&self, text: String) {
        self.0.lock().push(text);
    }

    /// Takes every text waiting, oldest first: the run before a request, or the front-end
    /// after a turn that made no request after they were sent.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock())
    }

    /// Whether no text waits.
    pub fn is_empty(&self) -> bool {
        self.0.lock().is_empty()
    }

    /// The texts waiting, oldest first (for a front-end to show them).
    pub fn waiting(&self) -> Vec<String> {
        self.0.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_taken_once_in_the_order_sent() {
        let inbox = Steering::default();
        let front_end = inbox.clone();
        front_end.send("first".to_owned());
        front_end.send("second".to_owned());
        assert_eq!(front_end.waiting(), ["first", "second"]);
        assert_eq!(inbox.take(), ["first", "second"]);
        assert!(inbox.take().is_empty());
        assert!(front_end.waiting().is_empty());
    }
}
