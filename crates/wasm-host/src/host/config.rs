//! `config`: what the user chose — preferred provider and model (flags, then config file) —
//! and arbitrary keys of the host config.

use crate::bindings::config::Host;
use crate::state::HostState;

impl Host for HostState {
    fn get_user_preferred_provider(&mut self) -> wasmtime::Result<Option<String>> {
        Ok(match &self.host_config.preferred_provider {
            Some(p) => Some(p.clone()),
            None => self
                .env
                .as_ref()
                .map(|e| e.provider.info().provider.clone()),
        })
    }

    fn get_user_preferred_model(&mut self) -> wasmtime::Result<Option<String>> {
        Ok(match &self.host_config.preferred_model {
            Some(m) => Some(m.clone()),
            None => self.env.as_ref().map(|e| e.provider.info().id.clone()),
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
