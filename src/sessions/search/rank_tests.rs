//! `hermes_rank` against FTS5's own `bm25()`: same scores where the counts are exact, same
//! order for one phrase, and the IDF estimate past the sample.

use super::*;

fn table(rows: &[&str]) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch("CREATE VIRTUAL TABLE t USING fts5(content);")
        .unwrap();
    for (i, r) in rows.iter().enumerate() {
        conn.execute(
            "INSERT INTO t(rowid, content) VALUES (?1, ?2)",
            rusqlite::params![i as i64 + 1, r],
        )
        .unwrap();
    }
    conn
}

/// (rowid, hermes_rank, bm25) for every match of `expr`.
fn scores(conn: &Connection, expr: &str, hi: i64) -> Vec<(i64, f64, f64)> {
    assert!(ensure(conn));
    conn.prepare("SELECT rowid, hermes_rank(t, 1, ?2), bm25(t) FROM t WHERE t MATCH ?1")
        .unwrap()
        .query_map(rusqlite::params![expr, hi], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

const ROWS: [&str; 8] = [
    "deploy the cache server",
    "cache cache cache and more cache words here",
    "the deploy failed twice, deploy again",
    "nothing relevant in this one at all",
    "server deploy on friday with a long tail of other words to make it longer",
    "cache invalidation is hard",
    "the quick brown fox",
    "deploy",
];

#[test]
fn several_phrases_score_exactly_like_bm25() {
    let conn = table(&ROWS);
    for expr in [
        r#""deploy" OR "cache""#,
        r#""deploy" "server""#,
        r#""cache" OR "deploy server" OR "fox""#,
        r#""deploy" NOT "friday""#,
    ] {
        let rows = scores(&conn, expr, ROWS.len() as i64);
        assert!(!rows.is_empty(), "{expr}");
        for (id, ours, theirs) in rows {
            assert!(
                (ours - theirs).abs() < 1e-9,
                "{expr}: row {id}: hermes_rank {ours} vs bm25 {theirs}"
            );
        }
    }
}

#[test]
fn one_phrase_orders_like_bm25() {
    let conn = table(&ROWS);
    for expr in [r#""deploy""#, r#""cache""#, r#""deploy the""#] {
        let rows = scores(&conn, expr, ROWS.len() as i64);
        let mut ours: Vec<(f64, i64)> = rows.iter().map(|r| (r.1, r.0)).collect();
        let mut theirs: Vec<(f64, i64)> = rows.iter().map(|r| (r.2, r.0)).collect();
        ours.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        theirs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let order = |v: &[(f64, i64)]| v.iter().map(|x| x.1).collect::<Vec<_>>();
        assert_eq!(order(&ours), order(&theirs), "{expr}");
        // And every score is bm25's divided by one constant (the IDF it skipped).
        let ratio = rows[0].2 / rows[0].1;
        for (id, o, t) in &rows {
            assert!((t / o - ratio).abs() < 1e-9, "{expr}: row {id}");
        }
    }
}

#[test]
fn common_phrase_idf_is_estimated_from_a_sample() {
    // "common" in every other row: more than IDF_SAMPLE hits, so the walk stops early and the
    // count is scaled from the sample's density; "rare" is counted exactly.
    let n = (IDF_SAMPLE * 3) as usize;
    let rows: Vec<String> = (0..n)
        .map(|i| {
            let mut s = String::from("filler");
            if i % 2 == 0 {
                s.push_str(" common");
            }
            if i % 100 == 0 {
                s.push_str(" rare");
            }
            s
        })
        .collect();
    let refs: Vec<&str> = rows.iter().map(String::as_str).collect();
    let conn = table(&refs);
    let rows = scores(&conn, r#""common" OR "rare""#, n as i64);
    // bm25 counted "common" exactly (n / 2); the estimate lands within a few percent, so the
    // scores agree to a small relative error and the order is the same.
    for (id, ours, theirs) in &rows {
        assert!(
            ((ours - theirs) / theirs).abs() < 0.05,
            "row {id}: hermes_rank {ours} vs bm25 {theirs}"
        );
    }
    let best = |col: usize| {
        rows.iter()
            .min_by(|a, b| {
                let (x, y) = if col == 1 { (a.1, b.1) } else { (a.2, b.2) };
                x.total_cmp(&y)
            })
            .map(|r| r.0)
    };
    assert_eq!(best(1), best(2));
}

#[test]
fn estimate_scales_by_density() {
    assert_eq!(estimate_docs(40, 90, 1, 100, true), 40.0);
    // 500 hits in the first 1,000 of 10,000 row ids: about 5,000 documents.
    assert_eq!(estimate_docs(500, 1_000, 1, 10_000, false), 5_000.0);
    // Degenerate ranges fall back to the count.
    assert_eq!(estimate_docs(7, 5, 10, 10, false), 7.0);
}

#[test]
fn bm25_formula_matches_known_values() {
    // One phrase, tf 1, average length: idf * (2.2 / (1 + 1.2)) = idf.
    assert!((bm25(&[2.0], &[1.0], 10.0, 10.0) + 2.0).abs() < 1e-12);
    // No hits, no score.
    assert_eq!(bm25(&[2.0, 3.0], &[0.0, 0.0], 5.0, 10.0), 0.0);
}

#[test]
fn ensure_is_idempotent() {
    let conn = table(&ROWS);
    assert!(ensure(&conn));
    assert!(ensure(&conn));
    let n: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM t WHERE t MATCH 'deploy' ORDER BY hermes_rank(t, 1, 8)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 4);
}
