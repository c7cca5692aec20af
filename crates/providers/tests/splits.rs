//! However the network cuts a stream into pieces, the client assembles the same result:
//! every fixture, split at random byte offsets (inside UTF-8 characters, CRLFs and JSON
//! included), against the same fixture sent whole.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use proptest::prelude::*;
use support::{OPENAI, Reply, collect, fixture, serve, settings};
use wonopcode_providers::Api;

const FIXTURES: &[(&str, Api)] = &[
    ("anthropic/text-ping-padded.sse", Api::Anthropic),
    ("anthropic/thinking-signature-text.sse", Api::Anthropic),
    (
        "anthropic/parallel-tool-use-empty-input.sse",
        Api::Anthropic,
    ),
    ("anthropic/docs-tool-use-text-then-tool.sse", Api::Anthropic),
    ("own/anthropic-redacted-thinking.sse", Api::Anthropic),
    ("openai/tool-call-include-usage.sse", OPENAI),
    ("openai/text-include-usage.sse", OPENAI),
    ("openrouter/processing-comments-midstream-error.sse", OPENAI),
    ("own/llamacpp-text.sse", OPENAI),
    ("own/vllm-tool-call.sse", OPENAI),
    ("own/deepseek-reasoning.sse", OPENAI),
    ("responses/tool-call-event-lines.sse", Api::Responses),
    ("responses/text-after-tool-event-lines.sse", Api::Responses),
    ("own/responses-parallel-calls.sse", Api::Responses),
    ("gemini/thought-summaries.sse", Api::Gemini),
];

fn split(body: &[u8], cuts: &[prop::sample::Index]) -> Vec<Vec<u8>> {
    let mut at: Vec<usize> = cuts.iter().map(|i| i.index(body.len() + 1)).collect();
    at.sort_unstable();
    at.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in at.into_iter().chain([body.len()]) {
        pieces.push(body[start..cut].to_vec());
        start = cut;
    }
    pieces
}

fn assemble(api: Api, pieces: Vec<Vec<u8>>) -> support::Collected {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = serve(vec![Reply::Pieces {
            status: 200,
            content_type: "text/event-stream".into(),
            headers: Vec::new(),
            pieces,
            delay: Duration::from_micros(200),
        }])
        .await;
        let mut s = settings(api, &server.base_url);
        s.retry.max_attempts = 1;
        collect(s).await
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn any_split_assembles_the_same(cuts in prop::collection::vec(any::<prop::sample::Index>(), 1..16)) {
        for (file, api) in FIXTURES {
            let api = *api;
            let body = fixture(file);
            let whole = assemble(api, vec![body.clone()]);
            let pieces = split(&body, &cuts);
            let got = assemble(api, pieces);
            prop_assert_eq!(&got, &whole, "{} split at {:?}", file, cuts);
        }
    }
}
