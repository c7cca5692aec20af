//! `--json`: one event per line on stdout, nothing else there.

use std::io::Write;

use wonopcode_protocol::Event;

use super::Renderer;

/// Writes events as JSON Lines to stdout.
#[derive(Default)]
pub struct JsonlRenderer;

impl Renderer for JsonlRenderer {
    fn render(&mut self, event: &Event) {
        let Ok(line) = event.to_json_line() else {
            return;
        };
        let mut out = std::io::stdout().lock();
        // A closed stdout (`| head`) is not worth failing the run for.
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }
}
