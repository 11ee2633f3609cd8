//! Unit tests for `redact.rs`: every token shape, exact values, what must stay readable.

use super::*;

fn r(text: &str) -> String {
    Redactor::patterns_only().redact(text).into_owned()
}

#[test]
fn token_shapes_are_hidden() {
    let cases = [
        "Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwx.",
        "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 here",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "slack xoxb-1234567890-abcdefghij",
        "xoxp-1234567890-abcdefghijkl",
        "aws AKIAIOSFODNN7EXAMPLE end",
        "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1 ok",
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "curl -H 'Authorization: Bearer abcdef0123456789xyz'",
        "password=hunter2hunter2",
        "export GITHUB_TOKEN=abcdefghijkl1234",
        r#"{"api_key": "supersecretvalue123"}"#,
        "stripe sk_live_abcdefghijklmnop1234",
        "google AIzaSyA-abcdefghijklmnopqrstuvwxyz12345",
        "hf hf_abcdefghijklmnopqrstuvwxyzABCDEF",
    ];
    for case in cases {
        let out = r(case);
        assert!(out.contains(REDACTED), "not redacted: {case} → {out}");
        for secret in [
            "abcdefghijklmnop",
            "IOSFODNN7",
            "AAHdqTcvCH1v",
            "dozjgNryP4J3",
            "hunter2hunter2",
            "supersecretvalue",
            "abcdef0123456789",
            "abcdefghijkl1234",
            "1234567890-abcdefghij",
        ] {
            assert!(!out.contains(secret), "{case} → {out}");
        }
    }
}

