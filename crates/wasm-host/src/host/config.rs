//! `config`: what the user chose — preferred provider and model (flags, then config file) —
//! and arbitrary keys of the host config. In a child context, the preferred provider and
//! model are those of its `context-params` when given.

use wasmtime::component::HasData;

use crate::bindings::config::Host;
use crate::state::{HostState, Place, RunSlot};

/// What `config` sees of a store: the guest's place (the host config, its spawn
/// parameters) and the run (its model, the fallback preference).
pub(crate) struct ConfigView<'a> {
    place: &'a Place,
    run: &'a RunSlot,
}

impl<'a> ConfigView<'a> {
    pub(crate) fn of(state: &'a mut HostState) -> Self {
        Self {
            place: &state.place,
            run: &state.run,
        }
    }
}

/// Links `config` on [`ConfigView`].
pub(crate) struct ConfigData;

impl HasData for ConfigData {
    type Data<'a> = ConfigView<'a>;
}

impl Host for ConfigView<'_> {
    // A child context's preferences are what its parent asked for in `context-params`.
    fn get_user_preferred_provider(&mut self) -> wasmtime::Result<Option<String>> {
        if let Some(p) = self
            .place
            .spawn_request()
            .and_then(|p| p.preferred_provider.clone())
        {
            return Ok(Some(p));
        }
        Ok(match &self.place.host_config.preferred_provider {
            Some(p) => Some(p.clone()),
            None => self
                .run
                .run
                .as_ref()
                .map(|r| r.services.provider.info().provider.clone()),
        })
    }

    fn get_user_preferred_model(&mut self) -> wasmtime::Result<Option<String>> {
        if let Some(m) = self
            .place
            .spawn_request()
            .and_then(|p| p.preferred_model.clone())
        {
            return Ok(Some(m));
        }
        Ok(match &self.place.host_config.preferred_model {
            Some(m) => Some(m.clone()),
            None => self
                .run
                .run
                .as_ref()
                .map(|r| r.services.provider.info().id.clone()),
        })
    }

    fn get_config(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.place.host_config.values.get(&key).cloned())
    }

    fn get_user_preferences(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        let mut prefs: Vec<(String, String)> = self
            .place
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
