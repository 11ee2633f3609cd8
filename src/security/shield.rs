//! `Shield`: the process's protections that every tool call and every persisted message goes
//! through — the protected paths and the secret redactor. Built once per process from the
//! config (`Shield::for_config`) and shared through `Services` and `ToolContext`.

use std::borrow::Cow;

use crate::config::Config;
use crate::llm::Message;
use crate::security::protected::ProtectedPaths;
use crate::security::redact::Redactor;
use crate::security::secrets;

#[derive(Debug, Clone, Default)]
pub struct Shield {
    pub protected: ProtectedPaths,
    pub redactor: Redactor,
}

impl Shield {
    /// Reads `auth.json` and resolves paths: call once per process, off the async runtime
    /// where possible.
    pub fn for_config(config: &Config) -> Self {
        Shield {
            protected: ProtectedPaths::for_config(config),
            redactor: Redactor::new(secrets::collect(config), config.security.redact_secrets),
        }
    }

    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redactor.redact(text)
    }

    /// A message as it may be stored, sent to the model or exported: its text, reasoning and
    /// tool-call arguments redacted. User messages are the user's own words and stay as typed.
    pub fn redact_message(&self, mut message: Message) -> Message {
        if message.role == crate::llm::Role::User || !self.redactor.is_enabled() {
            return message;
        }
        let red = &self.redactor;
        message.content = message.content.map(|c| red.redact_string(c));
        message.reasoning = message.reasoning.map(|c| red.redact_string(c));
        message.api_content = message.api_content.map(|c| red.redact_string(c));
        for call in &mut message.tool_calls {
            // Arguments are JSON: a redaction keeps it valid (the marker has no quotes).
            let redacted = red.redact_string(std::mem::take(&mut call.arguments));
            call.arguments = redacted;
        }
        message
    }
}
