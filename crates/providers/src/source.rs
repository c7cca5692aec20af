//! `CatalogSource`: the live `ModelSource`. Guests switch between the catalog's providers
//! (presets and the config file's own) that have a key or need none; each model is opened
//! once and kept, so switching back reuses its connections.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use async_trait::async_trait;
use wonopcode_protocol::{ModelError, ModelSource, ProviderListing, SharedModel};

use crate::catalog::{Choice, ModelCatalog, OpenAiWire};
use crate::http::HttpModel;

/// Reads an environment variable (a parameter so tests and embedders choose what it sees).
pub type EnvReader = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The catalog's providers, opened on demand.
pub struct CatalogSource {
    catalog: ModelCatalog,
    env: EnvReader,
    /// The run's model: what the command line chose.
    first: SharedModel,
    /// `--base-url`, which applies to the first model's provider only.
    base_url: Option<String>,
    /// `--wire`, likewise.
    wire: Option<OpenAiWire>,
    opened: Mutex<HashMap<(String, String), SharedModel>>,
}

impl CatalogSource {
    /// A source over `catalog` whose run started with `first` (opened from `base_url`
    /// when the command line gave one).
    pub fn new(
        catalog: ModelCatalog,
        env: EnvReader,
        first: SharedModel,
        base_url: Option<String>,
    ) -> Self {
        Self {
            catalog,
            env,
            first,
            base_url,
            wire: None,
            opened: Mutex::new(HashMap::new()),
        }
    }

    /// Speaks `wire` to the first model's provider, as the first model does.
    pub fn with_wire(mut self, wire: Option<OpenAiWire>) -> Self {
        self.wire = wire;
        self
    }
}

#[async_trait]
impl ModelSource for CatalogSource {
    fn providers(&self) -> Vec<ProviderListing> {
        let mut list = self.catalog.listings(&*self.env);
        let first = self.first.info();
        match list.iter_mut().find(|l| l.id == first.provider) {
            Some(own) if !own.models.contains(&first.id) => {
                own.models.push(first.id.clone());
                own.models.sort();
            }
            Some(_) => {}
            None => {
                list.push(wonopcode_protocol::model_source::listing_of(first));
                list.sort_by(|a, b| a.id.cmp(&b.id));
            }
        }
        list
    }

    async fn open(&self, provider: &str, model: Option<&str>) -> Result<SharedModel, ModelError> {
        let first = self.first.info();
        let Some(entry) = self.catalog.get(provider) else {
            return Err(ModelError::Other(
                self.catalog.unknown_provider(provider).to_string(),
            ));
        };
        let model = match model.or(entry.default_model.as_deref()) {
            Some(m) => m.to_owned(),
            None if provider == first.provider => first.id.clone(),
            None => {
                return Err(ModelError::Other(format!(
                    "provider `{provider}` has no default model; name one"
                )));
            }
        };
        if provider == first.provider && model == first.id {
            return Ok(self.first.clone());
        }
        let key = (provider.to_owned(), model.clone());
        if let Some(open) = self.opened.lock().get(&key).cloned() {
            return Ok(open);
        }
        let choice = Choice {
            provider: Some(provider),
            model: Some(&model),
            base_url: self
                .base_url
                .as_deref()
                .filter(|_| provider == first.provider),
            wire: self.wire.filter(|_| provider == first.provider),
        };
        let settings = self
            .catalog
            .resolve(choice, &*self.env)
            .await
            .map_err(|e| ModelError::Other(e.to_string()))?;
        let opened: SharedModel =
            Arc::new(HttpModel::new(settings).map_err(|e| ModelError::Other(e.to_string()))?);
        self.opened.lock().insert(key, opened.clone());
        Ok(opened)
    }
}

#[cfg(test)]
mod tests {
    use wonopcode_protocol::{ModelInfo, SingleModel};

    use super::*;

    fn first() -> SharedModel {
        let info = ModelInfo {
            id: "gpt-test".to_owned(),
            provider: "openai".to_owned(),
            context_window: 1000,
            max_output: 100,
            pricing: None,
            capabilities: Default::default(),
        };
        let model = crate::replay::ReplayProvider::new(
            crate::transcript::Transcript {
                model: info,
                turns: Vec::new(),
            },
            std::path::Path::new("t"),
        );
        Arc::new(model)
    }

    fn source(vars: &'static [(&'static str, &'static str)]) -> CatalogSource {
        let env: EnvReader = Arc::new(move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        });
        CatalogSource::new(ModelCatalog::builtin().unwrap(), env, first(), None)
    }

    #[test]
    fn lists_providers_with_a_key_or_none_needed_and_the_runs_model() {
        let ids: Vec<String> = source(&[("OPENAI_API_KEY", "k")])
            .providers()
            .into_iter()
            .map(|l| l.id)
            .collect();
        assert!(ids.contains(&"openai".to_owned()));
        assert!(
            ids.contains(&"ollama".to_owned()),
            "local needs no key: {ids:?}"
        );
        assert!(
            !ids.contains(&"anthropic".to_owned()),
            "no key set: {ids:?}"
        );
        let openai = source(&[])
            .providers()
            .into_iter()
            .find(|l| l.id == "openai")
            .unwrap();
        assert!(openai.models.contains(&"gpt-test".to_owned()));
    }

    #[tokio::test]
    async fn opens_the_runs_model_itself_and_other_models_once() {
        let source = source(&[("ANTHROPIC_API_KEY", "k")]);
        let same = source.open("openai", Some("gpt-test")).await.unwrap();
        assert!(std::ptr::addr_eq(
            Arc::as_ptr(&same),
            Arc::as_ptr(&source.first)
        ));
        let claude = source.open("anthropic", None).await.unwrap();
        assert_eq!(claude.info().provider, "anthropic");
        let again = source.open("anthropic", None).await.unwrap();
        assert!(std::ptr::addr_eq(Arc::as_ptr(&claude), Arc::as_ptr(&again)));
    }

    #[tokio::test]
    async fn refuses_an_unknown_provider_and_a_missing_key_with_the_reason() {
        let source = source(&[]);
        let e = source.open("nope", None).await.err().unwrap().to_string();
        assert!(e.contains("unknown provider `nope`"), "{e}");
        let e = source
            .open("anthropic", None)
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("ANTHROPIC_API_KEY"), "{e}");
        // The single-model source says what it has.
        let single = SingleModel(first());
        let e = single
            .open("openai", Some("x"))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("available: gpt-test"), "{e}");
    }
}
