//! `hermes skills …` as the hub tests run it (`suite/skills_hub*.rs`): the public default taps
//! (GitHub) are off unless a test asks for them, so every test stays offline.

use std::process::Output;

use crate::support::harness::{TestEnv, stderr, stdout};

/// `hermes skills ARGS`, the default taps off.
pub fn skills(env: &TestEnv, args: &[&str]) -> Output {
    skills_with_taps(env, false, args)
}

/// `hermes skills ARGS` with the default taps on (`default_taps`) or off.
pub fn skills_with_taps(env: &TestEnv, default_taps: bool, args: &[&str]) -> Output {
    env.bare_cmd()
        .env(
            "HERMES_SKILLS_DEFAULT_TAPS",
            if default_taps { "1" } else { "0" },
        )
        .arg("skills")
        .args(args)
        .output()
        .unwrap()
}

/// `hermes skills ARGS` (default taps off), which must succeed: its stdout.
pub fn skills_ok(env: &TestEnv, args: &[&str]) -> String {
    let out = skills(env, args);
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}
