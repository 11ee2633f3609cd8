//! The interactive REPL: line editing and history (rustyline), streaming answers, one progress
//! line per tool call, approval questions, slash commands, Ctrl-C interrupts the running turn.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, AgentEvent, AgentOptions, Services, TurnExit};
use crate::cli::args::RunArgs;
use crate::cli::markdown::MarkdownStream;
use crate::cli::render::ProgressLines;
use crate::cli::slash::{self, SlashCommand};
use crate::cli::{CliError, exit, setup};
use crate::config::Config;
use crate::llm::LlmClient;
use crate::security::approval::{ApprovalChoice, ApprovalRequest};

struct Repl {
    services: Arc<Services>,
    options: AgentOptions,
    agent: Agent,
    editor: DefaultEditor,
    /// SIGTERM/SIGHUP: cancels the running turn (or exits at the prompt).
    stop: Arc<TermStop>,
    /// `mcp.auto_reload_on_config_change`.
    mcp_watch: crate::cli::mcp_cmd::ConfigWatch,
}

/// What SIGTERM/SIGHUP reach: the running turn's token, and the signal once one came.
#[derive(Default)]
struct TermStop {
    turn: std::sync::Mutex<Option<CancellationToken>>,
    signal: std::sync::atomic::AtomicI32,
}

impl TermStop {
    fn signal(&self) -> i32 {
        self.signal.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits for SIGTERM/SIGHUP: a running turn is cancelled (its command killed and recorded)
    /// and the REPL ends after it; at the prompt there is nothing to stop, so hermes exits.
    async fn watch(self: Arc<Self>) {
        let signal = crate::cli::signals::terminate_signal().await;
        self.signal
            .store(signal, std::sync::atomic::Ordering::SeqCst);
        tracing::info!(signal, "REPL stopping on signal");
        let turn = self.turn.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match turn {
            Some(token) => token.cancel(),
            None => std::process::exit(i32::from(crate::cli::signals::exit_code(signal))),
        }
    }
}

pub fn run(runtime: &Runtime, args: &RunArgs, config: Config) -> Result<u8, CliError> {
    let services = crate::cli::services(config)?;
    let client = runtime.block_on(setup::make_client(
        args,
        &services.config,
        Some(&services.http),
    ))?;
    let options = setup::agent_options(args, &services.config, true);
    let agent = runtime.block_on(setup::open_agent(args, &services, client, options.clone()))?;
    let mut editor = DefaultEditor::new()
        .map_err(|e| CliError::Setup(format!("cannot start the line editor: {e}")))?;
    let history = services.config.home.history_path();
    let _ = editor.load_history(&history);
    let stop = Arc::new(TermStop::default());
    runtime.spawn(stop.clone().watch());
    let mut repl = Repl {
        mcp_watch: crate::cli::mcp_cmd::ConfigWatch::new(&services.config),
        services,
        options,
        agent,
        editor,
        stop,
    };
    repl.banner();
    loop {
        match repl.editor.readline("› ") {
            Ok(line) => {
                let text = line.trim();
                if text.is_empty() {
                    continue;
                }
                let _ = repl.editor.add_history_entry(text);
                let command = slash::parse(text);
                if !matches!(command, Some(SlashCommand::ReloadMcp))
                    && let Some(note) = repl.mcp_watch.check(runtime, &repl.services)
                {
                    println!("{note}");
                }
                match command {
                    Some(SlashCommand::Quit) => break,
                    // `/<skill-name> text`: a turn with the skill loaded into the message.
                    Some(SlashCommand::Unknown(name))
                        if let Some(message) = crate::skills::invocation_message(
                            &repl.services.config,
                            &name,
                            slash::argument(text),
                        ) =>
                    {
                        repl.turn(runtime, &message)
                    }
                    Some(cmd) => repl.slash(runtime, cmd),
                    None => repl.turn(runtime, text),
                }
                if repl.stop.signal() != 0 {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(CliError::Setup(format!("cannot read input: {e}"))),
        }
    }
    let _ = repl.editor.save_history(&history);
    let _ = runtime.block_on(repl.agent.end("user_exit"));
    crate::cli::memory_cmd::finish_reviews(runtime, &repl.services, true);
    println!(
        "session {} saved; resume with: hermes -r {}",
        repl.agent.session_id(),
        repl.agent.session_id()
    );
    match repl.stop.signal() {
        0 => Ok(exit::OK),
        signal => Ok(crate::cli::signals::exit_code(signal)),
    }
}

impl Repl {
    fn banner(&self) {
        println!(
            "hermes {} — {} · session {}\n/help for commands, Ctrl-C interrupts a turn, Ctrl-D exits.",
            env!("CARGO_PKG_VERSION"),
            self.agent.model(),
            self.agent.session_id()
        );
        if !self.agent.history().is_empty() {
            println!("(resumed: {} earlier messages)", self.agent.history().len());
        }
    }

    fn turn(&mut self, runtime: &Runtime, text: &str) {
        let approval_timeout = Duration::from_secs(self.services.config.approvals.timeout);
        let Repl {
            agent,
            editor,
            stop,
            ..
        } = self;
        let result = runtime.block_on(async {
            let cancel = CancellationToken::new();
            *stop.turn.lock().unwrap_or_else(|p| p.into_inner()) = Some(cancel.clone());
            let interrupt = cancel.clone();
            let signal = tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    interrupt.cancel();
                }
            });
            let (tx, mut rx) = mpsc::unbounded_channel();
            let mut view = TurnView::new(approval_timeout);
            let result = {
                let turn = agent.run_turn(text, &tx, &cancel);
                tokio::pin!(turn);
                loop {
                    tokio::select! {
                        result = &mut turn => break result,
                        Some(event) = rx.recv() => view.show(event, editor),
                    }
                }
            };
            while let Ok(event) = rx.try_recv() {
                view.show(event, editor);
            }
            signal.abort();
            *stop.turn.lock().unwrap_or_else(|p| p.into_inner()) = None;
            view.finish();
            result
        });
        match result {
            Ok(outcome)
                if matches!(outcome.exit, TurnExit::LoopStopped | TurnExit::SpendCapped) =>
            {
                println!("  ⏹ {}", outcome.text);
            }
            Ok(outcome) if outcome.exit == TurnExit::Interrupted => {
                println!("  ⏹ interrupted — the conversation is kept; ask again or continue.");
            }
            Ok(_) => {}
            Err(e) => eprintln!("error: {e}"),
        }
    }

