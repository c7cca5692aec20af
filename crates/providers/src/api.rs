//! `Api`: which wire format a provider speaks — plain data the catalog picks and the HTTP
//! transport carries. The wire of each lives in its own module (`anthropic`, `openai`, ...);
//! `wires` maps one to the other, so the transport never names a provider.

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages (`POST {base}/messages`).
    Anthropic,
    /// OpenAI-compatible Chat Completions (`POST {base}/chat/completions`).
    OpenAi(MaxTokensField),
    /// OpenAI's Responses API (`POST {base}/responses`).
    Responses,
    /// Gemini (`POST {base}/models/{model}:streamGenerateContent?alt=sse`, or
    /// `{base}/tunedModels/…` for a tuned model).
    Gemini,
    /// Claude on Amazon Bedrock (`POST {base}/model/{model}/invoke-with-response-stream`).
    Bedrock,
    /// Claude on Google Vertex AI (`POST {base}/{model}:streamRawPredict`).
    Vertex,
}

/// How a server wants the output cap named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_tokens`: every compatible server.
    MaxTokens,
    /// `max_completion_tokens`: OpenAI itself (its reasoning models refuse `max_tokens`).
    MaxCompletionTokens,
}
