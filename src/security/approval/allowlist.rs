//! `command_allowlist` semantics.
//!
//! An entry is one of three things:
//! - a pattern key (`recursive_delete`) or, for files written by Python Hermes, a finding's
//!   description (`recursive delete`): approves that finding wherever it appears;
//! - a literal command (`make clean`): approves exactly that command;
//! - a glob (`podman *`, `?` and `[…]` also work): approves the commands it matches.
//!
//! Literal and glob entries never approve a compound command (one containing `;` `&` `|` `<` `>`,
//! a backtick, `$(` or a newline): `podman *` must not approve `podman ps; rm -rf ~/x`.

use super::catalog::{self, Finding};

/// True if `command` chains, pipes, redirects or substitutes anything.
pub(super) fn is_compound(command: &str) -> bool {
    command.contains([';', '&', '|', '<', '>', '`', '\n', '\r']) || command.contains("$(")
}

/// True if the allowlist entry names this finding (by key or by description).
pub(super) fn approves_finding(entry: &str, finding: &Finding) -> bool {
    let entry = entry.trim();
    entry == finding.key || catalog::names_of(finding.key).any(|n| n.eq_ignore_ascii_case(entry))
}

/// True if the literal or glob entry matches the whole (non-compound) command.
pub(super) fn approves_command(entry: &str, command: &str) -> bool {
    let (entry, command) = (entry.trim(), command.trim());
    if entry.is_empty() || is_compound(command) {
        return false;
    }
    if entry.contains(['*', '?', '[']) {
        glob_match(entry, command)
    } else {
        entry == command
    }
}

/// Case-insensitive glob over the whole text, only for entries that contain a glob character
/// (Python Hermes' `approvals.deny` entries are fnmatch globs).
pub(super) fn glob_matches_ci(pattern: &str, text: &str) -> bool {
    pattern.contains(['*', '?', '['])
        && glob_match(&pattern.trim().to_lowercase(), &text.to_lowercase())
}

/// fnmatch-style matching over the whole text: `*` any run, `?` one char, `[abc]`, `[a-z]`,
/// `[!x]`. Iterative with single-star backtracking, so it is linear-ish on hostile input.
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
            continue;
        }
        if pi < p.len() {
            let (matched, next) = match_one(&p, pi, t[ti]);
            if matched {
                pi = next;
                ti += 1;
                continue;
            }
        }
        match star {
            Some((sp, st)) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Matches one pattern element at `pi` against `c`: `(matched, next_pi)`.
fn match_one(p: &[char], pi: usize, c: char) -> (bool, usize) {
    match p[pi] {
        '?' => (true, pi + 1),
        '[' => {
            let mut j = pi + 1;
            let negate = matches!(p.get(j), Some('!' | '^'));
            if negate {
                j += 1;
            }
            let start = j;
            let mut found = false;
            while j < p.len() && (p[j] != ']' || j == start) {
                if j + 2 < p.len() && p[j + 1] == '-' && p[j + 2] != ']' {
                    found |= p[j] <= c && c <= p[j + 2];
                    j += 3;
                } else {
                    found |= p[j] == c;
                    j += 1;
                }
            }
            if j >= p.len() {
                // No closing bracket: a literal `[`.
                return (c == '[', pi + 1);
            }
            (found != negate, j + 1)
        }
        literal => (literal == c, pi + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("podman *", "podman ps -a"));
        assert!(!glob_match("podman *", "docker ps"));
        assert!(glob_match("git push origin ?ain", "git push origin main"));
        assert!(glob_match("rm -rf build/[a-c]*", "rm -rf build/b1"));
        assert!(!glob_match("rm -rf build/[!a-c]*", "rm -rf build/b1"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a[", "a["));
        assert!(!glob_match(&"*a".repeat(30), &"b".repeat(200)));
    }

    #[test]
    fn compound_commands_never_match_literals_or_globs() {
        assert!(approves_command("podman *", "podman ps"));
        for c in [
            "podman ps; rm -rf ~/x",
            "podman ps && x",
            "podman ps | sh",
            "podman $(x)",
            "podman `x`",
            "podman >x",
            "podman ps\nrm x",
        ] {
            assert!(is_compound(c), "{c}");
            assert!(!approves_command("podman *", c), "{c}");
        }
        assert!(approves_command("make clean", "  make clean "));
        assert!(!approves_command("make clean", "make clean-all"));
    }

    #[test]
    fn findings_match_key_or_python_description() {
        let f = Finding {
            key: "git_force_push",
            description: "git force push (rewrites remote history)",
            kind: catalog::Kind::Dangerous,
        };
        assert!(approves_finding("git_force_push", &f));
        assert!(approves_finding(
            "git force push (rewrites remote history)",
            &f
        ));
        assert!(approves_finding(
            "git force push short flag (rewrites remote history)",
            &f
        ));
        assert!(!approves_finding("git_reset_hard", &f));
        assert!(!approves_finding("git *", &f));
    }
}
