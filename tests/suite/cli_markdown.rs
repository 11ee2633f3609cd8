//! Markdown in the REPL is for terminals only: with stdout piped (no pty here, as in CI) the
//! REPL and `-z` print the model's Markdown byte for byte — no escape codes, no changed markers —
//! even when TERM names a colour terminal. The renderer itself is unit-tested beside it
//! (src/cli/markdown_tests.rs).

use crate::support::harness::{TestEnv, stderr, stdout};
use crate::support::mock_llm::{MockLlm, Reply};

const ANSWER: &str = "# Result\n\nSome **bold** and `code`:\n\n```rust\nfn main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- last *item*";

#[test]
fn piped_repl_and_oneshot_print_the_markdown_unchanged() {
    let env = TestEnv::new();
    let mock = MockLlm::with_script([
        Reply::text(ANSWER).chunk_chars(7),
        Reply::text(ANSWER).chunk_chars(5),
    ]);
    let out = env
        .cmd(&mock.base_url())
        .env("TERM", "xterm-256color")
        .write_stdin("show me\n/quit\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("{ANSWER}\n")), "{text:?}");
    assert!(!text.contains('\x1b'), "{text:?}");

    let out = env
        .cmd(&mock.base_url())
        .env("TERM", "xterm-256color")
        .args(["-z", "again"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{ANSWER}\n"));
}
