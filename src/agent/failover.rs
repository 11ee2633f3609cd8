//! `Failover`: decides, from a failure's `FailoverReason` alone, whether the loop retries the same
//! key, rotates to another key of the credential pool, or falls back to the next provider of
//! `fallback_providers`. Fallback is turn-scoped: each turn starts on the primary again unless
//! its keys are all cooling down. A context overflow never switches model.

use std::sync::Arc;
use std::time::Duration;

use crate::config::providers::FallbackFile;

use crate::agent::credentials::{AuthFile, CredentialPool, PoolAction, Seed, Strategy};
use crate::config::Config;
use crate::llm::provider::{self, ProviderFlags, ResolveInputs};
use crate::llm::{FailoverReason, LlmClient, LlmError, Provider};

/// What the loop should do after a failed call.
pub enum FailoverStep {
    /// Use the retry policy with the same client.
    Retry,
    /// Switch to this client and try again at once; the text says what changed (for the user).
    Switch(Arc<dyn LlmClient>, String),
    /// Stop: the error (with the pool's state appended when keys are the problem).
    GiveUp(LlmError),
}

pub struct Failover {
    /// The process's HTTP client: clients for other keys and fallbacks share its pool.
    http: Option<reqwest::Client>,
    primary: Provider,
    pool: Option<CredentialPool>,
    fallbacks: Vec<Provider>,
    /// 0 = primary, i = fallbacks[i - 1].
    active: usize,
}

impl Failover {
    /// Loads the primary's credential pool and resolves `fallback_providers` (and the legacy
    /// `fallback_model`). Returns the failover and, when the pool starts on another key than the
    /// one resolved, the client to use instead.
    pub async fn new(
        config: &Config,
        auth: &AuthFile,
        http: &reqwest::Client,
        primary: &Provider,
    ) -> (Self, Option<Arc<dyn LlmClient>>) {
        let pool_key = pool_key(primary);
        let strategy = config
            .file
            .credential_pool_strategies
            .get(&pool_key)
            .map_or(Strategy::FillFirst, |s| Strategy::parse(s));
        let extra = extra_keys(config, primary);
        let mut seeds: Vec<Seed<'_>> = primary
            .api_key
            .as_deref()
            .map(|key| Seed {
                key,
                source: "configured",
            })
            .into_iter()
            .collect();
        seeds.extend(extra.iter().map(|(key, source)| Seed { key, source }));
        let pool = match CredentialPool::load(auth, &pool_key, &seeds, strategy) {
            Ok(p) if !p.is_empty() => Some(p),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, "credential pool unavailable; using the configured key only");
                None
            }
        };
        let mut fallbacks = Vec::new();
        let entries = config.file.fallback_providers.iter();
        for entry in entries.chain(&config.file.fallback_model) {
            match resolve_entry(config, entry).await {
                Ok(p) => fallbacks.push(p),
                Err(e) => tracing::warn!(error = %e, "fallback provider skipped"),
            }
        }
        let mut failover = Failover {
            http: Some(http.clone()),
            primary: primary.clone(),
            pool,
            fallbacks,
            active: 0,
        };
        let initial = failover.primary_client_if_rekeyed();
        (failover, initial)
    }

    /// No pool and no fallbacks: every failure is left to the retry policy (background agents).
    pub fn fixed(primary: &Provider) -> Self {
        Failover {
            http: None,
            primary: primary.clone(),
            pool: None,
            fallbacks: Vec::new(),
            active: 0,
        }
    }

    /// At the start of a turn: back to the primary (with its current key) when it is usable.
    pub fn start_turn(&mut self) -> Option<Arc<dyn LlmClient>> {
        if self.active == 0 {
            return None;
        }
        if self
            .pool
            .as_ref()
            .is_some_and(|p| p.current_key().is_none())
        {
            return None;
        }
        self.active = 0;
        self.primary_client()
    }

    /// Before a call: when the primary is active and every key of its pool is dead or resting,
    /// switch to a fallback (returned), or fail without sending a request on a known-bad key.
    pub fn before_call(&mut self) -> Result<Option<Arc<dyn LlmClient>>, LlmError> {
        if self.active != 0 {
            return Ok(None);
        }
        let Some(pool) = self.pool.as_ref() else {
            return Ok(None);
        };
        if pool.current_key().is_some() {
            return Ok(None);
        }
        let state = pool.describe_exhausted();
        let err = LlmError::new(FailoverReason::Auth, state.clone());
        match self.next_fallback(&err) {
            Some(FailoverStep::Switch(client, _)) => Ok(Some(client)),
            _ => Err(LlmError::new(
                FailoverReason::Auth,
                format!("no usable API key: {state}"),
            )),
        }
    }

    /// A call succeeded.
    pub fn note_success(&mut self) {
        if self.active == 0
            && let Some(pool) = &mut self.pool
        {
            pool.note_success();
            pool.note_request();
        }
    }

    /// Decides what to do about `err`. `retries_left` says whether the retry policy would still
    /// retry this error on the same client.
    pub fn on_error(&mut self, err: &LlmError, retries_left: bool) -> FailoverStep {
        if err.reason == FailoverReason::ContextOverflow {
            // Switching model would lose nothing but solve nothing: compaction handles it.
            return if retries_left {
                FailoverStep::Retry
            } else {
                FailoverStep::GiveUp(err.clone())
            };
        }
        if self.active == 0
            && let Some(pool) = &mut self.pool
        {
            match pool.on_failure(err) {
                PoolAction::RetrySame if retries_left => return FailoverStep::Retry,
                // Retries on this key are used up: try the fallback chain below.
                PoolAction::RetrySame => {}
                PoolAction::Rotate(_) => {
                    let hint = pool.current().map(|c| c.hint()).unwrap_or_default();
                    if let Some(client) = self.primary_client() {
                        return FailoverStep::Switch(client, format!("switched to key {hint}"));
                    }
                }
                PoolAction::Exhausted => {
                    let state = pool.describe_exhausted();
                    return self.next_fallback(err).unwrap_or_else(|| {
                        let mut e = err.clone();
                        e.body = format!("{}\n{state}", e.body);
                        FailoverStep::GiveUp(e)
                    });
                }
                PoolAction::NotKeyRelated => {}
            }
        }
        if retries_left {
            return FailoverStep::Retry;
        }
        let worth_switching = matches!(
            err.reason,
            FailoverReason::RateLimit
                | FailoverReason::Overloaded
                | FailoverReason::ServerError
                | FailoverReason::Timeout
                | FailoverReason::Billing
                | FailoverReason::Auth
                | FailoverReason::AuthPermanent
                | FailoverReason::ModelNotFound
                | FailoverReason::Unknown
        );
        if worth_switching && let Some(step) = self.next_fallback(err) {
            return step;
        }
        FailoverStep::GiveUp(err.clone())
    }

    fn next_fallback(&mut self, err: &LlmError) -> Option<FailoverStep> {
        while self.active < self.fallbacks.len() {
            self.active += 1;
            let p = &self.fallbacks[self.active - 1];
            if p.base_url == self.primary.base_url && p.model == self.primary.model {
                continue;
            }
            match self.client(p) {
                Ok(client) => {
                    tracing::warn!(to = %p.model, reason = %err.reason, "falling back");
                    return Some(FailoverStep::Switch(
                        client,
                        format!("falling back to {} ({}) for this turn", p.model, p.name),
                    ));
                }
                Err(e) => tracing::warn!(error = %e, "fallback client failed"),
            }
        }
        None
    }

    fn primary_client(&self) -> Option<Arc<dyn LlmClient>> {
        let mut p = self.primary.clone();
        if let Some(key) = self.pool.as_ref().and_then(|pool| pool.current_key()) {
            p.api_key = Some(key.to_string());
        }
        self.client(&p).ok()
    }

    fn client(&self, p: &Provider) -> Result<Arc<dyn LlmClient>, LlmError> {
        match &self.http {
            Some(http) => crate::llm::client_with_http(p, http),
            None => crate::llm::client_for(p),
        }
    }

    fn primary_client_if_rekeyed(&mut self) -> Option<Arc<dyn LlmClient>> {
        let pool = self.pool.as_ref()?;
        match pool.current_key() {
            Some(k) if Some(k) != self.primary.api_key.as_deref() => self.primary_client(),
            Some(_) => None,
            None => {
                // Every key is resting: start on the first fallback when there is one.
                let err = LlmError::new(FailoverReason::RateLimit, pool.describe_exhausted());
                match self.next_fallback(&err) {
                    Some(FailoverStep::Switch(client, _)) => Some(client),
                    _ => None,
                }
            }
        }
    }
}