#[test]
fn names_stay_readable() {
    assert_eq!(r("password=hunter2hunter2"), "password=[REDACTED]");
    assert_eq!(
        r(r#"{"api_key": "supersecretvalue123"}"#),
        r#"{"api_key": "[REDACTED]"}"#
    );
    assert_eq!(
        r("Authorization: Bearer abcdef0123456789xyz"),
        "Authorization: Bearer [REDACTED]"
    );
    assert_eq!(
        r("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx"),
        "OPENAI_API_KEY=[REDACTED]"
    );
    assert_eq!(
        r("bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1 ok"),
        "bot [REDACTED] ok"
    );
}

#[test]
fn pem_private_keys_are_hidden_whole() {
    let pem = "before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQUJDREVGR0hJSktMTU5PUFFSU1RVVldY\n-----END OPENSSH PRIVATE KEY-----\nafter";
    assert_eq!(r(pem), "before\n[REDACTED]\nafter");
    // A block cut off (a truncated tool result) is hidden to the end.
    let cut = "x -----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA";
    assert_eq!(r(cut), "x [REDACTED]");
    // Public keys and certificates stay.
    let public = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQ\n-----END PUBLIC KEY-----";
    assert_eq!(r(public), public);
}

#[test]
fn ordinary_text_and_code_are_left_alone() {
    for text in [
        "nothing here",
        "task-management-is-great-stuff and disk-usage",
        "let tokenizer = Tokenizer::new(vocab);",
        "token_count = count_tokens(text)",
        "password_hash = hash_password(pw)",
        "api_key = os.environ.get(\"OPENAI_API_KEY\")",
        "api_key: ${OPENAI_API_KEY}",
        "token: null",
        "the key is in the drawer; secret plans",
        "ASKIA is a name, AKIA alone too",
        "ratio 12345678:AA is not a token",
        "already password=[REDACTED] done",
        "日本語のテキスト token: 値",
        "secret_store=disabled",
        "token_cache: optional, api_key=required",
    ] {
        assert_eq!(r(text), text, "changed: {text}");
    }
}

#[test]
fn harmless_key_names_keep_their_values() {
    for text in [
        r#"{"cache_key": "abc123def"}"#,
        "SORT_KEY=created_at_desc",
        "primary_key: user_id_1234",
        "foreign-key = orders_customer_id",
        "db_cache_key=v2:users:1234",
        "Partition_Key: tenant-000042",
        r#""public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMq""#,
        "idempotency_key = 7f3c9a10-b2e4",
    ] {
        assert_eq!(r(text), text, "changed: {text}");
    }
}

#[test]
fn secret_key_names_are_still_hidden() {
    for (text, want) in [
        ("api_key=abcdefgh1234", "api_key=[REDACTED]"),
        ("secret_key: abcdefgh1234", "secret_key: [REDACTED]"),
        (
            r#""private_key": "abcdefgh1234""#,
            r#""private_key": "[REDACTED]""#,
        ),
        ("access_key = abcdefgh1234", "access_key = [REDACTED]"),
        ("X-Api-Key: abcdefgh1234", "X-Api-Key: [REDACTED]"),
        ("x-api-key: abcdefgh1234", "x-api-key: [REDACTED]"),
        ("OPENAI_API_KEY=abcdefgh1234", "OPENAI_API_KEY=[REDACTED]"),
        (
            "AWS_ACCESS_KEY_ID=abcdefgh1234",
            "AWS_ACCESS_KEY_ID=[REDACTED]",
        ),
        // Only the whole word counts: `resort` is not `sort`.
        ("resort_key=abcdefgh1234", "resort_key=[REDACTED]"),
        // Not listed: a session or an HMAC key may be a secret.
        ("session_key=abcdefgh1234", "session_key=[REDACTED]"),
        ("hash_key=abcdefgh1234", "hash_key=[REDACTED]"),
        ("encryption_key=abcdefgh1234", "encryption_key=[REDACTED]"),
        // Another secret word in the name still hides the value.
        (
            "cache_key_secret=abcdefgh1234",
            "cache_key_secret=[REDACTED]",
        ),
        (
            "cache_key_token: abcdefgh1234",
            "cache_key_token: [REDACTED]",
        ),
        // A token shape is hidden under any name.
        (
            "cache_key=sk-proj-abcdefghijklmnopqrstuvwx",
            "cache_key=[REDACTED]",
        ),
    ] {
        assert_eq!(r(text), want, "{text}");
    }
}

#[test]
fn harmless_words_are_short_lowercase_words() {
    for w in HARMLESS_KEY_WORDS {
        assert!(w.len() <= HARMLESS_WORD_MAX, "{w}");
        assert!(
            w.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
            "{w}"
        );
    }
}

#[test]
fn a_lowercase_word_password_is_still_hidden() {
    assert_eq!(r("password=correcthorse"), "password=[REDACTED]");
}

#[test]
fn exact_values_are_hidden_case_sensitively() {
    let red = Redactor::new(
        vec![
            "plain-secret-value-42".to_string(),
            "short".to_string(),
            "Zm9vYmFyYmF6cXV4".to_string(),
        ],
        true,
    );
    assert_eq!(red.known_values(), 2);
    assert_eq!(
        red.redact("a plain-secret-value-42 b Zm9vYmFyYmF6cXV4 c"),
        "a [REDACTED] b [REDACTED] c"
    );
    // Only the exact bytes: another case is another string.
    assert_eq!(red.redact("PLAIN-SECRET-VALUE-42"), "PLAIN-SECRET-VALUE-42");
    // Too short to be told apart from ordinary words.
    assert_eq!(red.redact("short"), "short");
    // Next to each other, inside other text, and at the edges.
    assert_eq!(
        red.redact("plain-secret-value-42plain-secret-value-42"),
        "[REDACTED][REDACTED]"
    );
    assert!(matches!(red.redact("clean text"), Cow::Borrowed(_)));
    // Debug output never shows values.
    assert!(!format!("{red:?}").contains("plain"));
}

#[test]
fn disabled_redactor_changes_nothing() {
    let red = Redactor::new(vec!["plain-secret-value-42".to_string()], false);
    assert_eq!(
        red.redact("plain-secret-value-42 sk-proj-abcdefghijklmnopqrstuvwx"),
        "plain-secret-value-42 sk-proj-abcdefghijklmnopqrstuvwx"
    );
}

#[test]
fn redaction_is_idempotent_and_utf8_safe() {
    let red = Redactor::new(vec!["ключ-секрет-12345".to_string()], true);
    let text = "é ключ-секрет-12345 ü password=\"hunter2hunter2\" 🎉 sk-abcdefghijklmnopqrstuv";
    let once = red.redact(text).into_owned();
    assert_eq!(once, "é [REDACTED] ü password=\"[REDACTED]\" 🎉 [REDACTED]");
    assert_eq!(red.redact(&once), once);
}

#[test]
fn free_functions_still_work() {
    let s = redact("Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwx.");
    assert!(!s.contains("abcdefghijklmnop"), "{s}");
    assert_eq!(redact_value("key=abcdef123", "abcdef123"), "key=[REDACTED]");
}

#[test]
fn log_writer_redacts_each_event() {
    use std::io::Write;
    let red = Redactor::new(vec!["plain-secret-value-42".to_string()], true);
    let mut w = RedactingWriter::new(Vec::new(), red);
    let line = b"INFO call failed: key plain-secret-value-42 rejected\n";
    assert_eq!(w.write(line).unwrap(), line.len());
    w.flush().unwrap();
    assert_eq!(
        String::from_utf8(w.inner).unwrap(),
        "INFO call failed: key [REDACTED] rejected\n"
    );
}

#[test]
fn redacted_json_still_parses() {
    let red = Redactor::new(vec![r#"pa"ss\word-12345"#.to_string()], true);
    let cases = [
        serde_json::json!({"command": "echo \"password=hunter2hunter2\""}),
        serde_json::json!({"command": "curl -H 'token: abcdefghijkl\\' x"}),
        serde_json::json!({"a": "password=\"abcdefghijkl\\\"", "b": "ok"}),
        serde_json::json!({"env": "DB_PASSWORD=pa\"ss\\word-12345\nX=1"}),
        // A JSON object inside a JSON string: escaped quotes around the name and the value.
        serde_json::json!({"command": "curl -d '{\"api_key\": \"abcdefghijkl\"}' https://x"}),
        serde_json::json!({"command": "echo '{\"password\":\"hunter2hunter2\"}'"}),
    ];
    for case in cases {
        let text = case.to_string();
        let out = red.redact(&text);
        let parsed: serde_json::Value = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("{text} → {out} no longer parses: {e}"));
        let flat = parsed.to_string();
        for secret in ["hunter2hunter2", "abcdefghijkl", "ss\\\\word"] {
            assert!(!flat.contains(secret), "{text} → {flat}");
        }
        assert!(out.contains(REDACTED), "{text} → {out}");
    }
}

#[test]
fn a_known_value_is_hidden_in_its_json_form_too() {
    let value = r#"pa"ss\word-12345"#;
    let red = Redactor::new(vec![value.to_string()], true);
    let json = serde_json::json!({ "v": value }).to_string();
    assert!(!json.contains(value), "the JSON form differs: {json}");
    assert_eq!(red.redact(&json), r#"{"v":"[REDACTED]"}"#);
    assert_eq!(red.redact(value), REDACTED);
}

#[test]
fn every_token_shape_pattern_compiles() {
    // The regexes are compiled at the first trigger, so a broken one would only show as a
    // shape that never matches: check them all here.
    for (literal, pattern) in PREFIXED
        .iter()
        .map(|(l, p)| (*l, *p))
        .chain([("telegram", TELEGRAM), ("bearer", BEARER)])
    {
        assert!(
            regex::Regex::new(pattern).is_ok(),
            "the pattern for {literal} does not compile"
        );
    }
}
