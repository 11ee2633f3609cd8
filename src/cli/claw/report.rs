//! The migration report: one item per thing looked at (imported, already there, skipped,
//! refused, conflict, failed) with the reason, rendered as the text the user reads. Secret
//! values never reach an item: only key names do.

use std::fmt::Write as _;

/// What happened to one thing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Imported,
    /// Already present in the Hermes home (a re-run): nothing to do.
    Unchanged,
    /// Not imported, for a reason that needs no action (not found, not asked for).
    Skipped,
    /// Not imported because a check refused it (the skills guard, the memory scanner).
    Refused,
    /// The Hermes home has a different version; `--overwrite` replaces it.
    Conflict,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub status: Status,
    /// What, e.g. `skill deploy-helper` or `SOUL.md`.
    pub what: String,
    /// Where it went or why not.
    pub detail: String,
}

#[derive(Debug, Default)]
pub struct Report {
    pub items: Vec<Item>,
    /// Lines shown above the items (source, workspace, notes).
    pub header: Vec<String>,
}

impl Report {
    pub fn add(&mut self, status: Status, what: impl Into<String>, detail: impl Into<String>) {
        self.items.push(Item {
            status,
            what: what.into(),
            detail: detail.into(),
        });
    }

    pub fn count(&self, status: Status) -> usize {
        self.items.iter().filter(|i| i.status == status).count()
    }

    /// The report as text. `dry_run` words imports as "would import".
    pub fn render(&self, dry_run: bool) -> String {
        let mut out = String::new();
        for line in &self.header {
            let _ = writeln!(out, "{line}");
        }
        let sections = [
            (
                Status::Imported,
                if dry_run { "Would import" } else { "Imported" },
            ),
            (Status::Unchanged, "Already in Hermes (nothing to do)"),
            (Status::Skipped, "Skipped"),
            (Status::Refused, "Refused"),
            (
                Status::Conflict,
                "Conflicts (the Hermes copy differs; --overwrite replaces it, keeping a backup)",
            ),
            (Status::Failed, "Failed"),
        ];
        for (status, title) in sections {
            let items: Vec<&Item> = self.items.iter().filter(|i| i.status == status).collect();
            if items.is_empty() {
                continue;
            }
            let _ = writeln!(out, "\n{title}:");
            for item in items {
                if item.detail.is_empty() {
                    let _ = writeln!(out, "  - {}", item.what);
                } else {
                    let _ = writeln!(out, "  - {}: {}", item.what, item.detail);
                }
            }
        }
        let verb = if dry_run { "would import" } else { "imported" };
        let _ = writeln!(
            out,
            "\n{} {verb}, {} already there, {} skipped, {} refused, {} conflicts, {} failed.",
            self.count(Status::Imported),
            self.count(Status::Unchanged),
            self.count(Status::Skipped),
            self.count(Status::Refused),
            self.count(Status::Conflict),
            self.count(Status::Failed),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_in_order_and_totals() {
        let mut r = Report::default();
        r.header.push("OpenClaw home: /h/.openclaw".into());
        r.add(Status::Refused, "skill evil", "dangerous");
        r.add(Status::Imported, "SOUL.md", "→ SOUL.md");
        r.add(Status::Skipped, "provider keys", "");
        insta::assert_snapshot!(r.render(true));
    }
}
