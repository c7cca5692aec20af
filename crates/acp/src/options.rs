//! The session's config options (`session/set_config_option`): the model answering the
//! root — any the run's providers offer, grouped by provider — and, when that model
//! thinks, how much (off, low, medium, high). Each change is the session's own
//! (`Session::switch_model`, `Session::set_thinking`), kept in the journal as the REPL's
//! `/model` is.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectGroup, SessionConfigSelectOption, SessionConfigSelectOptions,
};
use wonopcode_session::Session;
use wonopcode_session::generation::Thinking;

/// The model option's id.
const MODEL: &str = "model";
/// The thinking option's id.
const THINKING: &str = "thinking";
/// The thinking levels offered.
const LEVELS: [(Thinking, &str); 4] = [
    (Thinking::Off, "Off"),
    (Thinking::Low, "Low"),
    (Thinking::Medium, "Medium"),
    (Thinking::High, "High"),
];

/// The options `session` has, with their current values.
pub(crate) fn of(session: &Session) -> Vec<SessionConfigOption> {
    let info = session.model();
    let current = format!("{}/{}", info.provider, info.id);
    let mut groups: Vec<SessionConfigSelectGroup> = session
        .providers()
        .into_iter()
        .filter(|p| !p.models.is_empty())
        .map(|p| {
            let models = p
                .models
                .iter()
                .map(|m| SessionConfigSelectOption::new(format!("{}/{m}", p.id), m.clone()))
                .collect();
            SessionConfigSelectGroup::new(p.id.clone(), p.id.clone(), models)
        })
        .collect();
    let offered = groups
        .iter()
        .flat_map(|g| &g.options)
        .any(|o| o.value.to_string() == current);
    if !offered {
        // A model named by flag that its provider does not list is still the one answering.
        let own = SessionConfigSelectOption::new(current.clone(), info.id.clone());
        groups.insert(
            0,
            SessionConfigSelectGroup::new(info.provider.clone(), info.provider.clone(), vec![own]),
        );
    }
    let mut options = vec![
        SessionConfigOption::select(
            MODEL,
            "Model",
            current,
            SessionConfigSelectOptions::Grouped(groups),
        )
        .description(
            "The model answering the session (from the next prompt; the conversation carries over)"
                .to_owned(),
        )
        .category(SessionConfigOptionCategory::Model),
    ];
    if info.capabilities.thinking {
        let thinking = session.thinking();
        let mut levels: Vec<SessionConfigSelectOption> = LEVELS
            .iter()
            .map(|(level, name)| SessionConfigSelectOption::new(value_of(*level), *name))
            .collect();
        if !LEVELS.iter().any(|(level, _)| *level == thinking) {
            levels.push(SessionConfigSelectOption::new(
                value_of(thinking),
                format!("{} tokens", thinking.budget().unwrap_or_default()),
            ));
        }
        options.push(
            SessionConfigOption::select(THINKING, "Thinking", value_of(thinking), levels)
                .description("How much the model thinks before it answers".to_owned())
                .category(SessionConfigOptionCategory::ThoughtLevel),
        );
    }
    options
}

/// Sets option `id` of `session` to `value`; `Err`: one line saying why not (an unknown
/// option or value, a model that cannot be opened, a level the model cannot take).
pub(crate) async fn set(
    session: &mut Session,
    id: &str,
    value: &SessionConfigOptionValue,
) -> Result<(), String> {
    let Some(chosen) = value.as_value_id().map(ToString::to_string) else {
        return Err(format!(
            "option `{id}` takes one of its values, not a boolean"
        ));
    };
    match id {
        MODEL => {
            let (provider, model) = match chosen.split_once('/') {
                Some((provider, model)) => (provider, Some(model)),
                None => (chosen.as_str(), None),
            };
            session
                .switch_model(provider, model)
                .await
                .map(|_| ())
                .map_err(|e| format!("model `{chosen}`: {e}"))
        }
        THINKING => {
            let thinking: Thinking = chosen.parse()?;
            session
                .set_thinking(thinking)
                .map_err(|e| format!("thinking `{chosen}`: {e}"))
        }
        other => Err(format!(
            "no option `{other}`: the options are `{MODEL}` and `{THINKING}`"
        )),
    }
}

/// A thinking setting as its value id: `off`, `low`, `medium`, `high`, or its tokens.
fn value_of(thinking: Thinking) -> String {
    match serde_json::to_value(thinking) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => "off".to_owned(),
    }
}
