//! The session's automatic title, given after its first complete exchange while it has none:
//! a few words of the first user message, or — when `auxiliary.title_generation.model` is set —
//! the auxiliary model's answer (Python Hermes' key names; `enabled: false` turns titles off).
//! A title the user set (`/title`, `sessions rename`) is never replaced, and a failing title
//! never fails the turn.

use crate::agent::{Agent, db};
use crate::llm::Role;
use crate::sessions::title;
use crate::tools::session_search::summary;

const TEMPLATE: &str = include_str!("../prompts/session_title.md.j2");
/// Characters of each side of the exchange shown to the title model.
const SNIPPET_CHARS: usize = 500;

impl Agent {
    /// Titles the session if it has no title yet; `answer` is the turn's final text.
    pub(crate) async fn title_after_exchange(&self, answer: &str) {
        if self.options.ephemeral {
            return;
        }
        let config = &self.services.config;
        if config.file.auxiliary.title_generation.enabled == Some(false) {
            return;
        }
        let Some(first) = self
            .history
            .iter()
            .find(|m| m.role == Role::User)
            .and_then(|m| m.content.clone())
        else {
            return;
        };
        let id = self.session_id.clone();
        let row = match db(&self.services.store, move |s| s.session(&id)).await {
            Ok(Some(row)) => row,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the session for its title");
                return;
            }
        };
        if row.title.is_some()
            || crate::sessions::store::HIDDEN_SOURCES.contains(&row.source.as_str())
        {
            return;
        }
        let mut chosen = None;
        if let Some(sc) = summary::aux_config(config, "title_generation") {
            match render(&first, answer) {
                Ok(prompt) => {
                    let main = Some(self.client.provider());
                    let what = "auxiliary.title_generation";
                    match summary::complete(config, &sc, main, what, prompt, 64).await {
                        Ok(text) => chosen = title::from_model_answer(&text),
                        Err(e) => tracing::warn!(error = %e, "title generation failed"),
                    }
                }
                Err(e) => tracing::warn!(error = %e, "title prompt"),
            }
        }
        let Some(chosen) = chosen.or_else(|| title::from_first_message(&first)) else {
            return;
        };
        let id = self.session_id.clone();
        if let Err(e) = db(&self.services.store, move |s| {
            s.set_auto_title(&id, &chosen)
        })
        .await
        {
            tracing::warn!(error = %e, "cannot store the session title");
        }
    }
}

fn render(user: &str, assistant: &str) -> Result<String, minijinja::Error> {
    let mut env = minijinja::Environment::new();
    env.add_template("title", TEMPLATE)?;
    env.get_template("title")?.render(minijinja::context! {
        user => crate::util::truncate_chars(user, SNIPPET_CHARS),
        assistant => crate::util::truncate_chars(assistant, SNIPPET_CHARS),
    })
}