/// The pool a provider's keys live under (`custom:<base url>` for custom endpoints).
pub fn pool_key(p: &Provider) -> String {
    if p.name == "custom" {
        format!("custom:{}", p.base_url)
    } else {
        p.name.clone()
    }
}

/// More keys for a provider: `providers.<name>.api_keys: [...]` in config.yaml and
/// `<KEY_VAR>_2` … `<KEY_VAR>_9` of the provider's own key variable (from the provider table,
/// carried as `Provider::key_env`), in the environment / `.env` (e.g. `OPENROUTER_API_KEY_2`).
fn extra_keys(config: &Config, provider: &Provider) -> Vec<(String, &'static str)> {
    let mut keys: Vec<(String, &'static str)> = config
        .file
        .providers
        .get(&provider.name)
        .and_then(|p| p.api_keys.as_ref())
        .map(|list| list.iter().map(|k| (k.clone(), "config.yaml")).collect())
        .unwrap_or_default();
    let vars = provider
        .key_env
        .as_deref()
        .map(provider::table::pooled_key_vars)
        .unwrap_or_default();
    for var in vars {
        if let Some(k) = config.env.get(&var) {
            keys.push((k.to_string(), "env"));
        }
    }
    keys
}

async fn resolve_entry(config: &Config, entry: &FallbackFile) -> Result<Provider, String> {
    let named = |what: &str| {
        format!(
            "fallback entry (provider {:?}, model {:?}) {what}",
            entry.provider.as_deref().unwrap_or(""),
            entry.model.as_deref().unwrap_or("")
        )
    };
    // `key_env` names the variable holding the key (Python Hermes reads it too).
    let api_key = entry.api_key.clone().or_else(|| {
        let var = entry.key_env.as_deref()?;
        config.env.get(var).map(str::to_string)
    });
    let flags = ProviderFlags {
        provider: entry.provider.clone(),
        model: entry.model.clone(),
        base_url: entry.base_url.clone(),
        api_key,
    };
    if flags.model.is_none() {
        return Err(named("has no model"));
    }
    if flags.provider.is_none() && flags.base_url.is_none() {
        return Err(named("names no provider or base_url"));
    }
    provider::resolve(ResolveInputs {
        flags: &flags,
        config,
        probe_timeout: Duration::from_millis(300),
    })
    .await
    .map_err(|e| e.to_string())
}
