//! `config`: what the user chose — preferred provider and model (flags, then config file) —
//! and arbitrary keys of the host config. In a child context, the preferred provider and
//! model are those of its `context-params` when given.

use crate::bindings::config::Host;
use crate::state::HostState;

impl Host for HostState {
    // A child context's preferences are what its parent asked for in `context-params`.
    fn get_user_preferred_provider(&mut self) -> wasmtime::Result<Option<String>> {
        if let Some(p) = self
            .spawn_params()
            .and_then(|p| p.preferred_provider.clone())
        {
            return Ok(Some(p));
        }
        Ok(match &self.host_config.preferred_provider {
            Some(p) => Some(p.clone()),
            None => self
                .run
                .as_ref()
                .map(|r| r.services.provider.info().provider.clone()),
        })
    }

    fn get_user_preferred_model(&mut self) -> wasmtime::Result<Option<String>> {
        if let Some(m) = self.spawn_params().and_then(|p| p.preferred_model.clone()) {
            return Ok(Some(m));
        }
        Ok(match &self.host_config.preferred_model {
            Some(m) => Some(m.clone()),
            None => self
                .run
                .as_ref()
                .map(|r| r.services.provider.info().id.clone()),
        })
    }

    fn get_config(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.host_config.values.get(&key).cloned())
    }

    fn get_user_preferences(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        let mut prefs: Vec<(String, String)> = self
            .host_config
            .values
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(p) = self.get_user_preferred_provider()? {
            prefs.push(("preferred-provider".to_owned(), p));
        }
        if let Some(m) = self.get_user_preferred_model()? {
            prefs.push(("preferred-model".to_owned(), m));
        }
        Ok(prefs)
    }
}
