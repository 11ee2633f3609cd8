//! `EventPrompt`: answers approval questions by asking the front end through an
//! `AgentEvent::ApprovalNeeded` event.

use tokio::sync::mpsc::UnboundedSender;

use crate::agent::AgentEvent;
use crate::security::approval::{ApprovalChoice, ApprovalPrompt, ApprovalRequest};

/// Asks the front end through an `ApprovalNeeded` event and waits for its answer.
pub(crate) struct EventPrompt {
    pub(crate) events: UnboundedSender<AgentEvent>,
}

#[async_trait::async_trait]
impl ApprovalPrompt for EventPrompt {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalChoice {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let sent = self.events.send(AgentEvent::ApprovalNeeded {
            request: request.clone(),
            respond: tx,
        });
        if sent.is_err() {
            return ApprovalChoice::Deny;
        }
        // A front end that goes away without answering has denied.
        rx.await.unwrap_or(ApprovalChoice::Deny)
    }
}