    fn slash(&mut self, runtime: &Runtime, cmd: SlashCommand) {
        match cmd {
            SlashCommand::Help => println!("{}", slash::help_text()),
            SlashCommand::New => {
                let _ = runtime.block_on(self.agent.end("new_session"));
                let client = self.client();
                match runtime.block_on(Agent::start(
                    self.services.clone(),
                    client,
                    self.options.clone(),
                )) {
                    Ok(agent) => {
                        self.agent = agent;
                        println!("new session {}", self.agent.session_id());
                    }
                    Err(e) => eprintln!("error: cannot start a new session: {e}"),
                }
            }
            SlashCommand::Model(None) => {
                let client = self.client();
                let p = client.provider();
                println!("model {} via {} ({})", p.model, p.name, p.base_url);
            }
            SlashCommand::Model(Some(name)) => {
                let mut provider = self.client().provider().clone();
                provider.model = name;
                match crate::llm::client_for(&provider) {
                    Ok(client) => match runtime.block_on(self.agent.set_client(client)) {
                        Ok(()) => println!("model is now {} for later turns", provider.model),
                        Err(e) => eprintln!("error: {e}"),
                    },
                    Err(e) => eprintln!("error: {e}"),
                }
            }
            SlashCommand::Tools => {
                let names = self.agent.tool_names();
                if names.is_empty() {
                    println!(
                        "no tools are offered (toolsets: {})",
                        self.options.toolsets.join(", ")
                    );
                } else {
                    println!("{} tools: {}", names.len(), names.join(", "));
                }
            }
            SlashCommand::Usage => self.usage(runtime),
            SlashCommand::ReloadMcp => {
                println!("{}", crate::cli::mcp_cmd::reload(runtime, &self.services));
                self.mcp_watch.sync(&self.services.config)
            }
            SlashCommand::Memory(which) => println!(
                "{}",
                crate::cli::memory_cmd::slash_text(&self.services.config, which.as_deref())
            ),
            SlashCommand::Yolo => {
                let on = !self.agent.approvals().yolo();
                self.agent.approvals().set_yolo(on);
                if on {
                    println!(
                        "yolo ON: dangerous commands run without asking (the hardline floor still applies)"
                    );
                } else {
                    println!("yolo OFF: dangerous commands ask first");
                }
            }
            SlashCommand::Retry => match self.agent.last_user_text() {
                Some(text) => match runtime.block_on(self.agent.undo()) {
                    Ok(_) => self.turn(runtime, &text),
                    Err(e) => eprintln!("error: {e}"),
                },
                None => println!("nothing to retry yet"),
            },
            SlashCommand::Compress(focus) => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let n = runtime.block_on(self.agent.compress_now(focus.as_deref(), &tx));
                drop(tx);
                let mut lines = ProgressLines::default();
                while let Ok(event) = rx.try_recv() {
                    if let Some(line) = lines.line_for(&event) {
                        println!("{line}");
                    }
                }
                if n == 0 {
                    println!("nothing to compress yet");
                }
            }
            SlashCommand::Undo => match runtime.block_on(self.agent.undo()) {
                Ok(0) => println!("nothing to undo"),
                Ok(n) => println!(
                    "removed the last exchange ({n} messages; the rows stay in state.db, hidden)"
                ),
                Err(e) => eprintln!("error: {e}"),
            },
            SlashCommand::Rollback(arg) => {
                let number = match arg.as_deref().map(str::parse::<usize>) {
                    None => 1,
                    Some(Ok(n)) if n > 0 => n,
                    Some(_) => {
                        println!("usage: /rollback [N] (N = 1 for the newest checkpoint)");
                        return;
                    }
                };
                // The REPL thread is not a runtime worker: blocking git work is fine here.
                let (config, dir) = (&self.services.config, self.agent.cwd());
                match crate::cli::checkpoints_cmd::restore_text(config, dir, number) {
                    Ok(text) => println!("{text}"),
                    Err(e) => eprintln!("error: {e}"),
                }
            }
            SlashCommand::Title(text) => {
                let (store, id) = (
                    self.services.store.clone(),
                    self.agent.session_id().to_string(),
                );
                let said = runtime.block_on(runtime.spawn_blocking(move || {
                    crate::cli::sessions_cmd::slash_title(&store, &id, text.as_deref())
                }));
                println!("{}", said.unwrap_or_else(|e| format!("error: {e}")));
            }
            SlashCommand::Quit => {}
            SlashCommand::Skills => crate::cli::skills_cmd::print_for_repl(&self.services.config),
            SlashCommand::Unknown(name) => {
                println!("unknown command /{name}; /help lists commands")
            }
        }
    }

    fn client(&self) -> Arc<dyn LlmClient> {
        self.agent.client()
    }

    fn usage(&self, runtime: &Runtime) {
        let store = self.services.store.clone();
        let id = self.agent.session_id().to_string();
        let found = runtime
            .block_on(runtime.spawn_blocking(move || {
                Ok::<_, crate::sessions::StoreError>((
                    store.session(&id)?,
                    store.child_sessions(&id)?,
                    store.estimated_tokens(&id)?,
                ))
            }))
            .ok()
            .and_then(Result::ok);
        let cost = |c: Option<f64>| {
            c.filter(|c| *c > 0.0)
                .map(|c| format!(" · ≈ ${c:.4}"))
                .unwrap_or_default()
        };
        match found {
            Some((Some(r), children, estimated)) => {
                println!(
                    "session {}: {} model calls · input {} · output {} · cache read {} · cache write {} · reasoning {} tokens{}",
                    r.id,
                    r.api_call_count,
                    r.input_tokens,
                    r.output_tokens,
                    r.cache_read_tokens,
                    r.cache_write_tokens,
                    r.reasoning_tokens,
                    cost(r.estimated_cost_usd)
                );
                if estimated > 0 {
                    println!(
                        "  ({estimated} of these tokens are estimated by hermes: the provider reported no usage)"
                    );
                }
                for c in &children {
                    println!(
                        "  child {}: {} model calls · input {} · output {} tokens{}",
                        c.id,
                        c.api_call_count,
                        c.input_tokens,
                        c.output_tokens,
                        cost(c.estimated_cost_usd)
                    );
                }
                if !children.is_empty() {
                    let total = |f: fn(&crate::sessions::SessionRow) -> i64| {
                        f(&r) + children.iter().map(f).sum::<i64>()
                    };
                    let spend: f64 = r.estimated_cost_usd.unwrap_or(0.0)
                        + children
                            .iter()
                            .filter_map(|c| c.estimated_cost_usd)
                            .sum::<f64>();
                    println!(
                        "with {} delegated children: input {} · output {} tokens{}",
                        children.len(),
                        total(|r| r.input_tokens),
                        total(|r| r.output_tokens),
                        cost(Some(spend))
                    );
                }
            }
            _ => {
                let u = self.agent.session_usage();
                println!(
                    "this session: input {} · output {} tokens",
                    u.input_tokens, u.output_tokens
                );
            }
        }
    }
}

