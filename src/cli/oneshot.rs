//! One-shot mode: `hermes -z PROMPT` (only the final answer on stdout) and `hermes chat -q`.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentEvent, TurnExit};
use crate::cli::args::RunArgs;
use crate::cli::render::ProgressLines;
use crate::cli::{CliError, exit, setup};
use crate::config::Config;

/// How the answer is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `-z`: the final answer and nothing else on stdout.
    Bare,
    /// `chat -q`: progress on stderr (unless quiet), answer and session id on stdout.
    Chat { quiet: bool },
}

pub async fn run(
    args: &RunArgs,
    config: Config,
    prompt: &str,
    style: Style,
) -> Result<u8, CliError> {
    let services = crate::cli::services(config)?;
    let client = setup::make_client(args, &services.config, Some(&services.http)).await?;
    // No one can answer approval questions here: dangerous commands are refused unless --yolo.
    let options = setup::agent_options(args, &services.config, false);
    let mut agent = setup::open_agent(args, &services, client, options).await?;
    agent.approvals().set_assume_yes(args.yes);

    // SIGINT, SIGTERM and SIGHUP stop the turn: a running command is killed and recorded.
    let cancel = CancellationToken::new();
    let interrupt = cancel.clone();
    let stopped_by = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(libc::SIGINT));
    let record = stopped_by.clone();
    tokio::spawn(async move {
        let signal = crate::cli::signals::stop_signal().await;
        record.store(signal, std::sync::atomic::Ordering::SeqCst);
        interrupt.cancel();
    });

    let (tx, mut rx) = mpsc::unbounded_channel::<AgentEvent>();
    let show_progress = matches!(style, Style::Chat { quiet: false });
    let printer = tokio::spawn(async move {
        let mut lines = ProgressLines::default();
        while let Some(event) = rx.recv().await {
            if show_progress && let Some(line) = lines.line_for(&event) {
                eprintln!("{line}");
            } else if style == Style::Bare
                && let AgentEvent::Retrying {
                    attempt,
                    delay,
                    message,
                    ..
                } = &event
            {
                // Waiting in silence looks like a hang: one line per retry, on stderr.
                eprintln!("{}", retry_line(message, *attempt, *delay));
            }
        }
    });
    let result = agent.run_turn(prompt, &tx, &cancel).await;
    drop(tx);
    let _ = printer.await;

    let outcome = result?;
    let _ = agent.end("completed").await;
    match outcome.exit {
        TurnExit::Interrupted => {
            eprintln!(
                "hermes: interrupted; resume with: hermes -r {}",
                agent.session_id()
            );
            let signal = stopped_by.load(std::sync::atomic::Ordering::SeqCst);
            Ok(crate::cli::signals::exit_code(signal))
        }
        TurnExit::LoopStopped | TurnExit::SpendCapped => {
            eprintln!("hermes: {}", outcome.text);
            Ok(exit::FAILURE)
        }
        TurnExit::Completed | TurnExit::BudgetExhausted => {
            if outcome.text.trim().is_empty() {
                eprintln!(
                    "hermes: the model returned an empty answer (session {})",
                    agent.session_id()
                );
                return Ok(exit::FAILURE);
            }
            println!("{}", outcome.text.trim_end());
            if let Style::Chat { .. } = style {
                println!("\nsession_id: {}", agent.session_id());
            }
            // The answer is out; give a background skill review a bounded moment to finish.
            let _ = std::io::Write::flush(&mut std::io::stdout());
            services
                .children
                .wait_idle(crate::agent::child::EXIT_WAIT)
                .await;
            Ok(exit::OK)
        }
    }
}

/// `hermes: <what failed>; retrying in 0.5 s (attempt 2)` — the first line of the error only
/// (its hint comes with the final error if every attempt fails).
fn retry_line(message: &str, failed_attempt: u32, delay: std::time::Duration) -> String {
    let what = message.lines().next().unwrap_or("the model call failed");
    format!(
        "hermes: {what}; retrying in {:.1} s (attempt {})",
        delay.as_secs_f64(),
        failed_attempt + 1
    )
}
