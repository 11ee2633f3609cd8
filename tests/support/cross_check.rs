//! Cross-checks against Python peers (Python Hermes reading our state.db, the official `openai`
//! client against our API server) need a venv. Outside CI a check that cannot run is skipped
//! visibly; in CI (`CI=true`) it fails, so a missing venv never turns into a silent pass.
//! `scripts/test-setup` creates the venv that `scripts/test` hands over in `HERMES_PY_VENV`.

/// True when the environment says this is a CI run.
pub fn in_ci() -> bool {
    std::env::var("CI")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes"))
}

/// Reports a cross-check that cannot run: a failure in CI, a visible skip elsewhere.
pub fn cannot_run(check: &str, why: &str) {
    assert!(
        !in_ci(),
        "cross-check `{check}` cannot run in CI: {why}. scripts/test-setup creates the venv and scripts/test exports HERMES_PY_VENV; run CI through .ci/run"
    );
    eprintln!("SKIPPED cross-check `{check}`: {why} (it runs under scripts/test)");
}
