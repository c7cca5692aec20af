//! The contexts of a turn, for the terminal: each sub-context's module (to label its lines)
//! and how it ended, printed at the end of the turn as a summary tree (module, status,
//! duration, tokens, cost per context).

use std::collections::BTreeMap;
use std::time::Instant;

use wonopcode_protocol::{ContextPath, ContextStatus, LoopStatus, Usage};

/// How one sub-context ended.
struct Ended {
    status: ContextStatus,
    duration_ms: u64,
    requests: u32,
    usage: Usage,
}

/// The sub-contexts seen since the turn began.
#[derive(Default)]
pub struct TurnContexts {
    /// Module names by path; kept across turns so late events still get a label.
    modules: BTreeMap<Vec<u32>, String>,
    ended: BTreeMap<Vec<u32>, Ended>,
    started: Option<Instant>,
}

impl TurnContexts {
    /// The root's turn begins.
    pub fn begin(&mut self) {
        self.ended.clear();
        self.started = Some(Instant::now());
    }

    /// A sub-context started.
    pub fn started(&mut self, path: &ContextPath, module: &str) {
        self.modules.insert(path.numbers(), module.to_owned());
    }

    /// A sub-context ended, after `requests` model requests of its own.
    pub fn ended(
        &mut self,
        path: &ContextPath,
        status: ContextStatus,
        duration_ms: u64,
        requests: u32,
        usage: Usage,
    ) {
        self.ended.insert(
            path.numbers(),
            Ended {
                status,
                duration_ms,
                requests,
                usage,
            },
        );
    }

    /// The model requests the turn's sub-contexts made, all of them.
    pub fn requests(&self) -> u32 {
        self.ended.values().map(|e| e.requests).sum()
    }

    /// The module running `path`, when it is a known sub-context.
    pub fn module(&self, path: &ContextPath) -> Option<&str> {
        self.modules.get(&path.numbers()).map(String::as_str)
    }

    /// The summary tree of the turn that just ended, or nothing when it spawned no context.
    pub fn summary(&self, root_module: &str, status: LoopStatus, usage: &Usage) -> Vec<String> {
        if self.ended.is_empty() {
            return Vec::new();
        }
        let root_ms = self.started.map_or(0, |s| {
            u64::try_from(s.elapsed().as_millis()).unwrap_or(u64::MAX)
        });
        let mut rows = vec![[
            "0".to_owned(),
            root_module.to_owned(),
            status_word(status).to_owned(),
            elapsed(root_ms),
            tokens(usage),
            cost(usage),
        ]];
        for (path, ended) in &self.ended {
            let depth = path.len().saturating_sub(1);
            let text: Vec<String> = path.iter().map(u32::to_string).collect();
            rows.push([
                format!("{}{}", "  ".repeat(depth), text.join(".")),
                self.modules.get(path).cloned().unwrap_or_default(),
                ended.status.as_str().to_owned(),
                elapsed(ended.duration_ms),
                tokens(&ended.usage),
                cost(&ended.usage),
            ]);
        }
        let mut widths = [0usize; 6];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut lines = vec!["contexts:".to_owned()];
        for row in rows {
            lines.push(format!(
                "  {:<w0$}  {:<w1$}  {:<w2$}  {:>w3$}  {:>w4$}  {}",
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                row[5],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2],
                w3 = widths[3],
                w4 = widths[4],
            ));
        }
        lines
    }
}

fn status_word(status: LoopStatus) -> &'static str {
    match status {
        LoopStatus::Complete => "completed",
        LoopStatus::Suspended => "suspended",
        LoopStatus::Error => "error",
        LoopStatus::MaxIterations => "max_iterations_reached",
        LoopStatus::Cancelled => "cancelled",
        LoopStatus::BudgetExceeded => "budget_exceeded",
    }
}

/// Milliseconds as seconds with one decimal.
pub fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// A short time as people read it: `870 ms` under a second, `4.0 s` from one on.
pub fn elapsed(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        seconds(ms)
    }
}

/// All tokens of a usage, cached input included, and the share of the prompt read from
/// the provider's cache when some was.
pub fn tokens(usage: &Usage) -> String {
    let all = usage.input_tokens
        + usage.cache_read_tokens
        + usage.cache_write_tokens
        + usage.output_tokens;
    match usage
        .cache_hit_ratio()
        .filter(|_| usage.cache_read_tokens > 0)
    {
        Some(ratio) => format!("{all} tokens, {:.0}% from cache", ratio * 100.0),
        None => format!("{all} tokens"),
    }
}

/// Tokens in and out as the turn's footer, `/cost` and `/status` all say them: every
/// input token (cached ones included, as providers bill them), how many of those the
/// provider's cache gave when it gave some, and the output.
pub fn in_out(usage: &Usage) -> String {
    let input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
    let cached = match usage.cache_read_tokens {
        0 => String::new(),
        n => format!(" ({n} cached)"),
    };
    format!("{input} in{cached} / {} out tokens", usage.output_tokens)
}

/// The cost in dollars, or `cost unknown`.
pub fn cost(usage: &Usage) -> String {
    usage.cost_micro_cents.map_or_else(
        || "cost unknown".to_owned(),
        |c| format!("${:.4}", c as f64 / 1e8),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A usage with a prompt mostly from the cache.
    fn cached() -> Usage {
        Usage {
            input_tokens: 100,
            cache_read_tokens: 800,
            cache_write_tokens: 100,
            output_tokens: 50,
            ..Usage::default()
        }
    }

    #[test]
    fn tokens_say_how_much_of_the_prompt_came_from_the_cache() {
        assert_eq!(tokens(&cached()), "1050 tokens, 80% from cache");
        let none = Usage {
            input_tokens: 100,
            ..Usage::default()
        };
        assert_eq!(tokens(&none), "100 tokens");
    }

    #[test]
    fn in_and_out_count_cached_input_as_input_and_say_it() {
        assert_eq!(in_out(&cached()), "1000 in (800 cached) / 50 out tokens");
        assert_eq!(in_out(&Usage::default()), "0 in / 0 out tokens");
    }

    #[test]
    fn the_summary_nests_children_under_their_parents_in_numeric_order() {
        let mut tree = TurnContexts::default();
        tree.begin();
        let root = ContextPath::root();
        let usage = Usage {
            input_tokens: 100,
            output_tokens: 20,
            cost_micro_cents: Some(1_000_000),
            ..Usage::default()
        };
        for (path, module) in [
            (root.child(10), "reviewer"),
            (root.child(2), "coder"),
            (root.child(2).child(1), "researcher"),
        ] {
            tree.started(&path, module);
            tree.ended(&path, ContextStatus::Completed, 1500, 2, usage);
        }
        assert_eq!(tree.requests(), 6);
        let lines = tree.summary("orchestrator", LoopStatus::Complete, &usage);
        assert_eq!(lines[0], "contexts:");
        assert!(lines[1].trim_start().starts_with("0 "), "{lines:?}");
        assert!(
            lines[2].contains("0.2 ") && lines[2].contains("coder"),
            "{lines:?}"
        );
        assert!(
            lines[3].contains("  0.2.1") && lines[3].contains("researcher"),
            "{lines:?}"
        );
        assert!(
            lines[4].contains("0.10") && lines[4].contains("reviewer"),
            "{lines:?}"
        );
        assert!(
            lines[2].contains("1.5 s")
                && lines[2].contains("120 tokens")
                && lines[2].contains("$0.0100")
        );
        assert!(
            TurnContexts::default()
                .summary("x", LoopStatus::Complete, &usage)
                .is_empty()
        );
    }
}
