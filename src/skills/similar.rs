//! Finding an existing skill that a new one would duplicate: before `skill_manage create`, the
//! store's skills are compared with the new name and description, and the closest match is
//! handed back to the model to patch instead (a library of near-twins is what makes skill
//! indexes useless).
//!
//! Two signals, each enough on its own:
//! - the names share most of their words (`brew-tea` / `tea-brewing` / `brew-green-tea`);
//! - the descriptions share at least three content words and most of the shorter one's words
//!   ("Steep green tea without bitterness" / "Brew green tea at the right temperature, never
//!   bitter"). Stop words and a crude stemmer keep "deploying" and "deploys" together and "the",
//!   "how", "skill" out.
//!
//! Deliberately simple and explainable: the refusal names the shared words, and `force: true`
//! creates the skill anyway when the model judges it truly different.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::skills::store::SkillInfo;

/// Words that say nothing about what a skill does.
const STOP_WORDS: &[&str] = &[
    "a",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "by",
    "can",
    "do",
    "does",
    "for",
    "from",
    "how",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "of",
    "on",
    "or",
    "so",
    "that",
    "the",
    "their",
    "then",
    "this",
    "to",
    "use",
    "used",
    "using",
    "via",
    "when",
    "with",
    "without",
    "you",
    "your",
    "skill",
    "skills",
    "step",
    "steps",
    "guide",
    "procedure",
    "way",
    "ways",
    "right",
    "good",
    "properly",
    "correctly",
    "before",
    "after",
    "all",
    "every",
    "more",
    "new",
];
/// Shared description words needed at the least.
const MIN_SHARED_WORDS: usize = 3;
/// Share of the shorter description's words that must also be in the other.
const MIN_DESCRIPTION_OVERLAP: f64 = 0.6;
/// Share of all name words two names must have in common.
const MIN_NAME_OVERLAP: f64 = 0.5;
/// Candidates reported at most.
const MAX_CANDIDATES: usize = 3;

/// An existing skill close to the one being created, and why.
#[derive(Debug, Clone)]
pub struct Similar {
    pub skill: Arc<SkillInfo>,
    /// 0..=1; the larger of the name and description overlaps.
    pub score: f64,
    /// The words both share (names first), for the message.
    pub shared: Vec<String>,
}

/// A crude stemmer: enough to make "deploying", "deploys" and "deployed" one word.
fn stem(word: &str) -> String {
    for suffix in ["ing", "ies", "ed", "es", "s"] {
        if let Some(base) = word.strip_suffix(suffix)
            && base.len() >= 3
        {
            return if suffix == "ies" {
                format!("{base}y")
            } else {
                base.to_string()
            };
        }
    }
    word.to_string()
}

/// Content words of a text: lowercased, split on anything not alphanumeric, stop words out.
fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.len() >= 2 && !STOP_WORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

fn shared(a: &BTreeSet<String>, b: &BTreeSet<String>) -> Vec<String> {
    a.intersection(b).cloned().collect()
}

/// Existing skills too close to a new skill called `name` described by `description`, best
/// first. A skill with the same name is not reported here (the caller refuses that anyway).
pub fn find(name: &str, description: &str, skills: &[Arc<SkillInfo>]) -> Vec<Similar> {
    let new_name = words(name);
    let new_desc = words(description);
    let mut out: Vec<Similar> = skills
        .iter()
        .filter(|s| s.name != name)
        .filter_map(|s| {
            let old_name = words(&s.name);
            let name_shared = shared(&new_name, &old_name);
            let union = new_name.union(&old_name).count().max(1);
            let name_score = name_shared.len() as f64 / union as f64;
            let old_desc = words(&s.description);
            let desc_shared = shared(&new_desc, &old_desc);
            let shorter = new_desc.len().min(old_desc.len()).max(1);
            let desc_score = desc_shared.len() as f64 / shorter as f64;
            let by_name = !name_shared.is_empty() && name_score >= MIN_NAME_OVERLAP;
            let by_desc =
                desc_shared.len() >= MIN_SHARED_WORDS && desc_score >= MIN_DESCRIPTION_OVERLAP;
            if !(by_name || by_desc) {
                return None;
            }
            let mut words = name_shared;
            for w in desc_shared {
                if !words.contains(&w) {
                    words.push(w);
                }
            }
            Some(Similar {
                skill: s.clone(),
                score: if by_name { name_score } else { 0.0 }.max(if by_desc {
                    desc_score
                } else {
                    0.0
                }),
                shared: words,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.skill.name.cmp(&b.skill.name))
    });
    out.truncate(MAX_CANDIDATES);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::skill::SkillDoc;

    fn skill(name: &str, description: &str) -> Arc<SkillInfo> {
        Arc::new(SkillInfo {
            name: name.into(),
            description: description.into(),
            category: None,
            dir: std::path::PathBuf::from(name),
            external: false,
            doc: Arc::new(SkillDoc {
                frontmatter: Default::default(),
                body: String::new(),
            }),
        })
    }

    fn names(found: &[Similar]) -> Vec<&str> {
        found.iter().map(|s| s.skill.name.as_str()).collect()
    }

    #[test]
    fn near_twins_are_found_by_name_or_description() {
        let skills = [
            skill("brew-tea", "Steep green tea without bitterness"),
            skill(
                "git-workflow",
                "Branch, commit, rebase on main and open a pull request",
            ),
            skill(
                "deploy-web",
                "Deploy the web app to production with docker compose",
            ),
        ];
        // Same words in the name, in another order or with one more.
        assert_eq!(
            names(&find("tea-brewing", "Make a cup", &skills)),
            ["brew-tea"]
        );
        assert_eq!(names(&find("brew-green-tea", "x", &skills)), ["brew-tea"]);
        // Different name, same job.
        let found = find(
            "green-tea-howto",
            "Brew green tea at the right temperature, never bitter, steeping 2 minutes",
            &skills,
        );
        assert_eq!(names(&found), ["brew-tea"]);
        assert!(
            found[0].shared.contains(&"tea".to_string()),
            "{:?}",
            found[0].shared
        );
        let found = find(
            "pr-flow",
            "Open a pull request after you rebase a branch on main",
            &skills,
        );
        assert_eq!(names(&found), ["git-workflow"]);
    }

    #[test]
    fn neighbours_in_the_same_domain_are_not_twins() {
        let skills = [
            skill(
                "deploy-web",
                "Deploy the web app to production with docker compose",
            ),
            skill("brew-tea", "Steep green tea without bitterness"),
            skill("pdf", "Read and fill PDF forms"),
        ];
        for (name, description) in [
            (
                "deploy-api-staging",
                "Release the api service to staging on kubernetes",
            ),
            ("docker-debug", "Find why a docker container exits at start"),
            ("brew-coffee", "Pour-over coffee with a gooseneck kettle"),
            (
                "spreadsheet-report",
                "Build a monthly report from spreadsheets",
            ),
        ] {
            let found = find(name, description, &skills);
            assert!(found.is_empty(), "{name}: {:?}", names(&found));
        }
        // Its own name is never a candidate (the caller handles exact names).
        assert!(find("pdf", "Read and fill PDF forms", &skills).is_empty());
    }
}
