//! Optional summary of session_search hits by an auxiliary model, configured under
//! `auxiliary.session_search` (`model`, and optionally `provider`, `base_url`, `api_key`,
//! `timeout` seconds). Off unless a model is set. A summary that fails or times out leaves the
//! results as they are, with a note; the search itself never fails because of it.
//! [`aux_config`] and [`complete`] serve the other one-shot auxiliary tasks of the sessions
//! subsystem too (`auxiliary.title_generation`).

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use crate::config::Config;
use crate::llm::provider::{Provider, ProviderFlags, ResolveInputs};
use crate::llm::{ChatRequest, LlmEvent, Message};

const TEMPLATE: &str = include_str!("../../prompts/session_search_summary.md.j2");
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Most characters of results sent to the summariser.
const MAX_INPUT_CHARS: usize = 24_000;

/// `auxiliary.session_search` when a model is configured.
#[derive(Debug, Clone)]
pub struct SummaryConfig {
    pub flags: ProviderFlags,
    pub timeout: Duration,
}

pub fn config(cfg: &Config) -> Option<SummaryConfig> {
    aux_config(cfg, "session_search")
}

/// `auxiliary.<task>` when a model is configured for it.
pub fn aux_config(cfg: &Config, task: &str) -> Option<SummaryConfig> {
    let aux = cfg.file.auxiliary.task(task)?;
    let auto = |v: &Option<String>| v.clone().filter(|s| s != "auto");
    Some(SummaryConfig {
        flags: ProviderFlags {
            provider: auto(&aux.provider),
            model: Some(auto(&aux.model)?),
            base_url: aux.base_url.clone(),
            api_key: aux.api_key.clone(),
        },
        timeout: aux.timeout().unwrap_or(DEFAULT_TIMEOUT),
    })
}

/// Asks the auxiliary model for a summary of `results` (the discover JSON).
pub async fn summarize(
    cfg: &Config,
    sc: &SummaryConfig,
    query: &str,
    results: &Value,
) -> Result<String, String> {
    let results_text = serde_json::to_string_pretty(results).unwrap_or_default();
    let results_text = crate::util::truncate_chars(&results_text, MAX_INPUT_CHARS);
    let prompt = render(query, results_text).map_err(|e| format!("summary prompt: {e}"))?;
    complete(cfg, sc, None, "auxiliary.session_search", prompt, 1_024).await
}

/// One answer from the auxiliary model of `sc` to `prompt` (a single user message), within
/// `sc.timeout`; `what` names the config section in errors. Without a provider or base URL of
/// its own, the task uses `main` (the session's provider) with its model, as Python Hermes'
/// `provider: auto` does.
pub async fn complete(
    cfg: &Config,
    sc: &SummaryConfig,
    main: Option<&Provider>,
    what: &str,
    prompt: String,
    max_tokens: u32,
) -> Result<String, String> {
    let provider = match main {
        Some(main) if sc.flags.provider.is_none() && sc.flags.base_url.is_none() => {
            let mut p = main.clone();
            if let Some(model) = &sc.flags.model {
                p.model = model.clone();
            }
            p
        }
        _ => crate::llm::provider::resolve(ResolveInputs {
            flags: &sc.flags,
            config: cfg,
            probe_timeout: Duration::from_secs(1),
        })
        .await
        .map_err(|e| format!("{what}: {e}"))?,
    };
    let client = crate::llm::client_for(&provider).map_err(|e| e.to_string())?;
    let request = ChatRequest {
        model: provider.model.clone(),
        system: String::new(),
        messages: vec![Message::user(prompt)],
        tools: Vec::new(),
        max_tokens: Some(max_tokens),
        temperature: None,
    };
    let call = async {
        let mut stream = client.stream(request).await.map_err(|e| e.to_string())?;
        while let Some(event) = stream.next().await {
            if let LlmEvent::Done(response) = event.map_err(|e| e.to_string())? {
                return Ok(response.message.content.unwrap_or_default());
            }
        }
        Err(format!("the {what} answer stream ended without an answer"))
    };
    match tokio::time::timeout(sc.timeout, call).await {
        Ok(Ok(text)) if !text.trim().is_empty() => Ok(text.trim().to_string()),
        Ok(Ok(_)) => Err(format!("the {what} model returned nothing")),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("the {what} call took longer than {:?}", sc.timeout)),
    }
}

fn render(query: &str, results: &str) -> Result<String, minijinja::Error> {
    let mut env = minijinja::Environment::new();
    env.add_template("summary", TEMPLATE)?;
    env.get_template("summary")?
        .render(minijinja::context! { query => query, results => results })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EnvVars, HermesHome};

    #[test]
    fn off_unless_a_model_is_set() {
        let home = tempfile::tempdir().unwrap();
        let load = |yaml: &str| {
            Config::from_yaml(
                HermesHome::new(home.path()),
                EnvVars::default(),
                yaml,
                &home.path().join("config.yaml"),
            )
            .unwrap()
        };
        assert!(config(&load("")).is_none());
        let cfg = load("auxiliary:\n  session_search:\n    model: ''\n    provider: auto\n");
        assert!(config(&cfg).is_none());
        let cfg = load("auxiliary:\n  session_search:\n    model: small\n    timeout: 5\n");
        let sc = config(&cfg).unwrap();
        assert_eq!(sc.flags.model.as_deref(), Some("small"));
        assert_eq!(sc.flags.provider, None);
        assert_eq!(sc.timeout, Duration::from_secs(5));
    }

    #[test]
    fn prompt_snapshot() {
        insta::assert_snapshot!(render("capybara release", "{\"results\": []}").unwrap());
    }
}