/// Renders one turn's events: streamed text inline, tool lines on their own lines.
struct TurnView {
    lines: ProgressLines,
    approval_timeout: Duration,
    /// True while the cursor is in the middle of streamed text.
    mid_text: bool,
    /// Renders the streamed answer's Markdown when stdout is a terminal; `None` prints it as is.
    markdown: Option<MarkdownStream>,
}

impl TurnView {
    fn new(approval_timeout: Duration) -> Self {
        TurnView {
            lines: ProgressLines::default(),
            approval_timeout,
            mid_text: false,
            markdown: crate::cli::markdown::wanted().then(MarkdownStream::default),
        }
    }

    fn show(&mut self, event: AgentEvent, editor: &mut DefaultEditor) {
        match event {
            AgentEvent::TextDelta(text) => {
                let text = match &mut self.markdown {
                    Some(md) => md.push(&text),
                    None => text,
                };
                print!("{text}");
                let _ = std::io::stdout().flush();
                if !text.is_empty() || self.markdown.is_none() {
                    self.mid_text = !text.ends_with('\n');
                }
            }
            AgentEvent::ApprovalNeeded { request, respond } => {
                self.break_line();
                let choice = ask_approval(&request, editor, self.approval_timeout);
                let _ = respond.send(choice);
            }
            other => {
                if let Some(line) = self.lines.line_for(&other) {
                    self.break_line();
                    println!("{line}");
                }
            }
        }
    }

