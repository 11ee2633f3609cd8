//! Finding skills: the listings of every tap (cached, `taps::listing`), a query matched against
//! names, tags and descriptions, and a bare name resolved to one identifier for `install NAME`.
//! A tap that cannot be reached is reported and skipped; the others still answer.

use super::index;
use super::source::{SkillMeta, Trust};
use super::{Hub, HubError, taps};

/// Every skill the taps offer (`source`: `all`, a source id such as `github`/`git`/`well-known`,
/// or a tap's repo), and a note per tap that could not be read.
pub fn listings(
    hub: &Hub,
    source: Option<&str>,
    refresh: bool,
) -> Result<(Vec<SkillMeta>, Vec<String>), HubError> {
    let (offers, notes) = offers(hub, source, refresh)?;
    Ok((
        offers
            .into_iter()
            .flat_map(taps::Offer::into_metas)
            .collect(),
        notes,
    ))
}

/// What each wanted tap offers, and a note per tap that could not be read.
fn offers(
    hub: &Hub,
    source: Option<&str>,
    refresh: bool,
) -> Result<(Vec<taps::Offer>, Vec<String>), HubError> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let wanted = source
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "all");
    for tap in taps::all(hub)? {
        let produces = match tap.kind() {
            taps::TapKind::Index { .. } => "well-known",
            taps::TapKind::Git {
                github: Some(_), ..
            } => "github",
            taps::TapKind::Git { .. } => "git",
        };
        if let Some(w) = wanted
            && w != tap.repo
            && w != produces
        {
            continue;
        }
        match taps::offer(hub, &tap, refresh) {
            Ok(offer) => out.push(offer),
            Err(e) => notes.push(format!("tap {}: {e}", tap.repo)),
        }
    }
    Ok((out, notes))
}

/// Score of one entry for lower-cased query tokens; `None` when a token matches nothing.
fn score(name: &str, description: &str, tags: &[String], tokens: &[String]) -> Option<u32> {
    let name = name.to_lowercase();
    let description = description.to_lowercase();
    let mut total = 0;
    for token in tokens {
        let mut s = 0;
        if name == *token {
            s += 100;
        } else if name.contains(token.as_str()) {
            s += 30;
        }
        if tags.iter().any(|t| t.eq_ignore_ascii_case(token)) {
            s += 20;
        }
        if description.contains(token.as_str()) {
            s += 10;
        }
        if s == 0 {
            return None;
        }
        total += s;
    }
    Some(total)
}

fn tokens(query: &str) -> Vec<String> {
    query.split_whitespace().map(str::to_lowercase).collect()
}

/// The entries matching every word of `query`, best first (ties by name), at most `limit`.
/// Entries are scored from their name, description and tags; only the ones returned are built
/// as `SkillMeta`.
fn rank_offers(offers: &[taps::Offer], query: &str, limit: usize) -> Vec<SkillMeta> {
    let tokens = tokens(query);
    let mut hits: Vec<(u32, String, usize, usize)> = Vec::new();
    for (o, offer) in offers.iter().enumerate() {
        for i in 0..offer.len() {
            let (name, description, tags) = offer.summary(i);
            if let Some(s) = score(&name, description, tags, &tokens) {
                hits.push((s, name.into_owned(), o, i));
            }
        }
    }
    hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (_, _, o, i) in hits {
        if out.len() >= limit {
            break;
        }
        let meta = offers[o].meta(i);
        if seen.insert(meta.identifier.clone()) {
            out.push(meta);
        }
    }
    out
}

/// `hermes skills search`: a URL query reads that site's skill index (as Python Hermes does);
/// anything else is matched against the taps' listings.
pub fn search(
    hub: &Hub,
    query: &str,
    source: Option<&str>,
    limit: usize,
) -> Result<(Vec<SkillMeta>, Vec<String>), HubError> {
    let q = query.trim();
    if q.starts_with("http://") || q.starts_with("https://") {
        let index = index::load(hub, &index::index_url_for(q), false)?;
        let trust = taps::trust_for(
            hub,
            &super::SourceRef::WellKnown {
                base_url: index.base_url.clone(),
                name: String::new(),
            },
        );
        let all = index.listing(trust);
        return Ok((all.into_iter().take(limit).collect(), Vec::new()));
    }
    let (offers, notes) = offers(hub, source, false)?;
    Ok((rank_offers(&offers, q, limit), notes))
}

/// The one listed skill named `name` (for `install NAME`).
pub fn resolve_name(hub: &Hub, name: &str) -> Result<SkillMeta, HubError> {
    let (entries, notes) = listings(hub, None, false)?;
    let mut found: Vec<SkillMeta> = entries.into_iter().filter(|m| m.name == name).collect();
    found.dedup_by(|a, b| a.identifier == b.identifier);
    match found.len() {
        0 => Err(HubError::NotFound(format!(
            "no tap offers a skill named `{name}`{}; `hermes skills search {name}` looks wider, or give an identifier (owner/repo/path, a git URL or path)",
            if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join("; "))
            }
        ))),
        1 => Ok(found.remove(0)),
        _ => {
            // Prefer the one trusted source when exactly one of them is.
            let trusted: Vec<&SkillMeta> = found
                .iter()
                .filter(|m| m.trust_level == super::source::trust_name(Trust::Trusted))
                .collect();
            if let [one] = trusted.as_slice() {
                return Ok((*one).clone());
            }
            Err(HubError::NotFound(format!(
                "several taps offer `{name}`: {}; install one by its identifier",
                found
                    .iter()
                    .map(|m| m.identifier.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    }
}