    fn break_line(&mut self) {
        // Text held by the Markdown renderer (a partial line, a table) is shown first.
        if let Some(rest) = self.markdown.as_mut().map(MarkdownStream::finish)
            && !rest.is_empty()
        {
            print!("{rest}");
            self.mid_text = !rest.ends_with('\n');
        }
        if self.mid_text {
            println!();
            self.mid_text = false;
        }
    }

    fn finish(&mut self) {
        self.break_line();
    }
}

/// Asks once/session/always/deny. EOF, an unknown answer, or an answer after the timeout deny.
fn ask_approval(
    request: &ApprovalRequest,
    editor: &mut DefaultEditor,
    timeout: Duration,
) -> ApprovalChoice {
    println!("⚠️  DANGEROUS COMMAND: {}", request.reasons.join("; "));
    println!("    {}", request.command);
    let asked = Instant::now();
    let answer = tokio::task::block_in_place(|| {
        editor.readline("    [o]nce | [s]ession | [a]lways | [d]eny — choice [o/s/a/D]: ")
    });
    let choice = match answer {
        Ok(a) => match a.trim().to_ascii_lowercase().as_str() {
            "o" | "once" | "y" | "yes" => ApprovalChoice::Once,
            "s" | "session" => ApprovalChoice::Session,
            "a" | "always" => ApprovalChoice::Always,
            _ => ApprovalChoice::Deny,
        },
        Err(_) => ApprovalChoice::Deny,
    };
    // The gate's timeout cannot interrupt a blocking read; a late answer still counts as a deny.
    if choice != ApprovalChoice::Deny && asked.elapsed() > timeout {
        println!("    answered too late: denied");
        return ApprovalChoice::Deny;
    }
    if choice == ApprovalChoice::Deny {
        println!("    denied");
    }
    choice
}
